package buckets

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

// TestSignedURL: a signed URL serves a private object to anyone until it
// expires (by the fake clock), and nothing else: not after expiry, not
// with a changed signature, expiry or key, not after the bucket's signing
// key is replaced; a private object without a signature is 404 whether or
// not it exists.
func TestSignedURL(t *testing.T) { eachEngine(t, testSignedURL) }

func testSignedURL(t *testing.T, e pgtest.Engine) {
	f := newFixture(t, e, Config{}, t0)
	b := f.bucket("private", false)
	f.put(b.ID, "report.pdf", []byte("secret bytes"), "Content-Type", "application/pdf")
	f.put(b.ID, "a/../b", []byte("dots"))
	var su SignedURL
	f.must(http.StatusCreated, "dev", "POST", "/api/buckets/"+b.ID+"/signed-urls", map[string]any{"key": "report.pdf", "expiresIn": 600}).Decode(t, &su)
	if !su.ExpiresAt.Equal(t0.Add(10*time.Minute)) || !strings.HasPrefix(su.URL, "/storage/"+b.ID+"/report.pdf?expires=") {
		t.Fatalf("signed = %+v", su)
	}
	r := f.get(su.URL)
	if r.Status != http.StatusOK || string(r.Body) != "secret bytes" || r.Header.Get("Content-Type") != "application/pdf" ||
		r.Header.Get("Cache-Control") != "private, max-age=600" || r.Header.Get("Content-Security-Policy") != "sandbox" {
		t.Fatalf("fetch: %d %q %v", r.Status, r.Body, r.Header)
	}
	if r := f.get(su.URL, "Range", "bytes=0-5"); r.Status != http.StatusPartialContent || string(r.Body) != "secret" {
		t.Fatalf("range: %d %q", r.Status, r.Body)
	}
	u, _ := url.Parse(su.URL)
	q := u.Query()
	tamper := func(k, v string) string {
		c := url.Values{}
		for kk, vv := range q {
			c[kk] = vv
		}
		c.Set(k, v)
		return u.Path + "?" + c.Encode()
	}
	for _, c := range []struct {
		name, url string
		status    int
		code      string
	}{
		{"signature changed", tamper("signature", strings.Repeat("A", 43)), 403, "invalid_signature"},
		{"expiry moved", tamper("expires", "9999999999"), 403, "invalid_signature"},
		{"expiry not a number", tamper("expires", "soon"), 403, "invalid_signature"},
		{"another key", strings.Replace(su.URL, "report.pdf", "a/../b", 1), 403, "invalid_signature"},
		{"no signature", u.Path, 404, "not_found"},
		{"missing object, no signature", "/storage/" + b.ID + "/nothing", 404, "not_found"},
		{"unknown bucket", "/storage/bkt_nope/report.pdf?" + q.Encode(), 404, "not_found"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := f.get(c.url)
			if r.Status != c.status || r.Code() != c.code {
				t.Fatalf("status %d code %q, want %d %q: %s", r.Status, r.Code(), c.status, c.code, r.Body)
			}
		})
	}
	// A key with a ".." segment is served through its encoded path.
	var dots SignedURL
	f.must(http.StatusCreated, "dev", "POST", "/api/buckets/"+b.ID+"/signed-urls", map[string]any{"key": "a/../b"}).Decode(t, &dots)
	if r := f.get(dots.URL); r.Status != http.StatusOK || string(r.Body) != "dots" {
		t.Fatalf("dot key: %d %s (%s)", r.Status, r.Body, dots.URL)
	}
	// The clock passes the expiry: refused.
	f.clk.Advance(10*time.Minute + time.Second)
	if r := f.get(su.URL); r.Status != http.StatusForbidden || r.Code() != "url_expired" {
		t.Fatalf("after expiry: %d %s", r.Status, r.Body)
	}
	// Replacing the signing key voids a URL still in its time.
	f.must(http.StatusOK, "dev", "POST", "/api/buckets/"+b.ID+"/signing-key", nil)
	if r := f.get(dots.URL); r.Status != http.StatusForbidden || r.Code() != "invalid_signature" {
		t.Fatalf("after rotation: %d %s", r.Status, r.Body)
	}
	// Signing refusals.
	for _, c := range []struct {
		name, key string
		body      any
		status    int
		code      string
	}{
		{"expiresIn too long", "dev", map[string]any{"key": "report.pdf", "expiresIn": 604801}, 400, "invalid_request"},
		{"expiresIn negative", "dev", map[string]any{"key": "report.pdf", "expiresIn": -1}, 400, "invalid_request"},
		{"missing object", "dev", map[string]any{"key": "nothing"}, 404, "not_found"},
		{"bad key", "dev", map[string]any{"key": ""}, 400, "invalid_key"},
		{"viewer", "viewer", map[string]any{"key": "report.pdf"}, 403, "insufficient_role"},
		{"read-only key", "readonly", map[string]any{"key": "report.pdf"}, 403, "full_access_required"},
		{"another workspace", "stranger", map[string]any{"key": "report.pdf"}, 404, "not_found"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := f.call(c.key, "POST", "/api/buckets/"+b.ID+"/signed-urls", c.body)
			if r.Status != c.status || r.Code() != c.code {
				t.Fatalf("status %d code %q, want %d %q: %s", r.Status, r.Code(), c.status, c.code, r.Body)
			}
		})
	}
}

