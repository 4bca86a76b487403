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
// the server of the negotiated protocol: HTTP/2 ("h2") is served right
// there, on the handshake's goroutine, by serveH2 (the edge's HTTP/2
// server, edge/internal/h2, whose requests run the very handler chain of
// fasthttp, see h2_server.go); anything else is queued on h1 for
// fasthttp, which serves HTTP/1.1.
type tlsMux struct {
	ln               net.Listener
	cfg              *tls.Config
	handshakeTimeout time.Duration
	h1               *connQueue
	wg               sync.WaitGroup // handshakes in flight
	done             chan struct{}  // closed when run has returned

	// serveH2 serves one HTTP/2 connection until it ends (set before run).
	serveH2 func(*tls.Conn)
	h2mu    sync.Mutex
	h2conns map[*tls.Conn]struct{} // served by serveH2 now
	h2wg    sync.WaitGroup
	closed  bool // close was called: no new HTTP/2 connection is served
}

func newTLSMux(ln net.Listener, cfg *tls.Config, handshakeTimeout time.Duration) *tlsMux {
	return &tlsMux{ln: ln, cfg: cfg, handshakeTimeout: handshakeTimeout,
		h1: newConnQueue(ln.Addr()), done: make(chan struct{})}
}

// run accepts until the listener is closed, then closes the HTTP/1.1 queue
// (fasthttp's Serve returns) once the handshakes in flight are done.
func (m *tlsMux) run() {
	defer func() {
		m.wg.Wait()
		m.h1.Close()
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

func (m *tlsMux) handshake(conn net.Conn) {
	c := newLazyDeadlineConn(conn) // tail_deadline.go: fewer timer moves per request
	tc := tls.Server(c, m.cfg)
	ctx, cancel := context.WithTimeout(context.Background(), m.handshakeTimeout)
	defer cancel()
	c.SetDeadline(time.Now().Add(m.handshakeTimeout))
	if err := tc.HandshakeContext(ctx); err != nil {
		tc.Close()
		return
	}
	c.SetDeadline(time.Time{})
	if tc.ConnectionState().NegotiatedProtocol == "h2" {
		m.serveHTTP2(tc)
		return
	}
	m.h1.push(tc)
}

// serveHTTP2 serves an HTTP/2 connection with serveH2, tracked so that a
// graceful stop can wait for it (waitH2) and close what is left.
func (m *tlsMux) serveHTTP2(tc *tls.Conn) {
	m.h2mu.Lock()
	if m.closed {
		m.h2mu.Unlock()
		tc.Close()
		return
	}
	if m.h2conns == nil {
		m.h2conns = map[*tls.Conn]struct{}{}
	}
	m.h2conns[tc] = struct{}{}
	m.h2wg.Add(1)
	m.h2mu.Unlock()
	defer func() {
		m.h2mu.Lock()
		delete(m.h2conns, tc)
		m.h2mu.Unlock()
		m.h2wg.Done()
	}()
	m.serveH2(tc)
}

// waitH2 waits, until ctx ends, for the HTTP/2 connections being served
// to end (the server sent them GOAWAY and each ends once its streams are
// done), then closes those still open. It returns ctx's error when it had
// to close some.
func (m *tlsMux) waitH2(ctx context.Context) error {
	m.h2mu.Lock()
	m.closed = true
	m.h2mu.Unlock()
	done := make(chan struct{})
	go func() { m.h2wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	m.h2mu.Lock()
	for c := range m.h2conns {
		c.Close()
	}
	m.h2mu.Unlock()
	<-done
	return ctx.Err()
}

// close stops accepting (Run's shutdown); HTTP/2 connections handshaken
// after it are closed.
func (m *tlsMux) close() error {
	m.h2mu.Lock()
	m.closed = true
	m.h2mu.Unlock()
	return m.ln.Close()
}

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
