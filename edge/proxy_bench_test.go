package edge

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"testing"

	"github.com/valyala/fasthttp"
)

// benchOrigin is a fasthttp origin on a loopback socket answering every
// request with a 256-byte JSON body and the given Cache-Control, like the
// nginx origin of bench/ workload 4 (and, for /swr, a response with
// validators that may be served stale for ten minutes).
func benchOrigin(tb testing.TB, cacheControl string) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	body := append([]byte(`{"items":[`), bytes.Repeat([]byte(`1,`), 122)...)
	body = append(body, `0]}`...)
	body = body[:256]
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		ctx.Response.Header.SetContentType("application/json")
		ctx.Response.Header.Set("Cache-Control", cacheControl)
		ctx.Response.Header.Set("ETag", `"b1"`)
		if string(ctx.Path()) == "/swr" {
			ctx.Response.Header.Set("Cache-Control", "max-age=1, stale-while-revalidate=600")
			ctx.Response.Header.Set("ETag", `"swr"`)
		}
		ctx.Response.SetBodyRaw(body)
	}}
	go srv.Serve(ln)
	tb.Cleanup(func() { srv.Shutdown() })
	return "http://" + ln.Addr().String()
}

// newProxyEdge returns an edge (no listener) serving app.apps.test from
// origin.
func newProxyEdge(tb testing.TB, origin string, opts ...func(*Config)) *Edge {
	tb.Helper()
	cfg := Config{
		HTTPAddr: "-", HTTPSAddr: "127.0.0.1:0", AppsDomain: "apps.test", DataDir: tb.TempDir(),
		ControlPlane: "http://127.0.0.1:1", Token: "svc_edge_unit", Locator: fixedLocator{'U', 'S'}, Logger: quiet,
		TrustedProxies: []string{"127.0.0.1/32"}, AllowPrivateNetworks: true,
	}
	for _, o := range opts {
		o(&cfg)
	}
	e, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(e.close)
	if err := e.apply(context.Background(), appSnapshot(map[string]string{"app.apps.test": origin}), nil); err != nil {
		tb.Fatal(err)
	}
	return e
}

// benchHeader is what bench/ workload 4 sends.
var benchHeader = map[string]string{
	"User-Agent":      "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 bench",
	"Accept":          "*/*",
	"X-Forwarded-For": "203.0.113.9",
}

// BenchmarkProxy measures the forwarding path of bench/ workload 4 in
// process: a request for a server app through routing, Shield, the shared
// cache lookup, the pooled origin client (a real loopback origin) and the
// response written to a discarding buffer, as fasthttp's server would.
// "no-store" is workload 4 (nothing cached); "shared-hit" is the same
// request answered from the shared cache.
func BenchmarkProxy(b *testing.B) {
	for _, bc := range []struct{ name, cc string }{
		{"no-store", "no-store"},
		{"shared-hit", "public, max-age=3600"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			e := newProxyEdge(b, benchOrigin(b, bc.cc))
			var ctx fasthttp.RequestCtx
			request(&ctx, "GET", "app.apps.test", "/api/items", "127.0.0.1:40000", benchHeader)
			bw := bufio.NewWriterSize(io.Discard, writeBufferSize)
			serve := func() {
				ctx.Response.Reset()
				e.serve(&ctx, protoHTTPS)
				if err := ctx.Response.Write(bw); err != nil {
					b.Fatal(err)
				}
				bw.Flush()
			}
			serve()
			e.cache.Wait()
			serve()
			if s := ctx.Response.StatusCode(); s != 200 {
				b.Fatalf("status %d", s)
			}
			b.ReportAllocs()
			for b.Loop() {
				serve()
			}
		})
	}
}

// sizedOrigin is a fasthttp origin on a loopback socket answering every
// request with size bytes (no-store, Content-Length).
func sizedOrigin(tb testing.TB, size int) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	body := bytes.Repeat([]byte("x"), size)
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		ctx.Response.Header.SetContentType("application/octet-stream")
		ctx.Response.Header.Set("Cache-Control", "no-store")
		ctx.Response.SetBodyRaw(body)
	}}
	go srv.Serve(ln)
	tb.Cleanup(func() { srv.Shutdown() })
	return "http://" + ln.Addr().String()
}
