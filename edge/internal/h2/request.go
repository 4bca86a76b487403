package h2

import (
	"io"
	"time"

	"github.com/valyala/fasthttp"
)

// requestState is what the decoding of one header block has seen
// (RFC 9113 §8.3.1 pseudo-header fields, §8.2 field validity).
type requestState struct {
	s         *stream // nil: the block is decoded and dropped
	trailers  bool
	size      uint32
	tooLarge  bool
	malformed bool
	regular   bool // a regular field was seen: no pseudo-header after it
	method    bool
	path      bool
	scheme    bool
	authority bool
	connect   bool
	auth      []byte
	cl        int64 // content-length, -1 when none
}

// field takes one decoded field of the block (fieldSink).
func (c *conn) field(name, value []byte) {
	r := &c.req
	r.size += uint32(len(name)+len(value)) + entryOverhead
	if r.size > c.srv.MaxHeaderListSize {
		r.tooLarge = true
	}
	if r.tooLarge || r.malformed {
		return
	}
	if len(name) == 0 {
		r.malformed = true
		return
	}
	if name[0] == ':' {
		r.pseudo(name, value)
		return
	}
	r.regular = true
	if !validName(name) || !validValue(value) {
		r.malformed = true
		return
	}
	switch string(name) {
	case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade":
		r.malformed = true // connection-specific (§8.2.2)
		return
	case "te":
		if string(value) != "trailers" {
			r.malformed = true
			return
		}
	case "content-length":
		n := parseLength(value)
		if n < 0 || r.cl >= 0 && r.cl != n {
			r.malformed = true
			return
		}
		r.cl = n
	case "host":
		if r.authority {
			if !equalFold(value, r.auth) {
				r.malformed = true // names another host than :authority (§8.3.1)
			}
			return
		}
	}
	if r.s != nil && !r.trailers {
		r.s.ctx.Request.Header.AddBytesKV(name, value)
	}
}

func (r *requestState) pseudo(name, value []byte) {
	if r.regular || r.trailers {
		r.malformed = true
		return
	}
	var seen *bool
	switch string(name) {
	case ":method":
		seen = &r.method
		r.connect = string(value) == fasthttp.MethodConnect
		if !isToken(value) {
			r.malformed = true
		} else if r.s != nil {
			r.s.ctx.Request.Header.SetMethodBytes(value)
		}
	case ":path":
		seen = &r.path
		if len(value) == 0 || value[0] != '/' && string(value) != "*" || !validValue(value) {
			r.malformed = true
		} else if r.s != nil {
			r.s.ctx.Request.Header.SetRequestURIBytes(value)
		}
	case ":scheme":
		seen = &r.scheme
		if len(value) == 0 {
			r.malformed = true
		}
	case ":authority":
		seen = &r.authority
		if !validValue(value) {
			r.malformed = true
		}
		r.auth = append(r.auth[:0], value...)
		if r.s != nil {
			r.s.ctx.Request.Header.SetHostBytes(value)
		}
	default:
		r.malformed = true // unknown, or a response's :status
		return
	}
	if *seen {
		r.malformed = true // repeated
	}
	*seen = true
}

