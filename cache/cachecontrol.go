package cache

// MaxDeltaSeconds is the largest delta-seconds value kept (RFC 9111 §1.2.2):
// a larger value, or one that overflows, is replaced by 2^31.
const MaxDeltaSeconds = 1 << 31

// Unset marks a delta-seconds directive of [CacheControl] that is absent.
const Unset = -1

// CacheControl holds the directives of Cache-Control field values (RFC 9111
// §5.2), request and response alike. Directive names are case-insensitive,
// arguments may be tokens or quoted strings, unknown directives are ignored
// (§5.2.3). Delta-seconds fields are [Unset] when absent and otherwise lie in
// [0, MaxDeltaSeconds].
//
// The qualified forms no-cache="field" and private="field" are treated as
// their unqualified forms, which is the conservative reading of §5.2.2.4 and
// §5.2.2.7: the response is revalidated on every use, respectively not stored.
type CacheControl struct {
	// NoStore is no-store (§5.2.1.5 request, §5.2.2.5 response).
	NoStore bool
	// NoCache is no-cache (§5.2.1.4 request, §5.2.2.4 response).
	NoCache bool
	// NoTransform is no-transform (§5.2.1.6, §5.2.2.6).
	NoTransform bool
	// MaxAge is max-age in seconds (§5.2.1.1, §5.2.2.1), or Unset.
	MaxAge int64

	// Public is the public response directive (§5.2.2.9).
	Public bool
	// Private is the private response directive (§5.2.2.7).
	Private bool
	// MustRevalidate is must-revalidate (§5.2.2.2).
	MustRevalidate bool
	// ProxyRevalidate is proxy-revalidate (§5.2.2.8).
	ProxyRevalidate bool
	// MustUnderstand is must-understand (§5.2.2.3).
	MustUnderstand bool
	// Immutable is the immutable extension (RFC 8246).
	Immutable bool
	// SMaxAge is s-maxage in seconds (§5.2.2.10), or Unset.
	SMaxAge int64
	// StaleWhileRevalidate is the stale-while-revalidate response directive
	// in seconds (RFC 5861 §3), or Unset.
	StaleWhileRevalidate int64
	// StaleIfError is the stale-if-error directive in seconds, request or
	// response (RFC 5861 §4), or Unset.
	StaleIfError int64

	// MaxStale is the max-stale request directive in seconds (§5.2.1.2),
	// MaxDeltaSeconds when given without a value, or Unset.
	MaxStale int64
	// MinFresh is the min-fresh request directive in seconds (§5.2.1.3), or
	// Unset.
	MinFresh int64
	// OnlyIfCached is the only-if-cached request directive (§5.2.1.7).
	OnlyIfCached bool

	// Invalid reports a delta-seconds directive with a missing or malformed
	// argument, or repeated with different values. A response is then
	// treated as stale (§4.2.1), a request as no-cache.
	Invalid bool
}

// ParseCacheControl parses one Cache-Control field value. It does not
// allocate.
func ParseCacheControl(v []byte) CacheControl {
	var cc CacheControl
	cc.Reset()
	cc.Parse(v)
	return cc
}

// Reset clears cc: no directive present.
func (cc *CacheControl) Reset() {
	*cc = CacheControl{MaxAge: Unset, SMaxAge: Unset, MaxStale: Unset, MinFresh: Unset, StaleWhileRevalidate: Unset, StaleIfError: Unset}
}

// Parse adds the directives of one more field value to cc, for messages
// with several Cache-Control field lines (RFC 9110 §5.3). cc must have been
// Reset before the first call. It does not allocate.
func (cc *CacheControl) Parse(v []byte) {
	i := 0
	for i < len(v) {
		c := v[i]
		if c == ',' || c == ' ' || c == '\t' {
			i++
			continue
		}
		start := i
		for i < len(v) && isTokenChar(v[i]) {
			i++
		}
		name := v[start:i]
		i = skipOWS(v, i)
		var arg []byte
		hasArg, argOK := false, true
		if len(name) > 0 && i < len(v) && v[i] == '=' {
			hasArg = true
			i = skipOWS(v, i+1)
			if i < len(v) && v[i] == '"' {
				arg, i, argOK = quotedString(v, i)
			} else {
				s := i
				for i < len(v) && isTokenChar(v[i]) {
					i++
				}
				arg = v[s:i]
			}
			i = skipOWS(v, i)
		}
		if i < len(v) && v[i] != ',' {
			// Trailing garbage in this list member: the argument is not
			// what it seems; skip to the next member.
			argOK = false
			i = skipToComma(v, i)
		}
		if len(name) == 0 {
			continue
		}
		cc.apply(name, arg, hasArg, argOK)
	}
}