// TestPublicBucket: a public bucket serves every object without
// credentials, with the object's Cache-Control or the default, CORS open
// and the sandbox headers; made private, it stops.
func TestPublicBucket(t *testing.T) { eachEngine(t, testPublicBucket) }

func testPublicBucket(t *testing.T, e pgtest.Engine) {
	f := newFixture(t, e, Config{}, t0)
	b := f.bucket("site-assets", true)
	o := f.put(b.ID, "img/logo.svg", []byte("<svg/>"), "Content-Type", "image/svg+xml", "X-Meta-Alt", "logo")
	f.put(b.ID, "cached.css", []byte("a{}"), "Cache-Control", "public, max-age=31536000, immutable")
	if o.URL != "/storage/"+b.ID+"/img/logo.svg" {
		t.Fatalf("url = %q", o.URL)
	}
	r := f.get(o.URL)
	for h, want := range map[string]string{"Cache-Control": DefaultPublicCacheControl, "Access-Control-Allow-Origin": "*",
		"Content-Security-Policy": "sandbox", "X-Content-Type-Options": "nosniff", "Content-Type": "image/svg+xml", "X-Meta-Alt": "logo"} {
		if got := r.Header.Get(h); got != want {
			t.Errorf("%s = %q, want %q", h, got, want)
		}
	}
	if r.Status != http.StatusOK || string(r.Body) != "<svg/>" {
		t.Fatalf("public fetch: %d %q", r.Status, r.Body)
	}
	if r := f.get("/storage/" + b.ID + "/cached.css"); r.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" {
		t.Fatalf("stored Cache-Control: %q", r.Header.Get("Cache-Control"))
	}
	if r := f.get("/storage/"+b.ID+"/img/logo.svg", "If-None-Match", r.Header.Get("Etag")); r.Status != http.StatusNotModified {
		t.Fatalf("revalidation: %d", r.Status)
	}
	if r := f.get("/storage/" + b.ID + "/missing"); r.Status != http.StatusNotFound {
		t.Fatalf("missing object: %d", r.Status)
	}
	f.must(http.StatusOK, "dev", "PATCH", "/api/buckets/"+b.ID, map[string]any{"public": false})
	if r := f.get(o.URL); r.Status != http.StatusNotFound {
		t.Fatalf("after making it private: %d", r.Status)
	}
}

// TestKeyPath: object URLs decode back to their keys, and keys a router
// would clean are encoded whole.
func TestKeyPath(t *testing.T) {
	for _, c := range []struct{ key, want string }{
		{"a/b.txt", "a/b.txt"},
		{"a b/c?d#e", "a%20b/c%3Fd%23e"},
		{"a//b", "a%2F%2Fb"},
		{"../x", "%2E%2E%2Fx"},
		{"./", "%2E%2F"},
		{"/lead", "%2Flead"},
	} {
		got := keyPath(c.key)
		if got != c.want {
			t.Errorf("keyPath(%q) = %q, want %q", c.key, got, c.want)
		}
		if back, err := url.PathUnescape(got); err != nil || back != c.key {
			t.Errorf("keyPath(%q) decodes to %q, %v", c.key, back, err)
		}
	}
}
