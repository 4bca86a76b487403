package cache

import "github.com/valyala/fasthttp"

// HeaderCDNCacheControl is the targeted cache-control field for CDN caches
// (RFC 9213 §3). This cache is its target: when a response carries a valid,
// non-empty one, its directives replace Cache-Control and Expires for this
// cache, and the field is not forwarded to clients ([StripTargeted]).
const HeaderCDNCacheControl = "CDN-Cache-Control"

// ParseTargetedCacheControl parses the field lines of a targeted
// cache-control field such as CDN-Cache-Control (RFC 9213 §2.1): a
// Structured Field Dictionary (RFC 9651 §3.2) whose members are cache
// directives. It reports ok false when the lines are empty or any of them
// fails to parse; the cache then ignores the field entirely and falls back
// to Cache-Control and Expires (RFC 9213 §2.2).
//
// Directive values of the wrong type are not consumed (§2.1): max-age,
// s-maxage, stale-while-revalidate and stale-if-error must be non-negative
// Integers, no-store, no-cache, private, public, must-revalidate,
// proxy-revalidate, immutable and must-understand Booleans (a bare key is
// true; ?0 is false), except that no-cache and private also accept a String
// (their qualified forms, treated as unqualified like in Cache-Control).
// Parameters are ignored; the last of repeated keys wins (RFC 9651 §4.2.2).
// It does not allocate.
func ParseTargetedCacheControl(lines [][]byte) (cc CacheControl, ok bool) {
	var t targeted
	t.reset()
	for _, v := range lines {
		t.add(v)
	}
	return t.result()
}

// targeted accumulates the field lines of a targeted field.
type targeted struct {
	cc        CacheControl
	seen, bad bool
}

func (t *targeted) reset() {
	t.cc.Reset()
	t.seen, t.bad = false, false
}

// add parses one more field line.
func (t *targeted) add(v []byte) {
	v = trimSP(v)
	if len(v) == 0 || t.bad {
		return
	}
	t.seen = true
	if !parseSFDictionary(v, &t.cc) {
		t.bad = true
	}
}

// result returns the directives, and false when the field is to be ignored.
func (t *targeted) result() (CacheControl, bool) {
	if !t.seen || t.bad {
		var empty CacheControl
		empty.Reset()
		return empty, false
	}
	return t.cc, true
}

// sfItem is a parsed bare item (RFC 9651 §3.3) of a dictionary member.
type sfItem struct {
	kind    sfKind
	integer int64 // sfInteger, saturated at MaxDeltaSeconds+1 when positive
	boolean bool  // sfBoolean
	str     []byte
}

type sfKind uint8

const (
	sfOther sfKind = iota // decimal, token, byte sequence, date, display string, inner list
	sfInteger
	sfBoolean
	sfString
)

// parseSFDictionary parses one dictionary (RFC 9651 §4.2.2) into cc.
func parseSFDictionary(v []byte, cc *CacheControl) bool {
	i := 0
	for i < len(v) {
		start := i
		var ok bool
		if i, ok = sfKey(v, i); !ok {
			return false
		}
		key := v[start:i]
		item := sfItem{kind: sfBoolean, boolean: true}
		if i < len(v) && v[i] == '=' {
			i++
			if i < len(v) && v[i] == '(' {
				if i, ok = sfInnerList(v, i); !ok {
					return false
				}
				item = sfItem{kind: sfOther}
			} else if i, ok = sfBareItem(v, i, &item); !ok {
				return false
			}
		}
		if i, ok = sfParameters(v, i); !ok {
			return false
		}
		applyTargeted(cc, key, &item)
		i = skipOWS(v, i)
		if i == len(v) {
			return true
		}
		if v[i] != ',' {
			return false
		}
		i = skipOWS(v, i+1)
		if i == len(v) {
			return false // trailing comma
		}
	}
	return true
}

// applyTargeted sets the directive key to item's value when of the right
// type. Unlike [CacheControl.Parse], a later member replaces an earlier one.
func applyTargeted(cc *CacheControl, key []byte, it *sfItem) {
	flag := func(dst *bool, qualified bool) {
		switch {
		case it.kind == sfBoolean:
			*dst = it.boolean
		case qualified && it.kind == sfString:
			*dst = true
		}
	}
	delta := func(dst *int64) {
		if it.kind == sfInteger && it.integer >= 0 {
			*dst = min(it.integer, MaxDeltaSeconds)
		}
	}
	switch string(key) {
	case "max-age":
		delta(&cc.MaxAge)
	case "s-maxage":
		delta(&cc.SMaxAge)
	case "stale-while-revalidate":
		delta(&cc.StaleWhileRevalidate)
	case "stale-if-error":
		delta(&cc.StaleIfError)
	case "no-store":
		flag(&cc.NoStore, false)
	case "no-cache":
		flag(&cc.NoCache, true)
	case "private":
		flag(&cc.Private, true)
	case "public":
		flag(&cc.Public, false)
	case "must-revalidate":
		flag(&cc.MustRevalidate, false)
	case "proxy-revalidate":
		flag(&cc.ProxyRevalidate, false)
	case "immutable":
		flag(&cc.Immutable, false)
	case "must-understand":
		flag(&cc.MustUnderstand, false)
	case "no-transform":
		flag(&cc.NoTransform, false)
	}
}

// sfKey scans key = ( lcalpha / "*" ) *( lcalpha / DIGIT / "_" / "-" / "." / "*" ).
func sfKey(v []byte, i int) (int, bool) {
	if i >= len(v) || !(v[i] >= 'a' && v[i] <= 'z' || v[i] == '*') {
		return i, false
	}
	i++
	for i < len(v) {
		c := v[i]
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == '*' {
			i++
			continue
		}
		break
	}
	return i, true
}

