package cache

import (
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// The tests of this file are named by the RFC section they check:
// TestRFC9111_4_2_3_Age is RFC 9111 §4.2.3. cache/README.md maps every
// requirement to its test.

// serve runs a fasthttp server on a real socket for the test's lifetime and
// returns its base URL.
func serve(t *testing.T, h fasthttp.RequestHandler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: h}
	done := make(chan struct{})
	go func() { srv.Serve(ln); close(done) }()
	t.Cleanup(func() { srv.Shutdown(); <-done })
	return "http://" + ln.Addr().String()
}

// rawGet sends one HTTP/1.1 request with the given header lines and returns
// the response as the client sees it on the wire.
func rawGet(t *testing.T, base, path string, headers ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "example.com"
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Add(k, v)
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestRFC9110_5_6_7_HTTPDate(t *testing.T) {
	want := time.Date(1994, 11, 6, 8, 49, 37, 0, time.UTC)
	tests := []struct {
		in string
		ok bool
	}{
		{"Sun, 06 Nov 1994 08:49:37 GMT", true},  // IMF-fixdate
		{"Sunday, 06-Nov-94 08:49:37 GMT", true}, // obsolete RFC 850
		{"Sun Nov  6 08:49:37 1994", true},       // obsolete asctime
		{"Sun, 06 Nov 1994 08:49:37 UTC", false}, // only GMT
		{"Sun, 06 Nov 1994 08:49:37 +0000", false},
		{"Sun, 6 Nov 1994 08:49:37 GMT", false},   // two-digit day
		{"sun, 06 nov 1994 08:49:37 gmt", false},  // case-sensitive
		{"Sun, 06 Nov 1994 08:49:37 GMT ", false}, // trailing space
		{" Sun, 06 Nov 1994 08:49:37 GMT", false},
		{"Sun,  06 Nov 1994 08:49:37 GMT", false},
		{"Sun, 06 Nov 94 08:49:37 GMT", false},
		{"Sun, 06 Nov 1994 8:49:37 GMT", false},
		{"Sun, 06 Nov 1994 24:00:00 GMT", false}, // hour out of range
		{"Sun, 06 Nov 1994 08:60:00 GMT", false},
		{"Sun, 31 Nov 1994 08:49:37 GMT", false}, // November has 30 days
		{"Sun, 00 Nov 1994 08:49:37 GMT", false},
		{"Xyz, 06 Nov 1994 08:49:37 GMT", false},
		{"Sun, 06 Now 1994 08:49:37 GMT", false},
		{"Sunday, 06-Nov-1994 08:49:37 GMT", false},
		{"Sun, 06-Nov-94 08:49:37 GMT", false}, // rfc850 needs the long day name
		{"Sunday, 06-Nov-94 08:49:37 PST", false},
		{"Sun Nov 06 08:49:37 1994", false}, // asctime pads with a space
		{"Sun Nov 6 08:49:37 1994", false},
		{"Sun Nov  6 08:49:37 94", false},
		{"1994-11-06T08:49:37Z", false},
		{"0", false},
		{"-1", false},
		{"", false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, ok := ParseHTTPDate([]byte(tt.in))
			if ok != tt.ok || ok && !got.Equal(want) {
				t.Fatalf("ParseHTTPDate(%q) = %v, %v; want ok=%v (%v)", tt.in, got, ok, tt.ok, want)
			}
		})
	}
	t.Run("leap second", func(t *testing.T) {
		got, ok := ParseHTTPDate([]byte("Sat, 31 Dec 2016 23:59:60 GMT"))
		if !ok || !got.Equal(time.Date(2017, 1, 1, 0, 0, 0, 0, time.UTC)) {
			t.Fatalf("got %v, %v", got, ok)
		}
	})
	t.Run("rfc850 two-digit years", func(t *testing.T) {
		for _, tc := range []struct{ yy, now, want int }{
			{94, 2026, 1994}, {26, 2026, 2026}, {76, 2026, 2076}, {77, 2026, 1977}, {0, 2099, 2100}, {49, 2000, 2049}, {51, 2000, 1951},
		} {
			if got := fullYear(tc.yy, tc.now); got != tc.want {
				t.Errorf("fullYear(%d, %d) = %d, want %d", tc.yy, tc.now, got, tc.want)
			}
		}
	})
}

