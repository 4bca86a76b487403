// Package certcache holds the certificates an edge shares through the
// control plane (controlplane/certs): an edge that pulls from a control
// plane offering the certificate endpoints keeps no TLS state of its own. Under ACME its autocert.Manager's Cache is
// RemoteCache, so the account key, certificates and challenge tokens are the
// same on every edge and any edge answers a challenge another one started;
// without ACME, Shared fetches each host's certificate, signed by the
// installation's one CA, on the first handshake that names it.
package certcache

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/acme/autocert"

	"github.com/svcplatform/platform/controlplane/certs/certwire"
	"github.com/svcplatform/platform/edge/localca"
)

const (
	// Timeout bounds one call to the certificate endpoints.
	Timeout = 10 * time.Second
	// cacheFresh is how long a value read from the shared ACME cache is
	// used without asking again (autocert keeps certificates in memory
	// anyway; a short time lets a renewal by another edge be seen soon).
	cacheFresh = 30 * time.Second
	// maxMemEntries bounds the in-memory copies (values and host
	// certificates) an edge keeps.
	maxMemEntries = 10_000
	// RecheckEvery is how often, at most, an edge asks again for a host
	// certificate that is due for renewal or whose fetch failed.
	RecheckEvery = 10 * time.Minute
	// refusedFor is how long a host the control plane refused is refused
	// without asking again.
	refusedFor = 30 * time.Second
	// failedFor is how long a host whose certificate could not be fetched
	// (and that has no copy to serve) waits before it is asked for again,
	// so handshakes during an outage do not each wait Timeout.
	failedFor = 5 * time.Second
)

// ErrNoSite refuses certificates for hosts no site answers at.
var ErrNoSite = errors.New("edge: no site answers at this host")

// ErrRefused is a host certificate the control plane will not sign
// (no site answers at the host).
var ErrRefused = errors.New("edge: the control plane signs no certificate for this host")

// Client calls the control plane's certificate endpoints (Base, its
// address) with the edge token.
type Client struct {
	Base, Token string
	HTTP        *http.Client
}

// do sends one request within Timeout and returns the status and body
// (at most limit bytes).
func (c *Client) do(ctx context.Context, method, path string, body []byte, limit int64) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return 0, nil, err
	}
	if int64(len(b)) > limit {
		return 0, nil, fmt.Errorf("answer larger than %d bytes", limit)
	}
	return resp.StatusCode, b, nil
}

// CACert fetches the installation CA's certificate. found is false when the
// control plane has no certificate endpoints (404).
func (c *Client) CACert(ctx context.Context) (pem []byte, found bool, err error) {
	code, b, err := c.do(ctx, http.MethodGet, certwire.CAPath, nil, 64<<10)
	switch {
	case err != nil:
		return nil, false, fmt.Errorf("edge: installation CA: %w", err)
	case code == http.StatusNotFound:
		return nil, false, nil
	case code != http.StatusOK:
		return nil, false, fmt.Errorf("edge: installation CA: control plane answered %d", code)
	}
	return b, true, nil
}

// memEntry is a value read from, or written to, the shared cache.
type memEntry struct {
	value []byte
	at    time.Time
}

// RemoteCache is an autocert.Cache over the control plane's shared cache.
// Values read are kept for cacheFresh, and served however old when the
// control plane cannot be reached. Misses are never kept: a challenge token
// put by another edge must be found at once.
type RemoteCache struct {
	c   *Client
	now func() time.Time
	log *slog.Logger

	mu  sync.Mutex
	mem map[string]memEntry
}

var _ autocert.Cache = (*RemoteCache)(nil)

func NewRemoteCache(c *Client, now func() time.Time, log *slog.Logger) *RemoteCache {
	return &RemoteCache{c: c, now: now, log: log, mem: map[string]memEntry{}}
}

func (rc *RemoteCache) remember(key string, v []byte) {
	rc.mu.Lock()
	if len(rc.mem) >= maxMemEntries {
		clear(rc.mem)
	}
	rc.mem[key] = memEntry{value: v, at: rc.now()}
	rc.mu.Unlock()
}

func (rc *RemoteCache) forget(key string) {
	rc.mu.Lock()
	delete(rc.mem, key)
	rc.mu.Unlock()
}

