package edge

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/svcplatform/platform/internal/netguard"
)

// origin is a server app's or function's origin with its pooled client.
// Origins are shared by every table that names the same base URL, so a
// configuration change keeps the warm connections.
type origin struct {
	key     string // base, or "managed " + base: the pool key
	base    string
	managed bool
	host    []byte // host:port, the Host sent when the visitor sent none
	client  *fasthttp.HostClient
	// fwd sends forwarded requests over client's connections (fwd_client.go).
	fwd fwdClient
	// pass holds the hit-for-pass marks of the cache keys it answers
	// (fwd_pass.go).
	pass *passTable
	// dialRaw connects to addr through the guarded dialer (upgrades open
	// connections of their own with it).
	dialRaw func(addr string, timeout time.Duration) (net.Conn, error)
}

// originReadBuffer bounds an origin's response header block.
const originReadBuffer = 32 << 10

// maxStaleRetries bounds how many pooled connections found closed by their
// origin one request may go through before it gives up (each is closed and
// the next one tried; a fresh dial is never stale).
const maxStaleRetries = 8

// errStaleConn is returned, before anything of a request is written, for a
// pooled connection that its origin has already closed (or that holds bytes
// nobody asked for). Nothing of the request was sent, so it is retried on
// another connection whatever its method.
var errStaleConn = errors.New("edge: pooled origin connection closed by the origin")

// originPool keeps one origin per base URL.
type originPool struct {
	cfg *Config
	mu  sync.Mutex
	m   map[string]*origin
}

func newOriginPool(cfg *Config) *originPool {
	return &originPool{cfg: cfg, m: map[string]*origin{}}
}

// get returns the origin of base ("http://host:port" or "https://host"),
// creating its client on first use. A managed origin is a process the
// platform itself runs for a deployment: it is exempt from the private
// network guard (netguard), which applies to every other origin unless
// Config.AllowPrivateNetworks.
func (op *originPool) get(base string, managed bool) (*origin, error) {
	key := base
	if managed {
		key = "managed " + base
	}
	op.mu.Lock()
	defer op.mu.Unlock()
	if o := op.m[key]; o != nil {
		return o, nil
	}
	u, hostPort, err := parseOriginBase(base)
	if err != nil {
		return nil, err
	}
	idle := op.cfg.OriginIdleTimeout
	dialer := netguard.Dialer(op.cfg.AllowPrivateNetworks || managed, op.cfg.own...)
	dialer.Timeout = op.cfg.OriginDialTimeout
	dialer.KeepAlive = 30 * time.Second
	isTLS := u.Scheme == "https"
	hc := &fasthttp.HostClient{
		Addr:                     hostPort,
		Name:                     "platform-edge",
		IsTLS:                    isTLS,
		MaxConns:                 op.cfg.OriginMaxConns,
		MaxIdleConnDuration:      op.cfg.OriginKeepAlive,
		MaxConnWaitTimeout:       op.cfg.OriginTimeout,
		ReadBufferSize:           originReadBuffer,
		WriteBufferSize:          16 << 10,
		NoDefaultUserAgentHeader: true,
		DisablePathNormalizing:   true,
		StreamResponseBody:       true,
		RetryIfErr:               retryOrigin,
	}
	dialRaw := func(addr string, timeout time.Duration) (net.Conn, error) {
		d := *dialer
		d.Timeout = min(timeout, dialer.Timeout)
		return d.Dial("tcp", addr)
	}
	hc.DialTimeout = func(addr string, timeout time.Duration) (net.Conn, error) {
		c, err := dialRaw(addr, timeout)
		if err != nil {
			return nil, err
		}
		oc := &originConn{Conn: c, idle: idle, tls: isTLS, peek: newPeeker(c)}
		oc.laddr = &originAddr{Addr: c.LocalAddr(), c: oc}
		return oc, nil
	}
	if isTLS {
		hc.TLSConfig = &tls.Config{ServerName: u.Hostname(), MinVersion: tls.VersionTLS12}
	}
	o := &origin{key: key, base: base, managed: managed, host: []byte(strings.ToLower(u.Host)),
		client: hc, dialRaw: dialRaw, pass: newPassTable()}
	o.fwd = newFwdPool(hc, hc.AcquireConn, hc.ReleaseConn, hc.CloseConn)
	op.m[key] = o
	return o, nil
}

