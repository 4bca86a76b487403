package edge

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/svcplatform/platform/rules"
)

// BenchmarkStaticHit measures the hot path: a static-site request answered
// from the cache through host routing, the trusted-proxy client address,
// Shield (every rule on), the file guard and the headers; the response is
// built but not written to a socket.
func BenchmarkStaticHit(b *testing.B) {
	for _, bc := range []struct {
		name   string
		shield rules.Settings
		header map[string]string
	}{
		{"shield-off", rules.Settings{}, map[string]string{"Accept-Encoding": "gzip, br"}},
		{"shield-all-rules", shieldOn(), map[string]string{"Accept-Encoding": "gzip, br",
			"User-Agent": "Mozilla/5.0 (X11; Linux x86_64; rv:140.0) Gecko/20100101 Firefox/140.0", "X-Forwarded-For": "203.0.113.9"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ue := newUnitEdge(b, bc.shield, map[string][]byte{"index.html": bytes.Repeat([]byte("<p>hello, edge</p>\n"), 100)})
			var warm fasthttp.RequestCtx
			request(&warm, "GET", "blog.apps.test", "/", "10.0.0.1:40000", bc.header)
			ue.serve(&warm, protoHTTPS)
			ue.cache.Wait()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				var ctx fasthttp.RequestCtx
				request(&ctx, "GET", "blog.apps.test", "/", "10.0.0.1:40000", bc.header)
				for pb.Next() {
					ctx.Response.Reset()
					ue.serve(&ctx, protoHTTPS)
				}
			})
		})
	}
}

// BenchmarkStaticHitSerial is BenchmarkStaticHit/shield-all-rules on one
// goroutine: the CPU cost of one request.
func BenchmarkStaticHitSerial(b *testing.B) {
	header := map[string]string{"Accept-Encoding": "gzip, br",
		"User-Agent": "Mozilla/5.0 (X11; Linux x86_64; rv:140.0) Gecko/20100101 Firefox/140.0", "X-Forwarded-For": "203.0.113.9"}
	ue := newUnitEdge(b, shieldOn(), map[string][]byte{"index.html": bytes.Repeat([]byte("<p>hello, edge</p>\n"), 100)})
	var ctx fasthttp.RequestCtx
	request(&ctx, "GET", "blog.apps.test", "/", "10.0.0.1:40000", header)
	ue.serve(&ctx, protoHTTPS)
	ue.cache.Wait()
	b.ReportAllocs()
	for b.Loop() {
		ctx.Response.Reset()
		ue.serve(&ctx, protoHTTPS)
	}
}

// BenchmarkAccessLog is BenchmarkStaticHitSerial with access logs on
// (to io.Discard, through the log's 32 KiB buffer): the cost of a line.
func BenchmarkAccessLog(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			header := map[string]string{"Accept-Encoding": "gzip, br",
				"User-Agent": "Mozilla/5.0 (X11; Linux x86_64; rv:140.0) Gecko/20100101 Firefox/140.0", "X-Forwarded-For": "203.0.113.9"}
			var opts []func(*Config)
			if on {
				opts = append(opts, func(c *Config) { c.AccessLog, c.AccessLogWriter = "-", io.Discard })
			}
			ue := newUnitEdge(b, shieldOn(), map[string][]byte{"index.html": bytes.Repeat([]byte("<p>hello, edge</p>\n"), 100)}, opts...)
			var ctx fasthttp.RequestCtx
			request(&ctx, "GET", "blog.apps.test", "/", "10.0.0.1:40000", header)
			ue.serve(&ctx, protoHTTPS)
			ue.cache.Wait()
			b.ReportAllocs()
			for b.Loop() {
				ctx.Response.Reset()
				ue.serve(&ctx, protoHTTPS)
			}
		})
	}
}

// BenchmarkHTTP3Bridge measures what the HTTP/3 bridge adds to the same
// cached request: copying a net/http request into a pooled RequestCtx and
// the fasthttp response back.
func BenchmarkHTTP3Bridge(b *testing.B) {
	ue := newUnitEdge(b, shieldOn(), map[string][]byte{"index.html": bytes.Repeat([]byte("<p>hello, edge</p>\n"), 100)})
	r := httptest.NewRequest("GET", "https://blog.apps.test/", nil)
	r.RemoteAddr = "203.0.113.9:40000"
	r.Header.Set("Accept-Encoding", "gzip, br")
	r.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:140.0) Gecko/20100101 Firefox/140.0")
	ue.serveH3(httptest.NewRecorder(), r)
	ue.cache.Wait()
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		ue.serveH3(w, r)
	}
}

type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) WriteHeader(int)             {}
