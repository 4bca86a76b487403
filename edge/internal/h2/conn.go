package h2

import (
	"bufio"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// conn is one HTTP/2 connection. The serving goroutine (serve) reads and
// processes frames; writeLoop writes what is queued in wbuf. Everything
// shared between them, the handlers and the workers is guarded by mu.
type conn struct {
	srv           *Server
	nc            net.Conn
	br            *bufio.Reader
	local, remote net.Addr

	// The reader's own.
	dec          decoder
	block        headerBlock
	req          requestState
	readDeadline time.Time
	frameLen     int         // of the frame being processed, its header included
	discarded    bool        // it was consumed already (runInline)
	poked        atomic.Bool // another goroutine moved the read deadline to now

	// An inline handler that runs past InlineLimit hands reading to
	// another goroutine (takeOver); the connection ends on whichever
	// goroutine reads last, and serve waits for it.
	inInline atomic.Bool
	watch    *time.Timer
	ended    chan struct{}
	result   error

	wake       chan struct{} // wakes writeLoop
	writerDone chan struct{}

	mu          sync.Mutex
	streams     []*stream // open and half-closed streams
	maxClientID uint32    // highest stream identifier the client opened
	handlers    int       // streams whose responder has not finished
	enc         encoder
	hbuf        []byte // header block being encoded
	nameBuf     []byte // lowercased field name
	wbuf        []byte // frames queued for writeLoop
	wspare      []byte
	queuedData  int   // DATA octets in wbuf
	sendWindow  int64 // connection flow-control window for our DATA
	recvWindow  int64 // what the client may still send on the connection
	recvUnack   int64
	peerWindow  int64   // SETTINGS_INITIAL_WINDOW_SIZE of the peer
	peerFrame   int     // SETTINGS_MAX_FRAME_SIZE of the peer
	waiters     *stream // responders waiting for window or buffer room
	dirty       bool    // frames were queued since the reader last woke the writer
	goAwaySent  bool
	// settingsAcked: the client acknowledged our SETTINGS, so it uses
	// our initial stream window.
	settingsAcked bool
	closing       bool // the reader has ended: nothing more is queued
	broken        bool // a write failed
	resetBudget   int
	resets        [recentResets]uint32 // streams the client reset, recent first
	resetNext     int
	opened        openedIDs
}

// headerBlock is a header block being assembled from HEADERS and
// CONTINUATION frames.
type headerBlock struct {
	active    bool
	streamID  uint32
	endStream bool
	selfDep   bool // the HEADERS frame made the stream depend on itself
	buf       []byte
	conts     int
}

var (
	readerPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, readBufferSize) }}
)

// finishGrace is how long the writer gets to flush an ended connection.
const finishGrace = time.Second

// readBufferSize holds a frame of the largest size we allow and then some.
const readBufferSize = frameHeaderLen + defaultMaxFrame + 4<<10

func newConn(s *Server, nc net.Conn) *conn {
	br := readerPool.Get().(*bufio.Reader)
	br.Reset(nc)
	c := &conn{srv: s, nc: nc, br: br, local: nc.LocalAddr(), remote: nc.RemoteAddr(),
		wake: make(chan struct{}, 1), writerDone: make(chan struct{}), ended: make(chan struct{}),
		sendWindow: defaultWindow, recvWindow: int64(s.ConnWindow), peerWindow: defaultWindow,
		peerFrame: defaultMaxFrame, resetBudget: s.MaxResetStreams}
	c.dec.init()
	c.enc.init()
	c.hbuf = make([]byte, 0, 1024)
	c.wbuf = make([]byte, 0, 4<<10) // both grow to what is written at once
	c.wspare = make([]byte, 0, 4<<10)
	return c
}

// serve runs the connection until it ends.
func (c *conn) serve() error {
	go c.writeLoop()
	c.watch = time.AfterFunc(time.Hour, c.takeOver)
	c.watch.Stop()
	err := c.start()
	if err == nil {
		err = c.readLoop()
	}
	if err == errMoved {
		<-c.ended // another goroutine reads now, and ends the connection
		return c.result
	}
	c.end(err)
	return c.result
}