func (cc *CacheControl) apply(name, arg []byte, hasArg, argOK bool) {
	switch len(name) {
	case 6:
		if equalFold(name, "public") {
			cc.Public = true
		}
	case 7:
		if equalFold(name, "max-age") {
			cc.setDelta(&cc.MaxAge, arg, hasArg, argOK, false)
		} else if equalFold(name, "private") {
			cc.Private = true
		}
	case 8:
		if equalFold(name, "no-store") {
			cc.NoStore = true
		} else if equalFold(name, "no-cache") {
			cc.NoCache = true
		} else if equalFold(name, "s-maxage") {
			cc.setDelta(&cc.SMaxAge, arg, hasArg, argOK, false)
		}
	case 9:
		if equalFold(name, "max-stale") {
			cc.setDelta(&cc.MaxStale, arg, hasArg, argOK, true)
		} else if equalFold(name, "min-fresh") {
			cc.setDelta(&cc.MinFresh, arg, hasArg, argOK, false)
		} else if equalFold(name, "immutable") {
			cc.Immutable = true
		}
	case 12:
		if equalFold(name, "no-transform") {
			cc.NoTransform = true
		}
	case 14:
		if equalFold(name, "only-if-cached") {
			cc.OnlyIfCached = true
		} else if equalFold(name, "stale-if-error") {
			cc.setExtension(&cc.StaleIfError, arg, hasArg, argOK)
		}
	case 15:
		if equalFold(name, "must-revalidate") {
			cc.MustRevalidate = true
		} else if equalFold(name, "must-understand") {
			cc.MustUnderstand = true
		}
	case 16:
		if equalFold(name, "proxy-revalidate") {
			cc.ProxyRevalidate = true
		}
	case 22:
		if equalFold(name, "stale-while-revalidate") {
			cc.setExtension(&cc.StaleWhileRevalidate, arg, hasArg, argOK)
		}
	}
}

// setDelta stores a delta-seconds argument. A missing argument is invalid
// unless optional (max-stale); a repeated directive with another value is
// invalid and the first value is kept (§4.2.1).
func (cc *CacheControl) setDelta(dst *int64, arg []byte, hasArg, argOK, optional bool) {
	var n int64
	switch {
	case !hasArg && optional:
		n = MaxDeltaSeconds
	case !hasArg || !argOK:
		cc.Invalid = true
		return
	default:
		var ok bool
		if n, ok = parseDelta(arg); !ok {
			cc.Invalid = true
			return
		}
	}
	if *dst != Unset && *dst != n {
		cc.Invalid = true
		return
	}
	*dst = n
}

// setExtension stores the delta-seconds argument of an extension directive
// (RFC 5861). Unlike max-age, a malformed extension is ignored (RFC 9111
// §5.2.3: unrecognised uses of an extension are ignored) rather than making
// the response stale; a repeated one keeps the smaller value, the
// conservative reading.
func (cc *CacheControl) setExtension(dst *int64, arg []byte, hasArg, argOK bool) {
	if !hasArg || !argOK {
		return
	}
	n, ok := parseDelta(arg)
	if !ok {
		return
	}
	if *dst == Unset || n < *dst {
		*dst = n
	}
}

// parseDelta parses delta-seconds = 1*DIGIT (RFC 9111 §1.2.2), capping the
// value at MaxDeltaSeconds.
func parseDelta(b []byte) (int64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		if n < MaxDeltaSeconds {
			n = n*10 + int64(c-'0')
		}
	}
	return min(n, MaxDeltaSeconds), true
}

// quotedString returns the content of the quoted-string starting at v[i]
// (which is '"'), the index after it, and whether it was well formed.
// Escapes are left in the content: no directive this package reads accepts
// them in a valid argument.
func quotedString(v []byte, i int) (content []byte, next int, ok bool) {
	start := i + 1
	for j := start; j < len(v); j++ {
		switch v[j] {
		case '\\':
			j++
		case '"':
			return v[start:j], j + 1, true
		}
	}
	return v[start:], len(v), false
}

// skipToComma returns the index of the next ',' at or after i that is not
// inside a quoted-string, or len(v).
func skipToComma(v []byte, i int) int {
	for i < len(v) {
		switch v[i] {
		case ',':
			return i
		case '"':
			_, i, _ = quotedString(v, i)
		default:
			i++
		}
	}
	return i
}

func skipOWS(v []byte, i int) int {
	for i < len(v) && (v[i] == ' ' || v[i] == '\t') {
		i++
	}
	return i
}

// isTokenChar reports whether c is a tchar (RFC 9110 §5.6.2).
func isTokenChar(c byte) bool {
	return tokenTable[c]
}

var tokenTable = func() (t [256]bool) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
	}
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = true
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()

// equalFold reports whether b equals the lower-case ASCII string s, ignoring
// ASCII case in b.
func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}

// equalFoldBytes reports whether a and b are equal ignoring ASCII case.
func equalFoldBytes(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if lower(a[i]) != lower(b[i]) {
			return false
		}
	}
	return true
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
