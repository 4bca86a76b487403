package edge

import (
	"net"
	"net/netip"
	"sync"
)

// perIPListener refuses connections past max open ones from one address
// (an IPv6 client by its /64): the accepted connection is closed at once,
// before TLS or HTTP cost anything. (fasthttp's own MaxConnsPerIP races
// with its graceful shutdown, so the edge counts here instead.)
type perIPListener struct {
	net.Listener
	max int

	mu sync.Mutex
	n  map[netip.Prefix]int
}

func newPerIPListener(ln net.Listener, max int) net.Listener {
	if max <= 0 {
		return ln
	}
	return &perIPListener{Listener: ln, max: max, n: map[netip.Prefix]int{}}
}

func (l *perIPListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		var key netip.Prefix
		if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
			ip, _ := netip.AddrFromSlice(a.IP)
			key = throttleKey(ip.Unmap())
		}
		l.mu.Lock()
		if l.n[key] >= l.max {
			l.mu.Unlock()
			c.Close()
			continue
		}
		l.n[key]++
		l.mu.Unlock()
		return &countedConn{Conn: c, l: l, key: key}, nil
	}
}

func (l *perIPListener) release(key netip.Prefix) {
	l.mu.Lock()
	if l.n[key]--; l.n[key] <= 0 {
		delete(l.n, key)
	}
	l.mu.Unlock()
}

// countedConn gives its slot back when closed.
type countedConn struct {
	net.Conn
	l    *perIPListener
	key  netip.Prefix
	once sync.Once
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.key) })
	return err
}

var (
	_ net.Listener = (*perIPListener)(nil)
	_ net.Conn     = (*countedConn)(nil)
)
