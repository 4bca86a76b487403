//go:build !race

package edge

import (
	"bytes"
	"testing"

	"github.com/svcplatform/platform/edge/internal/h2/h2test"
)

// TestH2CachedHitDoesNotAllocate is TestStaticHitDoesNotAllocate and
// TestSharedHitDoesNotAllocate over HTTP/2: a request decoded from its
// HEADERS frame, answered from the cache through routing, the client
// address, Shield with every rule on, the file guard, encoding
// negotiation and the security headers, and written as HEADERS and DATA
// frames, allocates nothing once the connection is warm: a static page on
// the connection's goroutine, a server app's shared-cache hit on a
// worker.
func TestH2CachedHitDoesNotAllocate(t *testing.T) {
	page := bytes.Repeat([]byte("<p>hello, edge</p>\n"), 215) // 4 KB
	static := newUnitEdge(t, shieldOn(), map[string][]byte{"index.html": page})
	shared := newProxyEdge(t, benchOrigin(t, "public, max-age=3600"))
	ua := "Mozilla/5.0 (X11; Linux x86_64; rv:140.0) Gecko/20100101 Firefox/140.0"
	for _, tc := range []struct {
		name, host, path string
		e                *Edge
		status           int
		header           []string
	}{
		{"static page", "blog.apps.test", "/", static.Edge, 200,
			[]string{"accept-encoding", "gzip, deflate, br", "user-agent", ua, "x-forwarded-for", "203.0.113.9"}},
		{"static revalidation 304", "blog.apps.test", "/", static.Edge, 304,
			[]string{"accept-encoding", "br", "if-none-match", `W/` + indexETag(static, encBrotli)}},
		{"shared cache hit", "app.apps.test", "/api/items", shared, 200,
			[]string{"user-agent", ua, "accept", "*/*", "x-forwarded-for", "203.0.113.9"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := h2Client(t, tc.e)
			cl.SetRequest("GET", tc.host, tc.path, nil, tc.header...)
			rt := func() {
				if err := cl.RoundTrip(); err != nil {
					t.Fatal(err)
				}
				if cl.Status != tc.status {
					t.Fatalf("status %d, want %d", cl.Status, tc.status)
				}
			}
			rt() // a miss: fills the cache
			tc.e.cache.Wait()
			for range 50 {
				rt()
			}
			if allocs := testing.AllocsPerRun(500, rt); allocs != 0 {
				t.Fatalf("an HTTP/2 cache hit allocates %.2f times per request, want 0", allocs)
			}
		})
	}
}

// h2Client connects an allocation-free HTTP/2 client (h2test) to e's
// HTTP/2 server over a loopback socket, cleartext: TLS costs the same
// over every protocol.
func h2Client(tb testing.TB, e *Edge) *h2test.Client {
	tb.Helper()
	c := serveH2Loopback(tb, e.newH2())
	cl, err := h2test.NewClient(c)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cl.Close() })
	return cl
}
