package provider

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// MaxEventBytes bounds one server-sent event from an upstream; a longer one
// is a protocol error rather than unbounded memory.
const MaxEventBytes = 1 << 20

// errEventTooLarge is returned for an event over MaxEventBytes.
var errEventTooLarge = errors.New("server-sent event larger than 1 MiB")

// SSEReader reads server-sent events (the text/event-stream format) from an
// upstream body. The slices it returns are valid until the next call.
type SSEReader struct {
	r     *bufio.Reader
	data  []byte
	event []byte
	line  []byte
}

// NewSSEReader reads events from r.
func NewSSEReader(r io.Reader) *SSEReader {
	return &SSEReader{r: bufio.NewReaderSize(r, 16<<10)}
}

// Next returns the next event's type (empty when unnamed) and data (the data
// lines joined by newlines). It returns io.EOF at a clean end of input and
// io.ErrUnexpectedEOF when the input ends inside an event.
func (s *SSEReader) Next() (event, data []byte, err error) {
	s.data, s.event = s.data[:0], s.event[:0]
	seen := false
	for {
		line, err := s.readLine()
		if err != nil {
			if err == io.EOF && seen {
				return nil, nil, io.ErrUnexpectedEOF
			}
			return nil, nil, err
		}
		if len(line) == 0 {
			if !seen {
				continue
			}
			if len(s.data) > 0 {
				s.data = s.data[:len(s.data)-1]
			}
			return s.event, s.data, nil
		}
		if line[0] == ':' {
			continue
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "data":
			seen = true
			if len(s.data)+len(value)+1 > MaxEventBytes {
				return nil, nil, errEventTooLarge
			}
			s.data = append(s.data, value...)
			s.data = append(s.data, '\n')
		case "event":
			seen = true
			s.event = append(s.event[:0], value...)
		}
	}
}

// Ready tells whether a whole event is already buffered, so that the next
// call of Next returns without waiting for the network.
func (s *SSEReader) Ready() bool {
	n := s.r.Buffered()
	if n == 0 {
		return false
	}
	b, _ := s.r.Peek(n)
	return bytes.Contains(b, []byte("\n\n")) || bytes.Contains(b, []byte("\r\n\r\n")) || bytes.Contains(b, []byte("\r\r"))
}

// readLine returns one line without its ending (\n or \r\n).
func (s *SSEReader) readLine() ([]byte, error) {
	s.line = s.line[:0]
	for {
		frag, err := s.r.ReadSlice('\n')
		if len(s.line)+len(frag) > MaxEventBytes {
			return nil, errEventTooLarge
		}
		if err == nil {
			if len(s.line) == 0 {
				return trimEOL(frag), nil
			}
			s.line = append(s.line, frag...)
			return trimEOL(s.line), nil
		}
		s.line = append(s.line, frag...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF && len(s.line) > 0 {
			// A last line without its newline never completes an event.
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
}

func trimEOL(b []byte) []byte {
	b = b[:len(b)-1]
	if len(b) > 0 && b[len(b)-1] == '\r' {
		b = b[:len(b)-1]
	}
	return b
}