// retain drops the origins no table names any more (by pool key), closing
// their idle connections.
func (op *originPool) retain(keep map[string]bool) {
	op.mu.Lock()
	defer op.mu.Unlock()
	for key, o := range op.m {
		if !keep[key] {
			o.client.CloseIdleConnections()
			delete(op.m, key)
		}
	}
}

// retryOrigin says which failed origin requests fasthttp tries again on
// another connection. As Go's transport and nginx do: a request of any
// method when nothing of it was sent (errStaleConn: the pooled connection
// was found closed before the first byte was written); an idempotent one
// (GET, HEAD, PUT, QUERY, fasthttp's rule) after any connection error. A
// POST that may have reached the origin is never sent twice. (A request
// with a streamed body is not retried by fasthttp at all; proxy retries it
// on errStaleConn itself, since nothing of the body was read.)
func retryOrigin(req *fasthttp.Request, _ int, err error) (resetTimeout, retry bool) {
	if errors.Is(err, errStaleConn) {
		return false, true
	}
	if errors.Is(err, netguard.ErrForbiddenAddress) || errors.Is(err, fasthttp.ErrBodyTooLarge) || errors.Is(err, errBodyLimit) {
		return false, false
	}
	h := &req.Header
	return false, h.IsGet() || h.IsHead() || h.IsPut() || h.IsQuery()
}

// connState is what a peeker finds on an idle connection.
type connState uint8

const (
	connIdle connState = iota
	connClosed
	connData
)

// originConn bounds pauses on a connection to an origin. fasthttp sets one
// read deadline before reading a response and keeps it while a streamed
// body is read; originConn applies it until the first byte arrives (the
// time to the response header), then allows idle between reads, so a long
// download that keeps moving is not cut, and a stalled one is.
//
// It also finds pooled connections the origin has closed: fasthttp sets
// the write deadline first thing when it takes a connection for a request,
// before writing (or reading any of the request body), so SetWriteDeadline
// looks at the socket (peeker) when the connection has served a request
// before, and fails with errStaleConn when the origin has closed it (for a
// plain connection, also when it holds bytes nobody asked for). A
// connection read from less than peekAfter ago is not looked at: no origin
// closes a keep-alive connection that soon after a response without saying
// so (Connection: close), and under load, when connections are reused
// every few milliseconds, this saves a system call per request.
type originConn struct {
	net.Conn
	idle     time.Duration
	tls      bool
	first    time.Time // deadline until the first byte after SetReadDeadline
	armed    bool
	used     bool      // a response (or a TLS handshake) was read on it
	lastRead time.Time // when the last read started
	rd       time.Time // the read deadline set on Conn
	wd       time.Time // the write deadline set on Conn
	peek     *peeker
	// ended is set once a read failed or met the end of the stream: no
	// response is complete on it after that.
	ended atomic.Bool
	laddr *originAddr
}

// originAddr is an origin connection's local address, carrying the
// connection: fasthttp hands a response's connection out only as
// Response.LocalAddr, and proxy needs it to tell a chunked body that ended
// with its last chunk from one cut by the origin closing the connection,
// which fasthttp's streamed reader reports as io.EOF all the same.
type originAddr struct {
	net.Addr
	c *originConn
}

// LocalAddr returns the local address, as an *originAddr.
func (c *originConn) LocalAddr() net.Addr { return c.laddr }

// responseConn returns the origin connection resp was read from, nil when
// unknown.
func responseConn(resp *fasthttp.Response) *originConn {
	if a, ok := resp.LocalAddr().(*originAddr); ok {
		return a.c
	}
	return nil
}

func (c *originConn) SetReadDeadline(t time.Time) error {
	c.first, c.armed = t, true
	return nil
}

// peekAfter is how long after its last read a pooled origin connection is
// looked at before reuse (see originConn). Origins close idle keep-alive
// connections after seconds (gunicorn 2 s, Node.js and Apache 5 s).
const peekAfter = 100 * time.Millisecond

func (c *originConn) SetWriteDeadline(t time.Time) error {
	now := time.Now()
	if c.used && now.Sub(c.lastRead) >= peekAfter {
		switch c.peek.peek() {
		case connClosed:
			return errStaleConn
		case connData:
			if !c.tls { // TLS 1.3 sends session tickets after the handshake
				return errStaleConn
			}
		}
	}
	if keepWriteDeadline(c.wd, t, now) {
		return nil
	}
	if err := c.Conn.SetWriteDeadline(t); err != nil {
		return err
	}
	c.wd = t
	return nil
}

