package cache

import (
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

func TestSharedRevalidation(t *testing.T) {
	base := exchange{req: get("/r"), status: 200, body: "body", resp: []string{
		"Cache-Control: max-age=60", `ETag: "v1"`, "Last-Modified: " + httpDate(-time.Hour), "X-Version: 1", "Content-Type: text/plain",
	}}
	tests := []struct {
		name       string
		stored     exchange
		lookup     []string
		status     int      // origin's answer to the conditional request
		resp       []string // its header lines
		wantOK     bool
		wantHeader map[string]string
		wantAge    string
		thenLookup State // state of the next lookup
	}{
		{
			name:   "§4.3.4 304 updates headers and resets age",
			stored: base, lookup: get("/r"), status: 304,
			resp:       []string{"Cache-Control: max-age=120", `ETag: "v1"`, "X-Version: 2", "Age: 1", "Content-Type: text/html"},
			wantOK:     true,
			wantHeader: map[string]string{"Cache-Control": "max-age=120", "X-Version": "2", "Content-Type": "text/plain"},
			wantAge:    "1", thenLookup: Hit,
		},
		{
			name:   "§4.3.4 304 without ETag updates the entry it validated",
			stored: base, lookup: get("/r"), status: 304,
			resp:   []string{"Cache-Control: max-age=30"},
			wantOK: true, wantHeader: map[string]string{"Cache-Control": "max-age=30", "X-Version": "1"},
			wantAge: "0", thenLookup: Hit,
		},
		{
			name:   "§4.3.4 304 naming another ETag does not apply",
			stored: base, lookup: get("/r"), status: 304,
			resp:   []string{`ETag: "v2"`},
			wantOK: false, thenLookup: Revalidate,
		},
		{
			name:   "§4.3.3 a 200 is not a revalidation",
			stored: base, lookup: get("/r"), status: 200,
			resp:   []string{"Cache-Control: max-age=60"},
			wantOK: false, thenLookup: Revalidate,
		},
		{
			name:   "§3.2 304 adding no-store removes the entry",
			stored: base, lookup: get("/r"), status: 304,
			resp:   []string{"Cache-Control: no-store"},
			wantOK: true, wantHeader: map[string]string{"Cache-Control": "no-store"},
			thenLookup: Miss,
		},
		{
			name:   "304 with Set-Cookie: served to this client, not stored",
			stored: base, lookup: get("/r"), status: 304,
			resp:   []string{"Set-Cookie: sid=9"},
			wantOK: true, wantHeader: map[string]string{"Set-Cookie": "sid=9"},
			thenLookup: Miss,
		},
		{
			name:   "§5.2.2.4 no-cache entry stays revalidate-always",
			stored: exchange{req: get("/r"), status: 200, body: "body", resp: []string{"Cache-Control: no-cache", `ETag: "v1"`}},
			lookup: get("/r"), status: 304, resp: []string{`ETag: "v1"`},
			wantOK: true, thenLookup: Revalidate,
		},
		{
			name:   "HEAD request revalidates the stored GET response",
			stored: base, lookup: []string{"HEAD /r"}, status: 304,
			resp:   []string{"Cache-Control: max-age=60"},
			wantOK: true, thenLookup: Hit,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newClock()
			c := newCache(t, Config{}, clk)
			tt.stored.store(t, c, clk.Now())
			c.Wait()
			clk.Add(10 * time.Minute) // stale
			req := newReq(t, tt.lookup[0], tt.lookup[1:]...)
			r := c.Lookup("app", req)
			if r.State != Revalidate {
				t.Fatalf("Lookup = %v, want revalidate", r.State)
			}
			var out fasthttp.Request
			req.CopyTo(&out)
			r.Entry.Conditional(&out.Header)
			if got := string(out.Header.Peek("If-None-Match")); got != string(r.Entry.ETag()) {
				t.Fatalf("If-None-Match = %q", got)
			}
			e, ok := c.Revalidated(req, r.Entry, newResp(t, tt.status, "", tt.resp...), clk.Now(), clk.Now())
			if ok != tt.wantOK {
				t.Fatalf("Revalidated ok = %v, want %v", ok, tt.wantOK)
			}
			if ok {
				if string(e.Body()) != "body" || e.Status() != 200 {
					t.Fatalf("merged entry: status %d body %q", e.Status(), e.Body())
				}
				var resp fasthttp.Response
				e.Respond(&resp, clk.Now())
				for k, v := range tt.wantHeader {
					got := string(resp.Header.Peek(k))
					if k == "Set-Cookie" {
						got = string(resp.Header.PeekCookie("sid"))
						v = "sid=9"
					}
					if got != v {
						t.Errorf("%s = %q, want %q", k, got, v)
					}
				}
				if tt.wantAge != "" {
					if got := string(resp.Header.Peek("Age")); got != tt.wantAge {
						t.Errorf("Age = %q, want %q", got, tt.wantAge)
					}
				}
			}
			c.Wait()
			if r := c.Lookup("app", newReq(t, "GET /r")); r.State != tt.thenLookup {
				t.Fatalf("next Lookup = %v, want %v", r.State, tt.thenLookup)
			}
		})
	}
}

