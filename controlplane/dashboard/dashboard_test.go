package dashboard_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/svcplatform/platform/controlplane/dashboard"
)

// build is a dashboard build as Vite writes it.
var build = fstest.MapFS{
	"index.html":              {Data: []byte(`<!doctype html><script type="module" src="/assets/index-AbC123.js"></script>`)},
	"favicon.svg":             {Data: []byte(`<svg xmlns="http://www.w3.org/2000/svg"/>`)},
	"assets/index-AbC123.js":  {Data: []byte(`console.log("app")`)},
	"assets/index-DeF456.css": {Data: []byte(`body{}`)},
	"assets/player-GhI789.js": {Data: []byte(bigScript)},
}

// bigScript compresses well: it is served gzip-encoded to clients that
// accept it.
var bigScript = strings.Repeat(`export function play(v){return v.currentTime+1}`+"\n", 400)

// TestGzip: scripts are served gzip-encoded when the client accepts gzip
// (and not when it refuses it with q=0), with their own ETag, Vary:
// Accept-Encoding, and the same bytes once decoded.
func TestGzip(t *testing.T) {
	h := dashboard.NewFS(build)
	for _, tc := range []struct {
		name, path, accept string
		gzip               bool
	}{
		{"gzip accepted", "/assets/player-GhI789.js", "gzip, deflate, br", true},
		{"any encoding", "/assets/player-GhI789.js", "*", true},
		{"gzip refused", "/assets/player-GhI789.js", "gzip;q=0, br", false},
		{"no header", "/assets/player-GhI789.js", "", false},
		{"only br", "/assets/player-GhI789.js", "br", false},
		{"too small to gain", "/assets/index-AbC123.js", "gzip", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest("GET", tc.path, nil)
			if tc.accept != "" {
				req.Header.Set("Accept-Encoding", tc.accept)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != 200 || (rec.Header().Get("Content-Encoding") == "gzip") != tc.gzip {
				t.Fatalf("%d, Content-Encoding %q", rec.Code, rec.Header().Get("Content-Encoding"))
			}
			body := rec.Body.Bytes()
			if tc.gzip {
				zr, err := gzip.NewReader(bytes.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				if body, err = io.ReadAll(zr); err != nil {
					t.Fatal(err)
				}
				if rec.Body.Len()*5 > len(bigScript) || !strings.HasSuffix(rec.Header().Get("ETag"), `-gz"`) {
					t.Fatalf("%d bytes encoded, ETag %s", rec.Body.Len(), rec.Header().Get("ETag"))
				}
			}
			if tc.path == "/assets/player-GhI789.js" && (string(body) != bigScript || rec.Header().Get("Vary") != "Accept-Encoding") {
				t.Fatalf("decoded %d bytes, Vary %q", len(body), rec.Header().Get("Vary"))
			}
		})
	}
	req := httptest.NewRequest("GET", "/assets/player-GhI789.js", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	req.Header.Set("If-None-Match", rec.Header().Get("ETag"))
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 304 {
		t.Fatalf("revalidating the gzip encoding: %d", rec.Code)
	}
}

// TestHandler: pages get index.html revalidated on every load, hashed
// assets are immutable, missing files are 404 rather than a page, only GET
// and HEAD are answered, and every answer carries the CSP.
func TestHandler(t *testing.T) {
	h := dashboard.NewFS(build)
	if !h.Built() {
		t.Fatal("a build with index.html is not Built")
	}
	for _, tc := range []struct {
		name, method, path string
		header             map[string]string
		status             int
		cache, ctype, body string
	}{
		{name: "root", method: "GET", path: "/", status: 200, cache: "no-cache", ctype: "text/html", body: "/assets/index-AbC123.js"},
		{name: "a page's own URL", method: "GET", path: "/projects/prj_1/deployments", status: 200, cache: "no-cache", ctype: "text/html", body: "<!doctype html>"},
		{name: "a page with a query", method: "GET", path: "/setup?token=svcsetup_x", status: 200, cache: "no-cache", ctype: "text/html"},
		{name: "index.html by name", method: "GET", path: "/index.html", status: 200, cache: "no-cache", ctype: "text/html"},
		{name: "hashed script", method: "GET", path: "/assets/index-AbC123.js", status: 200, cache: "public, max-age=31536000, immutable", ctype: "text/javascript", body: `console.log("app")`},
		{name: "hashed style", method: "GET", path: "/assets/index-DeF456.css", status: 200, cache: "public, max-age=31536000, immutable", ctype: "text/css"},
		{name: "unhashed file", method: "GET", path: "/favicon.svg", status: 200, cache: "no-cache", ctype: "image/svg+xml"},
		{name: "missing asset", method: "GET", path: "/assets/index-old.js", status: 404, cache: "no-cache"},
		{name: "missing file with an extension", method: "GET", path: "/robots.txt", status: 404},
		{name: "dot segments stay inside", method: "GET", path: "/assets/../index.html", status: 200, ctype: "text/html"},
		{name: "HEAD", method: "HEAD", path: "/keys", status: 200, ctype: "text/html"},
		{name: "POST", method: "POST", path: "/", status: 405},
		{name: "DELETE of a page", method: "DELETE", path: "/projects/prj_1", status: 405},
		{name: "revalidated index", method: "GET", path: "/members", header: map[string]string{"If-None-Match": etagOf(t, h, "/")}, status: 304},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, tc.path, nil)
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body)
			}
			if got := rec.Header().Get("Content-Security-Policy"); got != dashboard.CSP {
				t.Errorf("CSP %q", got)
			}
			for _, name := range []string{"X-Content-Type-Options", "X-Frame-Options", "Referrer-Policy"} {
				if rec.Header().Get(name) == "" {
					t.Errorf("no %s", name)
				}
			}
			if tc.cache != "" && rec.Header().Get("Cache-Control") != tc.cache {
				t.Errorf("Cache-Control %q, want %q", rec.Header().Get("Cache-Control"), tc.cache)
			}
			if tc.ctype != "" && !strings.HasPrefix(rec.Header().Get("Content-Type"), tc.ctype) {
				t.Errorf("Content-Type %q, want %s", rec.Header().Get("Content-Type"), tc.ctype)
			}
			if tc.body != "" && !strings.Contains(rec.Body.String(), tc.body) {
				t.Errorf("body %q lacks %q", rec.Body, tc.body)
			}
		})
	}
}

