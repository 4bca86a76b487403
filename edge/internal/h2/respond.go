package h2

import (
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
)

// Field names the server writes itself.
var (
	nameDate          = []byte("date")
	nameContentLength = []byte("content-length")
	nameLink          = []byte("link")
)

// respond sends the response of s, whose handler has returned: one
// HEADERS, then as much of a body known in full as the windows take at
// once. The rest, or a streamed body, is sent by pump: on this worker, or
// on a worker it hands s to when called on the reader (onReader).
func (c *conn) respond(s *stream, onReader bool) {
	resp := &s.ctx.Response
	status := resp.StatusCode()
	head := s.ctx.IsHead() || resp.SkipBody
	bodyless := status == fasthttp.StatusNoContent || status == fasthttp.StatusNotModified
	streamed := resp.IsBodyStream() && !head && !bodyless
	var body []byte
	cl := -1 // the content-length to send; -1: none
	switch {
	case bodyless:
	case streamed:
		cl = max(resp.Header.ContentLength(), -1)
	case head:
		if !resp.IsBodyStream() {
			cl = len(resp.Body())
		}
		if cl <= 0 && resp.Header.ContentLength() >= 0 {
			cl = resp.Header.ContentLength()
		}
	default:
		body = resp.Body()
		cl = len(body)
	}
	trailers := len(resp.Header.PeekTrailerKeys()) > 0 && !head && !bodyless

	c.mu.Lock()
	if s.reset || c.closing || status < 200 {
		if status < 200 {
			c.resetStream(s, ErrCodeInternal) // an interim status cannot be the answer
		}
		c.ownerDone(s)
		c.mu.Unlock()
		c.kickWriter()
		return
	}
	end := !streamed && len(body) == 0 && !trailers
	c.writeHeaders(s, status, &resp.Header, cl, end)
	if end {
		c.localEnd(s)
		c.ownerDone(s)
		c.wrote(onReader)
		return
	}
	if !streamed {
		n := c.appendData(s, body, !trailers)
		s.sent = n
		if n == len(body) {
			if trailers {
				c.writeTrailers(s, &resp.Header)
			}
			c.localEnd(s)
			c.ownerDone(s)
			c.wrote(onReader)
			return
		}
	}
	s.task = taskPump
	if onReader {
		c.dirty = true
		c.mu.Unlock()
		c.srv.workers.run(s)
		return
	}
	c.mu.Unlock()
	c.kickWriter()
	c.pump(s)
}

