package edge

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// TestWriteBridgedResponse checks the header copy of the bridge: repeated
// headers kept in order, connection headers dropped, names canonical, a
// Date added once per second and shared read-only.
func TestWriteBridgedResponse(t *testing.T) {
	for _, tc := range []struct {
		name   string
		set    func(*fasthttp.Response)
		method string
		want   http.Header
		body   string
	}{
		{"repeated and dropped", func(r *fasthttp.Response) {
			r.Header.Add("Set-Cookie", "a=1")
			r.Header.Add("Set-Cookie", "b=2")
			r.Header.Set("Connection", "keep-alive")
			r.Header.Set("x-custom-thing", "v")
			r.SetBodyString("hello")
		}, "GET", http.Header{"Set-Cookie": {"a=1", "b=2"}, "X-Custom-Thing": {"v"}, "Content-Length": {"5"}}, "hello"},
		{"head keeps length", func(r *fasthttp.Response) {
			r.SetBodyString("abc")
		}, "HEAD", http.Header{"Content-Length": {"3"}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var resp fasthttp.Response
			tc.set(&resp)
			w := httptest.NewRecorder()
			writeBridgedResponse(w, httptest.NewRequest(tc.method, "/", nil), &resp)
			got := w.Result().Header
			for k, v := range tc.want {
				if !slices.Equal(got[k], v) {
					t.Errorf("%s: %q, want %q", k, got[k], v)
				}
			}
			if got.Get("Connection") != "" || len(got["Date"]) != 1 || len(got["Content-Type"]) != 1 {
				t.Errorf("header %v", got)
			}
			if w.Body.String() != tc.body {
				t.Errorf("body %q, want %q", w.Body.String(), tc.body)
			}
		})
	}
	now := time.Date(2026, 11, 22, 17, 0, 0, 0, time.UTC)
	a, b := bridgeDate(now), bridgeDate(now.Add(500*time.Millisecond))
	if &a[0] != &b[0] || a[0] != "Sun, 22 Nov 2026 17:00:00 GMT" || cap(a) != 1 {
		t.Errorf("same second: %q %q (cap %d), want one shared value", a, b, cap(a))
	}
	if c := bridgeDate(now.Add(time.Second)); c[0] != "Sun, 22 Nov 2026 17:00:01 GMT" {
		t.Errorf("next second: %q", c)
	}
}

// TestBridgedRequestBody: what reaches the origin of a request's content
// over HTTP/1.1, HTTP/2 and HTTP/3. A GET without content goes without one
// (HTTP/3 marks no request as bodiless before its stream ends: forwarded
// as it came, it was a chunked GET, cut off invalid when the visitor went
// away); content of a known length goes with its length; content of an
// unknown length, chunked, whole.
func TestBridgedRequestBody(t *testing.T) {
	se := newSharedEdge(t)
	type seen struct {
		te     []string
		length int64
		body   string
	}
	got := make(chan seen, 1)
	se.origin.handle("/body", func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		got <- seen{r.TransferEncoding, r.ContentLength, string(b)}
		w.Header().Set("Cache-Control", "no-store")
		io.WriteString(w, "ok")
	})
	clients := []struct {
		name   string
		client *http.Client
	}{{"HTTP/1.1", se.client}, {"HTTP/2", se.h2Client()}, {"HTTP/3", se.h3Client(t)}}
	tests := []struct {
		name       string
		method     string
		body       func() io.Reader // nil: no content
		length     int64            // as the client announces it (-1: unknown)
		wantTE     bool
		wantLength int64
		wantBody   string
	}{
		{"GET without content", "GET", nil, 0, false, 0, ""},
		{"POST of a known length", "POST", func() io.Reader { return strings.NewReader("hello") }, 5, false, 5, "hello"},
		{"POST of an unknown length", "POST", func() io.Reader { return io.MultiReader(strings.NewReader("a"), strings.NewReader("bc")) }, -1, true, -1, "abc"},
		{"POST of one byte, unknown length", "POST", func() io.Reader { return io.MultiReader(strings.NewReader("z")) }, -1, true, -1, "z"},
	}
	for _, c := range clients {
		for _, tc := range tests {
			t.Run(c.name+"/"+tc.name, func(t *testing.T) {
				var body io.Reader
				if tc.body != nil {
					body = tc.body()
				}
				req, err := http.NewRequest(tc.method, "https://app.apps.test/body", body)
				if err != nil {
					t.Fatal(err)
				}
				req.ContentLength = tc.length
				resp, err := c.client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || string(b) != "ok" {
					t.Fatalf("%d %q", resp.StatusCode, b)
				}
				s := <-got
				if te := len(s.te) > 0; te != tc.wantTE || s.length != tc.wantLength || s.body != tc.wantBody {
					t.Fatalf("origin saw Transfer-Encoding %q, length %d, body %q; want chunked %v, length %d, body %q",
						s.te, s.length, s.body, tc.wantTE, tc.wantLength, tc.wantBody)
				}
			})
		}
	}
}
