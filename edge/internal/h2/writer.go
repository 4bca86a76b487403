package h2

import (
	"time"
)

// kickWriter wakes writeLoop.
func (c *conn) kickWriter() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// maxSpareBuffer is the largest write buffer kept for reuse.
const maxSpareBuffer = 256 << 10

// writeLoop writes what is queued, one buffer at a time while the next
// fills, until the connection is closing and everything is written or a
// write fails.
func (c *conn) writeLoop() {
	defer close(c.writerDone)
	var deadline time.Time
	for {
		c.mu.Lock()
		for len(c.wbuf) == 0 && !c.closing {
			c.mu.Unlock()
			<-c.wake
			c.mu.Lock()
		}
		if len(c.wbuf) == 0 {
			c.mu.Unlock()
			return
		}
		buf := c.wbuf
		c.wbuf, c.wspare = c.wspare[:0], nil
		c.queuedData = 0
		c.wakeWaiters() // room for more DATA while this is written
		c.mu.Unlock()

		if wt := c.srv.WriteTimeout; wt > 0 {
			// Moved only when it lags much, like the read deadline.
			if now := time.Now(); deadline.IsZero() || now.Add(wt).Sub(deadline) > wt/16 {
				deadline = now.Add(wt)
				c.nc.SetWriteDeadline(deadline)
			}
		}
		_, err := c.nc.Write(buf)

		c.mu.Lock()
		if cap(buf) <= maxSpareBuffer {
			c.wspare = buf[:0]
		} else {
			c.wspare = make([]byte, 0, 4<<10)
		}
		if err != nil {
			c.broken, c.closing = true, true
			c.wbuf = c.wbuf[:0]
			c.wakeWaiters()
			c.mu.Unlock()
			c.nc.Close() // the reader's read fails: it ends the connection
			return
		}
		c.mu.Unlock()
	}
}

// wakeWaiters wakes every responder waiting for window or room (mu held).
func (c *conn) wakeWaiters() {
	for s := c.waiters; s != nil; {
		next := s.nextWaiter
		s.waiting, s.nextWaiter = false, nil
		s.signal()
		s = next
	}
	c.waiters = nil
}

// addWaiter makes s wait for window or room (mu held).
func (c *conn) addWaiter(s *stream) {
	if !s.waiting {
		s.waiting, s.nextWaiter = true, c.waiters
		c.waiters = s
	}
}

// removeWaiter takes s off the waiters (mu held).
func (c *conn) removeWaiter(s *stream) {
	if !s.waiting {
		return
	}
	for p := &c.waiters; *p != nil; p = &(*p).nextWaiter {
		if *p == s {
			*p = s.nextWaiter
			break
		}
	}
	s.waiting, s.nextWaiter = false, nil
}
