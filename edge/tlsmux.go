package edge

import (
	"context"
	"crypto/tls"
	"net"
	"sync"
	"time"
)

// The HTTPS listener speaks HTTP/1.1 and HTTP/2, chosen by ALPN. tlsMux
// accepts TCP connections (after the per-address cap), completes each TLS
// handshake in a goroutine of its own (so a slow handshake never holds up
// the accept loop; bounded by ReadTimeout), and hands the connection to
// the server of the negotiated protocol: HTTP/2 ("h2") to net/http's
// HTTP/2 server, whose handler bridges into the very handler chain of
// fasthttp (see bridge.go); anything else to fasthttp, which keeps its
// allocation-free HTTP/1.1 path.
type tlsMux struct {
	ln               net.Listener
	cfg              *tls.Config
	handshakeTimeout time.Duration
	h1, h2           *connQueue
	wg               sync.WaitGroup // handshakes in flight
	done             chan struct{}  // closed when run has returned
}

func newTLSMux(ln net.Listener, cfg *tls.Config, handshakeTimeout time.Duration) *tlsMux {
	return &tlsMux{ln: ln, cfg: cfg, handshakeTimeout: handshakeTimeout,
		h1: newConnQueue(ln.Addr()), h2: newConnQueue(ln.Addr()), done: make(chan struct{})}
}

// run accepts until the listener is closed, then closes both queues (their
// servers' Serve return) once the handshakes in flight are done.
func (m *tlsMux) run() {
	defer func() {
		m.wg.Wait()
		m.h1.Close()
		m.h2.Close()
		close(m.done)
	}()
	for {
		c, err := m.ln.Accept()
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				continue
			}
			return
		}
		m.wg.Go(func() { m.handshake(c) })
	}
}

func (m *tlsMux) handshake(c net.Conn) {
	tc := tls.Server(c, m.cfg)
	ctx, cancel := context.WithTimeout(context.Background(), m.handshakeTimeout)
	defer cancel()
	c.SetDeadline(time.Now().Add(m.handshakeTimeout))
	if err := tc.HandshakeContext(ctx); err != nil {
		tc.Close()
		return
	}
	c.SetDeadline(time.Time{})
	q := m.h1
	if tc.ConnectionState().NegotiatedProtocol == "h2" {
		q = m.h2
	}
	q.push(tc)
}

// close stops accepting (Run's shutdown).
func (m *tlsMux) close() error { return m.ln.Close() }

// connQueue is a net.Listener whose connections are pushed to it.
type connQueue struct {
	addr   net.Addr
	ch     chan net.Conn
	done   chan struct{}
	closed sync.Once
}

func newConnQueue(addr net.Addr) *connQueue {
	return &connQueue{addr: addr, ch: make(chan net.Conn), done: make(chan struct{})}
}

// push hands c to the queue's server, or closes it when the server has
// stopped.
func (q *connQueue) push(c net.Conn) {
	select {
	case q.ch <- c:
	case <-q.done:
		c.Close()
	}
}

func (q *connQueue) Accept() (net.Conn, error) {
	select {
	case c := <-q.ch:
		return c, nil
	case <-q.done:
		return nil, net.ErrClosed
	}
}

func (q *connQueue) Close() error {
	q.closed.Do(func() { close(q.done) })
	return nil
}

func (q *connQueue) Addr() net.Addr { return q.addr }

var _ net.Listener = (*connQueue)(nil)
