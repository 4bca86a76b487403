package edge

import (
	"net/http"
	"net/http/httptest"
	"slices"
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
