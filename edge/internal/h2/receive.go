package h2

import (
	"encoding/binary"
	"io"
	"time"

	"github.com/valyala/fasthttp"
)

// The frames a client sends, each checked as RFC 9113 §6 says: a
// connection error ends the connection (GOAWAY), a stream error resets
// the stream (RST_STREAM), and the connection goes on.

// unpad strips a padded frame's padding.
func unpad(fh frameHeader, p []byte) ([]byte, error) {
	if !fh.has(flagPadded) {
		return p, nil
	}
	if len(p) < 1 {
		return nil, ConnError{ErrCodeFrameSize, "padded frame without a pad length"}
	}
	n := int(p[0])
	if n >= len(p) {
		return nil, ConnError{ErrCodeProtocol, "padding as long as the frame"}
	}
	return p[1 : len(p)-n], nil
}

func (c *conn) onData(fh frameHeader, p []byte) error {
	id := fh.streamID
	if id == 0 {
		return ConnError{ErrCodeProtocol, "DATA on stream 0"}
	}
	data, err := unpad(fh, p)
	if err != nil {
		return err
	}
	length := int64(fh.length)
	c.mu.Lock()
	defer c.mu.Unlock()
	if length > c.recvWindow {
		return ConnError{ErrCodeFlowControl, "DATA past the connection window"}
	}
	c.recvWindow -= length
	s := c.lookup(id)
	if s == nil || s.remoteDone || length > s.recvWindow {
		c.creditConn(length) // delivered to nobody
		switch {
		case id > c.maxClientID:
			return ConnError{ErrCodeProtocol, "DATA on an idle stream"}
		case s == nil || s.remoteDone:
			return streamError{id, ErrCodeStreamClosed}
		}
		return streamError{id, ErrCodeFlowControl}
	}
	s.recvWindow -= length
	if pad := length - int64(len(data)); pad > 0 {
		c.consumed(s, int(pad)) // padding is not body: given back at once
	}
	s.received += int64(len(data))
	if s.declared >= 0 && s.received > s.declared {
		return streamError{id, ErrCodeProtocol} // more than its content-length
	}
	if max := c.srv.MaxRequestBodySize; max > 0 && s.received > max {
		s.bodyErr = fasthttp.ErrBodyTooLarge
		return streamError{id, ErrCodeCancel}
	}
	if len(data) > 0 {
		s.body = append(s.body, data...)
	}
	if fh.has(flagEndStream) {
		if s.declared >= 0 && s.received != s.declared {
			return streamError{id, ErrCodeProtocol} // less than its content-length
		}
		s.signal()
		c.remoteEnd(s)
		return nil
	}
	s.signal()
	return nil
}

// remoteEnd records the client's END_STREAM (mu held).
func (c *conn) remoteEnd(s *stream) {
	s.remoteDone = true
	if s.bodyErr == nil {
		s.bodyErr = io.EOF
	}
	if s.localDone {
		c.removeStream(s)
	}
}

func (c *conn) onHeaders(fh frameHeader, p []byte) error {
	id := fh.streamID
	if id == 0 {
		return ConnError{ErrCodeProtocol, "HEADERS on stream 0"}
	}
	if id%2 == 0 {
		return ConnError{ErrCodeProtocol, "HEADERS on an even stream: clients open odd ones"}
	}
	p, err := unpad(fh, p)
	if err != nil {
		return err
	}
	selfDep := false
	if fh.has(flagPriority) {
		if len(p) < 5 {
			return ConnError{ErrCodeFrameSize, "HEADERS priority fields cut short"}
		}
		selfDep = binary.BigEndian.Uint32(p)&maxStreamID == id
		p = p[5:]
	}
	c.block = headerBlock{active: true, streamID: id, endStream: fh.has(flagEndStream), selfDep: selfDep,
		buf: c.block.buf[:0]}
	if fh.has(flagEndHeaders) {
		c.block.active = false
		return c.endBlock(p)
	}
	if c.srv.ReadTimeout > 0 {
		c.setReadDeadline(time.Now().Add(c.srv.ReadTimeout)) // the block's bound
	}
	if len(p) > c.blockLimit() {
		return ConnError{ErrCodeEnhanceYourCalm, "header block too large"}
	}
	c.block.buf = append(c.block.buf, p...)
	return nil
}

// blockLimit bounds a header block's encoded size: twice the header list
// it may carry (Huffman coding can make a field longer), plus a frame.
func (c *conn) blockLimit() int { return 2*int(c.srv.MaxHeaderListSize) + defaultMaxFrame }

func (c *conn) onContinuation(fh frameHeader, p []byte) error {
	if !c.block.active || fh.streamID != c.block.streamID {
		return ConnError{ErrCodeProtocol, "CONTINUATION that continues no header block of its stream"}
	}
	c.block.conts++
	if c.block.conts > maxContinuations || len(c.block.buf)+len(p) > c.blockLimit() {
		return ConnError{ErrCodeEnhanceYourCalm, "header block too large or in too many CONTINUATION frames"}
	}
	c.block.buf = append(c.block.buf, p...)
	if !fh.has(flagEndHeaders) {
		return nil
	}
	c.block.active = false
	c.readDeadline = time.Time{} // the block's bound is over: set anew before the next read
	return c.endBlock(c.block.buf)
}