func TestRFC9111_5_3_InvalidExpiresMeansExpired(t *testing.T) {
	date := "Date: " + httpDate(0)
	tests := []struct {
		name    string
		expires string
		want    time.Duration
		fresh   bool
	}{
		{"IMF-fixdate", httpDate(time.Hour), time.Hour, true},
		{"rfc850", "Saturday, 01-Mar-25 13:00:00 GMT", time.Hour, true},
		{"asctime", "Sat Mar  1 13:00:00 2025", time.Hour, true},
		{"zero", "0", 0, false},
		{"empty", "", 0, false},
		{"other zone", "Sat, 01 Mar 2025 13:00:00 CET", 0, false},
		{"loosely formatted", "Sat, 1 Mar 2025 13:00:00 GMT", 0, false},
		{"ISO 8601", "2025-03-01T13:00:00Z", 0, false},
		{"unix time", "1740834000", 0, false},
		{"trailing garbage", httpDate(time.Hour) + "x", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(newReq(t, "GET /a"), newResp(t, 200, "x", date, "Expires: "+tt.expires, `ETag: "e"`), t0, t0)
			if !d.Storable() || d.Lifetime != tt.want || d.Revalidate == tt.fresh {
				t.Fatalf("decision %+v, want storable, lifetime %v, fresh %v", d, tt.want, tt.fresh)
			}
		})
	}
}

func TestRFC9110_6_6_1_DateForwardedUnchanged(t *testing.T) {
	clk := newClock()
	c := newCache(t, Config{}, clk)
	originDate := "Sat, 01 Mar 2025 11:59:30 GMT" // 30 s before t0
	exchange{req: get("/dated"), status: 200, body: "D", resp: []string{"Cache-Control: max-age=600", "Date: " + originDate}}.store(t, c, clk.Now())
	exchange{req: get("/undated"), status: 200, body: "U", resp: []string{"Cache-Control: max-age=600"}}.store(t, c, clk.Now())
	c.Wait()
	clk.Add(10 * time.Second)
	base := serve(t, func(ctx *fasthttp.RequestCtx) {
		r := c.Lookup("app", &ctx.Request)
		if r.State != Hit {
			ctx.SetStatusCode(599)
			return
		}
		r.Entry.RespondTo(&ctx.Response, &ctx.Request.Header, clk.Now())
	})
	tests := []struct {
		path, date, age string
	}{
		{"/dated", originDate, "40"},    // §4.2.3: apparent age 30 s + 10 s resident
		{"/undated", httpDate(0), "10"}, // §6.6.1: the time it was received
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			resp := rawGet(t, base, tt.path)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			if got := resp.Header.Values("Date"); len(got) != 1 || got[0] != tt.date {
				t.Fatalf("Date lines %q, want exactly %q", got, tt.date)
			}
			if got := resp.Header.Get("Age"); got != tt.age {
				t.Fatalf("Age %q, want %q", got, tt.age)
			}
		})
	}
	for _, tc := range []struct {
		name  string
		dates []string
	}{
		{"KeepDate on a forwarded response", []string{"Date: " + originDate}},
		{"KeepDate keeps the first of two origin Dates", []string{"Date: " + originDate, "Date: " + httpDate(0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			origin := newResp(t, 200, "F", tc.dates...)
			base := serve(t, func(ctx *fasthttp.RequestCtx) {
				origin.Header.CopyTo(&ctx.Response.Header)
				KeepDate(&ctx.Response.Header, clk.Now())
				ctx.SetBody(origin.Body())
			})
			if got := rawGet(t, base, "/").Header.Values("Date"); len(got) != 1 || got[0] != originDate {
				t.Fatalf("Date lines %q, want %q", got, originDate)
			}
		})
	}
	t.Run("KeepDate without an origin Date", func(t *testing.T) {
		base := serve(t, func(ctx *fasthttp.RequestCtx) {
			KeepDate(&ctx.Response.Header, t0)
		})
		if got := rawGet(t, base, "/").Header.Values("Date"); len(got) != 1 || got[0] != httpDate(0) {
			t.Fatalf("Date lines %q, want %q", got, httpDate(0))
		}
	})
	t.Run("SetDate refuses field injection", func(t *testing.T) {
		var h fasthttp.ResponseHeader
		if SetDate(&h, []byte("x\r\nSet-Cookie: a=b")) || SetDate(&h, nil) {
			t.Fatal("accepted")
		}
	})
}

