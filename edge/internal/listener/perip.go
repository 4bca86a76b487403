package listener

import (
	"errors"
	"net"
	"net/netip"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// perIP refuses connections past max open ones from one address
// (an IPv6 client by its /64): the accepted connection is closed at once,
// before TLS or HTTP cost anything. (fasthttp's own MaxConnsPerIP races
// with its graceful shutdown, so the edge counts here instead.)
//
// A trusted proxy (edge.Config.TrustedProxies) carries many visitors on its
// connections, so counting it as one client would let 1,024 idle
// connections through it lock every visitor out. Trusted proxies are
// therefore exempt from the per-address cap; the connections of all
// trusted proxies together are capped by proxyMax instead
// (edge.Config.MaxProxyConns). The visitors behind a proxy are the proxy's to
// limit (it sees their connections; the edge sees only the proxy's).
type perIP struct {
	net.Listener
	max      int
	trusted  func(netip.Addr) bool
	proxyMax int
	refused  [2]prometheus.Counter // per address, trusted proxies; nil entries are not counted

	mu      sync.Mutex
	n       map[netip.Prefix]int
	proxied int // open connections from trusted proxies
}

// PerIP wraps ln with the caps above: at most max open connections per
// client (ClientKey), at most proxyMax from the addresses trusted reports
// as trusted proxies together (0: no cap), counting refusals in refused
// (per address, trusted proxies; nil entries are not counted). With no
// cap at all, ln itself is returned.
func PerIP(ln net.Listener, max int, trusted func(netip.Addr) bool, proxyMax int, refused [2]prometheus.Counter) net.Listener {
	if max <= 0 && proxyMax <= 0 {
		return ln
	}
	return &perIP{Listener: ln, max: max, trusted: trusted, proxyMax: proxyMax, refused: refused, n: map[netip.Prefix]int{}}
}

func (l *perIP) Accept() (net.Conn, error) {
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
		if l.trusted != nil && l.trusted(ip) {
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
		key := ClientKey(ip)
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

func (l *perIP) refuse(c net.Conn, which int) {
	c.Close()
	if l.refused[which] != nil {
		l.refused[which].Inc()
	}
}

func (l *perIP) release(c *countedConn) {
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
	l     *perIP
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
	_ net.Listener = (*perIP)(nil)
	_ net.Conn     = (*countedConn)(nil)
)

// ClientKey is the key one client's connections and requests are counted
// under: its IPv4 address, or the /64 of its IPv6 address.
func ClientKey(a netip.Addr) netip.Prefix {
	bits := 32
	if a.Is6() {
		bits = 64
	}
	p, _ := a.Prefix(bits)
	return p
}
