package cache

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// chunkedOrigin serves body at every path with chunked framing (no
// Content-Length) and the given header lines.
func chunkedOrigin(t *testing.T, body string, headers ...string) string {
	t.Helper()
	return serve(t, func(ctx *fasthttp.RequestCtx) {
		for _, h := range headers {
			k, v, _ := strings.Cut(h, ": ")
			ctx.Response.Header.Add(k, v)
		}
		ctx.SetBodyStreamWriter(func(w *bufio.Writer) {
			for i := 0; i < len(body); i += 1000 {
				w.WriteString(body[i:min(i+1000, len(body))])
				w.Flush()
			}
		})
	})
}

func TestRFC9111_3_ChunkedResponsesStored(t *testing.T) {
	body := strings.Repeat("0123456789", 5000) // 50 kB in 50 chunks
	base := chunkedOrigin(t, body, "Cache-Control: max-age=60", `ETag: "c"`)
	fetch := func(t *testing.T, stream bool) *fasthttp.Response {
		t.Helper()
		client := &fasthttp.Client{StreamResponseBody: stream}
		req := newReq(t, "GET "+base+"/c")
		resp := new(fasthttp.Response)
		if err := client.Do(req, resp); err != nil {
			t.Fatal(err)
		}
		if cl := resp.Header.ContentLength(); cl != -1 {
			t.Fatalf("origin Content-Length %d: not chunked", cl)
		}
		return resp
	}
	tests := []struct {
		name     string
		maxEntry int64
		stream   bool
		want     Reason
	}{
		{"Store of a read chunked body", 0, false, ReasonStorable},
		{"Capture of a streamed chunked body", 0, true, ReasonStorable},
		{"Store past MaxEntryBytes", 40_000, false, ReasonTooLarge},
		{"Capture past MaxEntryBytes stops copying", 40_000, true, ReasonTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newClock()
			c := newCache(t, Config{MaxEntryBytes: tt.maxEntry}, clk)
			resp := fetch(t, tt.stream)
			req := newReq(t, "GET /c")
			var d Decision
			if !tt.stream {
				d = c.Store("app", req, resp, clk.Now(), clk.Now())
			} else {
				cp, d0 := c.Capture("app", req, resp, clk.Now(), clk.Now())
				if cp == nil {
					t.Fatalf("Capture refused: %v", d0.Reason)
				}
				var visitor strings.Builder
				if _, err := io.Copy(io.MultiWriter(&visitor, cp), resp.BodyStream()); err != nil {
					cp.Abort()
					t.Fatal(err)
				}
				if visitor.String() != body {
					t.Fatal("the visitor did not get the whole body")
				}
				d = cp.Finish()
				if cp.Finish().Reason != ReasonRejected {
					t.Fatal("second Finish stored again")
				}
			}
			fasthttp.ReleaseResponse(resp)
			c.Wait()
			if d.Reason != tt.want {
				t.Fatalf("Reason %v, want %v", d.Reason, tt.want)
			}
			r := c.Lookup("app", newReq(t, "GET /c"))
			if (r.State == Hit) != (tt.want == ReasonStorable) {
				t.Fatalf("lookup %v", r.State)
			}
			if r.State == Hit {
				var out fasthttp.Response
				r.Entry.Respond(&out, clk.Now())
				if string(out.Body()) != body || out.Header.Peek("Transfer-Encoding") != nil {
					t.Fatalf("stored body %d bytes, Transfer-Encoding %q", len(out.Body()), out.Header.Peek("Transfer-Encoding"))
				}
			}
		})
	}
	t.Run("Abort stores nothing", func(t *testing.T) {
		clk := newClock()
		c := newCache(t, Config{}, clk)
		resp := fetch(t, true)
		defer fasthttp.ReleaseResponse(resp)
		cp, _ := c.Capture("app", newReq(t, "GET /c"), resp, clk.Now(), clk.Now())
		io.CopyN(cp, resp.BodyStream(), 100)
		cp.Abort()
		c.Wait()
		if r := c.Lookup("app", newReq(t, "GET /c")); r.State != Miss {
			t.Fatalf("lookup %v after Abort", r.State)
		}
	})
	t.Run("Capture refuses what the policy refuses", func(t *testing.T) {
		c := newCache(t, Config{}, newClock())
		cp, d := c.Capture("app", newReq(t, "GET /c"), newResp(t, 200, "x", "Cache-Control: private"), t0, t0)
		if cp != nil || d.Reason != ReasonPrivate {
			t.Fatalf("Capture = %v, %v", cp, d.Reason)
		}
		cp, d = c.Capture("app", newReq(t, "GET /c"), newResp(t, 200, strings.Repeat("x", 100), "Cache-Control: max-age=5"), t0, t0)
		if cp == nil || d.Reason != ReasonStorable {
			t.Fatalf("Capture with Content-Length refused: %v", d.Reason)
		}
	})
}