func TestRFC9111_4_2_3_Age(t *testing.T) {
	tests := []struct {
		name      string
		resp      []string
		sent, got time.Duration // request and response times after t0
		resident  time.Duration
		want      string
	}{
		{"no Date, no Age: response delay", []string{"Cache-Control: max-age=600"}, 0, 2 * time.Second, 3 * time.Second, "5"},
		{"apparent age from Date", []string{"Cache-Control: max-age=600", "Date: " + httpDate(-20*time.Second)}, 0, 0, time.Second, "21"},
		{"Age plus delay beats apparent age", []string{"Cache-Control: max-age=600", "Date: " + httpDate(0), "Age: 100"}, 0, time.Second, 0, "101"},
		{"apparent age beats Age", []string{"Cache-Control: max-age=600", "Date: " + httpDate(-50*time.Second), "Age: 10"}, 0, 0, 0, "50"},
		{"Date in the future", []string{"Cache-Control: max-age=600", "Date: " + httpDate(time.Hour)}, 0, 0, 7 * time.Second, "7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newClock()
			c := newCache(t, Config{}, clk)
			c.Store("app", newReq(t, "GET /a"), newResp(t, 200, "x", tt.resp...), t0.Add(tt.sent), t0.Add(tt.got))
			c.Wait()
			clk.Add(tt.got + tt.resident)
			r := c.Lookup("app", newReq(t, "GET /a"))
			if r.State != Hit {
				t.Fatalf("state %v", r.State)
			}
			var out fasthttp.Response
			r.Entry.Respond(&out, clk.Now())
			if got := string(out.Header.Peek("Age")); got != tt.want {
				t.Fatalf("Age %s, want %s", got, tt.want)
			}
		})
	}
}

