package forward

import (
	"crypto/tls"
	"errors"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/svcplatform/platform/internal/netguard"
)

// ReadBuffer bounds an origin's response header block.
const ReadBuffer = 32 << 10

// MaxStaleRetries bounds how many pooled connections found closed by their
// origin one request may go through before it gives up (each is closed and
// the next one tried; a fresh dial is never stale).
const MaxStaleRetries = 8

// ErrStaleConn is returned, before anything of a request is written, for a
// pooled connection that its origin has already closed (or that holds bytes
// nobody asked for). Nothing of the request was sent, so it is retried on
// another connection whatever its method.
var ErrStaleConn = errors.New("edge: pooled origin connection closed by the origin")

// ErrBodyLimit is returned while streaming a request body past the edge's
// body limit: never retried.
var ErrBodyLimit = errors.New("edge: request body too large")

// Options are an origin client's limits.
type Options struct {
	// AllowPrivate lets the client reach special-purpose addresses
	// (netguard); Own are the platform's own listeners, refused even then.
	AllowPrivate bool
	Own          []netip.AddrPort
	// DialTimeout bounds a connection's dial; IdleTimeout the pauses
	// between reads of a response (Conn); KeepAlive how long an idle
	// pooled connection is kept; Timeout the wait for a free connection.
	DialTimeout, IdleTimeout, KeepAlive, Timeout time.Duration
	// MaxConns bounds the open connections to the origin.
	MaxConns int
	// Transport, when set, is the HostClient's (tests, the media origin).
	Transport fasthttp.RoundTripper
}

// Client forwards requests to one origin.
type Client struct {
	// HC is the origin's connection pool.
	HC *fasthttp.HostClient
	// Host is the origin's lower-case host[:port] as in its base URL.
	Host   []byte
	rt     roundTripper
	dialer *net.Dialer
}

// roundTripper is the pool's round trip (generic over fasthttp's
// unexported connection type).
type roundTripper interface {
	roundTrip(req *fasthttp.Request, resp *fasthttp.Response, deadline time.Time) (retry bool, err error)
}

// New returns the client of the origin at base ("http://host:port" or
// "https://host").
func New(base string, o Options) (*Client, error) {
	u, hostPort, err := ParseBase(base)
	if err != nil {
		return nil, err
	}
	dialer := netguard.Dialer(o.AllowPrivate, o.Own...)
	dialer.Timeout = o.DialTimeout
	dialer.KeepAlive = 30 * time.Second
	isTLS := u.Scheme == "https"
	hc := &fasthttp.HostClient{
		Addr:                     hostPort,
		Name:                     "platform-edge",
		IsTLS:                    isTLS,
		MaxConns:                 o.MaxConns,
		MaxIdleConnDuration:      o.KeepAlive,
		MaxConnWaitTimeout:       o.Timeout,
		ReadBufferSize:           ReadBuffer,
		WriteBufferSize:          16 << 10,
		NoDefaultUserAgentHeader: true,
		DisablePathNormalizing:   true,
		StreamResponseBody:       true,
		RetryIfErr:               RetryIf,
		Transport:                o.Transport,
	}
	c := &Client{HC: hc, Host: []byte(strings.ToLower(u.Host)), dialer: dialer}
	idle := o.IdleTimeout
	hc.DialTimeout = func(addr string, timeout time.Duration) (net.Conn, error) {
		nc, err := c.Dial(addr, timeout)
		if err != nil {
			return nil, err
		}
		return NewConn(nc, idle, isTLS), nil
	}
	if isTLS {
		hc.TLSConfig = &tls.Config{ServerName: u.Hostname(), MinVersion: tls.VersionTLS12}
	}
	c.rt = newPool(hc, hc.AcquireConn, hc.ReleaseConn, hc.CloseConn)
	return c, nil
}

// Dial connects to addr through the client's guarded dialer, within
// timeout (at most the dial timeout): for connections of their own
// (upgrades).
func (c *Client) Dial(addr string, timeout time.Duration) (net.Conn, error) {
	d := *c.dialer
	d.Timeout = min(timeout, c.dialer.Timeout)
	return d.Dial("tcp", addr)
}

// RoundTrip sends req once and reads the response header into resp, its
// body whole when small, else as a stream that resp owns (it goes back to
// the pool when resp is released). retry says whether nothing of the
// response was read (the request may go again on another connection).
func (c *Client) RoundTrip(req *fasthttp.Request, resp *fasthttp.Response, deadline time.Time) (retry bool, err error) {
	return c.rt.roundTrip(req, resp, deadline)
}

// RetryIf says which failed origin requests fasthttp tries again on
// another connection. As Go's transport and nginx do: a request of any
// method when nothing of it was sent (ErrStaleConn: the pooled connection
// was found closed before the first byte was written); an idempotent one
// (GET, HEAD, PUT, QUERY, fasthttp's rule) after any connection error. A
// POST that may have reached the origin is never sent twice. (A request
// with a streamed body is not retried by fasthttp at all; the edge retries
// it on ErrStaleConn itself, since nothing of the body was read.)
func RetryIf(req *fasthttp.Request, _ int, err error) (resetTimeout, retry bool) {
	if errors.Is(err, ErrStaleConn) {
		return false, true
	}
	if errors.Is(err, netguard.ErrForbiddenAddress) || errors.Is(err, fasthttp.ErrBodyTooLarge) || errors.Is(err, ErrBodyLimit) {
		return false, false
	}
	h := &req.Header
	return false, h.IsGet() || h.IsHead() || h.IsPut() || h.IsQuery()
}
