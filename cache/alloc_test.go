//go:build !race

package cache

import (
	"runtime"
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

// TestHitAllocationCost states what a hit costs in the cache library itself:
// ristretto's lossy access buffer hands each stripe of 64 recorded gets
// (Config.BufferItems) to its admission policy and allocates a fresh 512-byte
// stripe for the next ones (a stripe the policy is too busy to take is
// reused), so hits allocate at most once per 64 gets, at most 8 bytes per
// get, and nothing else. testing.AllocsPerRun rounds that average down to
// 0, which is why this test counts every allocation of the process instead.
// The runtime's own bookkeeping while the policy goroutine parks and wakes
// (sudogs, GC workers) may add a few allocations that do not grow with the
// gets; slack allows for them.
func TestHitAllocationCost(t *testing.T) {
	const gets, perStripe, stripeBytes, slack = 640_000, 64, 512, 32
	c := newCache(t, Config{}, newClock())
	key := StaticKey{Deployment: "dpl_123", Path: []byte("/index.html"), Encoding: "br"}
	c.SetStatic(key, staticResp("<h1>hi</h1>"), time.Hour)
	c.Wait()
	get := func(n int) {
		for range n {
			if _, ok := c.GetStatic(key); !ok {
				t.Fatal("static miss")
			}
		}
	}
	get(10_000)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	get(gets)
	runtime.ReadMemStats(&after)
	allocs := after.Mallocs - before.Mallocs
	bytes := after.TotalAlloc - before.TotalAlloc
	if max := uint64(gets/perStripe + slack); allocs > max {
		t.Errorf("%d allocations in %d hits, want at most %d (one stripe per %d gets)", allocs, gets, max, perStripe)
	}
	if max := uint64(gets/perStripe*stripeBytes + slack*1024); bytes > max {
		t.Errorf("%d bytes allocated in %d hits (%.1f per hit), want at most %d", bytes, gets, float64(bytes)/gets, max)
	}
	t.Logf("%d hits: %d allocations, %.2f bytes per hit", gets, allocs, float64(bytes)/gets)
}