// start sends our SETTINGS and takes the client's preface and SETTINGS.
func (c *conn) start() error {
	// Our SETTINGS go first, without waiting for the client's preface.
	c.mu.Lock()
	w := appendFrameHeader(c.wbuf, 3*settingsEntryBytes, frameSettings, 0, 0)
	w = appendSetting(w, settingMaxConcurrentStreams, c.srv.MaxConcurrentStreams)
	w = appendSetting(w, settingInitialWindowSize, c.srv.StreamWindow)
	w = appendSetting(w, settingMaxHeaderListSize, c.srv.MaxHeaderListSize)
	if c.srv.ConnWindow > defaultWindow {
		w = appendWindowUpdate(w, 0, c.srv.ConnWindow-defaultWindow)
	}
	c.wbuf = w
	c.mu.Unlock()
	c.kickWriter()

	if c.srv.ReadTimeout > 0 {
		c.setReadDeadline(time.Now().Add(c.srv.ReadTimeout))
	}
	p, err := c.br.Peek(len(clientPreface))
	if err != nil {
		return errDone
	}
	if string(p) != clientPreface {
		return ConnError{ErrCodeProtocol, "invalid connection preface"}
	}
	c.br.Discard(len(clientPreface))
	fh, payload, err := c.readFrame(true)
	if err != nil {
		return err
	}
	if fh.typ != frameSettings || fh.has(flagAck) {
		return ConnError{ErrCodeProtocol, "the first frame is not SETTINGS"}
	}
	err = c.process(fh, payload)
	c.br.Discard(frameHeaderLen + int(fh.length))
	return err
}

// readLoop reads and processes frames until the connection ends, or
// until reading moved to another goroutine while this one ran a handler
// (errMoved).
func (c *conn) readLoop() error {
	for {
		fh, payload, err := c.readFrame(false)
		if err != nil {
			return err
		}
		c.frameLen = frameHeaderLen + int(fh.length)
		if err := c.process(fh, payload); err != nil {
			if err == errMoved {
				return err
			}
			var se streamError
			if !errors.As(err, &se) {
				return err
			}
			c.mu.Lock()
			c.resetID(se.id, se.code)
			c.mu.Unlock()
		}
		if c.discarded {
			c.discarded = false
		} else {
			c.br.Discard(c.frameLen)
		}
	}
}

// errMoved: the goroutine that ran a handler inline no longer reads the
// connection (takeOver).
var errMoved = errors.New("h2: reading moved to another goroutine")

// takeOver runs when a handler run inline has taken InlineLimit: another
// goroutine goes on reading the connection, so its other streams are not
// held up; the handler's goroutine answers its stream and leaves.
func (c *conn) takeOver() {
	if c.inInline.CompareAndSwap(true, false) {
		go c.readOn()
	}
}

// readOn reads the connection after a takeOver, from the frame after
// the one whose handler was too slow (runInline consumed it).
func (c *conn) readOn() {
	c.discarded = false
	if err := c.readLoop(); err != errMoved {
		c.end(err)
	}
}

// end ends the connection (finish) and lets serve return.
func (c *conn) end(err error) {
	c.watch.Stop()
	c.result = c.finish(err)
	close(c.ended)
}

// runInline runs the handler of s on the reading goroutine, the frame
// that ended its header block already consumed. It reports false when
// the handler took so long that reading moved to another goroutine:
// the caller then reads no more.
func (c *conn) runInline(s *stream) bool {
	c.br.Discard(c.frameLen)
	c.discarded = true
	if c.srv.InlineLimit <= 0 {
		c.srv.Handler(&s.ctx)
		return true
	}
	c.inInline.Store(true)
	c.watch.Reset(c.srv.InlineLimit)
	c.srv.Handler(&s.ctx)
	c.watch.Stop()
	return c.inInline.CompareAndSwap(true, false)
}

// readFrame returns the next frame, its payload valid until the next
// call. Before it blocks it wakes the writer and sets the read deadline.
func (c *conn) readFrame(preface bool) (frameHeader, []byte, error) {
	for {
		if n := c.br.Buffered(); n < frameHeaderLen || n < frameHeaderLen+int(peekLength(c.br)) {
			if err := c.beforeRead(preface); err != nil {
				return frameHeader{}, nil, err
			}
		}
		hb, err := c.br.Peek(frameHeaderLen)
		if err == nil {
			fh := parseFrameHeader(hb)
			if fh.length > defaultMaxFrame {
				return fh, nil, ConnError{ErrCodeFrameSize, "frame larger than SETTINGS_MAX_FRAME_SIZE"}
			}
			var p []byte
			if p, err = c.br.Peek(frameHeaderLen + int(fh.length)); err == nil {
				return fh, p[frameHeaderLen:], nil
			}
		}
		if again, err := c.readFailed(err, preface); !again {
			return frameHeader{}, nil, err
		}
	}
}

