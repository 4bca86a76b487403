package cache

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// FuzzParseCacheControl: the parser never panics, delta-seconds are Unset or
// within [0, MaxDeltaSeconds], parsing is deterministic, and splitting the
// value into field lines at a top-level comma changes nothing.
func FuzzParseCacheControl(f *testing.F) {
	for _, s := range []string{
		"", "max-age=60", "public, s-maxage=300, max-age=10", `no-cache="Set-Cookie, X", private="a"`,
		"max-stale", "max-stale=5, min-fresh=1, only-if-cached", "max-age=99999999999999999999999",
		`max-age="10`, `max-age="1\"0"`, "max-age=5, max-age=6", "=,,;\"", "MAX-AGE = 7 ,NO-STORE",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		cc := ParseCacheControl([]byte(v))
		for name, d := range map[string]int64{"max-age": cc.MaxAge, "s-maxage": cc.SMaxAge, "max-stale": cc.MaxStale, "min-fresh": cc.MinFresh} {
			if d != Unset && (d < 0 || d > MaxDeltaSeconds) {
				t.Fatalf("%s = %d out of range for %q", name, d, v)
			}
		}
		if again := ParseCacheControl([]byte(v)); again != cc {
			t.Fatalf("not deterministic for %q", v)
		}
		if !strings.Contains(v, `"`) {
			if i := strings.IndexByte(v, ','); i >= 0 {
				var split CacheControl
				split.Reset()
				split.Parse([]byte(v[:i]))
				split.Parse([]byte(v[i+1:]))
				if split != cc {
					t.Fatalf("splitting %q at its first comma changed the result:\n%+v\n%+v", v, split, cc)
				}
			}
		}
	})
}

// FuzzVaryKey: Vary parsing never panics and yields canonical token names;
// the secondary key is deterministic, ignores whitespace around list members
// and never lets a value of one field pass for another's.
func FuzzVaryKey(f *testing.F) {
	f.Add("Accept-Encoding", "gzip, br", "fr")
	f.Add("accept-encoding, accept-language", "gzip,br", "de, en;q=0.5")
	f.Add("*", "x", "y")
	f.Add("X-A, x-a, ,", "", " ")
	f.Fuzz(func(t *testing.T, vary, v1, v2 string) {
		names, star := ParseVary(nil, []byte(vary))
		for _, n := range names {
			if !isToken([]byte(n)) || canonicalName([]byte(n)) != n {
				t.Fatalf("name %q from %q is not a canonical token", n, vary)
			}
		}
		if star || len(names) == 0 {
			return
		}
		if !validValue(v1) || !validValue(v2) {
			return
		}
		build := func(val1, val2 string) []byte {
			var h fasthttp.RequestHeader
			h.Set(names[0], val1)
			if len(names) > 1 {
				h.Set(names[len(names)-1], val2)
			}
			return AppendVaryKey(nil, names, &h)
		}
		k := build(v1, v2)
		if !bytes.Equal(k, build(v1, v2)) {
			t.Fatal("key not deterministic")
		}
		spaced := strings.ReplaceAll(v1, ",", " ,\t ")
		if !bytes.Equal(k, build(spaced, v2)) {
			t.Fatalf("whitespace around members of %q changed the key", v1)
		}
		if len(names) > 1 && names[0] != names[len(names)-1] && normalizeList(v1) != normalizeList(v2) {
			if bytes.Equal(k, build(v2, v1)) {
				t.Fatalf("values %q and %q swapped between fields gave the same key", v1, v2)
			}
		}
	})
}

// normalizeList is the list normalization AppendVaryKey applies, written
// plainly: members trimmed, empty ones dropped.
func normalizeList(v string) string {
	var out []string
	for _, m := range strings.Split(v, ",") {
		if m = strings.Trim(m, " \t"); m != "" {
			out = append(out, m)
		}
	}
	return strings.Join(out, ",")
}

// validValue keeps to field values fasthttp stores unchanged.
func validValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return false
		}
	}
	return v == strings.TrimSpace(v)
}

// FuzzLocation: the Location / Content-Location parser never panics and only
// ever yields absolute paths.
func FuzzLocation(f *testing.F) {
	for _, s := range []string{"/a", "https://example.com/a?b#c", "//example.com", "http://x", "rel", "#", "HTTP://EXAMPLE.COM?q"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, ref string) {
		p, ok := sameHostPath([]byte(ref), []byte("example.com"))
		if ok && (len(p) == 0 || p[0] != '/') {
			t.Fatalf("sameHostPath(%q) = %q", ref, p)
		}
		if r := requestPath([]byte(ref)); len(ref) > 0 && len(r) == 0 {
			t.Fatalf("requestPath(%q) is empty", ref)
		}
	})
}