// Get returns the value at key, or autocert.ErrCacheMiss itself (autocert
// compares with ==).
func (rc *RemoteCache) Get(ctx context.Context, key string) ([]byte, error) {
	if _, err := certwire.ParseKey(key); err != nil {
		return nil, autocert.ErrCacheMiss // nothing can be stored there
	}
	rc.mu.Lock()
	m, ok := rc.mem[key]
	rc.mu.Unlock()
	if ok && rc.now().Sub(m.at) < cacheFresh {
		return bytes.Clone(m.value), nil
	}
	code, b, err := rc.c.do(ctx, http.MethodGet, certwire.CachePath+key, nil, certwire.MaxValueBytes)
	if err == nil && code == http.StatusOK {
		rc.remember(key, b)
		return bytes.Clone(b), nil
	}
	if err == nil && code == http.StatusNotFound {
		rc.forget(key)
		return nil, autocert.ErrCacheMiss
	}
	if err == nil {
		err = fmt.Errorf("control plane answered %d", code)
	}
	if ok {
		rc.log.Warn("edge: shared certificate cache unreachable; using the copy in memory", "key", key, "err", err)
		return bytes.Clone(m.value), nil
	}
	return nil, fmt.Errorf("edge: certificate cache get %s: %w", key, err)
}

// Put stores value at key for every edge.
func (rc *RemoteCache) Put(ctx context.Context, key string, value []byte) error {
	if _, err := certwire.ParseKey(key); err != nil {
		return fmt.Errorf("edge: certificate cache put: %w", err)
	}
	if len(value) > certwire.MaxValueBytes {
		return fmt.Errorf("edge: certificate cache put %s: %d bytes, at most %d", key, len(value), certwire.MaxValueBytes)
	}
	code, _, err := rc.c.do(ctx, http.MethodPut, certwire.CachePath+key, value, 64<<10)
	if err == nil && code != http.StatusNoContent && code != http.StatusOK {
		err = fmt.Errorf("control plane answered %d", code)
	}
	if err != nil {
		rc.forget(key)
		return fmt.Errorf("edge: certificate cache put %s: %w", key, err)
	}
	rc.remember(key, bytes.Clone(value))
	return nil
}

// Delete removes the value at key for every edge.
func (rc *RemoteCache) Delete(ctx context.Context, key string) error {
	rc.forget(key)
	if _, err := certwire.ParseKey(key); err != nil {
		return nil
	}
	code, _, err := rc.c.do(ctx, http.MethodDelete, certwire.CachePath+key, nil, 64<<10)
	if err == nil && code != http.StatusOK && code != http.StatusNoContent && code != http.StatusNotFound {
		err = fmt.Errorf("control plane answered %d", code)
	}
	if err != nil {
		return fmt.Errorf("edge: certificate cache delete %s: %w", key, err)
	}
	return nil
}

// hostCert is a host certificate held in memory.
type hostCert struct {
	cert    *tls.Certificate
	checked time.Time // last fetch (or failed fetch)
}

// certCall is one fetch in flight; handshakes for the same host wait on it.
type certCall struct {
	done chan struct{}
	cert *tls.Certificate
	err  error
}

// backoff is a host not asked for again until a time: refused by the
// control plane, or failed with no copy to serve.
type backoff struct {
	until time.Time
	err   error
}

// Shared is a tls.Config.GetCertificate over POST certwire.LocalPath:
// each host's certificate is fetched on the first handshake naming it (one
// fetch per host at a time), kept in memory and in dir (so a restart while
// the control plane is unreachable serves it), and fetched again once it has
// less than localca.RenewBefore left (at most every RecheckEvery; the one
// held is served meanwhile, and while the control plane is unreachable).
//
// Names under the apps domain that no site has (the "no site here" page),
// and site names whose certificate cannot be had, get the installation's
// wildcard certificate ("*.<apps domain>"), fetched at start.
type Shared struct {
	c        *Client
	roots    *x509.CertPool // the installation's CA: every certificate fetched must verify
	domain   string
	wildcard string
	served   func(host string) bool // hosts of the configuration in use
	dir      string                 // copies on disk; "" for none
	now      func() time.Time
	log      *slog.Logger

	mu      sync.Mutex
	certs   map[string]hostCert
	calls   map[string]*certCall
	backoff map[string]backoff
}

