package placement

import (
	"context"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcplatform/platform/controlplane/api"
)

// HeaderForward marks a request one replica forwards to the owner of its
// resource: "<from-node-id> <mac>", the mac an HMAC-SHA256 under the
// replicas' shared secret of the sender, the method and the request URI.
// A request carrying it is never forwarded again; one carrying it with a
// wrong mac is refused (403 forward_refused), so a client cannot make a
// replica that is not the owner open a resource's file.
const HeaderForward = "X-Platform-Forward"

// HeaderNode names, on a forwarded answer, the node that served it.
const HeaderNode = "X-Platform-Node"

// MinSecret is the shortest shared secret accepted, in bytes.
const MinSecret = 32

// secretInfo separates the forwarding secret from other keys derived from
// the seal key.
const secretInfo = "platform placement forward v1"

// dialTimeout bounds connecting to an owner; past it the owner is down.
const dialTimeout = 3 * time.Second

// Errors of forwarding.
var (
	// ErrBadSecret: the shared secret is shorter than MinSecret bytes.
	ErrBadSecret = errors.New("placement: forwarding secret shorter than 32 bytes")
	// ErrForwardHeader: a forwarding header that does not verify.
	ErrForwardHeader = errors.New("placement: forwarding header does not verify")
)

// DeriveSecret derives the replicas' forwarding secret from the seal key
// (every replica sharing a store shares the seal key), with HKDF-SHA256,
// so the seal key itself never travels and the two uses stay apart.
func DeriveSecret(sealKey []byte) ([]byte, error) {
	if len(sealKey) < MinSecret {
		return nil, ErrBadSecret
	}
	return hkdf.Key(sha256.New, sealKey, nil, secretInfo, 32)
}

// SecretFromKeyFile derives the forwarding secret from the seal key file
// (controlplane.Config.SealKeyFile, or DATA/keys/seal.key).
func SecretFromKeyFile(path string) ([]byte, error) {
	key, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("placement: seal key: %w", err)
	}
	return DeriveSecret(key)
}

// Forwarder sends a request for a resource another node owns to that
// node, streaming the body both ways, and answers 503 itself when the
// owner is down: the resource is never opened on a node that does not own
// it.
type Forwarder struct {
	reg       *Registry
	key       []byte
	proxy     *httputil.ReverseProxy
	transport *http.Transport
	log       *slog.Logger
	count     *prometheus.CounterVec
}

type targetKey struct{}

// target is what the proxy's Rewrite and ErrorHandler need of a request.
type target struct {
	node Node
	kind string
	id   string
}

// NewForwarder builds the forwarder of a node; secret is shared by every
// replica (DeriveSecret).
func NewForwarder(reg *Registry, secret []byte, log *slog.Logger) (*Forwarder, error) {
	if len(secret) < MinSecret {
		return nil, ErrBadSecret
	}
	if log == nil {
		log = slog.Default()
	}
	f := &Forwarder{reg: reg, key: append([]byte(nil), secret...), log: log,
		count: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "platform_placement_forwards_total",
			Help: "Requests for a resource owned by another node, by kind and result (forwarded, unreachable, stale, failed, loop, refused)."},
			[]string{"kind", "result"})}
	tr := &http.Transport{
		Proxy:                 nil, // replicas talk directly, never through an environment proxy
		DialContext:           (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   dialTimeout,
		ExpectContinueTimeout: time.Second,
	}
	f.transport = tr
	f.proxy = &httputil.ReverseProxy{
		Rewrite:       f.rewrite,
		Transport:     tr,
		FlushInterval: -1, // stream: a download or a long answer goes out as it comes
		BufferPool:    copyBuffers{},
		ModifyResponse: func(resp *http.Response) error {
			t := resp.Request.Context().Value(targetKey{}).(target)
			resp.Header.Set(HeaderNode, t.node.ID)
			f.count.WithLabelValues(t.kind, "forwarded").Inc()
			return nil
		},
		ErrorHandler: f.failed,
	}
	return f, nil
}

// copyBuffers lends the proxy its 32 KiB copy buffers.
type copyBuffers struct{}

var copyPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func (copyBuffers) Get() []byte  { return *copyPool.Get().(*[]byte) }
func (copyBuffers) Put(b []byte) { copyPool.Put(&b) }

// Registry returns the forwarder's registry.
func (f *Forwarder) Registry() *Registry { return f.reg }