// FuzzEntityTags: If-None-Match evaluation never panics, and a tag always
// matches a list made of itself.
func FuzzEntityTags(f *testing.F) {
	f.Add(`"x"`, `W/"x", "y"`)
	f.Add(`W/"a"`, `*`)
	f.Add(`"`, `"`)
	f.Fuzz(func(t *testing.T, etag, list string) {
		etagMatch([]byte(list), []byte(etag))
		if tag := opaqueTag([]byte(etag)); tag != nil && bytes.Count(tag, []byte{'"'}) == 2 && !etagMatch(tag, []byte(etag)) {
			t.Fatalf("%q does not match itself", etag)
		}
	})
}

// FuzzParseHTTPDate: the strict HTTP-date parser never panics, accepts only
// the three fixed-length formats, and an accepted IMF-fixdate formats back
// to itself up to the day name, which is not checked.
func FuzzParseHTTPDate(f *testing.F) {
	for _, s := range []string{
		"Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994",
		"Sat, 31 Dec 2016 23:59:60 GMT", "Mon, 29 Feb 2021 00:00:00 GMT", "0", "", "Wednesday, 31-Dec-99 23:59:59 GMT",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		tm, ok := ParseHTTPDate([]byte(v))
		if !ok {
			return
		}
		if n := len(v); n != 29 && n != 24 && (n < 30 || n > 33) {
			t.Fatalf("accepted %q of length %d", v, n)
		}
		if tm.Location() != time.UTC {
			t.Fatalf("%q parsed in %v", v, tm.Location())
		}
		if len(v) == 29 && v[23:25] != "60" { // a leap second rolls over
			if got := string(AppendHTTPDate(nil, tm)); got[5:] != v[5:] {
				t.Fatalf("%q formats back as %q", v, got)
			}
		}
	})
}

// FuzzTargetedCacheControl: the Structured Field parser never panics, is
// deterministic, keeps delta-seconds in range, and a refused field leaves
// no directive behind.
func FuzzTargetedCacheControl(f *testing.F) {
	for _, s := range []string{
		"max-age=60", "public, s-maxage=10;a=1, stale-if-error=5", `private="x", no-cache=?1`, "a=(1 2 \"x\");p, b=:AA==:",
		"max-age=1.5", "max-age=-3", "max-age=1234567890123456", "x=@1700000000, y=%\"caf%c3%a9\"", "max-age=60,", "Max-Age=1", "*a=?0",
	} {
		f.Add(s, "")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		lines := [][]byte{[]byte(a), []byte(b)}
		cc, ok := ParseTargetedCacheControl(lines)
		cc2, ok2 := ParseTargetedCacheControl(lines)
		if cc != cc2 || ok != ok2 {
			t.Fatal("not deterministic")
		}
		var none CacheControl
		none.Reset()
		if !ok && cc != none {
			t.Fatalf("refused field left %+v", cc)
		}
		for name, d := range map[string]int64{"max-age": cc.MaxAge, "s-maxage": cc.SMaxAge, "swr": cc.StaleWhileRevalidate, "sie": cc.StaleIfError} {
			if d != Unset && (d < 0 || d > MaxDeltaSeconds) {
				t.Fatalf("%s = %d", name, d)
			}
		}
	})
}

// FuzzRange: Range parsing never panics and a single range it returns is
// always within the representation.
func FuzzRange(f *testing.F) {
	for _, s := range []string{"bytes=0-4", "bytes=-5", "bytes=7-", "bytes=5-2", "bytes=0-1,3-4", "BYTES = 1-2", "bytes=99999999999999999999-", "bytes=,,1-1,"} {
		f.Add(s, int64(20))
	}
	f.Fuzz(func(t *testing.T, v string, size int64) {
		out, r := ParseRange([]byte(v), size)
		if out == RangeSingle && (r.First < 0 || r.First > r.Last || r.Last >= size) {
			t.Fatalf("ParseRange(%q, %d) = %+v", v, size, r)
		}
		if size <= 0 && out != RangeIgnore {
			t.Fatalf("empty representation: %v", out)
		}
	})
}