func NewShared(c *Client, roots *x509.CertPool, domain, dir string, served func(string) bool, now func() time.Time, log *slog.Logger) *Shared {
	return &Shared{c: c, roots: roots, domain: domain, wildcard: certwire.WildcardPrefix + domain, served: served, dir: dir,
		now: now, log: log, certs: map[string]hostCert{}, calls: map[string]*certCall{}, backoff: map[string]backoff{}}
}

// underDomain reports whether host is the apps domain or one label under
// it: the names the wildcard certificate covers.
func (s *Shared) underDomain(host string) bool {
	label, ok := strings.CutSuffix(host, "."+s.domain)
	return host == s.domain || ok && label != "" && !strings.Contains(label, ".")
}

// Warm gets the wildcard certificate (from the control plane, else the copy
// on disk) before the edge serves.
func (s *Shared) Warm() {
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	if _, err := s.get(ctx, s.wildcard); err != nil {
		s.log.Warn("edge: no certificate for the apps domain yet; asking again on the first handshake", "err", err)
	}
}

// GetCertificate returns the certificate of the requested server name (the
// apps domain when the client sent none or an IP address). Hosts outside the apps domain
// that no site of the configuration answers at are refused without asking
// the control plane.
func (s *Shared) GetCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	host := strings.ToLower(strings.TrimSuffix(hello.ServerName, "."))
	if host == "" || net.ParseIP(host) != nil {
		// No name, or an address where a name belongs (RFC 6066 allows
		// none, yet wrk and some clients send it): the apps domain's
		// certificate, as nginx answers with its default one.
		host = s.domain
	}
	ctx := hello.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	under := s.underDomain(host)
	if host != s.domain && !s.served(host) {
		if under {
			return s.get(ctx, s.wildcard)
		}
		return nil, fmt.Errorf("%w: %q", ErrNoSite, host)
	}
	c, err := s.get(ctx, host)
	if err != nil && under && ctx.Err() == nil {
		if wc, werr := s.get(ctx, s.wildcard); werr == nil {
			return wc, nil
		}
	}
	return c, err
}

func (s *Shared) get(ctx context.Context, host string) (*tls.Certificate, error) {
	now := s.now()
	s.mu.Lock()
	hc, have := s.certs[host]
	if have && (hc.cert.Leaf.NotAfter.Sub(now) > localca.RenewBefore || now.Sub(hc.checked) < RecheckEvery) &&
		now.Before(hc.cert.Leaf.NotAfter) {
		s.mu.Unlock()
		return hc.cert, nil
	}
	if b, ok := s.backoff[host]; ok && now.Before(b.until) {
		s.mu.Unlock()
		return nil, b.err
	}
	call, inFlight := s.calls[host]
	if !inFlight {
		call = &certCall{done: make(chan struct{})}
		s.calls[host] = call
		go s.fetch(host, call)
	}
	s.mu.Unlock()
	select {
	case <-call.done:
	case <-ctx.Done():
		return nil, fmt.Errorf("edge: certificate for %q: %w", host, ctx.Err())
	}
	return call.cert, call.err
}

// fetch asks the control plane for host's certificate and settles call. It
// runs detached from the handshake that started it, so a client giving up
// does not fail the others waiting.
func (s *Shared) fetch(host string, call *certCall) {
	cert, pemBytes, refused, err := s.ask(host)
	if err == nil {
		s.save(host, pemBytes)
	}
	var disk *tls.Certificate
	if err != nil && !refused {
		disk = s.load(host)
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.calls, host)
	defer close(call.done)
	if len(s.certs) >= maxMemEntries {
		clear(s.certs)
	}
	if len(s.backoff) >= maxMemEntries {
		clear(s.backoff)
	}
	switch hc, held := s.certs[host]; {
	case err == nil:
		delete(s.backoff, host)
		s.certs[host] = hostCert{cert: cert, checked: now}
		call.cert = cert
	case refused:
		s.backoff[host] = backoff{until: now.Add(refusedFor), err: err}
		delete(s.certs, host)
		call.err = err
	case held && now.Before(hc.cert.Leaf.NotAfter):
		// Keep serving the certificate held; ask again after RecheckEvery.
		s.log.Warn("edge: cannot renew a host certificate; serving the one held", "host", host, "notAfter", hc.cert.Leaf.NotAfter, "err", err)
		s.certs[host] = hostCert{cert: hc.cert, checked: now}
		call.cert = hc.cert
	case disk != nil:
		s.log.Warn("edge: control plane unreachable; serving the host certificate saved before", "host", host, "err", err)
		s.certs[host] = hostCert{cert: disk, checked: now}
		call.cert = disk
	default:
		s.backoff[host] = backoff{until: now.Add(failedFor), err: err}
		call.err = err
	}
}

