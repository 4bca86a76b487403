package edge

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/svcplatform/platform/edge/internal/forward"
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
			ctx, serve := workload4(b, e)
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

// workload4 returns bench/ workload 4's request for app.apps.test and a
// function serving it through e and writing the answer as fasthttp's server
// would, to a discarding buffer.
func workload4(b *testing.B, e *Edge) (*fasthttp.RequestCtx, func()) {
	ctx := new(fasthttp.RequestCtx)
	request(ctx, "GET", "app.apps.test", "/api/items", "127.0.0.1:40000", benchHeader)
	bw := bufio.NewWriterSize(io.Discard, writeBufferSize)
	return ctx, func() {
		ctx.Response.Reset()
		e.serve(ctx, protoHTTPS)
		if err := ctx.Response.Write(bw); err != nil {
			b.Fatal(err)
		}
		bw.Flush()
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

// cannedConn is an origin connection in memory: each request written to
// it is answered with resp, read back in whatever pieces the reader asks.
type cannedConn struct {
	resp, pending []byte
}

func (c *cannedConn) Write(p []byte) (int, error) { c.pending = c.resp; return len(p), nil }
func (c *cannedConn) Read(p []byte) (int, error) {
	if len(c.pending) == 0 {
		return 0, io.ErrUnexpectedEOF // a read past the answer: the benchmark's mistake
	}
	n := copy(p, c.pending)
	c.pending = c.pending[n:]
	return n, nil
}
func (c *cannedConn) Close() error                     { return nil }
func (c *cannedConn) LocalAddr() net.Addr              { return cannedAddr{} }
func (c *cannedConn) RemoteAddr() net.Addr             { return cannedAddr{} }
func (c *cannedConn) SetDeadline(time.Time) error      { return nil }
func (c *cannedConn) SetReadDeadline(time.Time) error  { return nil }
func (c *cannedConn) SetWriteDeadline(time.Time) error { return nil }

type cannedAddr struct{}

func (cannedAddr) Network() string { return "tcp" }
func (cannedAddr) String() string  { return "127.0.0.1:1" }

// BenchmarkProxyCPU is BenchmarkProxy/no-store without the origin's
// sockets: the origin connection is in memory (cannedConn, answering as
// bench/ workload 4's origin does), so what is measured is the edge's own
// work per forwarded request, the part that differs from nginx's (the
// system calls are the same in number: bench/RESULTS.md). TLS to the
// visitor is not included.
func BenchmarkProxyCPU(b *testing.B) {
	body := bytes.Repeat([]byte("x"), 256)
	resp := []byte("HTTP/1.1 200 OK\r\nServer: nginx/1.26.3\r\nDate: Sun, 23 Nov 2026 05:00:00 GMT\r\n" +
		"Content-Type: application/json\r\nContent-Length: 256\r\nConnection: keep-alive\r\nCache-Control: no-store\r\n\r\n" + string(body))
	e := newProxyEdge(b, "http://origin.test:80")
	e.origins.mu.Lock()
	for _, o := range e.origins.m {
		o.client.DialTimeout = func(string, time.Duration) (net.Conn, error) {
			return forward.NewConn(&cannedConn{resp: resp}, time.Minute, false), nil
		}
	}
	e.origins.mu.Unlock()
	ctx, serve := workload4(b, e)
	serve()
	if s := ctx.Response.StatusCode(); s != 200 || len(ctx.Response.Body()) != 256 {
		b.Fatalf("status %d, %d bytes", s, len(ctx.Response.Body()))
	}
	b.ReportAllocs()
	for b.Loop() {
		serve()
	}
}
