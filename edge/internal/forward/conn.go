package forward

import (
	"net"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// connState is what a peeker finds on an idle connection.
type connState uint8

const (
	connIdle connState = iota
	connClosed
	connData
)

// Conn bounds pauses on a connection to an origin. fasthttp sets one
// read deadline before reading a response and keeps it while a streamed
// body is read; Conn applies it until the first byte arrives (the
// time to the response header), then allows idle between reads, so a long
// download that keeps moving is not cut, and a stalled one is.
//
// It also finds pooled connections the origin has closed: fasthttp sets
// the write deadline first thing when it takes a connection for a request,
// before writing (or reading any of the request body), so SetWriteDeadline
// looks at the socket (peeker) when the connection has served a request
// before, and fails with ErrStaleConn when the origin has closed it (for a
// plain connection, also when it holds bytes nobody asked for). A
// connection read from less than peekAfter ago is not looked at: no origin
// closes a keep-alive connection that soon after a response without saying
// so (Connection: close), and under load, when connections are reused
// every few milliseconds, this saves a system call per request.
type Conn struct {
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
	laddr *connAddr
}

// NewConn wraps c, a new connection to an origin, with idle as the bound
// of the pauses between reads; tls says whether TLS runs over it (which
// may send bytes unasked).
func NewConn(c net.Conn, idle time.Duration, tls bool) *Conn {
	oc := &Conn{Conn: c, idle: idle, tls: tls, peek: newPeeker(c)}
	oc.laddr = &connAddr{Addr: c.LocalAddr(), c: oc}
	return oc
}

// Ended reports whether a read on c failed or met the end of the stream:
// no response is complete on it after that.
func (c *Conn) Ended() bool { return c.ended.Load() }

// connAddr is an origin connection's local address, carrying the
// connection: fasthttp hands a response's connection out only as
// Response.LocalAddr, and proxy needs it to tell a chunked body that ended
// with its last chunk from one cut by the origin closing the connection,
// which fasthttp's streamed reader reports as io.EOF all the same.
type connAddr struct {
	net.Addr
	c *Conn
}

// LocalAddr returns the local address, as an *connAddr.
func (c *Conn) LocalAddr() net.Addr { return c.laddr }

// ResponseConn returns the origin connection resp was read from, nil when
// unknown.
func ResponseConn(resp *fasthttp.Response) *Conn {
	if a, ok := resp.LocalAddr().(*connAddr); ok {
		return a.c
	}
	return nil
}

func (c *Conn) SetReadDeadline(t time.Time) error {
	c.first, c.armed = t, true
	return nil
}

// peekAfter is how long after its last read a pooled origin connection is
// looked at before reuse (see Conn). Origins close idle keep-alive
// connections after seconds (gunicorn 2 s, Node.js and Apache 5 s).
const peekAfter = 100 * time.Millisecond

func (c *Conn) SetWriteDeadline(t time.Time) error {
	now := time.Now()
	if c.used && now.Sub(c.lastRead) >= peekAfter {
		switch c.peek.peek() {
		case connClosed:
			return ErrStaleConn
		case connData:
			if !c.tls { // TLS 1.3 sends session tickets after the handshake
				return ErrStaleConn
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

func (c *Conn) SetDeadline(t time.Time) error {
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
func (c *Conn) Read(p []byte) (int, error) {
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

var _ net.Conn = (*Conn)(nil)
