package cache

import (
	"time"

	"github.com/valyala/fasthttp"
)

// MaxRanges bounds the range-specs of a Range field this cache reads; a
// longer list is ignored and the whole response served (RFC 9110 §14.2
// lets a server ignore Range).
const MaxRanges = 64

// ByteRange is one satisfiable byte range: the positions of its first and
// last bytes, inclusive.
type ByteRange struct{ First, Last int64 }

// RangeOutcome is what a Range field asks of a representation.
type RangeOutcome uint8

// Outcomes of [ParseRange].
const (
	// RangeIgnore: no Range, another unit, an invalid ranges-specifier
	// (RFC 9110 §14.1.1), an empty representation, or more than one
	// satisfiable range: answer 200 with the whole content.
	RangeIgnore RangeOutcome = iota
	// RangeSingle: answer 206 with the one satisfiable range.
	RangeSingle
	// RangeUnsatisfiable: no range-spec is satisfiable: answer 416 with
	// Content-Range: bytes */length (RFC 9110 §15.5.17).
	RangeUnsatisfiable
)

// ParseRange reads a Range field value (RFC 9110 §14.2) against a
// representation of size bytes. Only the bytes unit (case-insensitive) is
// understood. Several satisfiable ranges are answered with the whole
// content (200), not multipart/byteranges: simpler for clients and caches
// alike, and what RFC 9110 §14.2 allows. It does not allocate.
func ParseRange(v []byte, size int64) (RangeOutcome, ByteRange) {
	v = trimOWS(v)
	if len(v) < 6 || !equalFold(v[:6], "bytes=") || size <= 0 {
		return RangeIgnore, ByteRange{}
	}
	v = v[6:]
	var one ByteRange
	satisfiable, specs := 0, 0
	for len(v) > 0 {
		i := 0
		for i < len(v) && v[i] != ',' {
			i++
		}
		spec := trimOWS(v[:i])
		if i < len(v) {
			i++
		}
		v = v[i:]
		if len(spec) == 0 {
			continue // empty list members are allowed (RFC 9110 §5.6.1)
		}
		if specs++; specs > MaxRanges {
			return RangeIgnore, ByteRange{}
		}
		r, ok, valid := rangeSpec(spec, size)
		if !valid {
			return RangeIgnore, ByteRange{}
		}
		if ok {
			satisfiable++
			one = r
		}
	}
	switch {
	case specs == 0:
		return RangeIgnore, ByteRange{}
	case satisfiable == 0:
		return RangeUnsatisfiable, ByteRange{}
	case satisfiable == 1:
		return RangeSingle, one
	}
	return RangeIgnore, ByteRange{}
}

// rangeSpec reads one int-range or suffix-range (RFC 9110 §14.1.2): valid
// reports its syntax, ok that it is satisfiable for size bytes.
func rangeSpec(s []byte, size int64) (r ByteRange, ok, valid bool) {
	dash := -1
	for i, c := range s {
		if c == '-' {
			dash = i
			break
		}
	}
	if dash < 0 {
		return r, false, false
	}
	first, last := s[:dash], s[dash+1:]
	if len(first) == 0 { // suffix-range: the last N bytes
		n, ok := rangeNumber(last)
		if !ok {
			return r, false, false
		}
		if n == 0 {
			return r, false, true
		}
		return ByteRange{First: max(size-n, 0), Last: size - 1}, true, true
	}
	f, ok := rangeNumber(first)
	if !ok {
		return r, false, false
	}
	l := int64(-1)
	if len(last) > 0 {
		if l, ok = rangeNumber(last); !ok || l < f {
			return r, false, false
		}
	}
	if f >= size {
		return r, false, true
	}
	if l < 0 || l >= size {
		l = size - 1
	}
	return ByteRange{First: f, Last: l}, true, true
}

// rangeNumber parses 1*DIGIT, saturating far beyond any body size.
func rangeNumber(b []byte) (int64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		if n < 1<<50 {
			n = n*10 + int64(c-'0')
		}
	}
	return n, true
}

// RespondTo writes the entry as the answer to a visitor's GET or HEAD
// request h into resp, which should be empty:
//
//   - 304 Not Modified when the request's own validators match a stored 200
//     (RFC 9110 §13.2.2: If-None-Match, else If-Modified-Since), without
//     content fields (§15.4.5);
//   - for a GET with Range on a stored 200 whose If-Range, if any, matches
//     (§13.1.5: a strong ETag, or exactly the Last-Modified date): 206 with
//     Content-Range and the one range (§14.4, §15.3.7), or 416 with
//     Content-Range: bytes */length when no range is satisfiable (§15.5.17);
//     see [ParseRange] for what is served whole;
//   - otherwise what [SharedEntry.Respond] writes.
//
// The body is never copied. It does not allocate once resp has held such a
// response.
func (e *SharedEntry) RespondTo(resp *fasthttp.Response, h *fasthttp.RequestHeader, now time.Time) {
	if e.status == fasthttp.StatusOK && e.NotModified(h) {
		e.writeHeader(&resp.Header, fasthttp.StatusNotModified, now, false)
		resp.ResetBody()
		resp.SkipBody = true
		return
	}
	rv := h.Peek(fasthttp.HeaderRange)
	if rv == nil || e.status != fasthttp.StatusOK || !h.IsGet() || !e.ifRange(h.Peek(fasthttp.HeaderIfRange)) {
		e.Respond(resp, now)
		return
	}
	size := int64(len(e.body))
	outcome, r := ParseRange(rv, size)
	var buf [64]byte
	switch outcome {
	case RangeSingle:
		e.Respond(resp, now)
		resp.Header.SetStatusCode(fasthttp.StatusPartialContent)
		resp.Header.SetBytesV(fasthttp.HeaderContentRange, appendContentRange(buf[:0], r, size))
		resp.SetBodyRaw(e.body[r.First : r.Last+1])
	case RangeUnsatisfiable:
		e.writeHeader(&resp.Header, fasthttp.StatusRequestedRangeNotSatisfiable, now, false)
		b := fasthttp.AppendUint(append(buf[:0], "bytes */"...), int(size))
		resp.Header.SetBytesV(fasthttp.HeaderContentRange, b)
		resp.ResetBody()
	default:
		e.Respond(resp, now)
	}
}

// appendContentRange appends "bytes first-last/size".
func appendContentRange(dst []byte, r ByteRange, size int64) []byte {
	dst = append(dst, "bytes "...)
	dst = fasthttp.AppendUint(dst, int(r.First))
	dst = append(dst, '-')
	dst = fasthttp.AppendUint(dst, int(r.Last))
	dst = append(dst, '/')
	return fasthttp.AppendUint(dst, int(size))
}

// ifRange evaluates an If-Range field value against the entry (RFC 9110
// §13.1.5): true when absent, or when it is a strong entity-tag equal to
// the entry's strong ETag, or an HTTP-date equal to its Last-Modified.
// A weak tag never matches.
func (e *SharedEntry) ifRange(v []byte) bool {
	if v == nil {
		return true
	}
	v = trimOWS(v)
	if len(v) > 0 && (v[0] == '"' || v[0] == 'W') {
		return len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' &&
			len(e.etag) > 0 && e.etag[0] == '"' && string(trimOWS(e.etag)) == string(v)
	}
	d, ok1 := parseHTTPDate(v)
	lm, ok2 := parseHTTPDate(e.lastModified)
	return ok1 && ok2 && d.Equal(lm)
}
