package cache

import (
	"slices"

	"github.com/valyala/fasthttp"
)

// field is one stored header field line. hidden fields are kept for the
// cache's own use and never written to clients (CDN-Cache-Control, RFC
// 9213), nor is Date, which [SetDate] writes.
type field struct {
	name, value []byte
	hidden      bool
}

// fieldOverhead approximates the memory of one field beyond its bytes.
const fieldOverhead = 48

// skipStored reports whether a response header field is left out of a
// stored response (RFC 9111 §3.1): hop-by-hop fields, those named by
// Connection, Content-Length (fasthttp derives it from the body) and Age
// (the cache computes it).
func skipStored(name []byte, connection [][]byte) bool {
	switch {
	case equalFold(name, "connection"),
		equalFold(name, "keep-alive"),
		equalFold(name, "proxy-connection"),
		equalFold(name, "proxy-authenticate"),
		equalFold(name, "proxy-authentication-info"),
		equalFold(name, "te"),
		equalFold(name, "trailer"),
		equalFold(name, "transfer-encoding"),
		equalFold(name, "upgrade"),
		equalFold(name, "content-length"),
		equalFold(name, "age"):
		return true
	}
	for _, v := range connection {
		if hasToken(v, name) {
			return true
		}
	}
	return false
}

// skipUpdate reports whether a field of a 304 response is left out when
// updating a stored response (RFC 9111 §3.2, §4.3.4): besides the fields
// never stored, those the stored content depends on.
func skipUpdate(name []byte, connection [][]byte) bool {
	return skipStored(name, connection) ||
		equalFold(name, "content-encoding") ||
		equalFold(name, "content-range") ||
		equalFold(name, "content-type") ||
		equalFold(name, "vary")
}

// responseFields appends the fields of h a stored response keeps. The
// slices refer to h.
func responseFields(dst []field, h *fasthttp.ResponseHeader, skip func([]byte, [][]byte) bool) []field {
	conn := slices.Clone(h.PeekAll(fasthttp.HeaderConnection))
	for k, v := range h.All() {
		if !skip(k, conn) {
			dst = append(dst, field{name: k, value: v})
		}
	}
	return dst
}

// mergeFields returns the stored fields updated with those of a 304
// response (RFC 9111 §3.2): every name the update carries replaces all
// stored lines of that name.
func mergeFields(stored, update []field) []field {
	out := make([]field, 0, len(stored)+len(update))
	for _, f := range stored {
		if !hasField(update, f.name) {
			out = append(out, f)
		}
	}
	return append(out, update...)
}

func hasField(fs []field, name []byte) bool {
	for _, f := range fs {
		if equalFoldBytes(f.name, name) {
			return true
		}
	}
	return false
}

// fieldsFacts reads the policy's facts from stored fields. Age is never
// among them.
func fieldsFacts(status int, fs []field) responseFacts {
	f := responseFacts{status: status}
	f.cc.Reset()
	var t targeted
	t.reset()
	for _, fl := range fs {
		n, v := fl.name, fl.value
		switch {
		case equalFold(n, "cache-control"):
			f.cc.Parse(v)
		case equalFold(n, "expires"):
			if f.expires == nil {
				f.expires = v[:len(v):len(v)]
				if f.expires == nil {
					f.expires = emptyValue
				}
			}
		case equalFold(n, "date"):
			if f.date == nil {
				f.date = v
			}
		case equalFold(n, "etag"):
			if f.etag == nil {
				f.etag = v
			}
		case equalFold(n, "last-modified"):
			if f.lastModified == nil {
				f.lastModified = v
			}
		case equalFold(n, "set-cookie"):
			f.setCookie = true
		case equalFold(n, "cdn-cache-control"):
			t.add(v)
		case equalFold(n, "vary"):
			if _, star := ParseVary(nil, v); star {
				f.varyStar = true
			}
		}
	}
	f.target(&t)
	return f
}
