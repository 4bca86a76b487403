package listener

import (
	"context"
	"crypto/tls"
	"net"
	"sync"
	"time"
)

// TLSMux is the HTTPS listener, speaking HTTP/1.1 and HTTP/2 chosen by
// ALPN. It accepts TCP connections (after the per-address cap), completes each TLS
// handshake in a goroutine of its own (so a slow handshake never holds up
// the accept loop; bounded by ReadTimeout), and hands the connection to
// the server of the negotiated protocol: HTTP/2 ("h2") is served right
// there, on the handshake's goroutine, by ServeH2 (the edge's HTTP/2
// server, edge/internal/h2); anything else is queued on H1 for fasthttp,
// which serves HTTP/1.1.
type TLSMux struct {
	ln               net.Listener
	cfg              *tls.Config
	handshakeTimeout time.Duration
	h1               *queue
	wg               sync.WaitGroup // handshakes in flight
	done             chan struct{}  // closed when run has returned

	// ServeH2 serves one HTTP/2 connection until it ends (set before Run).
	ServeH2 func(*tls.Conn)
	h2mu    sync.Mutex
	h2conns map[*tls.Conn]struct{} // served by serveH2 now
	h2wg    sync.WaitGroup
	closed  bool // close was called: no new HTTP/2 connection is served
}

// NewTLSMux returns the listener over ln, completing handshakes with cfg
// within handshakeTimeout.
func NewTLSMux(ln net.Listener, cfg *tls.Config, handshakeTimeout time.Duration) *TLSMux {
	return &TLSMux{ln: ln, cfg: cfg, handshakeTimeout: handshakeTimeout,
		h1: newQueue(ln.Addr()), done: make(chan struct{})}
}

// H1 is the listener of the HTTP/1.1 connections, for fasthttp's Serve.
func (m *TLSMux) H1() net.Listener { return m.h1 }

// Run accepts until the listener is closed, then closes the HTTP/1.1 queue
// (fasthttp's Serve returns) once the handshakes in flight are done.
func (m *TLSMux) Run() {
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

func (m *TLSMux) handshake(conn net.Conn) {
	c := NewDeadlineConn(conn) // deadline.go: fewer timer moves per request
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

// serveHTTP2 serves an HTTP/2 connection with ServeH2, tracked so that a
// graceful stop can wait for it (WaitH2) and close what is left.
func (m *TLSMux) serveHTTP2(tc *tls.Conn) {
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
	m.ServeH2(tc)
}

// Done is closed when Run has returned.
func (m *TLSMux) Done() <-chan struct{} { return m.done }

// WaitH2 waits, until ctx ends, for the HTTP/2 connections being served
// to end (the server sent them GOAWAY and each ends once its streams are
// done), then closes those still open. It returns ctx's error when it had
// to close some.
func (m *TLSMux) WaitH2(ctx context.Context) error {
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

// Close stops accepting (the edge's shutdown); HTTP/2 connections
// handshaken after it are closed.
func (m *TLSMux) Close() error {
	m.h2mu.Lock()
	m.closed = true
	m.h2mu.Unlock()
	return m.ln.Close()
}

// queue is a net.Listener whose connections are pushed to it.
type queue struct {
	addr   net.Addr
	ch     chan net.Conn
	done   chan struct{}
	closed sync.Once
}

func newQueue(addr net.Addr) *queue {
	return &queue{addr: addr, ch: make(chan net.Conn), done: make(chan struct{})}
}

// push hands c to the queue's server, or closes it when the server has
// stopped.
func (q *queue) push(c net.Conn) {
	select {
	case q.ch <- c:
	case <-q.done:
		c.Close()
	}
}

func (q *queue) Accept() (net.Conn, error) {
	select {
	case c := <-q.ch:
		return c, nil
	case <-q.done:
		return nil, net.ErrClosed
	}
}

func (q *queue) Close() error {
	q.closed.Do(func() { close(q.done) })
	return nil
}

func (q *queue) Addr() net.Addr { return q.addr }

var _ net.Listener = (*queue)(nil)
