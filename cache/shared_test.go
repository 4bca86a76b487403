package cache

import (
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// exchange is one request forwarded to the origin and its response.
type exchange struct {
	target string   // default "app"
	req    []string // request line, then header lines
	status int
	body   string
	resp   []string
}

func (x exchange) store(t *testing.T, c *Cache, now time.Time) Decision {
	t.Helper()
	target := x.target
	if target == "" {
		target = "app"
	}
	return c.Store(target, newReq(t, x.req[0], x.req[1:]...), newResp(t, x.status, x.body, x.resp...), now, now)
}

func get(path string, headers ...string) []string { return append([]string{"GET " + path}, headers...) }

func TestSharedLookup(t *testing.T) {
	fresh := exchange{req: get("/a"), status: 200, body: "A", resp: []string{"Cache-Control: max-age=60", `ETag: "a1"`}}
	noValidators := exchange{req: get("/a"), status: 200, body: "A", resp: []string{"Cache-Control: max-age=60"}}
	tests := []struct {
		name     string
		stored   []exchange
		advance  time.Duration
		target   string // default "app"
		lookup   []string
		want     State
		wantBody string
		wantAge  string
	}{
		{name: "empty cache misses", lookup: get("/a"), want: Miss},
		{name: "§4 fresh response is a hit", stored: []exchange{fresh}, advance: 10 * time.Second, lookup: get("/a"), want: Hit, wantBody: "A", wantAge: "10"},
		{name: "§4.2.3 Age adds origin Age, delay and resident time", stored: []exchange{{req: get("/a"), status: 200, body: "A", resp: []string{"Cache-Control: max-age=60", "Age: 20"}}}, advance: 5 * time.Second, lookup: get("/a"), want: Hit, wantBody: "A", wantAge: "25"},
		{name: "§4.2.3 apparent age from Date", stored: []exchange{{req: get("/a"), status: 200, body: "A", resp: []string{"Cache-Control: max-age=60", "Date: " + httpDate(-30*time.Second)}}}, advance: time.Second, lookup: get("/a"), want: Hit, wantAge: "31"},
		{name: "§4.2 stale with validators revalidates", stored: []exchange{fresh}, advance: 60 * time.Second, lookup: get("/a"), want: Revalidate},
		{name: "§4.2 stale without validators misses", stored: []exchange{noValidators}, advance: 61 * time.Second, lookup: get("/a"), want: Miss},
		{name: "§4.2.1 Expires freshness", stored: []exchange{{req: get("/a"), status: 200, body: "A", resp: []string{"Date: " + httpDate(0), "Expires: " + httpDate(30*time.Second)}}}, advance: 29 * time.Second, lookup: get("/a"), want: Hit},
		{name: "§4.2.1 Expires passed", stored: []exchange{{req: get("/a"), status: 200, body: "A", resp: []string{"Date: " + httpDate(0), "Expires: " + httpDate(30*time.Second)}}}, advance: 30 * time.Second, lookup: get("/a"), want: Miss},
		{name: "§5.2.2.2 must-revalidate: never served stale", stored: []exchange{{req: get("/a"), status: 200, resp: []string{"Cache-Control: max-age=1, must-revalidate", `ETag: "a"`}}}, advance: 2 * time.Second, lookup: get("/a", "Cache-Control: max-stale=3600"), want: Revalidate},
		{name: "§5.2.1.2 max-stale ignored: no stale responses", stored: []exchange{fresh}, advance: 61 * time.Second, lookup: get("/a", "Cache-Control: max-stale"), want: Revalidate},
		{name: "§5.2.2.4 no-cache response always revalidated", stored: []exchange{{req: get("/a"), status: 200, resp: []string{"Cache-Control: no-cache, max-age=600", `ETag: "a"`}}}, lookup: get("/a"), want: Revalidate},
		{name: "§5.2.1.4 request no-cache revalidates", stored: []exchange{fresh}, lookup: get("/a", "Cache-Control: no-cache"), want: Revalidate},
		{name: "§5.4 Pragma: no-cache without Cache-Control revalidates", stored: []exchange{fresh}, lookup: get("/a", "Pragma: no-cache"), want: Revalidate},
		{name: "§5.4 Pragma ignored beside Cache-Control", stored: []exchange{fresh}, lookup: get("/a", "Pragma: no-cache", "Cache-Control: max-age=3600"), want: Hit},
		{name: "§5.2.1.1 request max-age=0 revalidates", stored: []exchange{fresh}, advance: time.Second, lookup: get("/a", "Cache-Control: max-age=0"), want: Revalidate},
		{name: "§5.2.1.1 request max-age=0 without validators misses", stored: []exchange{noValidators}, advance: time.Second, lookup: get("/a", "Cache-Control: max-age=0"), want: Miss},
		{name: "§5.2.1.1 request max-age above age hits", stored: []exchange{fresh}, advance: 10 * time.Second, lookup: get("/a", "Cache-Control: max-age=30"), want: Hit},
		{name: "§5.2.1.1 request max-age below age revalidates", stored: []exchange{fresh}, advance: 31 * time.Second, lookup: get("/a", "Cache-Control: max-age=30"), want: Revalidate},
		{name: "§5.2.1.3 min-fresh satisfied", stored: []exchange{fresh}, advance: 10 * time.Second, lookup: get("/a", "Cache-Control: min-fresh=50"), want: Hit},
		{name: "§5.2.1.3 min-fresh not satisfied", stored: []exchange{fresh}, advance: 11 * time.Second, lookup: get("/a", "Cache-Control: min-fresh=50"), want: Revalidate},
		{name: "invalid request directive revalidates", stored: []exchange{fresh}, lookup: get("/a", "Cache-Control: max-age=x"), want: Revalidate},
		{name: "§5.2.1.7 only-if-cached with nothing stored", lookup: get("/a", "Cache-Control: only-if-cached"), want: GatewayTimeout},
		{name: "§5.2.1.7 only-if-cached with a fresh response", stored: []exchange{fresh}, lookup: get("/a", "Cache-Control: only-if-cached"), want: Hit},
		{name: "§5.2.1.7 only-if-cached with a stale response", stored: []exchange{fresh}, advance: time.Hour, lookup: get("/a", "Cache-Control: only-if-cached"), want: GatewayTimeout},
		{name: "§4 HEAD answered from the stored GET response", stored: []exchange{fresh}, lookup: []string{"HEAD /a"}, want: Hit, wantBody: "A"},
		{name: "§3 HEAD response not stored", stored: []exchange{{req: []string{"HEAD /a"}, status: 200, resp: []string{"Cache-Control: max-age=60"}}}, lookup: get("/a"), want: Miss},
		{name: "§4 POST bypasses the cache", stored: []exchange{fresh}, lookup: []string{"POST /a"}, want: Bypass},
		{name: "§4 query is part of the key", stored: []exchange{fresh}, lookup: get("/a?x=1"), want: Miss},
		{name: "§4 query string stored and matched", stored: []exchange{{req: get("/a?x=1"), status: 200, body: "X", resp: []string{"Cache-Control: max-age=60"}}}, lookup: get("/a?x=1"), want: Hit, wantBody: "X"},
		{name: "§4 host is part of the key", stored: []exchange{fresh}, lookup: get("/a", "Host: other.example"), want: Miss},
		{name: "§4 host compared case-insensitively", stored: []exchange{fresh}, lookup: get("/a", "Host: EXAMPLE.com"), want: Hit},
		{name: "absolute-form target matches origin-form", stored: []exchange{fresh}, lookup: get("http://example.com/a"), want: Hit},
		{name: "targets are isolated", stored: []exchange{fresh}, target: "other-app", lookup: get("/a"), want: Miss},
		{name: "§3 not-stored response leaves nothing", stored: []exchange{{req: get("/a"), status: 200, resp: []string{"Cache-Control: private, max-age=60"}}}, lookup: get("/a"), want: Miss},
		{name: "§3.5 Authorization response with s-maxage serves others", stored: []exchange{{req: get("/a", "Authorization: Bearer t"), status: 200, body: "P", resp: []string{"Cache-Control: s-maxage=60"}}}, lookup: get("/a"), want: Hit, wantBody: "P"},
		{name: "§4.1 Vary: matching variant", stored: []exchange{
			{req: get("/v", "Accept-Encoding: gzip"), status: 200, body: "gz", resp: []string{"Cache-Control: max-age=60", "Vary: Accept-Encoding", "Content-Encoding: gzip"}},
			{req: get("/v", "Accept-Encoding: br"), status: 200, body: "br", resp: []string{"Cache-Control: max-age=60", "Vary: Accept-Encoding", "Content-Encoding: br"}},
		}, lookup: get("/v", "Accept-Encoding: gzip"), want: Hit, wantBody: "gz"},
		{name: "§4.1 Vary: second variant kept", stored: []exchange{
			{req: get("/v", "Accept-Encoding: gzip"), status: 200, body: "gz", resp: []string{"Cache-Control: max-age=60", "Vary: Accept-Encoding"}},
			{req: get("/v", "Accept-Encoding: br"), status: 200, body: "br", resp: []string{"Cache-Control: max-age=60", "Vary: Accept-Encoding"}},
		}, lookup: get("/v", "Accept-Encoding: br"), want: Hit, wantBody: "br"},
		{name: "§4.1 Vary: other value misses", stored: []exchange{
			{req: get("/v", "Accept-Encoding: gzip"), status: 200, body: "gz", resp: []string{"Cache-Control: max-age=60", "Vary: Accept-Encoding"}},
		}, lookup: get("/v", "Accept-Encoding: identity"), want: Miss},
		{name: "§4.1 Vary: absent header matches only absent", stored: []exchange{
			{req: get("/v"), status: 200, body: "plain", resp: []string{"Cache-Control: max-age=60", "Vary: Accept-Encoding"}},
		}, lookup: get("/v"), want: Hit, wantBody: "plain"},
		{name: "§4.1 Vary: normalized whitespace matches", stored: []exchange{
			{req: get("/v", "Accept-Language: fr, en"), status: 200, body: "fr", resp: []string{"Cache-Control: max-age=60", "Vary: accept-language"}},
		}, lookup: get("/v", "Accept-Language: fr,en"), want: Hit, wantBody: "fr"},
		{name: "§4.1 Vary: several fields", stored: []exchange{
			{req: get("/v", "Accept-Language: fr", "X-Theme: dark"), status: 200, body: "fr-dark", resp: []string{"Cache-Control: max-age=60", "Vary: X-Theme, Accept-Language"}},
		}, lookup: get("/v", "X-Theme: light", "Accept-Language: fr"), want: Miss},
		{name: "§4.1 Vary changed: latest field list wins", stored: []exchange{
			{req: get("/v", "Accept-Language: fr"), status: 200, body: "lang", resp: []string{"Cache-Control: max-age=60", "Vary: Accept-Language"}},
			{req: get("/v", "X-Theme: dark"), status: 200, body: "theme", resp: []string{"Cache-Control: max-age=60", "Vary: X-Theme"}},
		}, lookup: get("/v", "Accept-Language: fr"), want: Miss},
		{name: "§4.1 Vary: * stores nothing", stored: []exchange{
			{req: get("/v"), status: 200, resp: []string{"Cache-Control: max-age=60", "Vary: *"}},
		}, lookup: get("/v"), want: Miss},
		{name: "Vary removed: response without Vary replaces variants", stored: []exchange{
			{req: get("/v", "Accept-Language: fr"), status: 200, body: "fr", resp: []string{"Cache-Control: max-age=60", "Vary: Accept-Language"}},
			{req: get("/v", "Accept-Language: fr"), status: 200, body: "any", resp: []string{"Cache-Control: max-age=60"}},
		}, lookup: get("/v", "Accept-Language: de"), want: Hit, wantBody: "any"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newClock()
			c := newCache(t, Config{}, clk)
			for _, x := range tt.stored {
				x.store(t, c, clk.Now())
				c.Wait()
			}
			clk.Add(tt.advance)
			target := tt.target
			if target == "" {
				target = "app"
			}
			r := c.Lookup(target, newReq(t, tt.lookup[0], tt.lookup[1:]...))
			if r.State != tt.want {
				t.Fatalf("Lookup = %v, want %v", r.State, tt.want)
			}
			if (r.Entry != nil) != (r.State == Hit || r.State == Revalidate) {
				t.Fatalf("Entry = %v with state %v", r.Entry, r.State)
			}
			if tt.wantBody != "" && string(r.Entry.Body()) != tt.wantBody {
				t.Fatalf("body = %q, want %q", r.Entry.Body(), tt.wantBody)
			}
			if tt.wantAge != "" {
				var resp fasthttp.Response
				r.Entry.Respond(&resp, clk.Now())
				if got := string(resp.Header.Peek("Age")); got != tt.wantAge {
					t.Fatalf("Age = %q, want %q", got, tt.wantAge)
				}
			}
		})
	}
}

