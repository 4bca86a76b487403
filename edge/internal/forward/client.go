// Package forward is the edge's transport to app origins: a Client per
// origin over fasthttp's HostClient connection pool, dialing through
// netguard, with connections that bound the wait for the first byte and
// the pauses between reads, and that are looked at before reuse (Conn).
//
// fasthttp's HostClient keeps the origin's connection pool (dialing, TLS,
// MaxConns, the wait for a free connection, idle cleaning), but its own
// round trip allocates a streaming state and three closures for every
// response when StreamResponseBody is on (which the edge needs for large
// and chunked bodies). Client.RoundTrip sends requests over the
// HostClient's connections itself:
//
//   - a response whose Content-Length is at most BufferBytes (an API's
//     JSON, a page) is read whole, and its connection goes back to the pool
//     at once: the visitor's answer is then written with one write, and
//     nothing is allocated;
//   - any other body (chunked, larger, or delimited by the connection's
//     close) is streamed through a pooled stream, which gives the
//     connection back when the body was read to its end (else closes it)
//     once the response is released.
//
// Retries follow RetryIf: a request that met a pooled connection its
// origin had closed (ErrStaleConn: nothing was sent) goes again whatever
// its method, up to MaxStaleRetries times; GET, HEAD, PUT and QUERY
// without a streamed body are tried again after another connection error,
// up to MaxAttempts times in all.
package forward

import (
	"bufio"
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
)

// BufferBytes bounds the responses read whole before they are
// forwarded; larger ones stream.
const BufferBytes = 64 << 10

// MaxAttempts bounds the attempts of an idempotent request after
// connection errors (fasthttp's DefaultMaxIdemponentCallAttempts).
const MaxAttempts = 5

// hostConn is fasthttp's pooled client connection (an unexported type,
// reached through type inference on HostClient's methods).
type hostConn interface {
	comparable
	Conn() net.Conn
}

// pool is the round trip over a HostClient's connection pool.
type pool[C hostConn] struct {
	hc      *fasthttp.HostClient
	acquire func(time.Duration, bool) (C, error)
	release func(C)
	close   func(C)
	name    []byte // User-Agent when the visitor sent none
	streams sync.Pool
}

// newPool returns the forwarding transport over hc's connections. It
// is called as newPool(hc, hc.AcquireConn, hc.ReleaseConn, hc.CloseConn).
func newPool[C hostConn](hc *fasthttp.HostClient, acquire func(time.Duration, bool) (C, error), release, closeConn func(C)) *pool[C] {
	p := &pool[C]{hc: hc, acquire: acquire, release: release, close: closeConn, name: []byte(hc.Name)}
	p.streams.New = func() any { return &stream[C]{p: p} }
	return p
}

// idleWriter writes a streamed request body to an origin with each write
// due within timeout of the one before (nginx's proxy_send_timeout), so a
// visitor's slow upload is not cut by OriginTimeout, which bounds the wait
// for the origin's answer; an origin that stops reading still fails.
type idleWriter struct {
	conn    net.Conn
	timeout time.Duration
	bw      *bufio.Writer
}

func (w *idleWriter) Write(b []byte) (int, error) {
	if err := w.conn.SetWriteDeadline(time.Now().Add(w.timeout)); err != nil {
		return 0, err
	}
	return w.conn.Write(b)
}

var idleWriters = sync.Pool{New: func() any {
	w := &idleWriter{}
	w.bw = bufio.NewWriterSize(w, 16<<10)
	return w
}}

// writeStreamed sends req, whose body is a stream, through an idleWriter.
func writeStreamed(req *fasthttp.Request, conn net.Conn, timeout time.Duration) error {
	w := idleWriters.Get().(*idleWriter)
	w.conn, w.timeout = conn, timeout
	w.bw.Reset(w)
	err := req.Write(w.bw)
	if err == nil {
		err = w.bw.Flush()
	}
	w.conn = nil
	w.bw.Reset(nil)
	idleWriters.Put(w)
	return err
}

// errTimeout is what a write past the deadline reports.
var errTimeout = fasthttp.ErrTimeout