func etagOf(t *testing.T, h http.Handler, path string) string {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	if rec.Header().Get("ETag") == "" {
		t.Fatalf("%s has no ETag", path)
	}
	return rec.Header().Get("ETag")
}

// TestPlaceholder: a binary built before the dashboard says how to build
// it, on every page, and is never cached.
func TestPlaceholder(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    *dashboard.Handler
	}{
		{"no build at all", dashboard.NewFS(nil)},
		{"a build without index.html", dashboard.NewFS(fstest.MapFS{"assets/x.js": {Data: []byte("x")}})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.h.Built() {
				t.Fatal("Built without index.html")
			}
			for _, path := range []string{"/", "/projects/prj_1"} {
				rec := httptest.NewRecorder()
				tc.h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
				if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "make build") {
					t.Fatalf("%s: %d %s", path, rec.Code, rec.Body)
				}
				if rec.Header().Get("Cache-Control") != "no-store" || rec.Header().Get("Content-Security-Policy") != dashboard.CSP {
					t.Fatalf("%s: headers %v", path, rec.Header())
				}
			}
			rec := httptest.NewRecorder()
			tc.h.ServeHTTP(rec, httptest.NewRequest("GET", "/assets/x.js", nil))
			if rec.Code != http.StatusNotFound {
				t.Fatalf("asset of a placeholder: %d", rec.Code)
			}
		})
	}
}
