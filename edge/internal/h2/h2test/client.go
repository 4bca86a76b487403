// Package h2test is a minimal HTTP/2 client for tests and benchmarks of
// HTTP/2 servers: it sends one fixed request again and again on a
// connection, each on a new stream, and reads the response's status and
// body without allocating, so that an allocation count of a round trip
// is the server's alone. It decodes no header field but :status, which
// it reads from the first octet of the response's header block (the
// static table's indexed statuses: 200, 204, 206, 304, 400, 404, 500).
package h2test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"

	"golang.org/x/net/http2/hpack"
)

// Client is one HTTP/2 connection. It is not safe for concurrent use.
type Client struct {
	c         net.Conn
	br        *bufio.Reader
	first     []byte // HEADERS frame of the first request; its stream id is set per request
	req       []byte // HEADERS frame of the requests after it
	sentFirst bool
	data      []byte // DATA frames of the request body, if any
	next      uint32
	wbuf      []byte
	unacked   int // DATA octets not yet given back with WINDOW_UPDATE
	// NoIndexing: see SetRequest.
	NoIndexing bool
	Body       []byte // the last response's body
	Status     int    // the last response's :status (see RoundTripN)
}

// Errors of a round trip.
var (
	ErrReset  = errors.New("h2test: stream reset by the server")
	ErrGoAway = errors.New("h2test: GOAWAY from the server")
)

// NewClient sends the client preface on c, with windows so large that
// the client sends WINDOW_UPDATE only every GiB, and waits for the
// server's SETTINGS.
func NewClient(c net.Conn) (*Client, error) {
	cl := &Client{c: c, br: bufio.NewReaderSize(c, 64<<10), next: 1, Body: make([]byte, 0, 64<<10)}
	b := []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
	b = frame(b, 12, 0x4, 0, 0)
	b = append(b, 0, 4, 0x7f, 0xff, 0xff, 0xff) // INITIAL_WINDOW_SIZE 2^31-1
	b = append(b, 0, 2, 0, 0, 0, 0)             // ENABLE_PUSH 0
	b = frame(b, 4, 0x8, 0, 0)
	b = binary.BigEndian.AppendUint32(b, 1<<31-1-65535)
	if _, err := c.Write(b); err != nil {
		return nil, err
	}
	for {
		typ, flags, _, p, err := cl.readFrame()
		if err != nil {
			return nil, err
		}
		if typ == 0x4 && flags&1 == 0 {
			_ = p
			if _, err := c.Write(frame(nil, 0, 0x4, 1, 0)); err != nil {
				return nil, err
			}
			return cl, nil
		}
	}
}

func frame(dst []byte, length int, typ, flags uint8, id uint32) []byte {
	dst = append(dst, byte(length>>16), byte(length>>8), byte(length), typ, flags)
	return binary.BigEndian.AppendUint32(dst, id)
}

// SetRequest sets the request sent by RoundTrip: the pseudo-header fields,
// header fields as name, value pairs (names in lowercase), and a body
// (none when nil). Like a browser or h2load, the first request's fields
// enter the dynamic table and later requests name them by index; with
// NoIndexing set before, every request sends every field as a literal
// (Huffman-coded where shorter) that the table never keeps.
func (c *Client) SetRequest(method, authority, path string, body []byte, header ...string) {
	var blk bytes.Buffer
	enc := hpack.NewEncoder(&blk)
	if c.NoIndexing {
		enc.SetMaxDynamicTableSizeLimit(0)
		enc.WriteField(hpack.HeaderField{Name: ":method", Value: method}) // the size update owed goes here
		blk.Reset()
	}
	flags := uint8(0x4) // END_HEADERS
	if body == nil {
		flags |= 0x1 // END_STREAM
	}
	encode := func() []byte {
		blk.Reset()
		enc.WriteField(hpack.HeaderField{Name: ":method", Value: method})
		enc.WriteField(hpack.HeaderField{Name: ":scheme", Value: "https"})
		enc.WriteField(hpack.HeaderField{Name: ":authority", Value: authority})
		enc.WriteField(hpack.HeaderField{Name: ":path", Value: path})
		for i := 0; i+1 < len(header); i += 2 {
			enc.WriteField(hpack.HeaderField{Name: header[i], Value: header[i+1]})
		}
		return append(frame(nil, blk.Len(), 0x1, flags, 0), blk.Bytes()...)
	}
	c.first = encode()
	c.req = encode()
	c.sentFirst = false
	c.data = nil
	for len(body) > 0 || body != nil && c.data == nil {
		n := min(len(body), 16384)
		f := uint8(0)
		if n == len(body) {
			f = 0x1
		}
		c.data = append(frame(c.data, n, 0x0, f, 0), body[:n]...)
		body = body[n:]
		if n == 0 {
			break
		}
	}
}