// Collectors returns the forwarder's metrics.
func (f *Forwarder) Collectors() []prometheus.Collector { return []prometheus.Collector{f.count} }

// Route decides where the request for a resource runs. It returns false
// when this node serves it (it owns the resource, or the resource has no
// placement), and true when the request was answered: forwarded to the
// owner, or refused with the returned error (which the caller writes):
// 403 forward_refused for a forwarding header that does not verify, 503
// <kind>_unavailable naming the owner when the owner is down (stale
// heartbeat, or it cannot be reached) or when a forwarded request reached
// a node that is not the owner (forward_loop).
func (f *Forwarder) Route(w http.ResponseWriter, r *http.Request, kind, id string) (bool, error) {
	peer, err := f.FromPeer(r)
	if err != nil {
		f.count.WithLabelValues(kind, "refused").Inc()
		return true, api.Forbidden("forward_refused", "the %s header is for the platform's own replicas", HeaderForward).Wrap(err)
	}
	o, err := f.reg.Owner(r.Context(), kind, id)
	switch {
	case errors.Is(err, ErrUnplaced):
		return false, nil
	case errors.Is(err, ErrUnknownNode):
		return true, f.unavailable(kind, id, o.Node, "owner_unknown", "its owner node %s is not registered", o.ID)
	case err != nil:
		return true, err
	case o.Self:
		return false, nil
	case peer:
		f.count.WithLabelValues(kind, "loop").Inc()
		e := api.E(api.KindUnavailable, "forward_loop", "%s %s was forwarded to node %s, which does not own it (owner: %s); retry shortly", kind, id, f.reg.cfg.NodeID, o.ID).
			With("node", o.ID).With("reason", "forward_loop")
		e.RetryAfter = f.retryAfter()
		return true, e
	case o.Stale:
		f.count.WithLabelValues(kind, "stale").Inc()
		return true, f.unavailable(kind, id, o.Node, "owner_stale", "its owner node %s has not been seen for %s",
			o.ID, f.reg.clk.Now().Sub(o.LastSeen).Round(time.Second))
	}
	ctx := context.WithValue(r.Context(), targetKey{}, target{node: o.Node, kind: kind, id: id})
	if !toConnection(w) {
		// An in-process caller (agents' tools, the assistant connector:
		// api.ServeInProcess) answers into memory, perhaps under a context
		// inherited from a served request. An answer cut short must not
		// panic with http.ErrAbortHandler where no server recovers it: the
		// caller gets the truncated bytes, which do not decode.
		ctx = context.WithValue(ctx, http.ServerContextKey, nil)
	}
	f.proxy.ServeHTTP(w, r.WithContext(ctx))
	return true, nil
}

// toConnection tells whether w writes to a network connection: net/http's
// writers (HTTP/1 and HTTP/2) flush, in-memory recorders of answers do not.
// A connection's answer cut short by the owner is aborted (the client sees
// an error, never a truncated body that looks complete).
func toConnection(w http.ResponseWriter) bool {
	for w != nil {
		switch w.(type) {
		case http.Flusher, http.Hijacker:
			return true
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return false
		}
		w = u.Unwrap()
	}
	return false
}

// FromPeer tells whether r was forwarded by another replica: true when
// it carries a forwarding header that verifies, an error when it carries
// one that does not (or several).
func (f *Forwarder) FromPeer(r *http.Request) (bool, error) {
	vals := r.Header.Values(HeaderForward)
	switch len(vals) {
	case 0:
		return false, nil
	case 1:
	default:
		return false, fmt.Errorf("%w: %d values", ErrForwardHeader, len(vals))
	}
	from, mac, err := ParseForward(vals[0])
	if err != nil {
		return false, err
	}
	want := f.mac(from, r.Method, r.URL.RequestURI())
	if !hmac.Equal(mac, want) {
		return false, ErrForwardHeader
	}
	return true, nil
}

// ParseForward splits a forwarding header into the sending node and the
// mac; it checks the form only (Forwarder.FromPeer checks the mac).
func ParseForward(v string) (from string, mac []byte, err error) {
	from, enc, ok := strings.Cut(v, " ")
	if !ok || !ValidNodeID(from) || len(enc) != base64.RawURLEncoding.EncodedLen(sha256.Size) {
		return "", nil, ErrForwardHeader
	}
	// The decoder skips CR and LF: the length of what it returns is
	// checked too.
	mac, err = base64.RawURLEncoding.Strict().DecodeString(enc)
	if err != nil || len(mac) != sha256.Size {
		return "", nil, ErrForwardHeader
	}
	return from, mac, nil
}

