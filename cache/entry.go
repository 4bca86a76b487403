package cache

import (
	"bytes"
	"sync/atomic"
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
	date         []byte        // the origin's Date, or the response time (RFC 9110 §6.6.1)
	lifetime     time.Duration // freshness lifetime, §4.2.1 or heuristic §4.2.2
	initialAge   time.Duration // corrected_initial_age, §4.2.3
	responseTime time.Time
	revalidate   bool          // revalidate before every use (no-cache)
	swr, sie     time.Duration // RFC 5861 allowances
	noStale      bool          // must-revalidate, proxy-revalidate, no-cache
	sMaxAge      bool          // s-maxage: no stale when merely disconnected
	heuristic    bool

	// tmpl is the header Respond copies: status, fields and Date, built
	// once when the entry is, read-only afterwards. Copying it costs less
	// than adding each field and parsing the Date again on every hit.
	tmpl fasthttp.ResponseHeader

	// refreshUntil is when the current background revalidation claim
	// (stale-while-revalidate) lapses, in Unix nanoseconds by the cache's
	// clock: one request refreshes, the others are served stale meanwhile.
	refreshUntil atomic.Int64
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

// Lifetime returns the freshness lifetime (RFC 9111 §4.2.1), or the
// heuristic one (§4.2.2) when [SharedEntry.Heuristic].
func (e *SharedEntry) Lifetime() time.Duration { return e.lifetime }

// Heuristic reports whether the lifetime is heuristic (RFC 9111 §4.2.2).
func (e *SharedEntry) Heuristic() bool { return e.heuristic }

// Date returns the Date field value sent with the entry: the origin's, or
// the time the response was received when the origin sent none (RFC 9110
// §6.6.1). Do not modify it.
func (e *SharedEntry) Date() []byte { return e.date }

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
// origin's header fields as stored (its Date unchanged, RFC 9110 §6.6.1;
// CDN-Cache-Control left out, RFC 9213), Age, and the body (not copied:
// resp must not modify it). It does not allocate once resp has held such a
// response. [SharedEntry.RespondTo] also answers conditional and Range
// requests.
func (e *SharedEntry) Respond(resp *fasthttp.Response, now time.Time) {
	e.tmpl.CopyTo(&resp.Header)
	var buf [20]byte
	resp.Header.SetBytesV(fasthttp.HeaderAge, AppendAge(buf[:0], e.Age(now)))
	resp.SetBodyRaw(e.body)
}

// buildTemplate fills tmpl; call it once, before the entry is shared.
func (e *SharedEntry) buildTemplate() {
	h := &e.tmpl
	h.SetStatusCode(e.status)
	for _, f := range e.fields {
		if !f.hidden {
			h.AddBytesKV(f.name, f.value)
		}
	}
	SetDate(h, e.date)
}

// writeHeader writes status, the stored fields (without the content
// fields when content is false), Date and Age.
func (e *SharedEntry) writeHeader(h *fasthttp.ResponseHeader, status int, now time.Time, content bool) {
	h.SetStatusCode(status)
	for _, f := range e.fields {
		if f.hidden || !content && isContentField(f.name) {
			continue
		}
		h.AddBytesKV(f.name, f.value)
	}
	SetDate(h, e.date)
	var buf [20]byte
	h.SetBytesV(fasthttp.HeaderAge, AppendAge(buf[:0], e.Age(now)))
}

// isContentField reports the fields that describe content, left out of a
// 416 answer, which carries none.
func isContentField(name []byte) bool {
	return equalFold(name, "content-type") || equalFold(name, "content-encoding") ||
		equalFold(name, "content-language") || equalFold(name, "content-range") ||
		equalFold(name, "content-disposition") || equalFold(name, "content-md5")
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
