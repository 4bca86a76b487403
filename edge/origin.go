package edge

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
)

// origin is a server app's or function's origin with its pooled client.
// Origins are shared by every table that names the same base URL, so a
// configuration change keeps the warm connections.
type origin struct {
	base   string
	scheme []byte
	host   []byte // host:port, for the request URI of TLS origins
	client *fasthttp.HostClient
}

// originReadBuffer bounds an origin's response header block.
const originReadBuffer = 32 << 10

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
// creating its client on first use.
func (op *originPool) get(base string) (*origin, error) {
	op.mu.Lock()
	defer op.mu.Unlock()
	if o := op.m[base]; o != nil {
		return o, nil
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("origin %q is not an http(s) base URL", base)
	}
	hostPort := u.Host
	if u.Port() == "" {
		port := "80"
		if u.Scheme == "https" {
			port = "443"
		}
		hostPort = net.JoinHostPort(u.Hostname(), port)
	}
	idle, dialTimeout := op.cfg.OriginIdleTimeout, op.cfg.OriginDialTimeout
	hc := &fasthttp.HostClient{
		Addr:                     hostPort,
		Name:                     "platform-edge",
		IsTLS:                    u.Scheme == "https",
		MaxConns:                 op.cfg.OriginMaxConns,
		MaxIdleConnDuration:      30 * time.Second,
		MaxConnWaitTimeout:       op.cfg.OriginTimeout,
		ReadBufferSize:           originReadBuffer,
		WriteBufferSize:          16 << 10,
		NoDefaultUserAgentHeader: true,
		DisablePathNormalizing:   true,
		StreamResponseBody:       true,
		DialTimeout: func(addr string, timeout time.Duration) (net.Conn, error) {
			c, err := fasthttp.DialTimeout(addr, min(timeout, dialTimeout))
			if err != nil {
				return nil, err
			}
			return &originConn{Conn: c, idle: idle}, nil
		},
	}
	if hc.IsTLS {
		hc.TLSConfig = &tls.Config{ServerName: u.Hostname(), MinVersion: tls.VersionTLS12}
	}
	o := &origin{base: base, scheme: []byte(u.Scheme), host: []byte(strings.ToLower(u.Host)), client: hc}
	op.m[base] = o
	return o, nil
}

// retain drops the origins no table names any more, closing their idle
// connections.
func (op *originPool) retain(keep map[string]bool) {
	op.mu.Lock()
	defer op.mu.Unlock()
	for base, o := range op.m {
		if !keep[base] {
			o.client.CloseIdleConnections()
			delete(op.m, base)
		}
	}
}

// originConn bounds pauses on a connection to an origin. fasthttp sets one
// read deadline before reading a response and keeps it while a streamed
// body is read; originConn applies it until the first byte arrives (the
// time to the response header), then allows idle between reads, so a long
// download that keeps moving is not cut, and a stalled one is.
type originConn struct {
	net.Conn
	idle  time.Duration
	first time.Time // deadline until the first byte after SetReadDeadline
	armed bool
}

func (c *originConn) SetReadDeadline(t time.Time) error {
	c.first, c.armed = t, true
	return nil
}

func (c *originConn) SetDeadline(t time.Time) error {
	c.SetReadDeadline(t)
	return c.Conn.SetWriteDeadline(t)
}

func (c *originConn) Read(p []byte) (int, error) {
	d := time.Now().Add(c.idle)
	if c.armed && !c.first.IsZero() && c.first.Before(d) {
		d = c.first
	}
	if err := c.Conn.SetReadDeadline(d); err != nil {
		return 0, err
	}
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.armed = false
	}
	return n, err
}

var _ net.Conn = (*originConn)(nil)
