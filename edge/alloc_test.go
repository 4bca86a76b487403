//go:build !race

package edge

import (
	"bufio"
	"bytes"
	"io"
	"maps"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/edge/internal/forward"
)

// TestStaticHitDoesNotAllocate guards the hot path: a static-site request
// answered from the cache, through host routing, the client address (a
// trusted proxy's X-Forwarded-For), Shield with every rule on, the file
// guard, encoding negotiation and the security headers, allocates nothing.
func TestStaticHitDoesNotAllocate(t *testing.T) {
	ue := newUnitEdge(t, shieldOn(), map[string][]byte{
		"index.html": bytes.Repeat([]byte("<p>hello, edge</p>\n"), 100),
		"style.css":  []byte("body{color:#111}"),
	})
	for _, tc := range []struct {
		name, uri string
		header    map[string]string
	}{
		{"brotli index", "/", map[string]string{"Accept-Encoding": "gzip, deflate, br", "User-Agent": "Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0",
			"X-Forwarded-For": "203.0.113.9, 10.1.2.3"}},
		{"identity file", "/style.css", map[string]string{"User-Agent": "curl/8.0"}},
		{"revalidation 304", "/", map[string]string{"Accept-Encoding": "br", "If-None-Match": `"other", W/` + indexETag(ue, encBrotli)}},
		{"range", "/index.html", map[string]string{"Range": "bytes=10-99"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ctx fasthttp.RequestCtx
			request(&ctx, "GET", "blog.apps.test", tc.uri, "10.0.0.1:40000", tc.header)
			ue.serve(&ctx, protoHTTPS) // miss: fills the cache
			ue.cache.Wait()
			ctx.Response.Reset()
			ue.serve(&ctx, protoHTTPS)
			if tc.name == "revalidation 304" && ctx.Response.StatusCode() != 304 {
				t.Fatalf("status %d, want 304", ctx.Response.StatusCode())
			}
			if got := string(ctx.Response.Header.Peek("X-Cache")); got != "HIT" {
				t.Fatalf("second request: X-Cache %q, status %d", got, ctx.Response.StatusCode())
			}
			allocs := testing.AllocsPerRun(200, func() {
				ctx.Response.Reset()
				ue.serve(&ctx, protoHTTPS)
			})
			if allocs != 0 {
				t.Fatalf("static cache hit allocates %.1f times per request, want 0", allocs)
			}
		})
	}
}

// TestAccessLogDoesNotAllocate: with access logs on, the cached hit still
// allocates nothing (the line is built in the log's grown buffer).
func TestAccessLogDoesNotAllocate(t *testing.T) {
	ue := newUnitEdge(t, shieldOn(), map[string][]byte{"index.html": bytes.Repeat([]byte("<p>hello, edge</p>\n"), 100)},
		func(c *Config) { c.AccessLog, c.AccessLogWriter = "-", io.Discard })
	var ctx fasthttp.RequestCtx
	request(&ctx, "GET", "blog.apps.test", "/", "10.0.0.1:40000", map[string]string{"Accept-Encoding": "br",
		"X-Forwarded-For": "203.0.113.9", "User-Agent": "Mozilla/5.0 Firefox/140.0"})
	ue.serve(&ctx, protoHTTPS)
	ue.cache.Wait()
	for range accessFlushBytes / 100 { // grow the buffer to its working size
		ctx.Response.Reset()
		ue.serve(&ctx, protoHTTPS)
	}
	allocs := testing.AllocsPerRun(500, func() {
		ctx.Response.Reset()
		ue.serve(&ctx, protoHTTPS)
	})
	if allocs != 0 {
		t.Fatalf("a logged cache hit allocates %.1f times per request, want 0", allocs)
	}
}