func TestRFC9110_14_RangeFromStoredResponse(t *testing.T) {
	const body = "0123456789abcdefghij" // 20 bytes
	lm := httpDate(-time.Hour)
	stored := exchange{req: get("/r"), status: 200, body: body, resp: []string{
		"Cache-Control: max-age=600", `ETag: "strong"`, "Last-Modified: " + lm, "Content-Type: text/plain",
	}}
	tests := []struct {
		name         string
		req          []string
		status       int
		contentRange string
		body         string
	}{
		{"no Range: 200", get("/r"), 200, "", body},
		{"§14.1.2 first-last", get("/r", "Range: bytes=0-4"), 206, "bytes 0-4/20", "01234"},
		{"§14.1.2 open-ended", get("/r", "Range: bytes=15-"), 206, "bytes 15-19/20", "fghij"},
		{"§14.1.2 last past the end is clipped", get("/r", "Range: bytes=18-99"), 206, "bytes 18-19/20", "ij"},
		{"§14.1.2 suffix", get("/r", "Range: bytes=-3"), 206, "bytes 17-19/20", "hij"},
		{"§14.1.2 suffix longer than the body", get("/r", "Range: bytes=-50"), 206, "bytes 0-19/20", body},
		{"unit is case-insensitive, whitespace allowed", get("/r", "Range: Bytes= 2-3 "), 206, "bytes 2-3/20", "23"},
		{"§15.5.17 first past the end: 416", get("/r", "Range: bytes=20-"), 416, "bytes */20", ""},
		{"§15.5.17 zero suffix: 416", get("/r", "Range: bytes=-0"), 416, "bytes */20", ""},
		{"one satisfiable among unsatisfiable", get("/r", "Range: bytes=30-40, 5-5"), 206, "bytes 5-5/20", "5"},
		{"several ranges: whole 200", get("/r", "Range: bytes=0-1, 5-6"), 200, "", body},
		{"§14.1.1 invalid spec ignored", get("/r", "Range: bytes=5-2"), 200, "", body},
		{"§14.2 unknown unit ignored", get("/r", "Range: items=0-1"), 200, "", body},
		{"garbage ignored", get("/r", "Range: bytes=a-b"), 200, "", body},
		{"§13.1.5 If-Range strong ETag matches", get("/r", "Range: bytes=0-1", `If-Range: "strong"`), 206, "bytes 0-1/20", "01"},
		{"§13.1.5 If-Range other ETag: whole 200", get("/r", "Range: bytes=0-1", `If-Range: "other"`), 200, "", body},
		{"§13.1.5 If-Range weak ETag never matches", get("/r", "Range: bytes=0-1", `If-Range: W/"strong"`), 200, "", body},
		{"§13.1.5 If-Range date matches Last-Modified", get("/r", "Range: bytes=0-1", "If-Range: "+lm), 206, "bytes 0-1/20", "01"},
		{"§13.1.5 If-Range other date", get("/r", "Range: bytes=0-1", "If-Range: "+httpDate(0)), 200, "", body},
		{"§14.2 Range ignored on HEAD", []string{"HEAD /r", "Range: bytes=0-1"}, 200, "", body},
		{"§13.2.2 If-None-Match before Range", get("/r", "Range: bytes=0-1", `If-None-Match: "strong"`), 304, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, clk, _ := lookupAt(t, stored, 0)
			r := c.Lookup("app", newReq(t, tt.req[0], tt.req[1:]...))
			if r.State != Hit {
				t.Fatalf("state %v", r.State)
			}
			var out fasthttp.Response
			r.Entry.RespondTo(&out, &newReq(t, tt.req[0], tt.req[1:]...).Header, clk.Now())
			if out.StatusCode() != tt.status || string(out.Header.Peek("Content-Range")) != tt.contentRange || string(out.Body()) != tt.body {
				t.Fatalf("got %d %q %q, want %d %q %q", out.StatusCode(), out.Header.Peek("Content-Range"), out.Body(), tt.status, tt.contentRange, tt.body)
			}
			if tt.status == 206 && string(out.Header.Peek("ETag")) != `"strong"` {
				t.Fatal("206 without the stored ETag")
			}
			if tt.status == 416 && strings.Contains(out.String(), "Content-Type") {
				t.Fatal("416 describes content it does not have")
			}
		})
	}
	t.Run("on the wire", func(t *testing.T) {
		c, clk, _ := lookupAt(t, stored, 0)
		base := serve(t, func(ctx *fasthttp.RequestCtx) {
			c.Lookup("app", &ctx.Request).Entry.RespondTo(&ctx.Response, &ctx.Request.Header, clk.Now())
		})
		resp := rawGet(t, base, "/r", "Range: bytes=10-14")
		got, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 206 || resp.ContentLength != 5 || string(got) != "abcde" || resp.Header.Get("Content-Range") != "bytes 10-14/20" {
			t.Fatalf("%d, Content-Length %d, %q, %q", resp.StatusCode, resp.ContentLength, got, resp.Header.Get("Content-Range"))
		}
	})
}

