//go:build !race

package h2

import (
	"bytes"
	"testing"

	"github.com/valyala/fasthttp"
)

// TestRoundTripDoesNotAllocate: once a connection is warm, a request
// answered with a body set by SetBodyRaw (a cached page) costs the server
// no allocation, whether the handler runs on the connection's goroutine
// (Inline) or on a worker, and with a larger body sent in several DATA
// frames.
func TestRoundTripDoesNotAllocate(t *testing.T) {
	page := bytes.Repeat([]byte("<p>hello, h2</p>\n"), 240) // 4 KB
	big := bytes.Repeat([]byte("0123456789abcdef"), 4096)   // 64 KB
	for _, tc := range []struct {
		name   string
		inline bool
		body   []byte
	}{
		{"inline", true, page},
		{"worker", false, page},
		{"inline 64 KB", true, big},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := &Server{Handler: func(ctx *fasthttp.RequestCtx) {
				ctx.Response.Header.SetContentTypeBytes(typeHTML)
				ctx.Response.Header.SetCanonical(hdrCacheControl, valCache)
				ctx.Response.SetBodyRaw(tc.body)
			}}
			if tc.inline {
				srv.Inline = func(*fasthttp.RequestCtx) bool { return true }
			}
			cl := dialClient(t, startServer(t, srv))
			cl.SetRequest("GET", "www.example.test", "/index.html?x=1", nil,
				"user-agent", "Mozilla/5.0 (X11; Linux x86_64; rv:140.0) Gecko/20100101 Firefox/140.0",
				"accept-encoding", "gzip, deflate, br", "accept", "text/html")
			rt := func() {
				if err := cl.RoundTrip(); err != nil {
					t.Fatal(err)
				}
				if cl.Status != 200 || len(cl.Body) != len(tc.body) {
					t.Fatalf("status %d, %d octets", cl.Status, len(cl.Body))
				}
			}
			for range 100 {
				rt()
			}
			if allocs := testing.AllocsPerRun(500, rt); allocs != 0 {
				t.Fatalf("a round trip allocates %.2f times, want 0", allocs)
			}
		})
	}
}