// wrote unlocks mu after frames were queued, and wakes the writer (the
// reader does at the end of what it has read).
func (c *conn) wrote(onReader bool) {
	if onReader {
		c.dirty = true
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	c.kickWriter()
}

// ownerDone drops the responder's reference to s (mu held).
func (c *conn) ownerDone(s *stream) {
	if !s.owned {
		return
	}
	s.owned = false
	c.handlers--
	c.removeWaiter(s)
	if !s.clientRST && c.resetBudget < c.srv.MaxResetStreams {
		c.resetBudget++ // a stream answered in full earns back a reset
	}
	if s.refs--; s.refs == 0 {
		s.release()
	}
}

// localEnd records that END_STREAM is queued (mu held). A client still
// sending its body is told to stop (RST_STREAM NO_ERROR after the
// complete response, RFC 9113 §8.1).
func (c *conn) localEnd(s *stream) {
	s.localDone = true
	if s.remoteDone {
		c.removeStream(s)
		return
	}
	c.wbuf = appendRSTStream(c.wbuf, s.id, ErrCodeNo)
	c.closeStream(s)
}

// skipField reports the response fields not sent: connection-specific
// ones (RFC 9113 §8.2.2) and content-length, which is written from the
// body.
func skipField(name []byte) bool {
	switch string(name) {
	case "content-length", "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade":
		return true
	}
	return false
}

// indexPolicy says how a response field is encoded: fields whose values
// differ from one resource to the next stay out of the dynamic table
// (a browser seldom asks for one resource twice on a connection), so
// the fields every response repeats stay in it. Date is indexed: it
// changes once a second, and the responses of a page load share it.
func indexPolicy(name []byte) int {
	switch string(name) {
	case "age", "etag", "last-modified", "expires", "content-range", "location", "content-disposition",
		"x-request-id", "set-cookie":
		return indexNo
	}
	return indexYes
}

// writeHeaders queues the response's HEADERS (and CONTINUATION) frames
// (mu held). The Date field is the response's own, else the clock's.
func (c *conn) writeHeaders(s *stream, status int, h *fasthttp.ResponseHeader, cl int, end bool) {
	hb := c.enc.begin(c.hbuf[:0])
	hb = c.enc.status(hb, status)
	trailers := h.PeekTrailerKeys()
	date := false
	for k, v := range h.All() {
		if isTrailer(trailers, k) {
			continue
		}
		name := c.lower(k)
		if skipField(name) {
			continue
		}
		date = date || string(name) == "date"
		hb = c.enc.field(hb, name, v, indexPolicy(name))
	}
	if !date {
		hb = c.enc.field(hb, nameDate, c.srv.dates.get(c.srv.Now()), indexYes)
	}
	if cl >= 0 {
		var b [20]byte
		hb = c.enc.field(hb, nameContentLength, strconv.AppendInt(b[:0], int64(cl), 10), indexNo)
	}
	c.hbuf = hb
	c.appendBlock(s.id, hb, end)
}

// writeTrailers queues the trailer fields as a HEADERS frame that ends
// the stream (mu held).
func (c *conn) writeTrailers(s *stream, h *fasthttp.ResponseHeader) {
	hb := c.enc.begin(c.hbuf[:0])
	for _, k := range h.PeekTrailerKeys() {
		if v := h.PeekBytes(k); len(v) > 0 {
			hb = c.enc.field(hb, c.lower(k), v, indexNo)
		}
	}
	c.hbuf = hb
	c.appendBlock(s.id, hb, true)
}

func isTrailer(trailers [][]byte, k []byte) bool {
	for _, t := range trailers {
		if string(t) == string(k) {
			return true
		}
	}
	return false
}

// lower returns name in lowercase, in c.nameBuf (mu held).
func (c *conn) lower(name []byte) []byte {
	if cap(c.nameBuf) < len(name) {
		c.nameBuf = make([]byte, len(name), 2*len(name))
	}
	b := c.nameBuf[:len(name)]
	for i, ch := range name {
		b[i] = lowerASCII[ch]
	}
	return b
}

// appendBlock queues a header block as HEADERS and CONTINUATION frames
// of at most the peer's frame size (mu held).
func (c *conn) appendBlock(id uint32, hb []byte, end bool) {
	flags := uint8(0)
	if end {
		flags = flagEndStream
	}
	typ := uint8(frameHeaders)
	for {
		n := min(len(hb), c.peerFrame)
		f := flags
		if n == len(hb) {
			f |= flagEndHeaders
		}
		c.wbuf = append(appendFrameHeader(c.wbuf, n, typ, f, id), hb[:n]...)
		hb = hb[n:]
		if len(hb) == 0 {
			return
		}
		typ, flags = frameContinuation, 0
	}
}

// appendData queues as much of p as the windows and the buffer bound
// take, in DATA frames of at most the peer's frame size; the frame with
// p's last octet ends the stream when end is set, as does an empty frame
// for an empty p (mu held). It returns how much of p was queued.
func (c *conn) appendData(s *stream, p []byte, end bool) int {
	if len(p) == 0 {
		if end {
			c.wbuf = appendFrameHeader(c.wbuf, 0, frameData, flagEndStream, s.id)
		}
		return 0
	}
	sent := 0
	for len(p) > 0 {
		room := min(s.sendWindow, c.sendWindow, int64(maxBufferedData-c.queuedData), int64(c.peerFrame))
		if room <= 0 {
			break
		}
		n := min(len(p), int(room))
		flags := uint8(0)
		if end && n == len(p) {
			flags = flagEndStream
		}
		c.wbuf = append(appendFrameHeader(c.wbuf, n, frameData, flags, s.id), p[:n]...)
		s.sendWindow -= int64(n)
		c.sendWindow -= int64(n)
		c.queuedData += n
		p = p[n:]
		sent += n
	}
	return sent
}

// pump sends the rest of s's response body on a worker: the part of a
// body known in full that did not fit at once, or a streamed body, then
// its trailers. It gives up when the stream is reset, the connection
// ends, or the client gives no window for WriteTimeout.
func (c *conn) pump(s *stream) {
	resp := &s.ctx.Response
	trailers := len(resp.Header.PeekTrailerKeys()) > 0
	ok := true
	if resp.IsBodyStream() {
		ok = c.pumpStream(s, resp.BodyStream(), resp.Header.ContentLength(), trailers)
	} else {
		ok = c.send(s, resp.Body()[s.sent:], !trailers)
	}
	c.mu.Lock()
	if ok && trailers && !s.reset && !c.closing {
		c.writeTrailers(s, &resp.Header)
	}
	if ok && !s.reset && !c.closing {
		c.localEnd(s)
	}
	c.ownerDone(s)
	c.mu.Unlock()
	c.kickWriter()
}

// pumpStream copies a streamed body: cl octets when cl is known, else to
// its end.
func (c *conn) pumpStream(s *stream, r io.Reader, cl int, trailers bool) bool {
	bp := chunkPool.Get().(*[]byte)
	defer chunkPool.Put(bp)
	buf := *bp
	left := cl
	for {
		p := buf
		if cl >= 0 && left < len(p) {
			p = p[:left]
		}
		n, err := 0, error(nil)
		if len(p) > 0 {
			n, err = r.Read(p)
		} else {
			err = io.EOF
		}
		left -= n
		if err == io.EOF && cl >= 0 && left > 0 {
			err = io.ErrUnexpectedEOF // shorter than its content-length
		}
		last := err == io.EOF || cl >= 0 && left == 0
		if n > 0 || last {
			if !c.send(s, p[:n], last && !trailers) {
				return false
			}
		}
		if last {
			return true
		}
		if err != nil {
			c.mu.Lock()
			c.resetStream(s, ErrCodeInternal) // the body broke off: the client must not take it as whole
			c.mu.Unlock()
			return false
		}
	}
}

// chunkPool holds the buffers streamed bodies are read into.
var chunkPool = sync.Pool{New: func() any {
	b := make([]byte, defaultMaxFrame)
	return &b
}}

// send queues all of p on s (ending the stream after it when end is
// set), waiting for window and room as needed; false when the stream or
// connection ended first or the client gave no window for WriteTimeout.
func (c *conn) send(s *stream, p []byte, end bool) bool {
	var deadline time.Time
	for {
		c.mu.Lock()
		if s.reset || c.closing {
			c.mu.Unlock()
			return false
		}
		n := c.appendData(s, p, end)
		p = p[n:]
		done := len(p) == 0
		if !done {
			c.addWaiter(s)
		}
		c.mu.Unlock()
		if n > 0 || done {
			c.kickWriter()
			deadline = time.Time{}
		}
		if done {
			return true
		}
		if deadline.IsZero() && c.srv.WriteTimeout > 0 {
			deadline = time.Now().Add(c.srv.WriteTimeout)
		}
		if !s.wait(deadline) {
			c.mu.Lock()
			c.resetStream(s, ErrCodeCancel) // the client took nothing for WriteTimeout
			c.mu.Unlock()
			return false
		}
	}
}

// EarlyHints sends the Link fields of ctx.Response's header as a 103
// (Early Hints) response on ctx's stream, before the final response, and
// reports true; false when ctx is not a request of this package. Like
// fasthttp's RequestCtx.EarlyHints, the caller adds the fields before and
// removes them after.
func EarlyHints(ctx *fasthttp.RequestCtx) bool {
	sc, ok := ctx.Conn().(*streamConn)
	if !ok {
		return false
	}
	s := sc.s
	c := s.c
	links := ctx.Response.Header.PeekAll(fasthttp.HeaderLink)
	if len(links) == 0 {
		return true
	}
	c.mu.Lock()
	if s.reset || c.closing {
		c.mu.Unlock()
		return true
	}
	hb := c.enc.begin(c.hbuf[:0])
	hb = c.enc.status(hb, fasthttp.StatusEarlyHints)
	for _, l := range links {
		hb = c.enc.field(hb, nameLink, l, indexYes)
	}
	c.hbuf = hb
	c.appendBlock(s.id, hb, false)
	c.mu.Unlock()
	c.kickWriter()
	return true
}

// lowerASCII maps A-Z to a-z and every other byte to itself.
var lowerASCII = func() (t [256]byte) {
	for i := range t {
		t[i] = byte(i)
		if 'A' <= i && i <= 'Z' {
			t[i] += 'a' - 'A'
		}
	}
	return t
}()