func TestRFC9111_4_2_2_HeuristicFreshness(t *testing.T) {
	date := "Date: " + httpDate(0)
	lm := func(ago time.Duration) string { return "Last-Modified: " + httpDate(-ago) }
	tests := []struct {
		name     string
		status   int
		resp     []string
		want     Reason
		lifetime time.Duration
	}{
		{"10% of the age since Last-Modified", 200, []string{date, lm(10 * time.Hour)}, ReasonStorable, time.Hour},
		{"capped at HeuristicCap", 200, []string{date, lm(365 * 24 * time.Hour)}, ReasonStorable, HeuristicCap},
		{"Last-Modified in the future: 0, stored to revalidate", 200, []string{date, "Last-Modified: " + httpDate(time.Hour)}, ReasonStorable, 0},
		{"invalid Last-Modified: nothing", 200, []string{date, "Last-Modified: yesterday"}, ReasonNotExplicit, 0},
		{"explicit max-age wins", 200, []string{date, lm(10 * time.Hour), "Cache-Control: max-age=5"}, ReasonStorable, 5 * time.Second},
		{"invalid Expires is explicit: no heuristic", 200, []string{date, lm(10 * time.Hour), "Expires: 0"}, ReasonStorable, 0},
		{"no Date: from the response time", 200, []string{lm(10 * time.Hour)}, ReasonStorable, time.Hour},
		{"private still wins", 200, []string{date, lm(10 * time.Hour), "Cache-Control: private"}, ReasonPrivate, 0},
	}
	for _, s := range []int{203, 204, 300, 301, 308, 404, 405, 410, 414, 501} {
		tests = append(tests, struct {
			name     string
			status   int
			resp     []string
			want     Reason
			lifetime time.Duration
		}{fmt.Sprintf("RFC 9110 §15.1 heuristically cacheable %d", s), s, []string{date, lm(10 * time.Hour)}, ReasonStorable, time.Hour})
	}
	for _, s := range []int{302, 303, 307, 400, 403, 500, 502, 503} {
		tests = append(tests, struct {
			name     string
			status   int
			resp     []string
			want     Reason
			lifetime time.Duration
		}{fmt.Sprintf("not heuristically cacheable %d", s), s, []string{date, lm(10 * time.Hour)}, ReasonNotExplicit, 0})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := newResp(t, 200, "x", tt.resp...)
			resp.SetStatusCode(tt.status)
			d := Decide(newReq(t, "GET /h"), resp, t0, t0)
			if d.Reason != tt.want || d.Lifetime != tt.lifetime {
				t.Fatalf("decision %+v, want %v lifetime %v", d, tt.want, tt.lifetime)
			}
			explicit := len(tt.resp) > 2
			if d.Storable() && d.Heuristic == explicit {
				t.Fatalf("Heuristic = %v", d.Heuristic)
			}
		})
	}
	t.Run("served fresh for the heuristic lifetime", func(t *testing.T) {
		x := exchange{req: get("/h"), status: 200, body: "H", resp: []string{date, lm(10 * time.Hour)}}
		if _, _, r := lookupAt(t, x, 59*time.Minute); r.State != Hit || !r.Entry.Heuristic() {
			t.Fatalf("at 59 min: %v", r.State)
		}
		if _, _, r := lookupAt(t, x, 61*time.Minute); r.State != Revalidate {
			t.Fatalf("at 61 min: %v, want revalidate (Last-Modified is a validator)", r.State)
		}
	})
}