func TestSharedRespondPassesHeadersThrough(t *testing.T) {
	clk := newClock()
	c := newCache(t, Config{}, clk)
	resp := newResp(t, 200, "hello",
		"Cache-Control: public, max-age=60",
		"Content-Type: application/json",
		`ETag: "e1"`,
		"Link: </a>; rel=preload",
		"Link: </b>; rel=preload",
		"X-Custom: Value With  Spaces",
		"Age: 3",
		"Connection: keep-alive, X-Hop",
		"X-Hop: secret",
		"Keep-Alive: timeout=5",
	)
	d := c.Store("app", newReq(t, "GET /r"), resp, clk.Now(), clk.Now())
	if !d.Storable() {
		t.Fatalf("not stored: %v", d.Reason)
	}
	c.Wait()
	clk.Add(2 * time.Second)
	r := c.Lookup("app", newReq(t, "GET /r"))
	if r.State != Hit {
		t.Fatalf("Lookup = %v", r.State)
	}
	var out fasthttp.Response
	r.Entry.Respond(&out, clk.Now())
	checks := []struct{ name, want string }{
		{"Cache-Control", "public, max-age=60"},
		{"Content-Type", "application/json"},
		{"ETag", `"e1"`},
		{"X-Custom", "Value With  Spaces"},
		{"Age", "5"},       // origin Age 3 + 2 s resident
		{"X-Hop", ""},      // named by Connection: hop-by-hop (§3.1)
		{"Keep-Alive", ""}, // hop-by-hop
	}
	for _, ch := range checks {
		if got := string(out.Header.Peek(ch.name)); got != ch.want {
			t.Errorf("%s = %q, want %q", ch.name, got, ch.want)
		}
	}
	links := out.Header.PeekAll("Link")
	if len(links) != 2 || string(links[0]) != "</a>; rel=preload" || string(links[1]) != "</b>; rel=preload" {
		t.Errorf("Link lines = %q, want both, in order", links)
	}
	if out.StatusCode() != 200 || string(out.Body()) != "hello" {
		t.Errorf("status %d body %q", out.StatusCode(), out.Body())
	}
	if got := string(r.Entry.Header("x-custom")); got != "Value With  Spaces" {
		t.Errorf("Header(x-custom) = %q", got)
	}
}

