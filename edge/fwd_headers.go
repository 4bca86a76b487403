package edge

import (
	"bytes"

	"github.com/valyala/fasthttp"
)

// Header filtering on the forwarding path in one pass. Deleting each
// hop-by-hop name in turn (DelBytes: a copy and normalisation of the name,
// then a scan of every field, ten times per request and seven per
// response) was most of the cost of building the outgoing request; the
// fields are now scanned once, a switch on the name's length picking the
// few candidates, and only the fields actually present are deleted.

// maxDropped bounds the fields one pass records for deletion; a message
// with more falls back to deleting every hop-by-hop name.
const maxDropped = 8

// hopField reports whether name is a hop-by-hop field (RFC 9110 §7.6.1),
// ignoring ASCII case; with expect, Expect too (the edge answers
// 100-continue itself).
func hopField(name []byte, expect bool) bool {
	switch len(name) {
	case 2:
		return equalFoldASCII(name, "te")
	case 6:
		return expect && equalFoldASCII(name, "expect")
	case 7:
		return equalFoldASCII(name, "trailer") || equalFoldASCII(name, "upgrade")
	case 10:
		return equalFoldASCII(name, "connection") || equalFoldASCII(name, "keep-alive")
	case 16:
		return equalFoldASCII(name, "proxy-connection")
	case 17:
		return equalFoldASCII(name, "transfer-encoding")
	case 18:
		return equalFoldASCII(name, "proxy-authenticate")
	case 19:
		return equalFoldASCII(name, "proxy-authorization")
	}
	return false
}

// listedIn reports whether name is one of the comma-separated tokens of a
// Connection header value (RFC 9110 §7.6.1), ignoring ASCII case.
func listedIn(conn, name []byte) bool {
	for len(conn) > 0 {
		i := 0
		for i < len(conn) && conn[i] != ',' {
			i++
		}
		if t := trimSpace(conn[:i]); foldEqual(t, name) {
			return true
		}
		conn = conn[min(i+1, len(conn)):]
	}
	return false
}

// connectionOptions returns the value of a Connection header holding
// options beyond close and keep-alive (the names of other hop-by-hop
// fields), nil for none.
func connectionOptions(conn []byte) []byte {
	for v := conn; len(v) > 0; {
		i := 0
		for i < len(v) && v[i] != ',' {
			i++
		}
		if t := trimSpace(v[:i]); len(t) > 0 && !equalFoldASCII(t, "close") && !equalFoldASCII(t, "keep-alive") {
			return conn
		}
		v = v[min(i+1, len(v)):]
	}
	return nil
}

// copyRequestHeader copies in's header to out without hop-by-hop fields,
// those in's Connection header names, and Expect. The field names are
// read from the header block as received when there is one (HTTP/1.1:
// no cookie parsing, which fasthttp's iterator would do), else from the
// parsed header (the HTTP/2 and HTTP/3 bridges). It does not allocate.
func copyRequestHeader(out, in *fasthttp.RequestHeader) {
	in.CopyTo(out)
	conn := connectionOptions(in.PeekBytes(hdrConnection))
	var drop [maxDropped][]byte
	n := 0
	add := func(k []byte) bool {
		if !hopField(k, true) && (conn == nil || !listedIn(conn, k)) {
			return true
		}
		if n == len(drop) {
			n = -1
			return false
		}
		drop[n] = k
		n++
		return true
	}
	if raw := in.RawHeaders(); len(raw) > 0 {
		for len(raw) > 0 {
			line := raw
			if i := bytes.IndexByte(raw, '\n'); i >= 0 {
				line, raw = raw[:i], raw[i+1:]
			} else {
				raw = nil
			}
			if len(line) == 0 || line[0] == ' ' || line[0] == '\t' {
				continue // the end, or a continuation line
			}
			if c := bytes.IndexByte(line, ':'); c > 0 && !add(trimSpace(line[:c])) {
				break
			}
		}
	} else {
		for k := range in.All() {
			if !add(k) {
				break
			}
		}
	}
	if n < 0 {
		for _, name := range hopByHop {
			out.DelBytes(name)
		}
		for _, name := range splitTokens(conn) {
			out.DelBytes(name)
		}
		out.DelBytes(hdrExpect)
		return
	}
	for _, k := range drop[:n] {
		out.DelBytes(k)
	}
	if out.ConnectionClose() {
		out.ResetConnectionClose()
	}
}

// stripHopByHop removes hop-by-hop fields from an origin's response
// (Connection and Transfer-Encoding are fasthttp's to manage), and the
// fields its Connection header names.
func stripHopByHop(h *fasthttp.ResponseHeader) {
	conn := connectionOptions(h.PeekBytes(hdrConnection))
	// The names found are h's own storage: copied out before the first
	// deletion changes h.
	var names [255]byte
	var ends [maxDropped]uint8
	n, used := 0, 0
	for k := range h.All() {
		if len(k) == 10 && equalFoldASCII(k, "connection") || len(k) == 17 && equalFoldASCII(k, "transfer-encoding") {
			continue
		}
		if hopField(k, false) || conn != nil && listedIn(conn, k) {
			if n == len(ends) || used+len(k) > len(names) {
				n = -1
				break
			}
			used += copy(names[used:], k)
			ends[n] = uint8(used)
			n++
		}
	}
	if n < 0 {
		conn = append([]byte(nil), conn...)
		for _, name := range hopByHop {
			if string(name) == "Connection" || string(name) == "Transfer-Encoding" {
				continue
			}
			h.DelBytes(name)
		}
		for _, name := range splitTokens(conn) {
			h.DelBytes(name)
		}
		return
	}
	start := 0
	for _, end := range ends[:n] {
		h.DelBytes(names[start:end])
		start = int(end)
	}
}

// foldEqual reports whether a and b are equal ignoring ASCII case.
func foldEqual(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