// RoundTrip sends the request on a new stream and reads its response.
func (c *Client) RoundTrip() error { return c.RoundTripN(1) }

// RoundTripN sends the request n times at once, on n new streams in one
// write (as h2load -m n does), and reads the n responses. Body holds the
// octets of all of them; Status is the last status read, 0 when the
// responses' statuses differ.
func (c *Client) RoundTripN(n int) error {
	first := c.next
	w := c.wbuf[:0]
	for range n {
		id := c.next
		c.next += 2
		start := len(w)
		if c.sentFirst {
			w = append(w, c.req...)
		} else {
			w = append(w, c.first...)
			c.sentFirst = true
		}
		binary.BigEndian.PutUint32(w[start+5:start+9], id)
		for off := 0; off < len(c.data); {
			l := int(c.data[off])<<16 | int(c.data[off+1])<<8 | int(c.data[off+2])
			start := len(w)
			w = append(w, c.data[off:off+9+l]...)
			binary.BigEndian.PutUint32(w[start+5:start+9], id)
			off += 9 + l
		}
	}
	c.wbuf = w
	if _, err := c.c.Write(w); err != nil {
		return err
	}
	c.Body, c.Status = c.Body[:0], 0
	status := -1
	for done := 0; done < n; {
		typ, flags, sid, p, err := c.readFrame()
		if err != nil {
			return err
		}
		n := len(p)
		switch typ {
		case 0x7:
			return ErrGoAway
		case 0x6: // PING
			if flags&1 == 0 {
				ack := append(frame(c.wbuf[:0], 8, 0x6, 1, 0), p...)
				if _, err := c.c.Write(ack); err != nil {
					return err
				}
			}
			continue
		}
		if sid < first || sid >= c.next {
			continue
		}
		switch typ {
		case 0x3:
			return fmt.Errorf("%w: stream %d, error code %d", ErrReset, sid, binary.BigEndian.Uint32(p))
		case 0x1:
			if flags&0x8 != 0 { // padded
				p = p[1 : len(p)-int(p[0])]
			}
			if flags&0x20 != 0 {
				p = p[5:]
			}
			if len(p) > 0 {
				st := indexedStatus(p[0])
				if st == 0 {
					st = literalStatus(p)
				}
				if st >= 200 || st == 0 {
					if status == -1 || status == st {
						status = st
					} else {
						status = 0
					}
				}
			}
		case 0x0:
			if flags&0x8 != 0 {
				p = p[1 : len(p)-int(p[0])]
			}
			c.Body = append(c.Body, p...)
			if c.unacked += n; c.unacked > 1<<30 {
				// A connection window of 2^31-1 lasts 2 GiB: give it back.
				upd := binary.BigEndian.AppendUint32(frame(c.wbuf[:0], 4, 0x8, 0, 0), uint32(c.unacked))
				if _, err := c.c.Write(upd); err != nil {
					return err
				}
				c.unacked = 0
			}
		}
		if flags&1 != 0 && (typ == 0x0 || typ == 0x1) {
			done++
		}
	}
	c.Status = max(status, 0)
	return nil
}

func indexedStatus(b byte) int {
	switch b {
	case 0x88:
		return 200
	case 0x89:
		return 204
	case 0x8a:
		return 206
	case 0x8b:
		return 304
	case 0x8c:
		return 400
	case 0x8d:
		return 404
	case 0x8e:
		return 500
	}
	return 0
}

// literalStatus reads a :status sent as a literal with the static name
// index 8 and a plain 3-digit value, 0 otherwise.
func literalStatus(p []byte) int {
	if len(p) < 5 || p[0]&0xf0 != 0 && p[0]&0xc0 != 0x40 || p[0]&0x0f != 8 && p[0]&0x3f != 8 || p[1] != 3 {
		return 0
	}
	return int(p[2]-'0')*100 + int(p[3]-'0')*10 + int(p[4]-'0')
}

func (c *Client) readFrame() (typ, flags uint8, id uint32, payload []byte, err error) {
	h, err := c.br.Peek(9)
	if err != nil {
		return 0, 0, 0, nil, err
	}
	n := int(h[0])<<16 | int(h[1])<<8 | int(h[2])
	typ, flags, id = h[3], h[4], binary.BigEndian.Uint32(h[5:9])&(1<<31-1)
	if _, err = c.br.Discard(9); err != nil {
		return
	}
	if n > c.br.Size() {
		return 0, 0, 0, nil, fmt.Errorf("h2test: frame of %d octets", n)
	}
	p, err := c.br.Peek(n)
	if err != nil {
		return 0, 0, 0, nil, err
	}
	c.br.Discard(n)
	return typ, flags, id, p, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.c.Close() }

var _ io.Closer = (*Client)(nil)