// roundTrip sends req once and reads the response header into resp, its
// body whole when small, else as a stream that resp owns. retry says
// whether nothing of the response was read (the request may go again on
// another connection).
func (p *pool[C]) roundTrip(req *fasthttp.Request, resp *fasthttp.Response, deadline time.Time) (bool, error) {
	timeout := time.Until(deadline)
	if timeout <= 0 {
		return false, fasthttp.ErrTimeout
	}
	head := req.Header.IsHead()
	resp.Reset()
	if len(req.Header.UserAgent()) == 0 && len(p.name) > 0 {
		req.Header.SetUserAgentBytes(p.name)
	}

	cc, err := p.acquire(timeout, false)
	if err != nil {
		return false, err
	}
	conn := cc.Conn()
	resp.ParseNetConn(conn)
	// Conn looks at a pooled connection here (ErrStaleConn).
	if err := conn.SetWriteDeadline(deadline); err != nil {
		p.close(cc)
		return true, err
	}
	if req.IsBodyStream() {
		// A visitor's streamed upload: each write within timeout of the
		// last, and the wait for the answer starts when it is sent.
		err = writeStreamed(req, conn, timeout)
		deadline = time.Now().Add(timeout)
	} else {
		bw := p.hc.AcquireWriter(conn)
		err = req.Write(bw)
		if err == nil {
			err = bw.Flush()
		}
		p.hc.ReleaseWriter(bw)
	}
	if err != nil {
		p.close(cc)
		var te interface{ Timeout() bool }
		if errors.As(err, &te) && te.Timeout() {
			err = errTimeout
		}
		return true, err
	}
	if err := conn.SetReadDeadline(deadline); err != nil {
		p.close(cc)
		return true, err
	}
	br := p.hc.AcquireReader(conn)
	// The header alone (1xx interim responses skipped); the body is read
	// below, whole or streamed.
	resp.SkipBody = true
	err = resp.ReadLimitBody(br, 0)
	resp.SkipBody = false
	if err != nil {
		p.hc.ReleaseReader(br)
		p.close(cc)
		if err == io.EOF {
			err = fasthttp.ErrConnectionClosed
		}
		return true, err
	}
	status := resp.StatusCode()
	keep := !req.Header.ConnectionClose() && !resp.Header.ConnectionClose() && status != fasthttp.StatusSwitchingProtocols
	cl := resp.Header.ContentLength()
	switch {
	case head || status < 200 || status == fasthttp.StatusNoContent || status == fasthttp.StatusNotModified:
		resp.SkipBody = head
	case cl >= 0 && cl <= BufferBytes:
		if err := resp.ReadBody(br, 0); err != nil {
			p.hc.ReleaseReader(br)
			p.close(cc)
			return false, err
		}
	default:
		s := p.streams.Get().(*stream[C])
		s.cc, s.br, s.keep = cc, br, keep && cl != -2
		s.in.StreamBody = true
		s.in.Header.SetContentLength(cl)
		if err := s.in.ReadBody(br, 0); err != nil { // sets up the stream, reads nothing
			s.Close()
			return false, err
		}
		s.r = s.in.BodyStream()
		if cl == -2 {
			cl = -1 // until the origin closes: chunked to the visitor
		}
		resp.SetBodyStream(s, cl)
		return false, nil
	}
	p.hc.ReleaseReader(br)
	if keep {
		p.release(cc)
	} else {
		p.close(cc)
	}
	return false, nil
}

// stream is an origin's response body streamed to the visitor: pooled,
// with the connection it is read from, which goes back to the pool once
// the body was read to its end, or is closed when it was not. Its reader
// is fasthttp's (Content-Length, chunked, or until close), set up on in.
// fasthttp's server and the bridge read it and close it from the
// request's own goroutine, never concurrently.
type stream[C hostConn] struct {
	p    *pool[C]
	cc   C
	br   *bufio.Reader
	in   fasthttp.Response // holds the body reader (its header: the length only)
	r    io.Reader
	keep bool // the connection may serve another request after this body
	eof  bool // the body was read to its end
	err  bool // a read failed
}

func (s *stream[C]) Read(b []byte) (int, error) {
	if s.r == nil {
		return 0, io.EOF
	}
	n, err := s.r.Read(b)
	switch {
	case err == io.EOF:
		s.eof = true
	case err != nil:
		s.err = true
	}
	return n, err
}

// Close returns the connection to the pool when the body was read to its
// end (and neither side asked to close it), else closes it; then s goes
// back to its pool. fasthttp calls it when the response is released.
func (s *stream[C]) Close() error {
	var zero C
	if s.cc != zero {
		reuse := s.keep && s.eof && !s.err
		if oc := ConnOf(s.cc.Conn()); oc != nil && oc.ended.Load() {
			reuse = false // the origin closed it (a chunked body cut short)
		}
		s.in.ResetBody() // releases fasthttp's body reader
		s.p.hc.ReleaseReader(s.br)
		if reuse {
			s.p.release(s.cc)
		} else {
			s.p.close(s.cc)
		}
	}
	s.in.Reset()
	s.cc, s.br, s.r = zero, nil, nil
	s.keep, s.eof, s.err = false, false, false
	s.p.streams.Put(s)
	return nil
}

// ConnOf returns the Conn under c (plain or TLS), nil when none.
func ConnOf(c net.Conn) *Conn {
	if a, ok := c.LocalAddr().(*connAddr); ok {
		return a.c
	}
	return nil
}
