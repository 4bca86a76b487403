package listener

import (
	"crypto/tls"
	"net"
	"sync/atomic"
	"time"
)

// Lingering close (nginx's lingering_close). When the edge refuses a
// request it has not read to the end (a header past MaxHeaderBytes, a
// request it cannot parse, a body past MaxBodyBytes) it answers and closes
// the connection. Closing a socket with unread input makes the kernel
// answer with a reset, which can reach the client before it has read the
// answer: the client is told "connection reset" instead of 431 or 413.
// So such a connection is closed in a lingering way: the edge shuts down
// its sending side (the client sees the answer, then the end of the
// stream), then reads and drops what the client still sends until it
// closes too, it stays quiet for lingerQuiet, or lingerTotal has passed;
// only then is the socket closed. It happens on a goroutine of its own, so
// the server's worker is free at once, and at most maxLingering
// connections linger at a time (more are closed at once). A lingering
// connection keeps its place under MaxConnsPerIP.
const (
	lingerQuiet  = 2 * time.Second  // nginx: lingering_timeout 5s
	lingerTotal  = 10 * time.Second // nginx: lingering_time 30s
	maxLingering = 1024
)

// lingering counts the connections lingering now.
var lingering atomic.Int64

// LingerOnClose makes c's close a lingering one, when c is one of the
// edge's accepted connections (or a TLS connection over one).
func LingerOnClose(c net.Conn) {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	if lc, ok := c.(*DeadlineConn); ok {
		lc.linger.Store(true)
	}
}

// Close closes the connection, in a lingering way when LingerOnClose was
// called on it.
func (c *DeadlineConn) Close() error {
	if !c.linger.Load() || !c.linger.CompareAndSwap(true, false) {
		return c.Conn.Close()
	}
	if lingering.Add(1) > maxLingering {
		lingering.Add(-1)
		return c.Conn.Close()
	}
	cw, ok := c.Conn.(interface{ CloseWrite() error })
	if !ok || cw.CloseWrite() != nil {
		lingering.Add(-1)
		return c.Conn.Close()
	}
	go c.drain(lingerQuiet, time.Now().Add(lingerTotal))
	return nil
}

// drain reads and drops the client's input until it ends, pauses for
// quiet, or end has passed; then it closes the socket.
func (c *DeadlineConn) drain(quiet time.Duration, end time.Time) {
	defer lingering.Add(-1)
	defer c.Conn.Close()
	var buf [4 << 10]byte
	for {
		d := time.Now().Add(quiet)
		if d.After(end) {
			d = end
		}
		if c.Conn.SetReadDeadline(d) != nil {
			return
		}
		if _, err := c.Conn.Read(buf[:]); err != nil {
			return
		}
	}
}