func TestConditionalAndNotModified(t *testing.T) {
	lm := httpDate(-time.Hour)
	tests := []struct {
		name    string
		stored  []string // response header lines
		client  []string // client request header lines
		wantINM string
		wantIMS string
		wantNM  bool // NotModified for the client's request
	}{
		{name: "§4.3.1 ETag and Last-Modified", stored: []string{`ETag: "x"`, "Last-Modified: " + lm}, wantINM: `"x"`, wantIMS: lm},
		{name: "§4.3.1 client validators replaced by the entry's", stored: []string{`ETag: "x"`}, client: []string{`If-None-Match: "client"`, "If-Modified-Since: " + lm}, wantINM: `"x"`},
		{name: "§4.3.1 Last-Modified only", stored: []string{"Last-Modified: " + lm}, client: []string{`If-None-Match: "client"`}, wantIMS: lm},
		{name: "RFC 9110 §13.1.2 If-None-Match matches", stored: []string{`ETag: "x"`}, client: []string{`If-None-Match: "y", "x"`}, wantINM: `"x"`, wantNM: true},
		{name: "RFC 9110 §13.1.2 weak comparison", stored: []string{`ETag: W/"x"`}, client: []string{`If-None-Match: "x"`}, wantINM: `W/"x"`, wantNM: true},
		{name: "RFC 9110 §13.1.2 star", stored: []string{`ETag: "x"`}, client: []string{`If-None-Match: *`}, wantINM: `"x"`, wantNM: true},
		{name: "RFC 9110 §13.1.2 no match", stored: []string{`ETag: "x"`}, client: []string{`If-None-Match: "y"`}, wantINM: `"x"`},
		{name: "RFC 9110 §13.1.3 If-Modified-Since not modified", stored: []string{"Last-Modified: " + lm}, client: []string{"If-Modified-Since: " + httpDate(0)}, wantIMS: lm, wantNM: true},
		{name: "RFC 9110 §13.1.3 modified since", stored: []string{"Last-Modified: " + lm}, client: []string{"If-Modified-Since: " + httpDate(-2*time.Hour)}, wantIMS: lm},
		{name: "RFC 9110 §13.2.2 If-None-Match takes precedence", stored: []string{`ETag: "x"`, "Last-Modified: " + lm}, client: []string{`If-None-Match: "y"`, "If-Modified-Since: " + httpDate(0)}, wantINM: `"x"`, wantIMS: lm},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newClock()
			c := newCache(t, Config{}, clk)
			exchange{req: get("/c"), status: 200, resp: append([]string{"Cache-Control: max-age=60"}, tt.stored...)}.store(t, c, clk.Now())
			c.Wait()
			client := newReq(t, "GET /c", tt.client...)
			r := c.Lookup("app", client)
			if r.State != Hit {
				t.Fatalf("Lookup = %v", r.State)
			}
			if got := r.Entry.NotModified(&client.Header); got != tt.wantNM {
				t.Errorf("NotModified = %v, want %v", got, tt.wantNM)
			}
			var out fasthttp.Request
			client.CopyTo(&out)
			r.Entry.Conditional(&out.Header)
			if got := string(out.Header.Peek("If-None-Match")); got != tt.wantINM {
				t.Errorf("If-None-Match = %q, want %q", got, tt.wantINM)
			}
			if got := string(out.Header.Peek("If-Modified-Since")); got != tt.wantIMS {
				t.Errorf("If-Modified-Since = %q, want %q", got, tt.wantIMS)
			}
		})
	}
}