func (c *conn) onPriority(fh frameHeader, p []byte) error {
	if fh.streamID == 0 {
		return ConnError{ErrCodeProtocol, "PRIORITY on stream 0"}
	}
	if fh.length != 5 {
		return streamError{fh.streamID, ErrCodeFrameSize}
	}
	if binary.BigEndian.Uint32(p)&maxStreamID == fh.streamID {
		return streamError{fh.streamID, ErrCodeProtocol} // depends on itself
	}
	return nil // priorities are not used: every stream is served in turn
}

func (c *conn) onRSTStream(fh frameHeader, p []byte) error {
	if fh.length != 4 {
		return ConnError{ErrCodeFrameSize, "RST_STREAM not 4 octets"}
	}
	id := fh.streamID
	if id == 0 {
		return ConnError{ErrCodeProtocol, "RST_STREAM on stream 0"}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if id > c.maxClientID {
		return ConnError{ErrCodeProtocol, "RST_STREAM on an idle stream"}
	}
	s := c.lookup(id)
	if s == nil {
		return nil
	}
	c.resets[c.resetNext] = id
	c.resetNext = (c.resetNext + 1) % recentResets
	if s.owned {
		// Reset before its answer was done: what a rapid-reset attack
		// does at volume.
		c.resetBudget--
	}
	s.clientRST = true
	c.closeStream(s)
	if c.resetBudget < 0 {
		return ConnError{ErrCodeEnhanceYourCalm, "too many streams reset before their response"}
	}
	return nil
}

func (c *conn) onSettings(fh frameHeader, p []byte) error {
	if fh.streamID != 0 {
		return ConnError{ErrCodeProtocol, "SETTINGS on a stream"}
	}
	if fh.has(flagAck) {
		if fh.length != 0 {
			return ConnError{ErrCodeFrameSize, "SETTINGS ACK with a payload"}
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if !c.settingsAcked {
			// The client applies our initial window only now: streams it
			// opened before had the protocol's.
			c.settingsAcked = true
			delta := int64(c.srv.StreamWindow) - defaultWindow
			for _, s := range c.streams {
				s.recvWindow += delta
			}
		}
		return nil
	}
	if fh.length%settingsEntryBytes != 0 {
		return ConnError{ErrCodeFrameSize, "SETTINGS not a multiple of 6 octets"}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for ; len(p) > 0; p = p[settingsEntryBytes:] {
		id, v := binary.BigEndian.Uint16(p), binary.BigEndian.Uint32(p[2:])
		switch id {
		case settingHeaderTableSize:
			c.enc.setPeerTableSize(v)
		case settingEnablePush:
			if v > 1 {
				return ConnError{ErrCodeProtocol, "SETTINGS_ENABLE_PUSH not 0 or 1"}
			}
		case settingInitialWindowSize:
			if v > maxWindow {
				return ConnError{ErrCodeFlowControl, "SETTINGS_INITIAL_WINDOW_SIZE past 2^31-1"}
			}
			delta := int64(v) - c.peerWindow
			for _, s := range c.streams {
				if s.sendWindow += delta; s.sendWindow > maxWindow {
					return ConnError{ErrCodeFlowControl, "SETTINGS_INITIAL_WINDOW_SIZE overflows a stream window"}
				}
			}
			c.peerWindow = int64(v)
			c.wakeWaiters()
		case settingMaxFrameSize:
			if v < defaultMaxFrame || v > maxFrameSizeLimit {
				return ConnError{ErrCodeProtocol, "SETTINGS_MAX_FRAME_SIZE out of range"}
			}
			c.peerFrame = int(v)
		}
	}
	c.wbuf = appendFrameHeader(c.wbuf, 0, frameSettings, flagAck, 0)
	return c.controlQueued()
}

func (c *conn) onPing(fh frameHeader, p []byte) error {
	if fh.length != 8 {
		return ConnError{ErrCodeFrameSize, "PING not 8 octets"}
	}
	if fh.streamID != 0 {
		return ConnError{ErrCodeProtocol, "PING on a stream"}
	}
	if fh.has(flagAck) {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wbuf = append(appendFrameHeader(c.wbuf, 8, framePing, flagAck, 0), p...)
	return c.controlQueued()
}

// controlQueued ends a connection whose client leaves our answers to its
// frames unread while it sends more (mu held).
func (c *conn) controlQueued() error {
	c.dirty = true
	if len(c.wbuf) > maxQueuedBytes {
		return ConnError{ErrCodeEnhanceYourCalm, "the client does not read what it asks for"}
	}
	return nil
}

func (c *conn) onWindowUpdate(fh frameHeader, p []byte) error {
	if fh.length != 4 {
		return ConnError{ErrCodeFrameSize, "WINDOW_UPDATE not 4 octets"}
	}
	incr := int64(binary.BigEndian.Uint32(p) & maxStreamID)
	id := fh.streamID
	c.mu.Lock()
	defer c.mu.Unlock()
	if id == 0 {
		if incr == 0 {
			return ConnError{ErrCodeProtocol, "WINDOW_UPDATE of 0"}
		}
		if c.sendWindow += incr; c.sendWindow > maxWindow {
			return ConnError{ErrCodeFlowControl, "connection window past 2^31-1"}
		}
		c.wakeWaiters()
		return nil
	}
	if id > c.maxClientID {
		return ConnError{ErrCodeProtocol, "WINDOW_UPDATE on an idle stream"}
	}
	s := c.lookup(id)
	if s == nil {
		return nil // closed: it may have been on its way
	}
	if incr == 0 {
		return streamError{id, ErrCodeProtocol}
	}
	if s.sendWindow += incr; s.sendWindow > maxWindow {
		return streamError{id, ErrCodeFlowControl}
	}
	s.signal()
	return nil
}
