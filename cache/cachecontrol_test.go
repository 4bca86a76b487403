package cache

import (
	"testing"
)

func TestParseCacheControl(t *testing.T) {
	// cc builds an expected CacheControl from a base with no directives.
	cc := func(f func(*CacheControl)) CacheControl {
		var c CacheControl
		c.Reset()
		f(&c)
		return c
	}
	tests := []struct {
		name  string
		lines []string
		want  CacheControl
	}{
		{"empty", []string{""}, cc(func(c *CacheControl) {})},
		{"§5.2.2.1 max-age", []string{"max-age=60"}, cc(func(c *CacheControl) { c.MaxAge = 60 })},
		{"§5.2 directive names are case-insensitive", []string{"MAX-AGE=60, No-Store"}, cc(func(c *CacheControl) { c.MaxAge = 60; c.NoStore = true })},
		{"§5.2 quoted-string argument accepted", []string{`max-age="60"`}, cc(func(c *CacheControl) { c.MaxAge = 60 })},
		{"§5.2.2.10 s-maxage", []string{"public, s-maxage=300, max-age=10"}, cc(func(c *CacheControl) { c.Public = true; c.SMaxAge = 300; c.MaxAge = 10 })},
		{"§5.2.2.4 qualified no-cache treated as no-cache, commas inside quotes kept", []string{`no-cache="Set-Cookie, X-Foo", max-age=5`}, cc(func(c *CacheControl) { c.NoCache = true; c.MaxAge = 5 })},
		{"§5.2.2.7 qualified private treated as private", []string{`private="X-User"`}, cc(func(c *CacheControl) { c.Private = true })},
		{"§5.2.2 response flags", []string{"must-revalidate, proxy-revalidate, must-understand, no-transform, immutable"}, cc(func(c *CacheControl) {
			c.MustRevalidate, c.ProxyRevalidate, c.MustUnderstand, c.NoTransform, c.Immutable = true, true, true, true, true
		})},
		{"§5.2.1.2 max-stale without value means any", []string{"max-stale"}, cc(func(c *CacheControl) { c.MaxStale = MaxDeltaSeconds })},
		{"§5.2.1.2 max-stale with value", []string{"max-stale=10"}, cc(func(c *CacheControl) { c.MaxStale = 10 })},
		{"§5.2.1.3 min-fresh", []string{"min-fresh=5"}, cc(func(c *CacheControl) { c.MinFresh = 5 })},
		{"§5.2.1.7 only-if-cached", []string{"only-if-cached"}, cc(func(c *CacheControl) { c.OnlyIfCached = true })},
		{"§5.2.1.4 request no-cache", []string{"no-cache"}, cc(func(c *CacheControl) { c.NoCache = true })},
		{"§1.2.2 overflowing delta-seconds capped at 2^31", []string{"max-age=99999999999999999999999"}, cc(func(c *CacheControl) { c.MaxAge = MaxDeltaSeconds })},
		{"§1.2.2 2^31+1 capped", []string{"s-maxage=2147483649"}, cc(func(c *CacheControl) { c.SMaxAge = MaxDeltaSeconds })},
		{"§4.2.1 invalid value", []string{"max-age=abc"}, cc(func(c *CacheControl) { c.Invalid = true })},
		{"§1.2.2 negative value invalid", []string{"max-age=-1"}, cc(func(c *CacheControl) { c.Invalid = true })},
		{"§1.2.2 missing value invalid", []string{"max-age"}, cc(func(c *CacheControl) { c.Invalid = true })},
		{"§1.2.2 empty value invalid", []string{"max-age="}, cc(func(c *CacheControl) { c.Invalid = true })},
		{"§4.2.1 repeated same value is fine", []string{"max-age=5, max-age=5"}, cc(func(c *CacheControl) { c.MaxAge = 5 })},
		{"§4.2.1 conflicting values: invalid, first kept", []string{"max-age=5, max-age=6"}, cc(func(c *CacheControl) { c.MaxAge = 5; c.Invalid = true })},
		{"§5.3 conflict across field lines", []string{"max-age=5", "max-age=6"}, cc(func(c *CacheControl) { c.MaxAge = 5; c.Invalid = true })},
		{"RFC 9110 §5.3 several field lines combine", []string{"public", "max-age=30"}, cc(func(c *CacheControl) { c.Public = true; c.MaxAge = 30 })},
		{"§5.2.3 unknown extensions ignored", []string{`foo=bar, community="UCI", max-age=3, x-y`}, cc(func(c *CacheControl) { c.MaxAge = 3 })},
		{"whitespace and empty members", []string{" , public ,\t,max-age=10 ,, "}, cc(func(c *CacheControl) { c.Public = true; c.MaxAge = 10 })},
		{"garbage after argument makes it invalid", []string{"max-age=10 junk, public"}, cc(func(c *CacheControl) { c.Invalid = true; c.Public = true })},
		{"unterminated quoted argument invalid", []string{`max-age="10`}, cc(func(c *CacheControl) { c.Invalid = true })},
		{"quoted argument with escape invalid", []string{`max-age="1\0"`}, cc(func(c *CacheControl) { c.Invalid = true })},
		{"stray separators skipped", []string{`=, "x,y", ;public, max-age=1`}, cc(func(c *CacheControl) { c.MaxAge = 1 })},
		{"prefix of a directive is not the directive", []string{"no-stor, max-ag=5, privat"}, cc(func(c *CacheControl) {})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got CacheControl
			got.Reset()
			for _, l := range tt.lines {
				got.Parse([]byte(l))
			}
			if got != tt.want {
				t.Fatalf("Parse(%q) =\n%+v\nwant\n%+v", tt.lines, got, tt.want)
			}
			if len(tt.lines) == 1 {
				if one := ParseCacheControl([]byte(tt.lines[0])); one != tt.want {
					t.Fatalf("ParseCacheControl(%q) = %+v, want %+v", tt.lines[0], one, tt.want)
				}
			}
		})
	}
}