// endBlock handles a complete header block of stream b.streamID.
func (c *conn) endBlock(block []byte) error {
	b := &c.block
	id := b.streamID
	c.mu.Lock()
	if s := c.lookup(id); s != nil || id <= c.maxClientID {
		// Trailers, or a HEADERS on a stream the client ended or closed.
		recent := s == nil && c.recentlyReset(id)
		skipped := s == nil && !c.opened.wasOpened(id)
		c.mu.Unlock()
		c.req = requestState{trailers: true, cl: -1, auth: c.req.auth[:0]}
		if err := c.dec.decode(block, c); err != nil {
			return ConnError{ErrCodeCompression, err.Error()}
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if s == nil {
			if skipped {
				return ConnError{ErrCodeProtocol, "HEADERS on a stream identifier below one already used"}
			}
			if recent {
				return streamError{id, ErrCodeStreamClosed}
			}
			return ConnError{ErrCodeStreamClosed, "HEADERS on a closed stream"}
		}
		if s = c.lookup(id); s == nil || s.remoteDone {
			return streamError{id, ErrCodeStreamClosed}
		}
		if !b.endStream || b.selfDep || c.req.malformed || s.declared >= 0 && s.received != s.declared {
			return streamError{id, ErrCodeProtocol} // trailers end the stream, and its body
		}
		s.signal()
		c.remoteEnd(s) // the trailers themselves are dropped
		return nil
	}
	c.maxClientID = id
	c.opened.open(id)
	refused := len(c.streams) >= int(c.srv.MaxConcurrentStreams) || c.handlers >= int(c.srv.MaxConcurrentStreams)
	ignore := c.goAwaySent
	c.mu.Unlock()

	var s *stream
	if !refused && !ignore {
		s = c.srv.streams.Get().(*stream)
		s.c, s.id, s.declared = c, id, -1
	}
	c.req = requestState{s: s, cl: -1, auth: c.req.auth[:0]}
	if err := c.dec.decode(block, c); err != nil {
		if s != nil {
			s.release()
		}
		return ConnError{ErrCodeCompression, err.Error()}
	}
	if s == nil {
		if refused {
			// A client that stays within MaxConcurrentStreams is refused
			// only after resetting streams whose handlers still run: it
			// spends the reset budget too.
			c.mu.Lock()
			c.resetBudget--
			calm := c.resetBudget < 0
			c.mu.Unlock()
			if calm {
				return ConnError{ErrCodeEnhanceYourCalm, "too many streams reset or refused"}
			}
			return streamError{id, ErrCodeRefusedStream}
		}
		return nil // after GOAWAY: ignored
	}
	r := &c.req
	if !r.tooLarge && (b.selfDep || r.malformed || !r.method || !r.connect && (!r.scheme || !r.path) ||
		r.connect && (!r.authority || r.scheme || r.path) || b.endStream && r.cl > 0) {
		s.release()
		return streamError{id, ErrCodeProtocol}
	}

	c.mu.Lock()
	s.slot = len(c.streams)
	c.streams = append(c.streams, s)
	s.refs, s.owned = 2, true
	c.handlers++
	s.sendWindow, s.recvWindow, s.declared = c.peerWindow, int64(c.srv.StreamWindow), r.cl
	if !c.settingsAcked {
		s.recvWindow = defaultWindow
	}
	if b.endStream {
		s.remoteDone, s.bodyErr = true, io.EOF
	}
	c.mu.Unlock()
	if !b.endStream && r.cl != 0 {
		s.start = time.Now()
		s.ctx.Request.SetBodyStream(&s.br, int(r.cl))
		s.probe = r.cl < 0
	}
	resp := &s.ctx.Response
	resp.Header.SetNoDefaultContentType(c.srv.NoDefaultContentType)
	switch {
	case r.tooLarge:
		resp.SetStatusCode(fasthttp.StatusRequestHeaderFieldsTooLarge)
		resp.SetBodyString("431 request header fields too large\n")
	case r.connect:
		resp.SetStatusCode(fasthttp.StatusMethodNotAllowed)
		resp.SetBodyString("405 method not allowed: CONNECT is not served\n")
	case b.endStream && c.srv.Inline != nil && c.srv.Inline(&s.ctx):
		if !c.runInline(s) {
			c.respond(s, false)
			return errMoved
		}
	default:
		s.task = taskHandle
		c.srv.workers.run(s)
		return nil
	}
	c.respond(s, true)
	return nil
}

// tokenChars are the octets of an RFC 9110 token.
var tokenChars = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
		t[c-32] = true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()

func isToken(b []byte) bool {
	for _, c := range b {
		if !tokenChars[c] {
			return false
		}
	}
	return len(b) > 0
}

// validName: a token without uppercase (RFC 9113 §8.2.1).
func validName(b []byte) bool {
	for _, c := range b {
		if !tokenChars[c] || 'A' <= c && c <= 'Z' {
			return false
		}
	}
	return len(b) > 0
}

// validValue: no control octet but HTAB, no leading or trailing
// whitespace (RFC 9113 §8.2.1, RFC 9110 §5.5).
func validValue(b []byte) bool {
	for _, c := range b {
		if c < 0x20 && c != '\t' || c == 0x7f {
			return false
		}
	}
	if n := len(b); n > 0 && (b[0] == ' ' || b[0] == '\t' || b[n-1] == ' ' || b[n-1] == '\t') {
		return false
	}
	return true
}

// parseLength parses a content-length value; -1 when it is not one.
func parseLength(b []byte) int64 {
	if len(b) == 0 || len(b) > 18 {
		return -1
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return -1
		}
		n = n*10 + int64(c-'0')
	}
	return n
}

func equalFold(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 32
		}
		if 'A' <= y && y <= 'Z' {
			y += 32
		}
		if x != y {
			return false
		}
	}
	return true
}