// peekLength is the length of the buffered frame header; 0 when there is
// none.
func peekLength(br *bufio.Reader) uint32 {
	if br.Buffered() < 3 {
		return 0
	}
	b, _ := br.Peek(3)
	return uint32(b[0])<<16 | uint32(b[1])<<8 | uint32(b[2])
}

// errDone ends the connection cleanly.
var errDone = errors.New("h2: connection done")

// beforeRead runs when the next read will wait for the client: it hands
// what is queued to the writer, ends a connection that is going away
// with nothing open, and sets the read deadline.
func (c *conn) beforeRead(preface bool) error {
	c.mu.Lock()
	done := c.goAwaySent && len(c.streams) == 0
	dirty := c.dirty
	c.dirty = false
	c.mu.Unlock()
	if dirty {
		c.kickWriter()
	}
	if done {
		return errDone
	}
	now := time.Now()
	var want time.Time
	switch {
	case preface || c.block.active:
		return nil // the deadline set when it began holds
	case c.srv.IdleTimeout > 0:
		want = now.Add(c.srv.IdleTimeout)
		// Moved only when it lags much: a busy connection seldom touches
		// its timer.
		if lag := want.Sub(c.readDeadline); !c.readDeadline.IsZero() && lag >= 0 && lag < c.srv.IdleTimeout/16 {
			want = c.readDeadline
		}
	}
	if !want.Equal(c.readDeadline) {
		c.setReadDeadline(want)
	}
	if c.poked.Load() {
		c.nc.SetReadDeadline(now) // a poke the line above may have undone
	}
	return nil
}

func (c *conn) setReadDeadline(t time.Time) {
	c.readDeadline = t
	c.nc.SetReadDeadline(t)
}

// poke wakes the reader out of a blocked read (it looks at the
// connection's state again).
func (c *conn) poke() {
	c.poked.Store(true)
	c.nc.SetReadDeadline(time.Now())
}

// readFailed decides on a failed read: a poke or an idle deadline on a
// connection with open streams reads again; the idle timeout ends the
// connection (GOAWAY), as does anything else.
func (c *conn) readFailed(err error, preface bool) (again bool, _ error) {
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		return false, errDone // the client closed the connection, or it broke
	}
	c.readDeadline = time.Time{}
	if c.poked.Swap(false) {
		return true, nil
	}
	if preface || c.block.active {
		return false, errDone // too slow: a preface or a header block past ReadTimeout
	}
	c.mu.Lock()
	idle := len(c.streams) == 0
	c.mu.Unlock()
	if !idle {
		return true, nil
	}
	return false, errDone
}

// process handles one frame.
func (c *conn) process(fh frameHeader, p []byte) error {
	if c.block.active && fh.typ != frameContinuation {
		return ConnError{ErrCodeProtocol, "a frame other than CONTINUATION inside a header block"}
	}
	switch fh.typ {
	case frameData:
		return c.onData(fh, p)
	case frameHeaders:
		return c.onHeaders(fh, p)
	case framePriority:
		return c.onPriority(fh, p)
	case frameRSTStream:
		return c.onRSTStream(fh, p)
	case frameSettings:
		return c.onSettings(fh, p)
	case framePushPromise:
		return ConnError{ErrCodeProtocol, "PUSH_PROMISE from a client"}
	case framePing:
		return c.onPing(fh, p)
	case frameGoAway:
		if fh.streamID != 0 {
			return ConnError{ErrCodeProtocol, "GOAWAY on a stream"}
		}
		if fh.length < 8 {
			return ConnError{ErrCodeFrameSize, "GOAWAY shorter than 8 octets"}
		}
		return nil // the client opens no more streams; those open finish
	case frameWindowUpdate:
		return c.onWindowUpdate(fh, p)
	case frameContinuation:
		return c.onContinuation(fh, p)
	}
	return nil // unknown frame types are ignored (RFC 9113 §4.1)
}

// lookup returns the open stream id (mu held).
func (c *conn) lookup(id uint32) *stream {
	for _, s := range c.streams {
		if s.id == id {
			return s
		}
	}
	return nil
}

// resetID ends stream id with RST_STREAM (mu held).
func (c *conn) resetID(id uint32, code ErrCode) {
	if s := c.lookup(id); s != nil {
		c.resetStream(s, code)
		return
	}
	c.wbuf = appendRSTStream(c.wbuf, id, code)
	c.dirty = true
}

