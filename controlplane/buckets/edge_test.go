package buckets

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

// TestPublicBucketsAtTheEdge: which buckets are public is published to the
// edges in the transaction of every change that alters it (and only then),
// and PublicBucketIDs, the snapshot's source, lists exactly them.
func TestPublicBucketsAtTheEdge(t *testing.T) { eachEngine(t, testPublicBucketsAtTheEdge) }

func testPublicBucketsAtTheEdge(t *testing.T, e pgtest.Engine) {
	f := newFixture(t, e, Config{}, t0)
	ctx := context.Background()
	var pub, priv, other Bucket
	steps := []struct {
		name      string
		do        func()
		published int // publications after the step
		public    func() []string
	}{
		{"a private bucket is not published", func() { priv = f.bucket("private", false) }, 0, func() []string { return nil }},
		{"a public bucket is", func() { pub = f.bucket("public", true) }, 1, func() []string { return []string{pub.ID} }},
		{"an object put publishes nothing", func() { f.put(pub.ID, "a.txt", []byte("a")) }, 1, func() []string { return []string{pub.ID} }},
		{"making a bucket public", func() {
			f.must(http.StatusOK, "dev", "PATCH", "/api/buckets/"+priv.ID, map[string]any{"public": true})
		}, 2, func() []string { return []string{pub.ID, priv.ID} }},
		{"saving the same visibility publishes nothing", func() {
			f.must(http.StatusOK, "dev", "PATCH", "/api/buckets/"+priv.ID, map[string]any{"public": true})
		}, 2, func() []string { return []string{pub.ID, priv.ID} }},
		{"making it private", func() {
			f.must(http.StatusOK, "dev", "PATCH", "/api/buckets/"+priv.ID, map[string]any{"public": false})
		}, 3, func() []string { return []string{pub.ID} }},
		{"deleting a private bucket publishes nothing", func() {
			f.must(http.StatusOK, "dev", "DELETE", "/api/buckets/"+priv.ID, nil)
		}, 3, func() []string { return []string{pub.ID} }},
		{"a public bucket of another project", func() {
			var a BucketAnswer
			f.must(http.StatusCreated, "dev", "POST", "/api/projects/prj_b/buckets", map[string]any{"name": "other", "public": true}).Decode(t, &a)
			other = a.Bucket
		}, 4, func() []string { return []string{pub.ID, other.ID} }},
		{"deleting a public bucket", func() {
			f.must(http.StatusOK, "dev", "DELETE", "/api/buckets/"+pub.ID+"?force=true", nil)
		}, 5, func() []string { return []string{other.ID} }},
		{"a project removed with a public bucket", func() {
			if err := f.svc.Remove(ctx, "prj_b"); err != nil {
				t.Fatal(err)
			}
		}, 6, func() []string { return nil }},
		{"a project removed without one", func() {
			if err := f.svc.Remove(ctx, "prj_a"); err != nil {
				t.Fatal(err)
			}
		}, 6, func() []string { return nil }},
	}
	for _, s := range steps {
		s.do()
		if got := f.edge.publications(); got != s.published {
			t.Fatalf("%s: %d publications, want %d", s.name, got, s.published)
		}
		want := append([]string{}, s.public()...)
		slices.Sort(want)
		got, err := PublicBucketIDs(ctx, f.db)
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("%s: public buckets %v (%v), want %v", s.name, got, err, want)
		}
	}
}

// TestStorageCacheHeaders: what a shared cache in front of /storage relies
// on: public answers are cacheable by the object's Cache-Control (default
// public, max-age=60) with an ETag and Last-Modified, revalidate to 304,
// serve ranges (206 with Content-Range; If-Range with an old ETag gets the
// whole object); HEAD carries the headers alone; signed answers are
// private; refusals are never stored.
func TestStorageCacheHeaders(t *testing.T) { eachEngine(t, testStorageCacheHeaders) }

func testStorageCacheHeaders(t *testing.T, e pgtest.Engine) {
	f := newFixture(t, e, Config{}, t0)
	pub := f.bucket("public", true)
	priv := f.bucket("private", false)
	o := f.put(pub.ID, "docs/readme.txt", []byte("0123456789"), "Content-Type", "text/plain")
	f.put(priv.ID, "secret.txt", []byte("hidden"))
	var signed SignedURL
	f.must(http.StatusCreated, "dev", "POST", "/api/buckets/"+priv.ID+"/signed-urls", map[string]any{"key": "secret.txt", "expiresIn": 120}).Decode(t, &signed)
	path := "/storage/" + pub.ID + "/docs/readme.txt"
	etag := `"` + o.ETag + `"`
	cases := []struct {
		name    string
		method  string
		url     string
		header  []string
		status  int
		body    string
		headers map[string]string
	}{
		{"public object", "GET", path, nil, 200, "0123456789",
			map[string]string{"Cache-Control": DefaultPublicCacheControl, "ETag": etag, "Accept-Ranges": "bytes", "Content-Length": "10",
				"Last-Modified": o.LastModified.UTC().Format(http.TimeFormat), "Access-Control-Allow-Origin": "*"}},
		{"range", "GET", path, []string{"Range", "bytes=2-5"}, 206, "2345",
			map[string]string{"Content-Range": "bytes 2-5/10", "ETag": etag, "Cache-Control": DefaultPublicCacheControl}},
		{"suffix range", "GET", path, []string{"Range", "bytes=-3"}, 206, "789", map[string]string{"Content-Range": "bytes 7-9/10"}},
		{"range past the end", "GET", path, []string{"Range", "bytes=20-"}, 416, "", map[string]string{"Content-Range": "bytes */10"}},
		{"if-range with the current etag", "GET", path, []string{"Range", "bytes=0-0", "If-Range", etag}, 206, "0", nil},
		{"if-range with an old etag", "GET", path, []string{"Range", "bytes=0-0", "If-Range", `"old"`}, 200, "0123456789", nil},
		{"revalidation", "GET", path, []string{"If-None-Match", etag}, 304, "", map[string]string{"ETag": etag}},
		{"head", "HEAD", path, nil, 200, "", map[string]string{"Content-Length": "10", "ETag": etag, "Cache-Control": DefaultPublicCacheControl}},
		{"missing object", "GET", "/storage/" + pub.ID + "/nope", nil, 404, "", map[string]string{"Cache-Control": "no-store"}},
		{"private bucket unsigned", "GET", "/storage/" + priv.ID + "/secret.txt", nil, 404, "", map[string]string{"Cache-Control": "no-store"}},
		{"unknown bucket", "GET", "/storage/bkt_nope/x", nil, 404, "", map[string]string{"Cache-Control": "no-store"}},
		{"signed", "GET", signed.URL, nil, 200, "hidden", map[string]string{"Cache-Control": "private, max-age=120"}},
		{"signed, altered", "GET", strings.Replace(signed.URL, "secret.txt", "other.txt", 1), nil, 403, "", map[string]string{"Cache-Control": "no-store"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u := c.url
			if strings.HasPrefix(u, "/") {
				u = f.srv.URL + u
			}
			req, err := http.NewRequest(c.method, u, nil)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i+1 < len(c.header); i += 2 {
				req.Header.Set(c.header[i], c.header[i+1])
			}
			r := f.do(req)
			if r.Status != c.status || (c.status < 400 && string(r.Body) != c.body) {
				t.Fatalf("%d %q, want %d %q", r.Status, r.Body, c.status, c.body)
			}
			for h, want := range c.headers {
				if got := r.Header.Get(h); got != want {
					t.Errorf("%s = %q, want %q", h, got, want)
				}
			}
		})
	}
}