// ask fetches host's certificate; refused reports a refusal (4xx) rather
// than a failure to ask. pemBytes is the chain then the key, for save.
func (s *Shared) ask(host string) (cert *tls.Certificate, pemBytes []byte, refused bool, err error) {
	body, _ := json.Marshal(certwire.LocalRequest{Host: host})
	code, b, err := s.c.do(context.Background(), http.MethodPost, certwire.LocalPath, body, 256<<10)
	if err != nil {
		return nil, nil, false, fmt.Errorf("edge: certificate for %q: %w", host, err)
	}
	if code >= 400 && code < 500 && code != http.StatusUnauthorized && code != http.StatusTooManyRequests {
		return nil, nil, true, fmt.Errorf("%w: %q (%d)", ErrRefused, host, code)
	}
	if code != http.StatusOK {
		return nil, nil, false, fmt.Errorf("edge: certificate for %q: control plane answered %d", host, code)
	}
	var lc certwire.LocalCert
	if err := json.Unmarshal(b, &lc); err != nil {
		return nil, nil, false, fmt.Errorf("edge: certificate for %q: %w", host, err)
	}
	pemBytes = []byte(lc.ChainPEM + lc.KeyPEM)
	c, err := s.parse(host, pemBytes)
	if err != nil {
		return nil, nil, false, err
	}
	return c, pemBytes, false, nil
}

// parse reads a chain and key in PEM and checks the certificate is the
// installation CA's, for host, and valid now.
func (s *Shared) parse(host string, pemBytes []byte) (*tls.Certificate, error) {
	c, err := localca.Decode(pemBytes, pemBytes)
	if err != nil {
		return nil, fmt.Errorf("edge: certificate for %q: %w", host, err)
	}
	inter := x509.NewCertPool()
	for _, der := range c.Certificate[1:] {
		if ic, err := x509.ParseCertificate(der); err == nil {
			inter.AddCert(ic)
		}
	}
	name := host
	if base, ok := strings.CutPrefix(host, certwire.WildcardPrefix); ok {
		name = base
	}
	if _, err := c.Leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: s.roots, Intermediates: inter, CurrentTime: s.now()}); err != nil {
		return nil, fmt.Errorf("edge: certificate for %q does not verify: %w", host, err)
	}
	return c, nil
}

// diskPath is where host's certificate is kept ("*" is "_" on disk).
func (s *Shared) diskPath(host string) string {
	return filepath.Join(s.dir, strings.ReplaceAll(host, "*", "_")+".pem")
}

// save keeps a copy of host's certificate and key (mode 0600) for a restart
// while the control plane is unreachable.
func (s *Shared) save(host string, pemBytes []byte) {
	if s.dir == "" {
		return
	}
	err := os.MkdirAll(s.dir, 0o700)
	if err == nil {
		tmp := s.diskPath(host) + ".tmp"
		if err = os.WriteFile(tmp, pemBytes, 0o600); err == nil {
			err = os.Rename(tmp, s.diskPath(host))
		}
	}
	if err != nil {
		s.log.Warn("edge: cannot save a host certificate", "host", host, "err", err)
	}
}

// load returns the copy of host's certificate on disk, if it is still good.
func (s *Shared) load(host string) *tls.Certificate {
	if s.dir == "" {
		return nil
	}
	b, err := os.ReadFile(s.diskPath(host))
	if err != nil {
		return nil
	}
	c, err := s.parse(host, b)
	if err != nil {
		return nil
	}
	return c
}