// sfParameters scans *( ";" *SP key [ "=" bare-item ] ).
func sfParameters(v []byte, i int) (int, bool) {
	for i < len(v) && v[i] == ';' {
		i++
		for i < len(v) && v[i] == ' ' {
			i++
		}
		var ok bool
		if i, ok = sfKey(v, i); !ok {
			return i, false
		}
		if i < len(v) && v[i] == '=' {
			var it sfItem
			if i, ok = sfBareItem(v, i+1, &it); !ok {
				return i, false
			}
		}
	}
	return i, true
}

// sfInnerList scans "(" *SP [ item *( 1*SP item ) *SP ] ")" parameters.
func sfInnerList(v []byte, i int) (int, bool) {
	i++ // (
	for {
		for i < len(v) && v[i] == ' ' {
			i++
		}
		if i >= len(v) {
			return i, false
		}
		if v[i] == ')' {
			return sfParameters(v, i+1)
		}
		var it sfItem
		var ok bool
		if i, ok = sfBareItem(v, i, &it); !ok {
			return i, false
		}
		if i, ok = sfParameters(v, i); !ok {
			return i, false
		}
		if i < len(v) && v[i] != ' ' && v[i] != ')' {
			return i, false
		}
	}
}

// sfBareItem scans one bare item (RFC 9651 §4.2.3.1) into it.
func sfBareItem(v []byte, i int, it *sfItem) (int, bool) {
	if i >= len(v) {
		return i, false
	}
	switch c := v[i]; {
	case c == '-' || c >= '0' && c <= '9':
		return sfNumber(v, i, it)
	case c == '"':
		return sfQuoted(v, i, it)
	case c == '*' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		i++
		for i < len(v) && (isTokenChar(v[i]) || v[i] == ':' || v[i] == '/') {
			i++
		}
		it.kind = sfOther
		return i, true
	case c == ':':
		i++
		for i < len(v) && v[i] != ':' {
			if c := v[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '=') {
				return i, false
			}
			i++
		}
		if i >= len(v) {
			return i, false
		}
		it.kind = sfOther
		return i + 1, true
	case c == '?':
		if i+1 >= len(v) || v[i+1] != '0' && v[i+1] != '1' {
			return i, false
		}
		it.kind, it.boolean = sfBoolean, v[i+1] == '1'
		return i + 2, true
	case c == '@':
		var n sfItem
		j, ok := sfNumber(v, i+1, &n)
		if !ok || n.kind != sfInteger {
			return i, false
		}
		it.kind = sfOther
		return j, true
	case c == '%':
		if i+1 >= len(v) || v[i+1] != '"' {
			return i, false
		}
		var s sfItem
		j, ok := sfDisplayString(v, i+1, &s)
		it.kind = sfOther
		return j, ok
	}
	return i, false
}

// sfNumber scans an Integer (at most 15 digits) or a Decimal (at most 12
// integer and 3 fraction digits).
func sfNumber(v []byte, i int, it *sfItem) (int, bool) {
	neg := false
	if i < len(v) && v[i] == '-' {
		neg = true
		i++
	}
	start := i
	var n int64
	for i < len(v) && v[i] >= '0' && v[i] <= '9' {
		n = n*10 + int64(v[i]-'0')
		i++
	}
	intDigits := i - start
	if intDigits == 0 {
		return i, false
	}
	if i < len(v) && v[i] == '.' {
		if intDigits > 12 {
			return i, false
		}
		i++
		fs := i
		for i < len(v) && v[i] >= '0' && v[i] <= '9' {
			i++
		}
		if f := i - fs; f == 0 || f > 3 {
			return i, false
		}
		it.kind = sfOther
		return i, true
	}
	if intDigits > 15 {
		return i, false
	}
	if neg {
		n = -n
	}
	it.kind, it.integer = sfInteger, n
	return i, true
}

// sfQuoted scans a String: printable ASCII, with only \" and \\ escapes.
func sfQuoted(v []byte, i int, it *sfItem) (int, bool) {
	i++
	start := i
	for i < len(v) {
		c := v[i]
		switch {
		case c == '\\':
			if i+1 >= len(v) || v[i+1] != '"' && v[i+1] != '\\' {
				return i, false
			}
			i += 2
		case c == '"':
			it.kind, it.str = sfString, v[start:i]
			return i + 1, true
		case c < 0x20 || c > 0x7e:
			return i, false
		default:
			i++
		}
	}
	return i, false
}

// sfDisplayString scans the quoted part of a Display String: printable
// ASCII except '"', with %xx lower-case hex escapes.
func sfDisplayString(v []byte, i int, it *sfItem) (int, bool) {
	i++
	for i < len(v) {
		c := v[i]
		switch {
		case c == '"':
			it.kind = sfOther
			return i + 1, true
		case c == '%':
			if i+2 >= len(v) || !isLowerHex(v[i+1]) || !isLowerHex(v[i+2]) {
				return i, false
			}
			i += 3
		case c < 0x20 || c > 0x7e:
			return i, false
		default:
			i++
		}
	}
	return i, false
}

func isLowerHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' }

// trimSP removes the leading and trailing spaces a Structured Field parser
// discards (RFC 9651 §4.2), tabs included as field values allow them.
func trimSP(v []byte) []byte { return trimOWS(v) }

// StripTargeted removes from h the targeted cache-control fields this cache
// consumes (CDN-Cache-Control), so they are not forwarded to clients. Call
// it on every response the edge sends: stored responses ([SharedEntry.Respond]
// already leaves the field out) and those forwarded from the origin.
func StripTargeted(h *fasthttp.ResponseHeader) {
	h.Del(HeaderCDNCacheControl)
}