// mac is the forwarding header's mac of a request.
func (f *Forwarder) mac(from, method, requestURI string) []byte {
	h := hmac.New(sha256.New, f.key)
	h.Write([]byte(from))
	h.Write([]byte{0})
	h.Write([]byte(method))
	h.Write([]byte{0})
	h.Write([]byte(requestURI))
	return h.Sum(nil)
}

// Sign returns the forwarding header this node puts on a request.
func (f *Forwarder) Sign(method, requestURI string) string {
	from := f.reg.cfg.NodeID
	return from + " " + base64.RawURLEncoding.EncodeToString(f.mac(from, method, requestURI))
}

// rewrite points the outgoing request at the owner, keeping the client's
// Host (answers name the address the client used) and credentials.
func (f *Forwarder) rewrite(pr *httputil.ProxyRequest) {
	t := pr.In.Context().Value(targetKey{}).(target)
	u, err := url.Parse(t.node.URL)
	if err != nil { // registered URLs are validated; this one fails to dial
		u = &url.URL{Scheme: "http", Host: "invalid."}
	}
	pr.SetURL(u)
	pr.Out.Host = pr.In.Host
	pr.SetXForwarded()
	pr.Out.Header.Del(HeaderForward)
	pr.Out.Header.Set(HeaderForward, f.Sign(pr.Out.Method, pr.Out.URL.RequestURI()))
}

// failed answers a request the owner did not answer. A connection refused
// (or timed out) is an owner that is down: 503. Past the connection (a
// pooled connection the owner closed, an owner that died mid-request) the
// request may or may not have been applied: 503 when the owner cannot be
// reached now, 502 when it can.
func (f *Forwarder) failed(w http.ResponseWriter, r *http.Request, err error) {
	t := r.Context().Value(targetKey{}).(target)
	if r.Context().Err() != nil { // the client went away
		return
	}
	var e *api.Error
	var op *net.OpError
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe): // the client's body passed this node's limit
		f.count.WithLabelValues(t.kind, "refused").Inc()
		e = api.E(api.KindTooLarge, "body_too_large", "request body is larger than %d bytes", mbe.Limit)
	case errors.As(err, &op) && op.Op == "dial":
		f.count.WithLabelValues(t.kind, "unreachable").Inc()
		f.transport.CloseIdleConnections()
		e = f.unavailable(t.kind, t.id, t.node, "owner_unreachable", "its owner node %s cannot be reached", t.node.ID)
	case f.reachable(r.Context(), t.node) != nil:
		f.count.WithLabelValues(t.kind, "unreachable").Inc()
		f.transport.CloseIdleConnections()
		e = f.unavailable(t.kind, t.id, t.node, "owner_unreachable",
			"its owner node %s went down during the request, which may or may not have been applied", t.node.ID)
	default:
		f.count.WithLabelValues(t.kind, "failed").Inc()
		e = api.E(api.KindBadGateway, t.kind+"_unavailable",
			"%s %s: its owner node %s failed during the request, which may or may not have been applied; retry shortly", t.kind, t.id, t.node.ID).
			With("node", t.node.ID).With("reason", "owner_failed")
		e.RetryAfter = f.retryAfter()
	}
	api.WriteError(w, r, f.log, e.Wrap(err))
}

// reachable connects to a node's address, and hangs up.
func (f *Forwarder) reachable(ctx context.Context, n Node) error {
	u, err := url.Parse(n.URL)
	if err != nil {
		return err
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	c, err := (&net.Dialer{Timeout: dialTimeout}).DialContext(ctx, "tcp", net.JoinHostPort(u.Hostname(), port))
	if err != nil {
		return err
	}
	return c.Close()
}

// unavailable is the 503 of a resource whose owner is down.
func (f *Forwarder) unavailable(kind, id string, owner Node, reason, format string, args ...any) *api.Error {
	e := api.E(api.KindUnavailable, kind+"_unavailable", "%s %s is unavailable: "+format+"; it is served only by its owner (no copy is opened elsewhere), retry shortly",
		append([]any{kind, id}, args...)...).With("node", owner.ID).With("reason", reason)
	e.RetryAfter = f.retryAfter()
	return e
}

// retryAfter is a heartbeat, in whole seconds (at least one).
func (f *Forwarder) retryAfter() int {
	return max(1, int(math.Ceil(f.reg.cfg.HeartbeatEvery.Seconds())))
}
