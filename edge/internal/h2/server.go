package h2

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
)

// Defaults of Server's zero fields.
const (
	// DefaultMaxConcurrentStreams is SETTINGS_MAX_CONCURRENT_STREAMS (Go's
	// server also says 250; nginx 128).
	DefaultMaxConcurrentStreams = 250
	// DefaultStreamWindow and DefaultConnWindow are the receive windows for
	// request bodies: an upload is not held up by WINDOW_UPDATE round
	// trips, and a connection buffers at most DefaultConnWindow of them.
	DefaultStreamWindow = 1 << 20
	DefaultConnWindow   = 4 << 20
	// DefaultMaxHeaderListSize is SETTINGS_MAX_HEADER_LIST_SIZE: a request
	// whose header fields (RFC 9113 §6.5.2 size) pass it is answered 431.
	DefaultMaxHeaderListSize = 64 << 10
	// DefaultReadTimeout bounds the client's preface and each header
	// block, from its first frame to its last.
	DefaultReadTimeout = 10 * time.Second
	// DefaultIdleTimeout closes (GOAWAY) a connection with no open stream.
	DefaultIdleTimeout = 2 * time.Minute
	// DefaultWriteTimeout bounds each write to the connection and each
	// wait of a response for the client's flow-control window.
	DefaultWriteTimeout = 30 * time.Second
	// DefaultBodyTimeout bounds a request body, from the request's header
	// to the body's end.
	DefaultBodyTimeout = 5 * time.Minute
	// DefaultInlineLimit is how long a handler runs inline (Server.Inline)
	// before the connection's reading moves to another goroutine, so that
	// a slow one (a cache miss) holds up none of the connection's other
	// streams.
	DefaultInlineLimit = 10 * time.Millisecond
	// DefaultMaxResetStreams is how many streams a client may reset
	// before their response is done beyond those it let finish (each
	// finished stream earns one back, up to this many): past it the
	// connection is ended with ENHANCE_YOUR_CALM (rapid reset).
	DefaultMaxResetStreams = 200
)

// Internal bounds.
const (
	// maxBufferedData is how much response DATA is queued for the writer
	// at a time; beyond it responses wait until the writes catch up.
	maxBufferedData = 128 << 10
	// maxQueuedBytes ends a connection whose peer lets this much pile up
	// unread (headers and control frames beyond the DATA bound above: a
	// PING or SETTINGS flood the peer does not read).
	maxQueuedBytes = 4 << 20
	// maxContinuations bounds the CONTINUATION frames of one header block.
	maxContinuations = 64
	// recentResets is how many stream identifiers the client reset are
	// remembered, to tell a frame on one (STREAM_CLOSED, a stream error)
	// from one on a stream that ended normally (a connection error).
	recentResets = 32
)

// Server serves HTTP/2 connections. The zero value serves with the
// Default* limits once Handler is set; set fields before the first
// ServeConn and do not change them after.
type Server struct {
	// Handler answers each request. It must not keep ctx, nor anything of
	// its request or response, after it returns; the response body may be
	// set with SetBodyRaw (sent from those bytes, which must stay
	// unchanged until the stream is done) or as a stream (copied by a
	// worker goroutine, then closed).
	Handler fasthttp.RequestHandler
	// Inline, when set, reports whether Handler answers a request without
	// waiting on the network or other slow work (a page from a cache): it
	// then runs on the connection's reading goroutine, with no goroutine
	// switch (one that takes longer than InlineLimit hands the reading to
	// another goroutine). Other requests, and every request with a body,
	// run on a worker goroutine. Inline sees the request's method, URI and
	// header.
	Inline func(ctx *fasthttp.RequestCtx) bool
	// InlineLimit: see DefaultInlineLimit; negative: never.
	InlineLimit time.Duration
	// MaxConcurrentStreams: see DefaultMaxConcurrentStreams.
	MaxConcurrentStreams uint32
	// StreamWindow, ConnWindow: see DefaultStreamWindow.
	StreamWindow, ConnWindow uint32
	// MaxHeaderListSize: see DefaultMaxHeaderListSize.
	MaxHeaderListSize uint32
	// MaxRequestBodySize, when positive, resets (CANCEL) a stream whose
	// request body passes it; the handler's read of the body fails with
	// fasthttp.ErrBodyTooLarge. Zero: no bound beyond the handler's own.
	MaxRequestBodySize int64
	// ReadTimeout, IdleTimeout, WriteTimeout, BodyTimeout: see their
	// Default* constants; negative means none.
	ReadTimeout, IdleTimeout, WriteTimeout, BodyTimeout time.Duration
	// MaxResetStreams: see DefaultMaxResetStreams.
	MaxResetStreams int
	// NoDefaultContentType leaves Content-Type out of responses that set
	// none (fasthttp.Server's field of the same name).
	NoDefaultContentType bool
	// Logger gets the handler's ctx.Logger() output; nil: none.
	Logger fasthttp.Logger
	// Now is the clock of the Date field of responses without one; nil:
	// time.Now.
	Now func() time.Time

	provisioned sync.Once
	streams     sync.Pool // *stream
	workers     workerPool
	dates       dateCache

	mu        sync.Mutex
	listeners []net.Listener // of Serve, closed by StartShutdown
	conns     map[*conn]struct{}
	shutdown  bool
	done      chan struct{} // closed by StartShutdown
	drained   chan struct{} // closed once shut down with no connection left
	drainOne  sync.Once
}

