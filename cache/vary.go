package cache

import (
	"encoding/binary"
	"slices"

	"github.com/valyala/fasthttp"
)

// ParseVary appends to dst the field names listed in one Vary field value
// (RFC 9110 §12.5.5), in canonical form ("accept-encoding" becomes
// "Accept-Encoding"), and reports whether the value lists "*" or a member
// that is not a field name; such a response never matches a later request
// (RFC 9111 §4.1).
func ParseVary(dst []string, v []byte) (names []string, star bool) {
	for len(v) > 0 {
		i := 0
		for i < len(v) && v[i] != ',' {
			i++
		}
		m := trimOWS(v[:i])
		switch {
		case len(m) == 0:
		case len(m) == 1 && m[0] == '*':
			star = true
		case !isToken(m):
			star = true
		default:
			dst = append(dst, canonicalName(m))
		}
		if i == len(v) {
			break
		}
		v = v[i+1:]
	}
	return dst, star
}

// responseVary returns the sorted, deduplicated names of all Vary field
// lines of resp.
func responseVary(h *fasthttp.ResponseHeader) (names []string, star bool) {
	for _, v := range h.PeekAll(fasthttp.HeaderVary) {
		var s bool
		names, s = ParseVary(names, v)
		star = star || s
	}
	slices.Sort(names)
	return slices.Compact(names), star
}

// AppendVaryKey appends to dst the secondary cache key of a request (RFC
// 9111 §4.1): for each name, in order, whether the request has that field
// and its values. Values of repeated field lines are combined, list members
// are trimmed of surrounding whitespace and empty members dropped, so
// requests whose fields differ only in that way get the same key. names
// should come from [ParseVary], sorted and deduplicated, and must not hold
// "*". It does not allocate when dst has room (fasthttp reads Cookie
// through its parsed cookies, which may allocate).
func AppendVaryKey(dst []byte, names []string, h *fasthttp.RequestHeader) []byte {
	for _, name := range names {
		dst = appendPartString(dst, name)
		lines := h.PeekAll(name)
		if len(lines) == 0 {
			dst = append(dst, 0)
			continue
		}
		dst = append(dst, 1, 0, 0, 0, 0)
		at := len(dst)
		first := true
		for _, line := range lines {
			for len(line) > 0 {
				i := 0
				for i < len(line) && line[i] != ',' {
					i++
				}
				if m := trimOWS(line[:i]); len(m) > 0 {
					if !first {
						dst = append(dst, ',')
					}
					dst = append(dst, m...)
					first = false
				}
				if i == len(line) {
					break
				}
				line = line[i+1:]
			}
		}
		binary.BigEndian.PutUint32(dst[at-4:at], uint32(len(dst)-at))
	}
	return dst
}

func isToken(b []byte) bool {
	for _, c := range b {
		if !isTokenChar(c) {
			return false
		}
	}
	return len(b) > 0
}

// canonicalName returns a field name in the canonical form fasthttp uses
// for header keys: upper case after the start and after each '-'.
func canonicalName(b []byte) string {
	out := make([]byte, len(b))
	upper := true
	for i, c := range b {
		if upper && 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		} else if !upper && 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		out[i] = c
		upper = c == '-'
	}
	return string(out)
}