func TestSharedInvalidation(t *testing.T) {
	stored := []string{"/a", "/a?q=1", "/b", "/c"}
	tests := []struct {
		name   string
		unsafe exchange
		gone   []string // of stored, the paths invalidated
	}{
		{name: "§4.4 POST 200 invalidates the target URI", unsafe: exchange{req: []string{"POST /a"}, status: 200}, gone: []string{"/a"}},
		{name: "§4.4 PUT 204 invalidates", unsafe: exchange{req: []string{"PUT /b"}, status: 204}, gone: []string{"/b"}},
		{name: "§4.4 DELETE 202 invalidates", unsafe: exchange{req: []string{"DELETE /a?q=1"}, status: 202}, gone: []string{"/a?q=1"}},
		{name: "§4.4 PATCH 303 invalidates", unsafe: exchange{req: []string{"PATCH /c"}, status: 303}, gone: []string{"/c"}},
		{name: "§4.4 unknown method is unsafe", unsafe: exchange{req: []string{"PURGE /c"}, status: 200}, gone: []string{"/c"}},
		{name: "§4.4 error response invalidates nothing", unsafe: exchange{req: []string{"POST /a"}, status: 500}},
		{name: "§4.4 4xx invalidates nothing", unsafe: exchange{req: []string{"DELETE /a"}, status: 404}},
		{name: "§4.4 safe OPTIONS invalidates nothing", unsafe: exchange{req: []string{"OPTIONS /a"}, status: 200}},
		{name: "§4.4 Location on the same host", unsafe: exchange{req: []string{"POST /a"}, status: 201, resp: []string{"Location: /b"}}, gone: []string{"/a", "/b"}},
		{name: "§4.4 absolute Location on the same host", unsafe: exchange{req: []string{"POST /a"}, status: 201, resp: []string{"Location: https://EXAMPLE.com/b#frag"}}, gone: []string{"/a", "/b"}},
		{name: "§4.4 Content-Location on the same host", unsafe: exchange{req: []string{"PUT /a"}, status: 200, resp: []string{"Content-Location: /c"}}, gone: []string{"/a", "/c"}},
		{name: "§4.4 Location on another host ignored", unsafe: exchange{req: []string{"POST /a"}, status: 201, resp: []string{"Location: https://evil.example/b"}}, gone: []string{"/a"}},
		{name: "§4.4 Location with query", unsafe: exchange{req: []string{"POST /b"}, status: 201, resp: []string{"Location: //example.com?q=1"}}, gone: []string{"/b"}},
		{name: "§4.4 other targets untouched", unsafe: exchange{target: "other", req: []string{"POST /a"}, status: 200}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newClock()
			c := newCache(t, Config{}, clk)
			for _, p := range stored {
				exchange{req: get(p), status: 200, body: p, resp: []string{"Cache-Control: max-age=600"}}.store(t, c, clk.Now())
			}
			c.Wait()
			if d := tt.unsafe.store(t, c, clk.Now()); d.Storable() {
				t.Fatalf("unsafe response stored")
			}
			c.Wait()
			for _, p := range stored {
				wantGone := false
				for _, g := range tt.gone {
					wantGone = wantGone || g == p
				}
				r := c.Lookup("app", newReq(t, "GET "+p))
				if (r.State == Miss) != wantGone {
					t.Errorf("after %s: Lookup(%s) = %v, want gone=%v", tt.unsafe.req[0], p, r.State, wantGone)
				}
			}
		})
	}
}

