package edge

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/andybalholm/brotli"
)

var indexHTML = "<!doctype html><title>Blog</title>" + strings.Repeat("<p>Hello from the edge, a page long enough to compress.</p>\n", 40)

// TestStaticSite serves a deployed static site over HTTPS with the local
// CA and over HTTP/3, and redirects plain HTTP.
func TestStaticSite(t *testing.T) {
	h := newHarness(t)
	s := h.newSite("blog")
	s.deploy(map[string]string{
		"index.html":                 indexHTML,
		"docs/index.html":            "<h1>docs</h1>",
		"about.html":                 "<h1>about</h1>",
		"style.css":                  "body{color:#111}",
		"404.html":                   "<h1>custom not found</h1>",
		".well-known/security.txt":   "Contact: mailto:security@example.com",
		"data/report.json":           `{"ok":true}`,
		"downloads/notes-ä ö.txt":    "umlauts",
		"public/.hidden/keep.txt":    "never deployed",
		"config/.env.production":     "SECRET=1",
		"certs/server.key":           "-----BEGIN PRIVATE KEY-----",
		"nested/id_rsa":              "key",
		"assets/app.js":              "console.log('hi')",
		"assets/logo.svg":            `<svg xmlns="http://www.w3.org/2000/svg"/>`,
		"robots.txt":                 "User-agent: *\nAllow: /\n",
		"docs/guide/index.html":      "<h1>guide</h1>",
		"docs/guide/install.html":    "<h1>install</h1>",
		"empty.txt":                  "",
		"downloads/range-target.txt": "0123456789abcdefghijklmnopqrstuvwxyz",
	})

	t.Run("pages", func(t *testing.T) {
		for _, tc := range []struct {
			path, want, ctype string
			status            int
		}{
			{"/", indexHTML, "text/html; charset=utf-8", 200},
			{"/index.html", indexHTML, "text/html; charset=utf-8", 200},
			{"/docs/", "<h1>docs</h1>", "text/html; charset=utf-8", 200},
			{"/docs/guide/", "<h1>guide</h1>", "text/html; charset=utf-8", 200},
			{"/docs/guide/install", "<h1>install</h1>", "text/html; charset=utf-8", 200},
			{"/about", "<h1>about</h1>", "text/html; charset=utf-8", 200},
			{"/style.css", "body{color:#111}", "text/css; charset=utf-8", 200},
			{"/data/report.json", `{"ok":true}`, "application/json", 200},
			{"/assets/logo.svg", `<svg xmlns="http://www.w3.org/2000/svg"/>`, "image/svg+xml", 200},
			{"/downloads/notes-%C3%A4%20%C3%B6.txt", "umlauts", "text/plain; charset=utf-8", 200},
			{"/.well-known/security.txt", "Contact: mailto:security@example.com", "text/plain; charset=utf-8", 200},
			{"/empty.txt", "", "text/plain; charset=utf-8", 200},
			{"/missing", "<h1>custom not found</h1>", "text/html; charset=utf-8", 404},
			{"/docs/missing/", "<h1>custom not found</h1>", "text/html; charset=utf-8", 404},
			{"/index.html?x=1", indexHTML, "text/html; charset=utf-8", 200},
		} {
			r := h.get(s.host, tc.path)
			if r.status != tc.status || r.body != tc.want || r.header.Get("Content-Type") != tc.ctype {
				t.Errorf("GET %s: %d %q %q, want %d %q %q", tc.path, r.status, r.header.Get("Content-Type"), short(r.body), tc.status, tc.ctype, short(tc.want))
			}
			for k, want := range map[string]string{
				"Strict-Transport-Security": "max-age=31536000", "X-Content-Type-Options": "nosniff",
				"X-Frame-Options": "SAMEORIGIN", "Referrer-Policy": "strict-origin-when-cross-origin",
				"Alt-Svc": `h3=":` + port(h.https) + `"; ma=86400`,
			} {
				if got := r.header.Get(k); got != want {
					t.Errorf("GET %s: %s = %q, want %q", tc.path, k, got, want)
				}
			}
		}
		r := h.get(s.host, "/docs?a=b")
		if r.status != 308 || r.header.Get("Location") != "/docs/?a=b" {
			t.Errorf("directory without slash: %d %q", r.status, r.header.Get("Location"))
		}
		r = h.do("POST", s.host, "/", strings.NewReader("x"))
		if r.status != 405 || r.header.Get("Allow") != "GET, HEAD" {
			t.Errorf("POST: %d %v", r.status, r.header)
		}
		r = h.do("HEAD", s.host, "/style.css", nil)
		if r.status != 200 || r.body != "" || r.header.Get("Content-Length") != "16" {
			t.Errorf("HEAD: %d %q %v", r.status, r.body, r.header)
		}
		r = h.get("unknown.apps.test", "/")
		if r.status != 404 || !strings.Contains(r.body, "no site") || r.header.Get("Strict-Transport-Security") == "" {
			t.Errorf("unknown host: %d %q", r.status, r.body)
		}
	})

	t.Run("validators", func(t *testing.T) {
		r := h.get(s.host, "/style.css")
		etag, lm := r.header.Get("ETag"), r.header.Get("Last-Modified")
		if etag == "" || lm == "" || r.header.Get("Cache-Control") != "public, max-age=3600" {
			t.Fatalf("headers: %v", r.header)
		}
		for _, hdr := range [][]string{{"If-None-Match: " + etag}, {"If-None-Match: \"x\", W/" + etag}, {"If-None-Match: *"}, {"If-Modified-Since: " + lm},
			{"If-Modified-Since: " + time.Now().UTC().Format(http.TimeFormat)}} {
			if r := h.get(s.host, "/style.css", hdr...); r.status != 304 || r.body != "" || r.header.Get("ETag") != etag {
				t.Errorf("%v: %d %q", hdr, r.status, r.body)
			}
		}
		for _, hdr := range [][]string{{"If-None-Match: \"other\""}, {"If-Modified-Since: Mon, 02 Jan 2006 15:04:05 GMT"}} {
			if r := h.get(s.host, "/style.css", hdr...); r.status != 200 {
				t.Errorf("%v: %d", hdr, r.status)
			}
		}
	})

	t.Run("ranges", func(t *testing.T) {
		const body = "0123456789abcdefghijklmnopqrstuvwxyz"
		p := "/downloads/range-target.txt"
		etag := h.get(s.host, p).header.Get("ETag")
		for _, tc := range []struct {
			hdr    []string
			status int
			body   string
			cr     string
		}{
			{[]string{"Range: bytes=0-9"}, 206, body[:10], "bytes 0-9/36"},
			{[]string{"Range: bytes=30-"}, 206, body[30:], "bytes 30-35/36"},
			{[]string{"Range: bytes=-4"}, 206, body[32:], "bytes 32-35/36"},
			{[]string{"Range: bytes=10-1000"}, 206, body[10:], "bytes 10-35/36"},
			{[]string{"Range: bytes=36-"}, 416, "", "bytes */36"},
			{[]string{"Range: bytes=0-1,3-4"}, 200, body, ""},
			{[]string{"Range: items=0-1"}, 200, body, ""},
			{[]string{"Range: bytes=0-3", "If-Range: " + etag}, 206, body[:4], "bytes 0-3/36"},
			{[]string{"Range: bytes=0-3", "If-Range: \"stale\""}, 200, body, ""},
		} {
			r := h.get(s.host, p, tc.hdr...)
			if r.status != tc.status || (tc.status != 416 && r.body != tc.body) || r.header.Get("Content-Range") != tc.cr {
				t.Errorf("%v: %d %q %q", tc.hdr, r.status, r.body, r.header.Get("Content-Range"))
			}
		}
	})

	t.Run("compression", func(t *testing.T) {
		for _, tc := range []struct{ ae, enc string }{
			{"gzip", "gzip"}, {"br", "br"}, {"gzip, deflate, br", "br"}, {"br;q=0.5, gzip", "gzip"},
			{"br;q=0, gzip;q=0", ""}, {"identity", ""}, {"*", "br"}, {"", ""},
		} {
			for range 2 { // miss, then hit
				r := h.get(s.host, "/", "Accept-Encoding: "+tc.ae)
				if r.header.Get("Content-Encoding") != tc.enc || r.header.Get("Vary") != "Accept-Encoding" {
					t.Fatalf("Accept-Encoding %q: Content-Encoding %q Vary %q", tc.ae, r.header.Get("Content-Encoding"), r.header.Get("Vary"))
				}
				if got := decode(t, tc.enc, r.body); got != indexHTML {
					t.Fatalf("Accept-Encoding %q: body differs", tc.ae)
				}
				h.edge.cache.Wait()
			}
		}
		if r := h.get(s.host, "/style.css", "Accept-Encoding: br"); r.header.Get("Content-Encoding") != "" {
			t.Errorf("a 16-byte file was compressed")
		}
		if r := h.get(s.host, "/", "Accept-Encoding: br", "Range: bytes=0-9"); r.status != 206 || r.header.Get("Content-Encoding") != "" || r.body != indexHTML[:10] {
			t.Errorf("range with br: %d %q %q", r.status, r.header.Get("Content-Encoding"), r.body)
		}
	})

	t.Run("tls", func(t *testing.T) {
		for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
			c, err := tls.Dial("tcp", h.https, &tls.Config{RootCAs: h.edge.CA().Pool(), ServerName: s.host, MinVersion: v, MaxVersion: v})
			if err != nil {
				t.Fatalf("TLS %x: %v", v, err)
			}
			if st := c.ConnectionState(); st.Version != v || st.PeerCertificates[0].Subject.CommonName != s.host {
				t.Errorf("TLS %x: %+v", v, st.PeerCertificates[0].Subject)
			}
			c.Close()
		}
		if c, err := tls.Dial("tcp", h.https, &tls.Config{RootCAs: h.edge.CA().Pool(), ServerName: s.host, MaxVersion: tls.VersionTLS11}); err == nil {
			c.Close()
			t.Error("TLS 1.1 was accepted")
		}
	})

	t.Run("http3", func(t *testing.T) {
		for _, tc := range []struct{ path, want string }{{"/", indexHTML}, {"/style.css", "body{color:#111}"}} {
			resp, err := h.h3c.Get("https://" + s.host + tc.path)
			r := read(t, resp, err)
			if r.proto != "HTTP/3.0" || r.status != 200 || r.body != tc.want {
				t.Fatalf("h3 GET %s: %s %d %q", tc.path, r.proto, r.status, short(r.body))
			}
			if r.header.Get("Strict-Transport-Security") == "" || r.header.Get("Alt-Svc") != "" || r.header.Get("ETag") == "" {
				t.Errorf("h3 headers: %v", r.header)
			}
		}
		req, _ := http.NewRequest("GET", "https://"+s.host+"/missing", nil)
		resp, err := h.h3c.Do(req)
		if r := read(t, resp, err); r.status != 404 || r.body != "<h1>custom not found</h1>" {
			t.Errorf("h3 404: %d %q", r.status, r.body)
		}
	})

	t.Run("redirect", func(t *testing.T) {
		plain := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
			Transport: &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) { return net.Dial(network, h.http) }}}
		for _, tc := range []struct {
			method, host, path string
			status             int
			loc                string
		}{
			{"GET", s.host, "/docs/?q=1", 301, "https://" + s.host + ":" + port(h.https) + "/docs/?q=1"},
			{"POST", s.host, "/form", 308, "https://" + s.host + ":" + port(h.https) + "/form"},
			{"GET", "BLOG.apps.test.", "/", 301, "https://" + s.host + ":" + port(h.https) + "/"},
			{"GET", "nobody.apps.test", "/", 404, ""},
		} {
			req, _ := http.NewRequest(tc.method, "http://"+tc.host+tc.path, nil)
			resp, err := plain.Do(req)
			r := read(t, resp, err)
			if r.status != tc.status || r.header.Get("Location") != tc.loc || r.header.Get("Strict-Transport-Security") != "" {
				t.Errorf("%s http://%s%s: %d %q", tc.method, tc.host, tc.path, r.status, r.header.Get("Location"))
			}
		}
	})
}

func decode(t *testing.T, enc, body string) string {
	t.Helper()
	var r io.Reader
	switch enc {
	case "":
		return body
	case "gzip":
		zr, err := gzip.NewReader(strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		r = zr
	case "br":
		r = brotli.NewReader(strings.NewReader(body))
	}
	var b bytes.Buffer
	if _, err := io.Copy(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func port(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}

func short(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}
