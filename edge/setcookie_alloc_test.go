//go:build !race

package edge

import (
	"bufio"
	"io"
	"net"
	"slices"
	"testing"

	"github.com/valyala/fasthttp"
)

// TestScopeCookiesDoesNotAllocate: scoping a response's cookies allocates
// nothing without Set-Cookie, with cookies that need no change, and, its
// pooled buffer warm, with cookies whose Domain it removes.
func TestScopeCookiesDoesNotAllocate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cookies []string
	}{
		{"no Set-Cookie", nil},
		{"host-only and own host", []string{"a=1; Path=/; Secure", "b=2; Domain=app.apps.test"}},
		{"apps domain removed", []string{"a=1; Domain=apps.test; Path=/; Secure", "b=2; HttpOnly", "c=3; domain=.apps.test"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h fasthttp.ResponseHeader
			var cookies [][]byte
			for _, c := range tc.cookies {
				cookies = append(cookies, []byte(c))
			}
			fill := func() {
				h.Reset()
				h.SetContentTypeBytes(valTextPlain)
				for _, c := range cookies {
					h.AddBytesKV(hdrSetCookie, c)
				}
			}
			fill()
			scopeCookies(&h, "app.apps.test")
			allocs := testing.AllocsPerRun(200, func() {
				fill()
				scopeCookies(&h, "app.apps.test")
			})
			if allocs != 0 {
				t.Fatalf("%.1f allocations, want 0", allocs)
			}
		})
	}
}

// TestForwardWithCookiesAllocations: a forwarded response whose cookies
// the edge scopes allocates no more than one without cookies
// (TestForwardAllocations).
func TestForwardWithCookiesAllocations(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		ctx.Response.Header.SetContentType("text/plain")
		ctx.Response.Header.Add("Set-Cookie", "session=abc; Domain=apps.test; Path=/; Secure; HttpOnly; SameSite=Lax")
		ctx.Response.Header.Add("Set-Cookie", "theme=dark; Path=/")
		ctx.Response.SetBodyString("ok")
	}}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Shutdown() })
	e := newProxyEdge(t, "http://"+ln.Addr().String())
	var ctx fasthttp.RequestCtx
	request(&ctx, "GET", "app.apps.test", "/", "127.0.0.1:40000", benchHeader)
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
	var got []string
	for _, v := range ctx.Response.Header.Cookies() {
		got = append(got, string(v))
	}
	if want := []string{"session=abc; Path=/; Secure; HttpOnly; SameSite=Lax", "theme=dark; Path=/"}; !slices.Equal(got, want) {
		t.Fatalf("cookies %q, want %q", got, want)
	}
	allocs := testing.AllocsPerRun(300, serve)
	if allocs > 1 {
		t.Fatalf("a forwarded request with cookies allocates %.1f times, want at most 1", allocs)
	}
	t.Logf("%.2f allocations per forwarded request with cookies", allocs)
}