func TestRFC9111_4_4_InvalidationOnUnsafeMethods(t *testing.T) {
	stored := []string{"/a/b", "/a/c", "/a/c?x=1", "/d", "/a/e"}
	tests := []struct {
		name   string
		unsafe exchange
		gone   []string
	}{
		{"target URI", exchange{req: []string{"POST /a/b"}, status: 200}, []string{"/a/b"}},
		{"Location, absolute path", exchange{req: []string{"POST /a/b"}, status: 201, resp: []string{"Location: /d"}}, []string{"/a/b", "/d"}},
		{"Location, relative reference resolved", exchange{req: []string{"POST /a/b"}, status: 201, resp: []string{"Location: c"}}, []string{"/a/b", "/a/c"}},
		{"Content-Location, relative with query", exchange{req: []string{"PUT /a/b"}, status: 200, resp: []string{"Content-Location: c?x=1"}}, []string{"/a/b", "/a/c?x=1"}},
		{"Location, dot segments", exchange{req: []string{"POST /a/b"}, status: 303, resp: []string{"Location: ../d"}}, []string{"/a/b", "/d"}},
		{"both fields", exchange{req: []string{"DELETE /a/b"}, status: 200, resp: []string{"Location: /d", "Content-Location: e"}}, []string{"/a/b", "/d", "/a/e"}},
		{"same origin, absolute URI", exchange{req: []string{"POST /a/b"}, status: 201, resp: []string{"Location: https://example.com/d"}}, []string{"/a/b", "/d"}},
		{"other origin never invalidated", exchange{req: []string{"POST /a/b"}, status: 201, resp: []string{"Location: https://other.example/d"}}, []string{"/a/b"}},
		{"other port is another origin", exchange{req: []string{"POST /a/b"}, status: 201, resp: []string{"Location: https://example.com:8443/d"}}, []string{"/a/b"}},
		{"protocol-relative other host", exchange{req: []string{"POST /a/b"}, status: 201, resp: []string{"Location: //other.example/d"}}, []string{"/a/b"}},
		{"error response: nothing", exchange{req: []string{"POST /a/b"}, status: 500, resp: []string{"Location: /d"}}, nil},
		{"safe method: nothing", exchange{req: []string{"OPTIONS /a/b"}, status: 200, resp: []string{"Location: /d"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newClock()
			c := newCache(t, Config{}, clk)
			for _, p := range stored {
				exchange{req: get(p), status: 200, body: p, resp: []string{"Cache-Control: max-age=600"}}.store(t, c, clk.Now())
			}
			c.Wait()
			tt.unsafe.store(t, c, clk.Now())
			c.Wait()
			for _, p := range stored {
				gone := false
				for _, g := range tt.gone {
					gone = gone || g == p
				}
				if r := c.Lookup("app", newReq(t, "GET "+p)); (r.State == Miss) != gone {
					t.Errorf("%s: %v, want gone=%v", p, r.State, gone)
				}
			}
		})
	}
}
