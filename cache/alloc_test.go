//go:build !race

package cache

import (
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// TestHitPathsDoNotAllocate guards the edge's hot path (house style item 7):
// a static hit, and a shared hit, each written into a reused response, must
// not allocate.
func TestHitPathsDoNotAllocate(t *testing.T) {
	clk := newClock()
	c := newCache(t, Config{}, clk)
	key := StaticKey{Deployment: "dpl_123", Path: []byte("/assets/app.js"), Encoding: "br"}
	c.SetStatic(key, staticResp("console.log(1)"), time.Hour)
	req := newReq(t, "GET /api/items?page=2", "Accept-Encoding: gzip, br")
	exchange{req: []string{"GET /api/items?page=2", "Accept-Encoding: gzip, br"}, status: 200, body: `{"items":[]}`, resp: []string{
		"Cache-Control: public, s-maxage=60", "Content-Type: application/json", `ETag: "i2"`, "Vary: Accept-Encoding",
	}}.store(t, c, clk.Now())
	exchange{req: []string{"GET /stale"}, status: 200, body: "0123456789", resp: []string{
		"Cache-Control: max-age=1, stale-while-revalidate=3600", `ETag: "s"`,
	}}.store(t, c, clk.Now())
	c.Wait()
	rangeReq := newReq(t, "GET /stale", "Range: bytes=2-5")
	staleReq := newReq(t, "GET /stale")
	fwd := newResp(t, 200, "x", "Date: "+httpDate(0), "Cache-Control: max-age=1", "CDN-Cache-Control: max-age=60")
	clk.Add(2 * time.Second)

	tests := []struct {
		name string
		run  func(resp *fasthttp.Response)
	}{
		{"static GetStatic", func(*fasthttp.Response) {
			if _, ok := c.GetStatic(key); !ok {
				t.Fatal("static miss")
			}
		}},
		{"static GetStatic and Respond", func(resp *fasthttp.Response) {
			e, ok := c.GetStatic(key)
			if !ok {
				t.Fatal("static miss")
			}
			resp.Reset()
			e.Respond(resp, clk.Now())
		}},
		{"shared Lookup with Vary and Respond", func(resp *fasthttp.Response) {
			r := c.Lookup("app", req)
			if r.State != Hit {
				t.Fatalf("shared %v", r.State)
			}
			resp.Reset()
			r.Entry.Respond(resp, clk.Now())
		}},
		{"shared stale-while-revalidate Lookup and RespondTo with Range", func(resp *fasthttp.Response) {
			r := c.Lookup("app", staleReq)
			if r.State != StaleWhileRevalidate {
				t.Fatalf("shared %v", r.State)
			}
			resp.Reset()
			r.Entry.RespondTo(resp, &rangeReq.Header, clk.Now())
			if resp.StatusCode() != 206 {
				t.Fatalf("status %d", resp.StatusCode())
			}
		}},
		{"forwarded response: KeepDate and StripTargeted", func(resp *fasthttp.Response) {
			fwd.Header.CopyTo(&resp.Header)
			KeepDate(&resp.Header, clk.Now())
			StripTargeted(&resp.Header)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var resp fasthttp.Response
			tt.run(&resp) // warm the response's buffers, as fasthttp's pooled ones are
			if n := testing.AllocsPerRun(1000, func() { tt.run(&resp) }); n != 0 {
				t.Fatalf("%v allocations per hit, want 0", n)
			}
		})
	}
}