// keepWriteDeadline reports whether the write deadline set, cur, may stand
// for the one asked, t: it is still ahead, not past t, and short of it by
// at most a sixteenth of the time from now to t. Moving the socket's
// deadline re-arms a runtime timer; under load an origin connection is
// written every few milliseconds with a deadline OriginTimeout ahead, so a
// bound of 60 s is then enforced between 56.25 and 60 s instead of costing
// a timer update per forwarded request (as rearmSlack does for reads).
func keepWriteDeadline(cur, t, now time.Time) bool {
	return !t.IsZero() && cur.After(now) && !cur.After(t) && t.Sub(cur) <= t.Sub(now)/16
}

func (c *originConn) SetDeadline(t time.Time) error {
	c.SetReadDeadline(t)
	if err := c.Conn.SetWriteDeadline(t); err != nil {
		return err
	}
	c.wd = t
	return nil
}

// rearmSlack is how far an idle read deadline may lag behind now+idle
// before Read moves it: re-arming the socket's timer on every read costs a
// runtime timer update, and an idle bound of 60 s enforced between 60 - 60/16
// and 60 s is the same bound to an origin. A first-byte deadline is always
// exact.
func rearmSlack(idle time.Duration) time.Duration { return idle / 16 }

// Read reads with the first-byte deadline until the first byte, then with
// the idle bound between reads. The deadline is set on the socket only when
// it changes (a new first-byte deadline, or an idle one moved by more than
// rearmSlack), not on every read.
//
// The first read after a request was sent yields first (runtime.Gosched):
// the origin has rarely answered in the microseconds since the write, so
// reading at once costs a read that fails with EAGAIN, a park and a wake
// through the netpoller; after the other runnable goroutines (the other
// visitors' requests) had their turn, the answer is usually there and one
// read gets it, as nginx reads an upstream only once epoll says it is
// readable. With nothing else to run, Gosched returns at once.
func (c *originConn) Read(p []byte) (int, error) {
	if c.armed {
		runtime.Gosched()
	}
	now := time.Now()
	c.lastRead = now
	d := now.Add(c.idle)
	first := c.armed && !c.first.IsZero() && c.first.Before(d)
	if first {
		d = c.first
	}
	if !d.Equal(c.rd) && (first || d.Before(c.rd) || d.Sub(c.rd) >= rearmSlack(c.idle) || !c.rd.After(now)) {
		if err := c.Conn.SetReadDeadline(d); err != nil {
			return 0, err
		}
		c.rd = d
	}
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.armed = false
		c.used = true
	}
	if err != nil {
		c.ended.Store(true)
	}
	return n, err
}

var _ net.Conn = (*originConn)(nil)

// ownAddrs parses the platform's own listener addresses (Config.OwnListeners)
// as address:port pairs; a host name other than an address is skipped (its
// addresses are the host's, and loopback is refused anyway).
func ownAddrs(list []string) ([]netip.AddrPort, error) {
	var out []netip.AddrPort
	for _, s := range list {
		host, port, err := net.SplitHostPort(s)
		if err != nil {
			return nil, fmt.Errorf("own listener %q: %w", s, err)
		}
		if host == "" {
			host = "0.0.0.0"
		}
		a, err := netip.ParseAddr(host)
		if err != nil {
			continue
		}
		ap, err := netip.ParseAddrPort(net.JoinHostPort(a.String(), port))
		if err != nil {
			return nil, fmt.Errorf("own listener %q: %w", s, err)
		}
		out = append(out, ap)
	}
	return out, nil
}

// parseOriginBase reads an origin's base URL: http or https with a host,
// and the host:port to dial (the scheme's port when none is given).
func parseOriginBase(base string) (*url.URL, string, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, "", fmt.Errorf("origin %q is not an http(s) base URL", base)
	}
	hostPort := u.Host
	if u.Port() == "" {
		port := "80"
		if u.Scheme == "https" {
			port = "443"
		}
		hostPort = net.JoinHostPort(u.Hostname(), port)
	}
	return u, hostPort, nil
}
