package h2

import (
	"errors"
	"io"
	"net"
	"time"

	"github.com/valyala/fasthttp"
)

// Work a stream's worker does.
const (
	taskHandle = iota // run the handler, then respond
	taskPump          // send the rest of the response body
)

// stream is one request and its response. It is pooled with its
// RequestCtx; it goes back to the pool once the connection's table and
// the responder have both let go of it (refs).
type stream struct {
	srv *Server
	c   *conn
	id  uint32

	// Guarded by c.mu.
	slot       int  // index in c.streams; -1 when closed
	refs       int8 // the table's and the responder's
	owned      bool // the responder's reference is held
	remoteDone bool // END_STREAM received
	localDone  bool // END_STREAM sent
	reset      bool // RST_STREAM sent or received, or the connection ended
	clientRST  bool // the reset came from the client
	sendWindow int64
	recvWindow int64 // what the client may still send
	recvUnack  int64 // consumed, not yet given back with WINDOW_UPDATE
	declared   int64 // content-length, -1 when none
	received   int64
	body       []byte // received, unread request body
	bodyOff    int
	bodyErr    error // after the body: io.EOF, or why it ended early
	waiting    bool  // on c.waiters
	nextWaiter *stream

	// The responder's (reader or worker) own.
	ctx     fasthttp.RequestCtx
	sc      streamConn
	br      bodyReader
	wake    chan struct{}
	timer   *time.Timer
	task    uint8
	probe   bool      // the body's length is unknown: wait for its first byte
	start   time.Time // when the request's header arrived (BodyTimeout)
	sent    int       // raw body octets queued
	trailer bool      // trailers go after the body
}

func newStream(s *Server) any {
	st := &stream{srv: s, wake: make(chan struct{}, 1), slot: -1}
	st.sc.s = st
	st.br.s = st
	// Once: the connection the ctx sees is the stream's own, whatever
	// connection the stream serves (its addresses are read from there).
	st.ctx.Init2(&st.sc, s.logger(), false)
	return st
}

// signal wakes the stream's responder if it waits.
func (s *stream) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// wait waits for a signal until deadline (none when zero); false when the
// deadline passed.
func (s *stream) wait(deadline time.Time) bool {
	if deadline.IsZero() {
		<-s.wake
		return true
	}
	d := time.Until(deadline)
	if d <= 0 {
		return false
	}
	if s.timer == nil {
		s.timer = time.NewTimer(d)
	} else {
		s.timer.Reset(d)
	}
	select {
	case <-s.wake:
		s.timer.Stop()
		return true
	case <-s.timer.C:
		return false
	}
}

// work is what a worker does with the stream.
func (s *stream) work() {
	switch s.task {
	case taskHandle:
		if s.probe {
			s.probeBody()
		}
		s.srv.Handler(&s.ctx)
		s.c.respond(s, false)
	case taskPump:
		s.c.pump(s)
	}
}

// release resets the stream and returns it to the pool.
func (s *stream) release() {
	s.ctx.ResetUserValues()
	s.ctx.Request.Reset()
	s.ctx.Response.Reset() // closes a streamed body
	s.c = nil
	s.id, s.slot, s.refs, s.owned = 0, -1, 0, false
	s.remoteDone, s.localDone, s.reset, s.clientRST = false, false, false, false
	s.sendWindow, s.recvWindow, s.recvUnack, s.declared, s.received = 0, 0, 0, -1, 0
	if cap(s.body) > 64<<10 {
		s.body = nil
	}
	s.body, s.bodyOff, s.bodyErr = s.body[:0], 0, nil
	s.waiting, s.nextWaiter = false, nil
	s.task, s.probe, s.sent, s.trailer = 0, false, 0, false
	select { // a signal nobody took
	case <-s.wake:
	default:
	}
	s.srv.streams.Put(s)
}

// Errors of a request body read.
var (
	// ErrBodyTimeout: the request body did not end within BodyTimeout.
	ErrBodyTimeout = errors.New("h2: request body timeout")
	// ErrStreamReset: the client reset the stream, or the connection
	// ended, before the request body did.
	ErrStreamReset = errors.New("h2: stream reset before the request body ended")
)

// bodyReader is the request body of a stream (fasthttp's body stream):
// the DATA the connection's reader queued, handed over as the handler
// reads, with flow-control credit given back as it goes.
type bodyReader struct{ s *stream }

func (r *bodyReader) Read(p []byte) (int, error) {
	s := r.s
	c := s.c
	var deadline time.Time
	if s.srv.BodyTimeout > 0 {
		deadline = s.start.Add(s.srv.BodyTimeout)
	}
	c.mu.Lock()
	for {
		if s.bodyOff < len(s.body) {
			if len(p) == 0 {
				c.mu.Unlock()
				return 0, nil
			}
			n := copy(p, s.body[s.bodyOff:])
			s.bodyOff += n
			if s.bodyOff == len(s.body) {
				s.body, s.bodyOff = s.body[:0], 0
			}
			flush := c.consumed(s, n)
			c.mu.Unlock()
			if flush {
				c.kickWriter()
			}
			return n, nil
		}
		if s.bodyErr != nil {
			err := s.bodyErr
			c.mu.Unlock()
			return 0, err
		}
		c.mu.Unlock()
		if !s.wait(deadline) {
			c.mu.Lock()
			if s.bodyErr == nil {
				s.bodyErr = ErrBodyTimeout
				c.resetStream(s, ErrCodeCancel)
			}
			c.mu.Unlock()
			c.kickWriter()
			c.mu.Lock()
		} else {
			c.mu.Lock()
		}
	}
}

// probeBody waits until the request body's first octet or its end, so a
// request whose body turns out empty is handed over without one.
func (s *stream) probeBody() {
	c := s.c
	var deadline time.Time
	if s.srv.BodyTimeout > 0 {
		deadline = s.start.Add(s.srv.BodyTimeout)
	}
	for {
		c.mu.Lock()
		ready := len(s.body) > s.bodyOff || s.bodyErr != nil
		empty := s.bodyErr == io.EOF && s.received == 0
		c.mu.Unlock()
		if ready {
			if empty {
				s.ctx.Request.ResetBody()
				s.ctx.Request.Header.Del(fasthttp.HeaderTransferEncoding)
				s.ctx.Request.Header.Del(fasthttp.HeaderContentLength)
			}
			return
		}
		if !s.wait(deadline) {
			return // the handler's read gets the timeout
		}
	}
}

// streamConn is the net.Conn of a stream's RequestCtx: its addresses are
// the connection's; nothing is read or written through it (EarlyHints
// sends a 103).
type streamConn struct{ s *stream }

func (c *streamConn) Read([]byte) (int, error)         { return 0, io.EOF }
func (c *streamConn) Write(p []byte) (int, error)      { return len(p), nil }
func (c *streamConn) Close() error                     { return nil }
func (c *streamConn) LocalAddr() net.Addr              { return c.s.c.local }
func (c *streamConn) RemoteAddr() net.Addr             { return c.s.c.remote }
func (c *streamConn) SetDeadline(time.Time) error      { return nil }
func (c *streamConn) SetReadDeadline(time.Time) error  { return nil }
func (c *streamConn) SetWriteDeadline(time.Time) error { return nil }

var (
	_ net.Conn  = (*streamConn)(nil)
	_ io.Reader = (*bodyReader)(nil)
)