// resetStream ends s with RST_STREAM code (mu held).
func (c *conn) resetStream(s *stream, code ErrCode) {
	if s.reset || c.closing {
		return
	}
	c.wbuf = appendRSTStream(c.wbuf, s.id, code)
	c.dirty = true
	c.closeStream(s)
	c.kickWriter()
}

// closeStream marks s reset and takes it out of the table (mu held).
func (c *conn) closeStream(s *stream) {
	s.reset = true
	if s.bodyErr == nil {
		s.bodyErr = ErrStreamReset
	}
	if n := len(s.body) - s.bodyOff; n > 0 {
		c.creditConn(int64(n)) // unread: the connection window gets it back
		s.body, s.bodyOff = s.body[:0], 0
	}
	s.signal()
	c.removeStream(s)
}

// removeStream takes s out of the table: the stream is closed (mu held).
// The stream goes back to the pool when its responder is done too.
func (c *conn) removeStream(s *stream) {
	if s.slot < 0 {
		return
	}
	last := len(c.streams) - 1
	c.streams[s.slot] = c.streams[last]
	c.streams[s.slot].slot = s.slot
	c.streams[last] = nil
	c.streams = c.streams[:last]
	s.slot = -1
	if last == 0 && c.goAwaySent {
		c.poke()
	}
	if s.refs--; s.refs == 0 {
		s.release()
	}
}

// creditConn gives n octets of the connection window back (mu held).
func (c *conn) creditConn(n int64) {
	c.recvUnack += n
	if c.recvUnack >= int64(c.srv.ConnWindow)/4 && !c.closing {
		c.wbuf = appendWindowUpdate(c.wbuf, 0, uint32(c.recvUnack))
		c.recvWindow += c.recvUnack
		c.recvUnack = 0
		c.dirty = true
	}
}

// consumed gives n octets the handler took back to both windows, with
// WINDOW_UPDATE once a quarter of a window is owed (mu held). It reports
// whether a frame was queued.
func (c *conn) consumed(s *stream, n int) bool {
	queued := len(c.wbuf)
	c.creditConn(int64(n))
	if !s.remoteDone && !s.reset && !c.closing {
		s.recvUnack += int64(n)
		if s.recvUnack >= int64(c.srv.StreamWindow)/4 {
			c.wbuf = appendWindowUpdate(c.wbuf, s.id, uint32(s.recvUnack))
			s.recvWindow += s.recvUnack
			s.recvUnack = 0
			c.dirty = true
		}
	}
	return len(c.wbuf) != queued
}

// goAway sends GOAWAY: the streams up to the highest opened are still
// answered, later ones ignored; the connection ends once none is open.
func (c *conn) goAway(code ErrCode) {
	c.mu.Lock()
	if c.goAwaySent || c.closing {
		c.mu.Unlock()
		return
	}
	c.goAwaySent = true
	c.wbuf = appendGoAway(c.wbuf, c.maxClientID, code)
	idle := len(c.streams) == 0
	c.mu.Unlock()
	c.kickWriter()
	if idle {
		c.poke()
	}
}

// finish ends the connection after the reader has stopped: a connection
// error's GOAWAY is sent, every stream is reset for its responder, the
// writer flushes, and the connection is closed.
func (c *conn) finish(err error) error {
	code := ErrCodeNo
	var ce ConnError
	isConnErr := errors.As(err, &ce)
	if isConnErr {
		code = ce.Code
	}
	c.mu.Lock()
	if isConnErr || !c.goAwaySent {
		c.wbuf = appendGoAway(c.wbuf, c.maxClientID, code)
		c.goAwaySent = true
	}
	c.closing = true
	for len(c.streams) > 0 {
		c.closeStream(c.streams[len(c.streams)-1])
	}
	c.wakeWaiters()
	c.mu.Unlock()
	c.kickWriter()
	// The writer flushes what is queued (a GOAWAY last), given a moment:
	// a client that reads nothing does not hold the connection.
	t := time.NewTimer(finishGrace)
	select {
	case <-c.writerDone:
	case <-t.C:
		c.nc.Close()
		<-c.writerDone
	}
	t.Stop()
	c.nc.Close()
	c.br.Reset(nil)
	readerPool.Put(c.br)
	c.br = nil
	if isConnErr || errors.Is(err, errDone) {
		if isConnErr {
			return err
		}
		return nil
	}
	return err
}