// TestSharedHitDoesNotAllocate: a server app's response answered from the
// shared cache (RespondTo: whole, 304 to the visitor's validators, a
// Range, or stale within stale-while-revalidate once the refresh is
// claimed) allocates nothing, Shield and the headers included.
func TestSharedHitDoesNotAllocate(t *testing.T) {
	c := clock.NewFake(time.Now())
	e := newProxyEdge(t, benchOrigin(t, "public, max-age=3600"), func(cfg *Config) { cfg.Now = c.Now })
	for _, tc := range []struct {
		name, uri, xcache string
		header            map[string]string
		status            int
	}{
		{"hit", "/api/items", "HIT", nil, 200},
		{"revalidation 304", "/api/items", "HIT", map[string]string{"If-None-Match": `"b1"`}, 304},
		{"range", "/api/items", "HIT", map[string]string{"Range": "bytes=10-99"}, 206},
		{"stale-while-revalidate", "/swr", "STALE", nil, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := map[string]string{}
			maps.Copy(h, benchHeader)
			maps.Copy(h, tc.header)
			var ctx fasthttp.RequestCtx
			request(&ctx, "GET", "app.apps.test", tc.uri, "127.0.0.1:40000", h)
			e.serve(&ctx, protoHTTPS) // miss: fills the cache
			e.cache.Wait()
			if tc.xcache == "STALE" {
				c.Advance(2 * time.Second)
				ctx.Response.Reset()
				e.serve(&ctx, protoHTTPS) // claims the refresh
				e.refresher.wait()
				e.cache.Wait()
			}
			ctx.Response.Reset()
			e.serve(&ctx, protoHTTPS)
			if got := string(ctx.Response.Header.Peek("X-Cache")); got != tc.xcache || ctx.Response.StatusCode() != tc.status {
				t.Fatalf("X-Cache %q status %d, want %q %d", got, ctx.Response.StatusCode(), tc.xcache, tc.status)
			}
			allocs := testing.AllocsPerRun(200, func() {
				ctx.Response.Reset()
				e.serve(&ctx, protoHTTPS)
			})
			if allocs != 0 {
				t.Fatalf("shared cache %s allocates %.1f times per request, want 0", tc.name, allocs)
			}
		})
	}
}

func indexETag(ue *unitEdge, enc encoding) string {
	return string(ue.table.Load().sites["blog.apps.test"].dep.files[""].etag[enc])
}

// TestForwardAllocations guards the forwarding path (bench/ workload 4): a
// request for a server app forwarded to a real loopback origin, through
// routing, Shield, the shared-cache lookup, the pooled origin connection
// and the response written as fasthttp's server writes it, allocates at
// most once per request (0 measured: the response is read whole into the
// pooled response, its connection returned at once). A body past
// forward.BufferBytes streams through a pooled fwdStream, allocation-free too.
func TestForwardAllocations(t *testing.T) {
	for _, tc := range []struct {
		name, uri string
		size      int
	}{
		{"small body read whole", "/api/items", 256},
		{"large body streamed", "/big", 3 * forward.BufferBytes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newProxyEdge(t, sizedOrigin(t, tc.size))
			var ctx fasthttp.RequestCtx
			request(&ctx, "GET", "app.apps.test", tc.uri, "127.0.0.1:40000", benchHeader)
			bw := bufio.NewWriterSize(io.Discard, writeBufferSize)
			serve := func() {
				ctx.Response.Reset()
				e.serve(&ctx, protoHTTPS)
				if err := ctx.Response.Write(bw); err != nil {
					t.Fatal(err)
				}
				bw.Flush()
			}
			for range 50 {
				serve()
			}
			if s := ctx.Response.StatusCode(); s != 200 || string(ctx.Response.Header.Peek("X-Cache")) != "MISS" {
				t.Fatalf("status %d X-Cache %q", s, ctx.Response.Header.Peek("X-Cache"))
			}
			allocs := testing.AllocsPerRun(300, serve)
			if allocs > 1 {
				t.Fatalf("a forwarded request allocates %.1f times, want at most 1", allocs)
			}
			t.Logf("%.2f allocations per forwarded request", allocs)
		})
	}
}
