package h2

import (
	"bytes"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// BenchmarkRoundTrip: ten requests at once on one connection over a
// loopback socket, again and again, answered with a 4 KB page set by
// SetBodyRaw, the handler on the connection's goroutine (inline, with or
// without InlineLimit's timer) or on a worker. The client (h2test)
// allocates nothing, so allocs/op are the server's (per ten requests).
func BenchmarkRoundTrip(b *testing.B) {
	page := bytes.Repeat([]byte("<p>hello, h2</p>\n"), 240)
	for _, bc := range []struct {
		name   string
		inline bool
		limit  time.Duration
	}{{"inline", true, 0}, {"inline without limit", true, -1}, {"worker", false, 0}} {
		b.Run(bc.name, func(b *testing.B) {
			srv := &Server{Handler: func(ctx *fasthttp.RequestCtx) {
				ctx.Response.Header.SetContentTypeBytes(typeHTML)
				ctx.Response.SetBodyRaw(page)
			}, InlineLimit: bc.limit}
			if bc.inline {
				srv.Inline = func(*fasthttp.RequestCtx) bool { return true }
			}
			cl := dialClient(b, startServer(b, srv))
			cl.SetRequest("GET", "www.example.test", "/", nil, "user-agent", "bench", "accept-encoding", "gzip, br")
			b.ReportAllocs()
			b.SetBytes(10 * int64(len(page)))
			for b.Loop() {
				if err := cl.RoundTripN(10); err != nil || cl.Status != 200 {
					b.Fatal(cl.Status, err)
				}
			}
		})
	}
}
