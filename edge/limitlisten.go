package edge

import (
	"errors"
	"net"
	"net/netip"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// perIPListener refuses connections past max open ones from one address
// (an IPv6 client by its /64): the accepted connection is closed at once,
// before TLS or HTTP cost anything. (fasthttp's own MaxConnsPerIP races
// with its graceful shutdown, so the edge counts here instead.)
//
// A trusted proxy (Config.TrustedProxies) carries many visitors on its
// connections, so counting it as one client would let 1,024 idle
// connections through it lock every visitor out. Trusted proxies are
// therefore exempt from the per-address cap; the connections of all
// trusted proxies together are capped by proxyMax instead
// (Config.MaxProxyConns). The visitors behind a proxy are the proxy's to
// limit (it sees their connections; the edge sees only the proxy's).
type perIPListener struct {
	net.Listener
	max      int
	trusted  proxies
	proxyMax int
	refused  [2]prometheus.Counter // per address, trusted proxies; nil entries are not counted

	mu      sync.Mutex
	n       map[netip.Prefix]int
	proxied int // open connections from trusted proxies
}

func newPerIPListener(ln net.Listener, max int, trusted proxies, proxyMax int, refused [2]prometheus.Counter) net.Listener {
	if max <= 0 && proxyMax <= 0 {
		return ln
	}
	return &perIPListener{Listener: ln, max: max, trusted: trusted, proxyMax: proxyMax, refused: refused, n: map[netip.Prefix]int{}}
}

func (l *perIPListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		var ip netip.Addr
		if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
			ip, _ = netip.AddrFromSlice(a.IP)
			ip = ip.Unmap()
		}
		if l.trusted.trusted(ip) {
			l.mu.Lock()
			if l.proxyMax > 0 && l.proxied >= l.proxyMax {
				l.mu.Unlock()
				l.refuse(c, 1)
				continue
			}
			l.proxied++
			l.mu.Unlock()
			return &countedConn{Conn: c, l: l, proxy: true}, nil
		}
		key := throttleKey(ip)
		l.mu.Lock()
		if l.max > 0 && l.n[key] >= l.max {
			l.mu.Unlock()
			l.refuse(c, 0)
			continue
		}
		l.n[key]++
		l.mu.Unlock()
		return &countedConn{Conn: c, l: l, key: key}, nil
	}
}

func (l *perIPListener) refuse(c net.Conn, which int) {
	c.Close()
	if l.refused[which] != nil {
		l.refused[which].Inc()
	}
}

func (l *perIPListener) release(c *countedConn) {
	l.mu.Lock()
	if c.proxy {
		l.proxied--
	} else if l.n[c.key]--; l.n[c.key] <= 0 {
		delete(l.n, c.key)
	}
	l.mu.Unlock()
}

// countedConn gives its slot back when closed.
type countedConn struct {
	net.Conn
	l     *perIPListener
	key   netip.Prefix
	proxy bool
	once  sync.Once
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c) })
	return err
}

// CloseWrite shuts down the sending side (a lingering close, linger.go).
func (c *countedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

var (
	_ net.Listener = (*perIPListener)(nil)
	_ net.Conn     = (*countedConn)(nil)
)
