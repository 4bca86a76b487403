package cache

import (
	"bufio"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

func BenchmarkStaticHit(b *testing.B) {
	c := newCache(b, Config{}, nil)
	key := StaticKey{Deployment: "dpl_123", Path: []byte("/assets/app.js"), Encoding: "br"}
	c.SetStatic(key, staticResp(strings.Repeat("x", 4096)), time.Hour)
	c.Wait()
	b.Run("Get", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := c.GetStatic(key); !ok {
				b.Fatal("miss")
			}
		}
	})
	b.Run("GetRespond", func(b *testing.B) {
		b.ReportAllocs()
		var resp fasthttp.Response
		for b.Loop() {
			e, _ := c.GetStatic(key)
			resp.Reset()
			e.Respond(&resp, time.Now())
		}
	})
	b.Run("GetParallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, ok := c.GetStatic(key); !ok {
					b.Fatal("miss")
				}
			}
		})
	})
}

func BenchmarkStaticMiss(b *testing.B) {
	c := newCache(b, Config{}, nil)
	key := StaticKey{Deployment: "dpl_123", Path: []byte("/missing"), Encoding: ""}
	b.ReportAllocs()
	for b.Loop() {
		c.GetStatic(key)
	}
}

func BenchmarkSharedHit(b *testing.B) {
	for _, vary := range []bool{false, true} {
		b.Run(fmt.Sprintf("vary=%v", vary), func(b *testing.B) {
			c := newCache(b, Config{}, nil)
			hdr := []string{"Cache-Control: public, s-maxage=60", "Content-Type: application/json", `ETag: "i2"`}
			if vary {
				hdr = append(hdr, "Vary: Accept-Encoding")
			}
			req := newReq(b, "GET /api/items?page=2", "Accept-Encoding: gzip, br", "User-Agent: bench")
			c.Store("app", req, newResp(b, 200, strings.Repeat("x", 4096), hdr...), time.Now(), time.Now())
			c.Wait()
			b.Run("LookupRespond", func(b *testing.B) {
				b.ReportAllocs()
				var resp fasthttp.Response
				for b.Loop() {
					r := c.Lookup("app", req)
					if r.State != Hit {
						b.Fatal(r.State)
					}
					resp.Reset()
					r.Entry.Respond(&resp, time.Now())
				}
			})
			b.Run("LookupParallel", func(b *testing.B) {
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					var r fasthttp.Request
					req.CopyTo(&r)
					for pb.Next() {
						if c.Lookup("app", &r).State != Hit {
							b.Fatal("miss")
						}
					}
				})
			})
		})
	}
}

func BenchmarkParseCacheControl(b *testing.B) {
	v := []byte(`public, max-age=60, s-maxage=300, stale-while-revalidate=30, no-cache="Set-Cookie"`)
	b.ReportAllocs()
	b.SetBytes(int64(len(v)))
	for b.Loop() {
		_ = ParseCacheControl(v)
	}
}

func BenchmarkSharedStore(b *testing.B) {
	clk := newClock()
	c := newCache(b, Config{}, clk)
	req := newReq(b, "GET /api/items?page=2", "Accept-Encoding: gzip")
	resp := newResp(b, 200, strings.Repeat("x", 4096), "Cache-Control: public, s-maxage=60", "Content-Type: application/json", `ETag: "i2"`, "Vary: Accept-Encoding")
	b.ReportAllocs()
	for b.Loop() {
		c.Store("app", req, resp, clk.Now(), clk.Now())
	}
}

// BenchmarkSetDate is the cost of writing the origin's Date on a stored or
// forwarded response (RFC 9110 §6.6.1), which fasthttp's API does not
// offer: SetDate parses the field into the header.
func BenchmarkSetDate(b *testing.B) {
	date := []byte("Sat, 01 Mar 2025 12:00:00 GMT")
	var h fasthttp.ResponseHeader
	b.ReportAllocs()
	for b.Loop() {
		h.Reset()
		SetDate(&h, date)
	}
}

// BenchmarkKeepDate is the cost of passing on the Date of a response read
// from an origin (the forwarding path's case: one Date field, kept as
// parsed and marked).
func BenchmarkKeepDate(b *testing.B) {
	var src fasthttp.ResponseHeader
	if err := src.Read(bufio.NewReader(strings.NewReader("HTTP/1.1 200 OK\r\nDate: Sat, 01 Mar 2025 12:00:00 GMT\r\n" +
		"Content-Type: application/json\r\nCache-Control: no-store\r\nETag: \"b1\"\r\nContent-Length: 256\r\n\r\n"))); err != nil {
		b.Fatal(err)
	}
	var h fasthttp.ResponseHeader
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		src.CopyTo(&h)
		KeepDate(&h, now)
	}
}
