package edge

import (
	"sync"

	"github.com/valyala/fasthttp"
)

// Cookies an app or function sets are scoped to its own site. A Set-Cookie
// with a Domain attribute that is not the site's host (a parent domain such
// as the apps domain, or any other domain) would reach every site under
// that domain, other tenants' included; the edge removes such an attribute,
// so the cookie becomes host-only. A Domain equal to the site's host, with
// or without a leading dot, stays. Everything else in the field (the name
// and value, Path, Secure, HttpOnly, SameSite, Expires, unknown attributes)
// is passed on byte for byte.
//
// The attributes are read as browsers read them (RFC 6265 §5.2): the
// name-value pair ends at the first ';', each attribute ends at the next,
// its name is what comes before '=' with surrounding whitespace removed,
// matched ignoring case. A name is matched after removing every byte up to
// and including the space on both sides, more than the RFC's space and tab:
// whatever a browser reads as Domain, the edge reads as Domain too.

var hdrSetCookie = []byte(fasthttp.HeaderSetCookie)

// scopeCookies removes from every Set-Cookie field of h the Domain
// attributes that are not host (a site's host: lower case, no port). It
// does not allocate when no field needs a change, nor, pooled buffers
// warm, when one does.
func scopeCookies(h *fasthttp.ResponseHeader, host string) {
	foreign := false
	for _, v := range h.Cookies() {
		if _, changed := scopeCookie(nil, v, host, false); changed {
			foreign = true
			break
		}
	}
	if !foreign {
		return
	}
	s := cookieScratchPool.Get().(*cookieScratch)
	s.buf, s.ends = s.buf[:0], s.ends[:0]
	for _, v := range h.Cookies() {
		s.buf, _ = scopeCookie(s.buf, v, host, true)
		s.ends = append(s.ends, len(s.buf))
	}
	h.DelAllCookies()
	start := 0
	for _, end := range s.ends {
		h.AddBytesKV(hdrSetCookie, s.buf[start:end])
		start = end
	}
	cookieScratchPool.Put(s)
}

// cookieScratch holds the rewritten fields of one response while its
// cookies are replaced.
type cookieScratch struct {
	buf  []byte
	ends []int
}

var cookieScratchPool = sync.Pool{New: func() any { return &cookieScratch{} }}

// scopeCookie appends to dst (when write) the Set-Cookie value v without
// its Domain attributes that are not host, and reports whether it removed
// any. Without write it only reports.
func scopeCookie(dst, v []byte, host string, write bool) ([]byte, bool) {
	i := indexSemicolon(v)
	if write {
		dst = append(dst, v[:i]...) // the name-value pair
	}
	changed := false
	for i < len(v) {
		// v[i] is ';': the attribute runs to the next one.
		j := i + 1 + indexSemicolon(v[i+1:])
		if keepAttribute(v[i+1:j], host) {
			if write {
				dst = append(dst, v[i:j]...)
			}
		} else {
			changed = true
		}
		i = j
	}
	return dst, changed
}

// indexSemicolon returns the index of the first ';' in b, len(b) for none.
func indexSemicolon(b []byte) int {
	for i, c := range b {
		if c == ';' {
			return i
		}
	}
	return len(b)
}

// keepAttribute reports whether a cookie attribute (without its ';') may
// stay: anything but a Domain that is not host.
func keepAttribute(av []byte, host string) bool {
	name, value := av, []byte(nil)
	for k, c := range av {
		if c == '=' {
			name, value = av[:k], av[k+1:]
			break
		}
	}
	if !equalFoldASCII(trimControls(name), "domain") {
		return true
	}
	value = trimSpace(value)
	if len(value) > 0 && value[0] == '.' {
		value = value[1:]
	}
	return len(host) > 0 && equalFoldASCII(value, host)
}

// trimControls removes the bytes up to and including the space from both
// ends of b.
func trimControls(b []byte) []byte {
	for len(b) > 0 && b[0] <= ' ' {
		b = b[1:]
	}
	for len(b) > 0 && b[len(b)-1] <= ' ' {
		b = b[:len(b)-1]
	}
	return b
}
