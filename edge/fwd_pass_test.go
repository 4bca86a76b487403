package edge

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// switchOrigin is a loopback origin answering with the header set by
// set (Cache-Control, Set-Cookie), counting the requests it gets.
type switchOrigin struct {
	url   string
	hits  atomic.Int64
	mu    sync.Mutex
	hdr   map[string]string
	body  string
	paths map[string]int
}

func newSwitchOrigin(tb testing.TB) *switchOrigin {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	o := &switchOrigin{url: "http://" + ln.Addr().String(), paths: map[string]int{}}
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		o.hits.Add(1)
		o.mu.Lock()
		o.paths[string(ctx.Path())]++
		for k, v := range o.hdr {
			ctx.Response.Header.Set(k, v)
		}
		body := o.body
		o.mu.Unlock()
		ctx.Response.Header.Set("Date", time.Now().UTC().Format(time.RFC1123))
		ctx.SetBodyString(body)
	}}
	go srv.Serve(ln)
	tb.Cleanup(func() { srv.Shutdown() })
	return o
}

func (o *switchOrigin) set(body string, hdr map[string]string) {
	o.mu.Lock()
	o.hdr, o.body = hdr, body
	o.mu.Unlock()
}

// fakeNow is a settable clock for Config.Now.
type fakeNow struct{ ns atomic.Int64 }

func (f *fakeNow) now() time.Time          { return time.Unix(0, f.ns.Load()) }
func (f *fakeNow) advance(d time.Duration) { f.ns.Add(int64(d)) }

func TestHitForPass(t *testing.T) {
	uncacheable := []struct {
		name string
		hdr  map[string]string
	}{
		{"no-store", map[string]string{"Cache-Control": "no-store"}},
		{"private", map[string]string{"Cache-Control": "private, max-age=60"}},
		{"Set-Cookie", map[string]string{"Cache-Control": "max-age=60", "Set-Cookie": "s=1"}},
		{"Vary: *", map[string]string{"Cache-Control": "max-age=60", "Vary": "*"}},
		{"CDN-Cache-Control: no-store", map[string]string{"Cache-Control": "max-age=60", "CDN-Cache-Control": "no-store"}},
	}
	for _, tc := range uncacheable {
		t.Run(tc.name, func(t *testing.T) {
			o := newSwitchOrigin(t)
			clk := &fakeNow{}
			clk.ns.Store(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC).UnixNano())
			e := newProxyEdge(t, o.url, func(c *Config) { c.Now = clk.now })
			get := func(uri string, hdr map[string]string) *fasthttp.RequestCtx {
				t.Helper()
				var ctx fasthttp.RequestCtx
				request(&ctx, "GET", "app.apps.test", uri, "127.0.0.1:40000", hdr)
				e.serve(&ctx, protoHTTPS)
				e.cache.Wait()
				return &ctx
			}
			o.set("one", tc.hdr)
			if c := get("/a", nil); c.Response.StatusCode() != 200 || string(c.Response.Body()) != "one" {
				t.Fatalf("first: %d %q", c.Response.StatusCode(), c.Response.Body())
			}
			pt := e.table.Load().lookupHost([]byte("app.apps.test")).dep.origin.pass
			var req fasthttp.Request
			req.Header.SetHost("app.apps.test")
			req.SetRequestURI("/a")
			k := pt.hash(e.table.Load().lookupHost([]byte("app.apps.test")).dep.target, &req.Header)
			if !pt.passes(k, clk.now()) {
				t.Fatal("an unstorable answer left no pass mark")
			}

			// While /a passes, a storable answer is forwarded, not stored,
			// and each pass is counted (the cache's misses do not see it).
			passes := testCounterValue(e.metrics.passes)
			o.set("two", map[string]string{"Cache-Control": "public, max-age=600"})
			for i := range 3 {
				c := get("/a", nil)
				if string(c.Response.Body()) != "two" || string(c.Response.Header.Peek("X-Cache")) != "MISS" {
					t.Fatalf("request %d while passing: %q X-Cache %q", i, c.Response.Body(), c.Response.Header.Peek("X-Cache"))
				}
			}
			if got := testCounterValue(e.metrics.passes) - passes; got != 3 {
				t.Fatalf("platform_edge_cache_passes_total moved by %v, want 3", got)
			}
			if n := o.paths["/a"]; n != 4 {
				t.Fatalf("origin saw %d requests for /a, want 4", n)
			}
			// only-if-cached is the cache's to answer (RFC 9111 §5.2.1.7),
			// pass or not.
			if c := get("/a", map[string]string{"Cache-Control": "only-if-cached"}); c.Response.StatusCode() != fasthttp.StatusGatewayTimeout {
				t.Fatalf("only-if-cached while passing: %d, want 504", c.Response.StatusCode())
			}
			// Another key is not affected: stored at once.
			get("/b", nil)
			if c := get("/b", nil); string(c.Response.Header.Peek("X-Cache")) != "HIT" {
				t.Fatalf("/b: X-Cache %q, want HIT", c.Response.Header.Peek("X-Cache"))
			}

			// After passTTL, the storable answer is stored again.
			clk.advance(passTTL + time.Second)
			get("/a", nil)
			if c := get("/a", nil); string(c.Response.Header.Peek("X-Cache")) != "HIT" || string(c.Response.Body()) != "two" {
				t.Fatalf("after the mark expired: %q X-Cache %q, want a HIT", c.Response.Body(), c.Response.Header.Peek("X-Cache"))
			}
		})
	}
}

