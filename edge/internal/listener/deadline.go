package listener

import (
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// DeadlineConn keeps a connection's deadlines exact while touching the
// runtime's timers far less often than they are set.
//
// fasthttp sets up to three deadlines per request (the idle timeout before
// the next request, the read timeout once it starts, the write timeout for
// the answer), and each one moves a runtime timer: 4 % of the edge's CPU
// under workload 1 (bench/RESULTS.md, `internal/poll.setDeadlineImpl`), on
// the one core that every request waits for. Here a new deadline that is no
// earlier than the one armed on the socket is only recorded; the armed one
// stays. When the armed deadline passes during a Read or Write, the wanted
// one is checked: if it has not passed (it was moved later meanwhile), it
// is armed and the call goes on, unseen by the caller; if it has, the
// caller gets the timeout as before. A deadline earlier than the armed one
// (or the first) is armed at once. So a deadline never fires late, and on
// a busy keep-alive connection the timer moves about once per read timeout
// (seconds) instead of three times per request.
type DeadlineConn struct {
	net.Conn
	mu   sync.Mutex
	r, w lazyDeadline

	linger atomic.Bool // Close lingers (linger.go)
}

// lazyDeadline is one direction's deadline: the one wanted by the last
// Set*Deadline, the one armed on the connection (zero: none).
type lazyDeadline struct{ want, armed time.Time }

func NewDeadlineConn(c net.Conn) *DeadlineConn { return &DeadlineConn{Conn: c} }

// SetDeadline sets both deadlines.
func (c *DeadlineConn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}

// SetReadDeadline records t; it arms it when it comes before the armed one.
func (c *DeadlineConn) SetReadDeadline(t time.Time) error {
	return c.set(&c.r, t, c.Conn.SetReadDeadline)
}

// SetWriteDeadline records t; it arms it when it comes before the armed one.
func (c *DeadlineConn) SetWriteDeadline(t time.Time) error {
	return c.set(&c.w, t, c.Conn.SetWriteDeadline)
}

func (c *DeadlineConn) set(d *lazyDeadline, t time.Time, arm func(time.Time) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	d.want = t
	if !d.armed.IsZero() && (t.IsZero() || !t.Before(d.armed)) {
		return nil // the armed deadline comes first; rearm moves it on when it fires
	}
	if t.Equal(d.armed) {
		return nil
	}
	d.armed = t
	return arm(t)
}

// rearm is called when the armed deadline fired: it arms the wanted one and
// reports true when that has not passed (the call is to be retried), false
// when the caller is to get the timeout.
func (c *DeadlineConn) rearm(d *lazyDeadline, arm func(time.Time) error) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d.want.Equal(d.armed) || (!d.want.IsZero() && !time.Now().Before(d.want)) {
		return false
	}
	d.armed = d.want
	return arm(d.want) == nil
}

// Read reads, going on past an armed deadline that is earlier than the
// wanted one.
func (c *DeadlineConn) Read(p []byte) (int, error) {
	for {
		n, err := c.Conn.Read(p)
		if n > 0 || err == nil || !errors.Is(err, os.ErrDeadlineExceeded) || !c.rearm(&c.r, c.Conn.SetReadDeadline) {
			return n, err
		}
	}
}

// Write writes all of p, going on past an armed deadline that is earlier
// than the wanted one.
func (c *DeadlineConn) Write(p []byte) (int, error) {
	written := 0
	for {
		n, err := c.Conn.Write(p[written:])
		written += n
		if err == nil || !errors.Is(err, os.ErrDeadlineExceeded) || !c.rearm(&c.w, c.Conn.SetWriteDeadline) {
			return written, err
		}
	}
}

var _ net.Conn = (*DeadlineConn)(nil)

// DeadlineListener wraps each accepted connection in DeadlineConn
// (the plain-HTTP listener; the HTTPS one wraps in TLSMux.handshake).
type DeadlineListener struct{ net.Listener }

// Accept returns the next connection, wrapped.
func (l DeadlineListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return NewDeadlineConn(c), nil
}
