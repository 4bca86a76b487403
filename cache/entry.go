package cache

import (
	"bytes"
	"time"

	"github.com/valyala/fasthttp"
)

// SharedEntry is a response stored by the shared cache. It is immutable:
// callers must not modify the slices it returns.
type SharedEntry struct {
	key          []byte
	status       int
	fields       []field
	body         []byte
	etag         []byte
	lastModified []byte
	lifetime     time.Duration // freshness lifetime, §4.2.1
	initialAge   time.Duration // corrected_initial_age, §4.2.3
	responseTime time.Time
	revalidate   bool // revalidate before every use (no-cache)
}

// Status returns the stored status code.
func (e *SharedEntry) Status() int { return e.status }

// Body returns the stored content. Do not modify it.
func (e *SharedEntry) Body() []byte { return e.body }

// ETag returns the stored ETag field value, nil when there is none.
func (e *SharedEntry) ETag() []byte { return e.etag }

// LastModified returns the stored Last-Modified field value, nil when there
// is none.
func (e *SharedEntry) LastModified() []byte { return e.lastModified }

// Header returns the first stored value of the named field (ASCII case
// ignored), nil when there is none. Do not modify it.
func (e *SharedEntry) Header(name string) []byte {
	for _, f := range e.fields {
		if equalFoldString(f.name, name) {
			return f.value
		}
	}
	return nil
}

// Lifetime returns the freshness lifetime (RFC 9111 §4.2.1).
func (e *SharedEntry) Lifetime() time.Duration { return e.lifetime }

// Age returns the entry's current_age at now (RFC 9111 §4.2.3).
func (e *SharedEntry) Age(now time.Time) time.Duration {
	return CurrentAge(e.initialAge, e.responseTime, now)
}

// Fresh reports whether the entry may be served without revalidation at
// now: its lifetime exceeds its age and it is not no-cache.
func (e *SharedEntry) Fresh(now time.Time) bool {
	return !e.revalidate && e.lifetime > e.Age(now)
}

func (e *SharedEntry) validators() bool {
	return len(e.etag) > 0 || len(e.lastModified) > 0
}

// Respond writes the entry to resp, which should be empty: the status, the
// origin's header fields as stored, Age, and the body (not copied: resp
// must not modify it). fasthttp writes its own Date. It does not allocate
// once resp has held such a response.
func (e *SharedEntry) Respond(resp *fasthttp.Response, now time.Time) {
	h := &resp.Header
	h.SetStatusCode(e.status)
	for _, f := range e.fields {
		h.AddBytesKV(f.name, f.value)
	}
	var buf [20]byte
	h.SetBytesV(fasthttp.HeaderAge, AppendAge(buf[:0], e.Age(now)))
	resp.SetBodyRaw(e.body)
}

// Conditional makes h, the request to send to the origin, a conditional
// request validating the entry (RFC 9111 §4.3.1): If-None-Match from its
// ETag, If-Modified-Since from its Last-Modified; validators h held that
// did not come from the entry are removed, so that a 304 always refers to
// the entry. Evaluate the client's own conditions against the entry
// afterwards, with [SharedEntry.NotModified] on the original values.
func (e *SharedEntry) Conditional(h *fasthttp.RequestHeader) {
	if len(e.etag) > 0 {
		h.SetBytesV(fasthttp.HeaderIfNoneMatch, e.etag)
	} else {
		h.Del(fasthttp.HeaderIfNoneMatch)
	}
	if len(e.lastModified) > 0 {
		h.SetBytesV(fasthttp.HeaderIfModifiedSince, e.lastModified)
	} else {
		h.Del(fasthttp.HeaderIfModifiedSince)
	}
}

// NotModified reports whether a GET or HEAD request's conditions let the
// edge answer 304 from the entry (RFC 9110 §13.2.2): If-None-Match by weak
// comparison when present, otherwise If-Modified-Since against
// Last-Modified.
func (e *SharedEntry) NotModified(h *fasthttp.RequestHeader) bool {
	return notModified(h, e.etag, e.lastModified)
}

func notModified(h *fasthttp.RequestHeader, etag, lastModified []byte) bool {
	if inm := h.Peek(fasthttp.HeaderIfNoneMatch); inm != nil {
		return len(etag) > 0 && etagMatch(inm, etag)
	}
	ims := h.Peek(fasthttp.HeaderIfModifiedSince)
	if len(ims) == 0 || len(lastModified) == 0 {
		return false
	}
	since, ok1 := parseHTTPDate(ims)
	lm, ok2 := parseHTTPDate(lastModified)
	return ok1 && ok2 && !lm.After(since)
}

// etagMatch reports whether the If-None-Match list matches etag by weak
// comparison (RFC 9110 §8.8.3.2, §13.1.2).
func etagMatch(list, etag []byte) bool {
	want := opaqueTag(etag)
	if want == nil {
		return false
	}
	for i := 0; i < len(list); {
		switch c := list[i]; {
		case c == ' ' || c == '\t' || c == ',':
			i++
		case c == '*':
			return true
		default:
			if list[i] == 'W' && i+1 < len(list) && list[i+1] == '/' {
				i += 2
			}
			if i >= len(list) || list[i] != '"' {
				return false
			}
			end := bytes.IndexByte(list[i+1:], '"')
			if end < 0 {
				return false
			}
			if bytes.Equal(list[i:i+end+2], want) {
				return true
			}
			i += end + 2
		}
	}
	return false
}

// opaqueTag returns the quoted part of an entity-tag, without W/.
func opaqueTag(etag []byte) []byte {
	etag = trimOWS(etag)
	if len(etag) >= 2 && etag[0] == 'W' && etag[1] == '/' {
		etag = etag[2:]
	}
	if len(etag) < 2 || etag[0] != '"' || etag[len(etag)-1] != '"' {
		return nil
	}
	return etag
}