func TestSharedInvalidationOfVariants(t *testing.T) {
	clk := newClock()
	c := newCache(t, Config{}, clk)
	variant := func(lang string) exchange {
		return exchange{req: get("/v", "Accept-Language: "+lang), status: 200, body: lang, resp: []string{"Cache-Control: max-age=600", "Vary: Accept-Language"}}
	}
	variant("fr").store(t, c, clk.Now())
	c.Wait()
	variant("de").store(t, c, clk.Now())
	c.Wait()
	exchange{req: []string{"POST /v"}, status: 200}.store(t, c, clk.Now())
	c.Wait()
	// A variant stored after the invalidation must not resurrect the others.
	variant("en").store(t, c, clk.Now())
	c.Wait()
	for _, tc := range []struct {
		lang string
		want State
	}{{"fr", Miss}, {"de", Miss}, {"en", Hit}} {
		t.Run(tc.lang, func(t *testing.T) {
			if r := c.Lookup("app", newReq(t, "GET /v", "Accept-Language: "+tc.lang)); r.State != tc.want {
				t.Fatalf("Lookup(%s) = %v, want %v", tc.lang, r.State, tc.want)
			}
		})
	}
	t.Run("Invalidate by host and path", func(t *testing.T) {
		c.Invalidate("app", []byte("example.com"), []byte("/v"))
		c.Wait()
		if r := c.Lookup("app", newReq(t, "GET /v", "Accept-Language: en")); r.State != Miss {
			t.Fatalf("Lookup after Invalidate = %v", r.State)
		}
	})
}