// ErrServerClosed is returned by Serve and ServeConn after Shutdown.
var ErrServerClosed = errors.New("h2: server closed")

// Provision fills the zero fields with their defaults.
func (s *Server) Provision() {
	if s.MaxConcurrentStreams == 0 {
		s.MaxConcurrentStreams = DefaultMaxConcurrentStreams
	}
	if s.StreamWindow == 0 {
		s.StreamWindow = DefaultStreamWindow
	}
	if s.ConnWindow == 0 {
		s.ConnWindow = DefaultConnWindow
	}
	if s.MaxHeaderListSize == 0 {
		s.MaxHeaderListSize = DefaultMaxHeaderListSize
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&s.ReadTimeout, DefaultReadTimeout)
	def(&s.IdleTimeout, DefaultIdleTimeout)
	def(&s.WriteTimeout, DefaultWriteTimeout)
	def(&s.BodyTimeout, DefaultBodyTimeout)
	def(&s.InlineLimit, DefaultInlineLimit)
	if s.MaxResetStreams == 0 {
		s.MaxResetStreams = DefaultMaxResetStreams
	}
	if s.Now == nil {
		s.Now = time.Now
	}
}

// Validate reports a configuration the server cannot serve with.
func (s *Server) Validate() error {
	switch {
	case s.Handler == nil:
		return errors.New("h2: Server.Handler is nil: set the request handler")
	case s.StreamWindow > maxWindow || s.ConnWindow > maxWindow:
		return fmt.Errorf("h2: windows of %d and %d octets: at most %d", s.StreamWindow, s.ConnWindow, maxWindow)
	case s.ConnWindow != 0 && s.ConnWindow < defaultWindow:
		return fmt.Errorf("h2: ConnWindow %d is below the protocol's initial %d", s.ConnWindow, defaultWindow)
	case s.MaxHeaderListSize != 0 && s.MaxHeaderListSize < 1024:
		return fmt.Errorf("h2: MaxHeaderListSize %d is too small for any request: at least 1024", s.MaxHeaderListSize)
	case s.MaxResetStreams < 0:
		return errors.New("h2: MaxResetStreams is negative")
	}
	return nil
}

func (s *Server) provision() {
	s.provisioned.Do(func() {
		s.Provision()
		s.streams.New = func() any { return newStream(s) }
		s.done = make(chan struct{})
		s.drained = make(chan struct{})
	})
}

// ServeConn serves HTTP/2 on c, a connection whose protocol is already
// HTTP/2 (ALPN "h2" after a TLS handshake, or prior knowledge), until the
// client or the server ends it; it closes c. It returns nil when the
// connection ended without a protocol error.
func (s *Server) ServeConn(c net.Conn) error {
	s.provision()
	if err := s.Validate(); err != nil {
		c.Close()
		return err
	}
	s.mu.Lock()
	closed := s.shutdown
	s.mu.Unlock()
	if closed {
		c.Close()
		return ErrServerClosed
	}
	sc := newConn(s, c)
	if !s.track(sc) {
		c.Close()
		return ErrServerClosed
	}
	defer s.untrack(sc)
	return sc.serve()
}

// Serve accepts connections from ln and serves each with ServeConn in a
// goroutine of its own until ln fails or Shutdown closes it.
func (s *Server) Serve(ln net.Listener) error {
	s.provision()
	if err := s.Validate(); err != nil {
		return err
	}
	s.mu.Lock()
	if s.shutdown {
		s.mu.Unlock()
		ln.Close()
		return ErrServerClosed
	}
	s.listeners = append(s.listeners, ln)
	s.mu.Unlock()
	for {
		c, err := ln.Accept()
		if err != nil {
			select {
			case <-s.done:
				return ErrServerClosed
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		go s.ServeConn(c)
	}
}

func (s *Server) track(c *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shutdown {
		return false
	}
	if s.conns == nil {
		s.conns = map[*conn]struct{}{}
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *Server) untrack(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	if s.shutdown && len(s.conns) == 0 {
		s.drainOne.Do(func() { close(s.drained) })
	}
	s.mu.Unlock()
}

// StartShutdown begins a graceful stop without waiting: Serve's
// listeners are closed, every connection gets GOAWAY naming the last
// stream it will answer and ends once those are done, and new
// connections are refused.
func (s *Server) StartShutdown() {
	s.provision()
	s.mu.Lock()
	if !s.shutdown {
		s.shutdown = true
		close(s.done)
	}
	if len(s.conns) == 0 {
		s.drainOne.Do(func() { close(s.drained) })
	}
	for _, ln := range s.listeners {
		ln.Close()
	}
	s.listeners = nil
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.goAway(ErrCodeNo)
	}
}

// Shutdown stops the server gracefully (StartShutdown), waits until every
// connection has ended or ctx is done, then closes those left. It returns
// ctx's error when it had to close some.
func (s *Server) Shutdown(ctx context.Context) error {
	s.StartShutdown()
	select {
	case <-s.drained:
		return nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	for c := range s.conns {
		c.nc.Close()
	}
	s.mu.Unlock()
	return ctx.Err()
}
