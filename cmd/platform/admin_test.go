package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestAdminProfiles: Go's profiles, the runtime trace included, are served
// on the admin listener (bench/trace.sh and edge/README.md "Tail" use them).
func TestAdminProfiles(t *testing.T) {
	srv := httptest.NewServer(adminMux(newRegistry(), func() bool { return true }, func(context.Context) (status, error) { return status{}, nil }))
	defer srv.Close()
	for _, tc := range []struct {
		name, method, path string
		want               int
		prefix             []byte
	}{
		{"index", "GET", "/debug/pprof/", 200, []byte("<html>")},
		{"heap", "GET", "/debug/pprof/heap", 200, nil},
		{"goroutines", "GET", "/debug/pprof/goroutine?debug=1", 200, []byte("goroutine profile:")},
		{"cpu", "GET", "/debug/pprof/profile?seconds=1", 200, nil},
		{"trace", "GET", "/debug/pprof/trace?seconds=0.2", 200, []byte("go 1.")},
		{"cmdline", "GET", "/debug/pprof/cmdline", 200, nil},
		{"symbol", "POST", "/debug/pprof/symbol", 200, []byte("num_symbols")},
		{"unknown profile", "GET", "/debug/pprof/nosuch", 404, nil},
		{"trace refuses writes", "POST", "/debug/pprof/trace", 405, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, srv.URL+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("%s %s: status %d, want %d: %.200s", tc.method, tc.path, resp.StatusCode, tc.want, body)
			}
			if tc.prefix != nil && !bytes.Contains(body[:min(len(body), 200)], tc.prefix) {
				t.Fatalf("%s %s: body starts %q, want %q in it", tc.method, tc.path, body[:min(len(body), 40)], tc.prefix)
			}
		})
	}
}