func TestSharedStoreLimits(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		body int
		want Reason
	}{
		{name: "within MaxEntryBytes", cfg: Config{MaxEntryBytes: 8192}, body: 1000, want: ReasonStorable},
		{name: "over MaxEntryBytes", cfg: Config{MaxEntryBytes: 8192}, body: 9000, want: ReasonTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newClock()
			c := newCache(t, tt.cfg, clk)
			d := exchange{req: get("/big"), status: 200, body: strings.Repeat("x", tt.body), resp: []string{"Cache-Control: max-age=60"}}.store(t, c, clk.Now())
			c.Wait()
			if d.Reason != tt.want {
				t.Fatalf("Reason = %v, want %v", d.Reason, tt.want)
			}
			hit := c.Lookup("app", newReq(t, "GET /big")).State == Hit
			if hit != (tt.want == ReasonStorable) {
				t.Fatalf("hit = %v", hit)
			}
		})
	}
}

func TestSameHostPath(t *testing.T) {
	tests := []struct {
		ref, want string
		ok        bool
	}{
		{"/a/b?x=1", "/a/b?x=1", true},
		{"/a#f", "/a", true},
		{"http://example.com/a", "/a", true},
		{"HTTPS://Example.COM", "/", true},
		{"https://example.com?x", "/?x", true},
		{"//example.com/p", "/p", true},
		{"https://example.com.evil/a", "", false},
		{"https://evil/a", "", false},
		{"relative/path", "", false},
		{"", "", false},
		{"#only", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			got, ok := sameHostPath([]byte(tt.ref), []byte("example.com"))
			if ok != tt.ok || string(got) != tt.want {
				t.Fatalf("sameHostPath(%q) = %q, %v; want %q, %v", tt.ref, got, ok, tt.want, tt.ok)
			}
		})
	}
}