// TestHitForPassNotTaken: answers that are unstorable for reasons of the
// request, or for a key with a stored response, leave no mark.
func TestHitForPassNotTaken(t *testing.T) {
	for _, tc := range []struct {
		name   string
		hdr    map[string]string // the origin's
		reqHdr map[string]string
	}{
		{"no explicit freshness", map[string]string{}, nil},
		{"request no-store", map[string]string{"Cache-Control": "no-store"}, map[string]string{"Cache-Control": "no-store"}},
		{"authorization", map[string]string{"Cache-Control": "max-age=60"}, map[string]string{"Authorization": "Bearer x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := newSwitchOrigin(t)
			e := newProxyEdge(t, o.url)
			o.set("x", tc.hdr)
			var ctx fasthttp.RequestCtx
			request(&ctx, "GET", "app.apps.test", "/a", "127.0.0.1:40000", tc.reqHdr)
			e.serve(&ctx, protoHTTPS)
			st := e.table.Load().lookupHost([]byte("app.apps.test"))
			k := st.dep.origin.pass.hash(st.dep.target, &ctx.Request.Header)
			if st.dep.origin.pass.passes(k, e.now()) {
				t.Fatal("marked pass")
			}
		})
	}

	t.Run("stale entry kept", func(t *testing.T) {
		o := newSwitchOrigin(t)
		clk := &fakeNow{}
		clk.ns.Store(time.Now().UnixNano())
		e := newProxyEdge(t, o.url, func(c *Config) { c.Now = clk.now })
		o.set("old", map[string]string{"Cache-Control": "max-age=1", "ETag": `"v1"`})
		var ctx fasthttp.RequestCtx
		request(&ctx, "GET", "app.apps.test", "/a", "127.0.0.1:40000", nil)
		e.serve(&ctx, protoHTTPS)
		e.cache.Wait()
		clk.advance(5 * time.Second)
		o.set("new", map[string]string{"Cache-Control": "no-store"})
		ctx.Response.Reset()
		e.serve(&ctx, protoHTTPS)
		if string(ctx.Response.Body()) != "new" {
			t.Fatalf("body %q", ctx.Response.Body())
		}
		st := e.table.Load().lookupHost([]byte("app.apps.test"))
		k := st.dep.origin.pass.hash(st.dep.target, &ctx.Request.Header)
		if st.dep.origin.pass.passes(k, clk.now()) {
			t.Fatal("marked pass over a stored response")
		}
	})
}

func TestPassTableSlots(t *testing.T) {
	pt := newPassTable()
	now := time.Unix(1_800_000_000, 0)
	var a, b fasthttp.RequestHeader
	a.SetHost("x.test")
	a.SetRequestURI("/one")
	b.SetHost("x.test")
	b.SetRequestURI("/two")
	ka, kb := pt.hash("t", &a), pt.hash("t", &b)
	if ka == kb || ka == 0 || kb == 0 {
		t.Fatalf("hashes %x %x", ka, kb)
	}
	pt.mark(ka, now)
	for _, tc := range []struct {
		name string
		k    uint64
		at   time.Time
		want bool
	}{
		{"marked", ka, now, true},
		{"just before the end", ka, now.Add(passTTL - time.Nanosecond), true},
		{"expired", ka, now.Add(passTTL), false},
		{"other key", kb, now, false},
		{"same slot, other key", ka ^ passSlots, now, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := pt.passes(tc.k, tc.at); got != tc.want {
				t.Fatalf("passes = %v, want %v", got, tc.want)
			}
		})
	}
}

func BenchmarkPassCheck(b *testing.B) {
	pt := newPassTable()
	var req fasthttp.Request
	req.Header.SetHost("app.apps.test")
	req.SetRequestURI("/api/items?page=2")
	now := time.Now()
	pt.mark(pt.hash("target", &req.Header), now)
	b.ReportAllocs()
	for b.Loop() {
		if !passable(&req) || !pt.passes(pt.hash("target", &req.Header), now) {
			b.Fatal("not passing")
		}
	}
}