func TestRFC9213_2_1_ParseTargetedCacheControl(t *testing.T) {
	base := func() CacheControl { var cc CacheControl; cc.Reset(); return cc }
	with := func(f func(*CacheControl)) CacheControl { cc := base(); f(&cc); return cc }
	tests := []struct {
		name  string
		lines []string
		ok    bool
		want  CacheControl
	}{
		{"max-age", []string{"max-age=60"}, true, with(func(c *CacheControl) { c.MaxAge = 60 })},
		{"booleans and integers", []string{"public, s-maxage=10, stale-while-revalidate=5, stale-if-error=7, must-revalidate"}, true,
			with(func(c *CacheControl) {
				c.Public, c.SMaxAge, c.StaleWhileRevalidate, c.StaleIfError, c.MustRevalidate = true, 10, 5, 7, true
			})},
		{"several lines", []string{"no-cache", "max-age=5"}, true, with(func(c *CacheControl) { c.NoCache, c.MaxAge = true, 5 })},
		{"private with a string is private", []string{`private="set-cookie"`}, true, with(func(c *CacheControl) { c.Private = true })},
		{"?0 is false", []string{"no-store=?0, max-age=3"}, true, with(func(c *CacheControl) { c.MaxAge = 3 })},
		{"parameters ignored", []string{"max-age=30;foo=bar, no-store;x"}, true, with(func(c *CacheControl) { c.MaxAge, c.NoStore = 30, true })},
		{"last duplicate wins", []string{"max-age=1, max-age=9"}, true, with(func(c *CacheControl) { c.MaxAge = 9 })},
		{"decimal max-age not consumed", []string{"max-age=1.5"}, true, base()},
		{"string max-age not consumed", []string{`max-age="60"`}, true, base()},
		{"negative max-age not consumed", []string{"max-age=-1"}, true, base()},
		{"unknown directive, token value", []string{"none"}, true, base()},
		{"inner list and byte sequence", []string{"foo=(a b;c=1), bar=:AAE=:, max-age=2"}, true, with(func(c *CacheControl) { c.MaxAge = 2 })},
		{"empty field ignored", []string{""}, false, base()},
		{"upper-case key is a parse error", []string{"Max-Age=60"}, false, base()},
		{"trailing comma", []string{"max-age=60,"}, false, base()},
		{"16-digit integer", []string{"max-age=1234567890123456"}, false, base()},
		{"unterminated string", []string{`private="x`}, false, base()},
		{"one bad line spoils all", []string{"max-age=60", "no-store;"}, false, base()},
		{"';' starts parameters", []string{"max-age=60; private"}, true, with(func(c *CacheControl) { c.MaxAge = 60 })},
		{"members need commas", []string{"max-age=60 private"}, false, base()},
		{"space before =", []string{"max-age =60"}, false, base()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var lines [][]byte
			for _, l := range tt.lines {
				lines = append(lines, []byte(l))
			}
			got, ok := ParseTargetedCacheControl(lines)
			if ok != tt.ok || got != tt.want {
				t.Fatalf("= %+v, %v\nwant %+v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestRFC9213_2_2_CDNCacheControlFirst(t *testing.T) {
	date := "Date: " + httpDate(0)
	tests := []struct {
		name     string
		req      []string
		resp     []string
		want     Reason
		lifetime time.Duration
		targeted bool
	}{
		{"CDN max-age beats Cache-Control", get("/a"), []string{date, "Cache-Control: max-age=10", "CDN-Cache-Control: max-age=600"}, ReasonStorable, 600 * time.Second, true},
		{"CDN directives make no-store in Cache-Control irrelevant", get("/a"), []string{date, "Cache-Control: no-store", "CDN-Cache-Control: max-age=60"}, ReasonStorable, time.Minute, true},
		{"CDN private: not stored", get("/a"), []string{date, "Cache-Control: public, max-age=600", "CDN-Cache-Control: private"}, ReasonPrivate, 0, true},
		{"CDN no-store: not stored", get("/a"), []string{date, "Cache-Control: public, max-age=600", "CDN-Cache-Control: no-store"}, ReasonNoStore, 0, true},
		{"Expires ignored beside CDN-Cache-Control", get("/a"), []string{date, "Expires: " + httpDate(time.Hour), "CDN-Cache-Control: none"}, ReasonNotExplicit, 0, true},
		{"invalid CDN-Cache-Control falls back", get("/a"), []string{date, "Cache-Control: max-age=10", "CDN-Cache-Control: max-age=60,"}, ReasonStorable, 10 * time.Second, false},
		{"empty CDN-Cache-Control falls back", get("/a"), []string{date, "Cache-Control: max-age=10", "CDN-Cache-Control: "}, ReasonStorable, 10 * time.Second, false},
		{"CDN s-maxage with Authorization", get("/a", "Authorization: Bearer x"), []string{date, "Cache-Control: private", "CDN-Cache-Control: s-maxage=30"}, ReasonStorable, 30 * time.Second, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(newReq(t, tt.req[0], tt.req[1:]...), newResp(t, 200, "x", tt.resp...), t0, t0)
			if d.Reason != tt.want || d.Storable() && d.Lifetime != tt.lifetime || d.Storable() && d.Targeted != tt.targeted {
				t.Fatalf("decision %+v, want %v lifetime %v targeted %v", d, tt.want, tt.lifetime, tt.targeted)
			}
		})
	}
	t.Run("stored, never forwarded, kept across a 304", func(t *testing.T) {
		clk := newClock()
		c := newCache(t, Config{}, clk)
		exchange{req: get("/a"), status: 200, body: "A", resp: []string{"Cache-Control: max-age=1", "CDN-Cache-Control: max-age=100", `ETag: "1"`}}.store(t, c, clk.Now())
		c.Wait()
		clk.Add(50 * time.Second)
		r := c.Lookup("app", newReq(t, "GET /a"))
		if r.State != Hit {
			t.Fatalf("state %v: CDN-Cache-Control max-age=100 not used", r.State)
		}
		var out fasthttp.Response
		r.Entry.Respond(&out, clk.Now())
		if v := out.Header.Peek(HeaderCDNCacheControl); v != nil {
			t.Fatalf("CDN-Cache-Control forwarded: %q", v)
		}
		if got := string(out.Header.Peek("Cache-Control")); got != "max-age=1" {
			t.Fatalf("Cache-Control %q, want the origin's, unchanged", got)
		}
		clk.Add(60 * time.Second)
		r = c.Lookup("app", newReq(t, "GET /a"))
		if r.State != Revalidate {
			t.Fatalf("state %v, want revalidate", r.State)
		}
		e, ok := c.Revalidated(newReq(t, "GET /a"), r.Entry, newResp(t, 304, "", `ETag: "1"`), clk.Now(), clk.Now())
		if !ok || e.Lifetime() != 100*time.Second {
			t.Fatalf("after 304: ok %v lifetime %v, want the CDN-Cache-Control lifetime", ok, e.Lifetime())
		}
	})
	t.Run("StripTargeted", func(t *testing.T) {
		resp := newResp(t, 200, "x", "CDN-Cache-Control: max-age=5", "Cache-Control: max-age=1")
		StripTargeted(&resp.Header)
		if resp.Header.Peek(HeaderCDNCacheControl) != nil || string(resp.Header.Peek("Cache-Control")) != "max-age=1" {
			t.Fatalf("header after StripTargeted:\n%s", resp.Header.String())
		}
	})
}

// lookupAt stores x at t0, moves the clock by after and looks up req.
func lookupAt(t *testing.T, x exchange, after time.Duration, req ...string) (*Cache, *clock, Result) {
	t.Helper()
	clk := newClock()
	c := newCache(t, Config{}, clk)
	if d := x.store(t, c, clk.Now()); !d.Storable() {
		t.Fatalf("not stored: %v", d.Reason)
	}
	c.Wait()
	clk.Add(after)
	if len(req) == 0 {
		req = x.req
	}
	return c, clk, c.Lookup("app", newReq(t, req[0], req[1:]...))
}

func TestRFC5861_3_StaleWhileRevalidate(t *testing.T) {
	swr := func(cc string) exchange {
		return exchange{req: get("/s"), status: 200, body: "S", resp: []string{"Cache-Control: " + cc, `ETag: "s"`}}
	}
	tests := []struct {
		name  string
		x     exchange
		after time.Duration
		req   []string
		want  State
	}{
		{"fresh: hit", swr("max-age=60, stale-while-revalidate=30"), 59 * time.Second, nil, Hit},
		{"stale within the allowance: served stale", swr("max-age=60, stale-while-revalidate=30"), 60 * time.Second, nil, StaleWhileRevalidate},
		{"stale past the allowance: revalidate", swr("max-age=60, stale-while-revalidate=30"), 90 * time.Second, nil, Revalidate},
		{"CDN-Cache-Control allowance", exchange{req: get("/s"), status: 200, resp: []string{"CDN-Cache-Control: max-age=60, stale-while-revalidate=30"}}, 70 * time.Second, nil, StaleWhileRevalidate},
		{"with s-maxage (explicit allowance wins)", swr("s-maxage=60, stale-while-revalidate=30"), 70 * time.Second, nil, StaleWhileRevalidate},
		{"RFC 9111 §5.2.2.2 must-revalidate forbids it", swr("max-age=60, stale-while-revalidate=30, must-revalidate"), 70 * time.Second, nil, Revalidate},
		{"RFC 9111 §5.2.2.8 proxy-revalidate forbids it", swr("max-age=60, stale-while-revalidate=30, proxy-revalidate"), 70 * time.Second, nil, Revalidate},
		{"RFC 9111 §5.2.2.4 no-cache forbids it", swr("no-cache, max-age=60, stale-while-revalidate=30"), 70 * time.Second, nil, Revalidate},
		{"request no-cache: revalidate now", swr("max-age=60, stale-while-revalidate=30"), 70 * time.Second, get("/s", "Cache-Control: no-cache"), Revalidate},
		{"request max-age: revalidate now", swr("max-age=60, stale-while-revalidate=30"), 70 * time.Second, get("/s", "Cache-Control: max-age=65"), Revalidate},
		{"only-if-cached takes the stale response", swr("max-age=60, stale-while-revalidate=30"), 70 * time.Second, get("/s", "Cache-Control: only-if-cached"), StaleWhileRevalidate},
		{"without validators, kept for the allowance", exchange{req: get("/s"), status: 200, resp: []string{"Cache-Control: max-age=60, stale-while-revalidate=30"}}, 89 * time.Second, nil, StaleWhileRevalidate},
		{"malformed allowance ignored", swr("max-age=60, stale-while-revalidate=soon"), 61 * time.Second, nil, Revalidate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, r := lookupAt(t, tt.x, tt.after, tt.req...)
			if r.State != tt.want {
				t.Fatalf("state %v, want %v", r.State, tt.want)
			}
			if tt.want == StaleWhileRevalidate && (r.Entry == nil || !r.Refresh) {
				t.Fatalf("stale result %+v: want the entry and the refresh", r)
			}
		})
	}
	t.Run("one refresh at a time", func(t *testing.T) {
		c, clk, r := lookupAt(t, swr("max-age=60, stale-while-revalidate=300"), 61*time.Second)
		if !r.Refresh {
			t.Fatal("first stale lookup did not get the refresh")
		}
		if r2 := c.Lookup("app", newReq(t, "GET /s")); r2.State != StaleWhileRevalidate || r2.Refresh {
			t.Fatalf("second lookup %+v: want stale, no refresh", r2)
		}
		clk.Add(RefreshClaim)
		if r3 := c.Lookup("app", newReq(t, "GET /s")); !r3.Refresh {
			t.Fatal("claim did not lapse after RefreshClaim")
		}
		// The background refresh stores a fresh response: hits again.
		if d := (exchange{req: get("/s"), status: 200, body: "new", resp: []string{"Cache-Control: max-age=60, stale-while-revalidate=300"}}).store(t, c, clk.Now()); !d.Storable() {
			t.Fatal(d.Reason)
		}
		c.Wait()
		if r4 := c.Lookup("app", newReq(t, "GET /s")); r4.State != Hit || string(r4.Entry.Body()) != "new" {
			t.Fatalf("after refresh: %v", r4.State)
		}
	})
}

func TestRFC5861_4_StaleIfError(t *testing.T) {
	x := func(cc string, validators bool) exchange {
		h := []string{"Cache-Control: " + cc}
		if validators {
			h = append(h, `ETag: "e"`)
		}
		return exchange{req: get("/e"), status: 200, body: "E", resp: h}
	}
	tests := []struct {
		name   string
		x      exchange
		after  time.Duration
		req    []string
		status int // origin status, 0 unreachable
		want   bool
	}{
		{"503 within stale-if-error", x("max-age=60, stale-if-error=300", false), 200 * time.Second, nil, 503, true},
		{"500, 502, 504 count as errors", x("max-age=60, stale-if-error=300", true), 200 * time.Second, nil, 502, true},
		{"404 is not an error", x("max-age=60, stale-if-error=300", true), 200 * time.Second, nil, 404, false},
		{"unreachable within stale-if-error", x("max-age=60, stale-if-error=300", false), 359 * time.Second, nil, 0, true},
		{"past stale-if-error", x("max-age=60, stale-if-error=300", true), 400 * time.Second, nil, 503, false},
		{"request stale-if-error extends it", x("max-age=60, stale-if-error=10", true), 200 * time.Second, get("/e", "Cache-Control: stale-if-error=600"), 503, true},
		{"request stale-if-error alone", x("max-age=60", true), 200 * time.Second, get("/e", "Cache-Control: stale-if-error=600"), 500, true},
		{"RFC 9111 §4.2.4 disconnected: stale served", x("max-age=60", true), 200 * time.Second, nil, 0, true},
		{"RFC 9111 §4.2.4 origin 503 without allowance: not served", x("max-age=60", true), 200 * time.Second, nil, 503, false},
		{"RFC 9111 §5.2.2.10 s-maxage: not when merely disconnected", x("s-maxage=60", true), 200 * time.Second, nil, 0, false},
		{"RFC 9111 §5.2.2.10 s-maxage with explicit stale-if-error", x("s-maxage=60, stale-if-error=300", true), 200 * time.Second, nil, 0, true},
		{"RFC 9111 §5.2.2.2 must-revalidate forbids it", x("max-age=60, stale-if-error=300, must-revalidate", true), 200 * time.Second, nil, 503, false},
		{"RFC 9111 §5.2.2.2 must-revalidate, disconnected", x("max-age=60, must-revalidate", true), 200 * time.Second, nil, 0, false},
		{"RFC 9111 §5.2.2.8 proxy-revalidate forbids it", x("max-age=60, stale-if-error=300, proxy-revalidate", true), 200 * time.Second, nil, 503, false},
		{"RFC 9111 §5.2.2.4 no-cache forbids it", x("no-cache, stale-if-error=300", true), 10 * time.Second, nil, 503, false},
		{"request no-cache forbids it", x("max-age=60, stale-if-error=300", true), 200 * time.Second, get("/e", "Cache-Control: no-cache"), 503, false},
		{"request max-age=0 (reload) still gets it", x("max-age=60, stale-if-error=300", true), 200 * time.Second, get("/e", "Cache-Control: max-age=0"), 503, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, r := lookupAt(t, tt.x, tt.after, tt.req...)
			if r.State == Hit {
				t.Fatalf("lookup is a hit")
			}
			req := tt.req
			if req == nil {
				req = tt.x.req
			}
			e, ok := c.StaleOnError(newReq(t, req[0], req[1:]...), r, tt.status)
			if ok != tt.want || ok && string(e.Body()) != "E" {
				t.Fatalf("StaleOnError = %v, want %v (lookup %v)", ok, tt.want, r.State)
			}
		})
	}
}
