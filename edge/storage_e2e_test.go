package edge

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane"
	"github.com/svcplatform/platform/controlplane/buckets"
	"github.com/svcplatform/platform/controlplane/cptest"
	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
)

// storageE2EHost is the storage host of the storage end-to-end tests.
const storageE2EHost = "storage.apps.test"

// newStorageHarness starts a control plane whose object URLs name the
// storage host, publishing the host with SetStorage (as `platform serve`
// does), and an edge serving it.
func newStorageHarness(t *testing.T) *harness {
	t.Helper()
	env := cptest.New(t, cptest.Options{Configure: func(c *controlplane.Config) {
		c.Buckets.PublicBaseURL = "https://" + storageE2EHost
	}})
	if err := env.CP.EdgeSync().SetStorage(context.Background(), storageE2EHost, env.Server.URL); err != nil {
		t.Fatal(err)
	}
	tok, _, err := env.CP.EdgeSync().MintToken(context.Background(), "test edge")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{
		HTTPAddr: "127.0.0.1:0", HTTPSAddr: "127.0.0.1:0", AppsDomain: "apps.test", DataDir: t.TempDir(),
		ControlPlane: env.Server.URL, Token: tok, Now: env.Clock.Now, Logger: quiet, SyncWait: 10 * time.Second,
		Locator: fixedLocator{'U', 'S'},
		// The control plane's own address is a listener of the platform:
		// the storage origin is reached all the same (app origins never).
		OwnListeners: []string{env.Server.Listener.Addr().String()},
	}
	h := &harness{t: t, env: env, cfg: cfg}
	h.start()
	t.Cleanup(h.stop)
	h.synced()
	return h
}

// newBucket creates a bucket in project holding key with body.
func newBucket(t *testing.T, h *harness, project, name string, public bool, key, body string) buckets.Bucket {
	t.Helper()
	var a buckets.BucketAnswer
	h.env.Owner.Must(201, "POST", "/api/projects/"+project+"/buckets", map[string]any{"name": name, "public": public}).JSON(t, &a)
	h.env.Owner.Must(200, "PUT", "/api/buckets/"+a.Bucket.ID+"/objects/"+key, body)
	return a.Bucket
}

// signedPath asks the API for a signed URL of key in bucket, on the
// storage host, and returns its path and query.
func signedPath(t *testing.T, h *harness, bucket, key string) string {
	t.Helper()
	var s buckets.SignedURL
	h.env.Owner.Must(201, "POST", "/api/buckets/"+bucket+"/signed-urls", map[string]any{"key": key}).JSON(t, &s)
	u, err := url.Parse(s.URL)
	if err != nil || u.Scheme != "https" || u.Host != storageE2EHost {
		t.Fatalf("signed URL %q: not on the storage host (%v)", s.URL, err)
	}
	return u.RequestURI()
}

// A public bucket's object is served through the storage host: from the
// control plane once (MISS), then from the edge's cache (HIT), revalidated
// with its ETag; a signed URL of a private bucket goes through to the
// control plane every time and is never stored; the edge itself refuses
// other paths, methods and buckets that are not public; and once the
// bucket is made private through the API its object is 404 at the edge
// from the next snapshot on, while its signed URLs keep working.
func TestStorageThroughEdge(t *testing.T) {
	h := newStorageHarness(t)
	project := h.env.CreateProject("files")
	pub := newBucket(t, h, project, "assets", true, "docs/hello.txt", "hello from a public bucket")
	priv := newBucket(t, h, project, "private", false, "secret.txt", "private bytes")
	h.synced()
	obj := "/storage/" + pub.ID + "/docs/hello.txt"
	if pub.PublicURL == nil || *pub.PublicURL+"docs/hello.txt" != "https://"+storageE2EHost+obj {
		t.Fatalf("publicUrl %v: not on the storage host", pub.PublicURL)
	}

	var etag string
	for i, xcache := range []string{"MISS", "HIT"} {
		r := h.get(storageE2EHost, obj)
		if r.status != 200 || r.body != "hello from a public bucket" || r.header.Get("X-Cache") != xcache {
			t.Fatalf("fetch %d: %d X-Cache %q %q, want 200 %s", i+1, r.status, r.header.Get("X-Cache"), r.body, xcache)
		}
		if r.header.Get("Cache-Control") != buckets.DefaultPublicCacheControl || r.header.Get("Access-Control-Allow-Origin") != "*" ||
			r.header.Get("ETag") == "" || r.header.Get("Last-Modified") == "" {
			t.Fatalf("fetch %d: header %v", i+1, r.header)
		}
		etag = r.header.Get("ETag")
	}
	if r := h.get(storageE2EHost, obj, "If-None-Match: "+etag); r.status != 304 || r.header.Get("X-Cache") != "HIT" {
		t.Fatalf("revalidation: %d X-Cache %q", r.status, r.header.Get("X-Cache"))
	}
	if r := h.get(storageE2EHost, obj+"?v=2"); r.status != 200 || r.header.Get("X-Cache") != "HIT" {
		t.Fatalf("with an unrelated query: %d X-Cache %q", r.status, r.header.Get("X-Cache"))
	}

	signed := signedPath(t, h, priv.ID, "secret.txt")
	for i := range 2 {
		r := h.get(storageE2EHost, signed)
		if r.status != 200 || r.body != "private bytes" || r.header.Get("X-Cache") != "MISS" ||
			!strings.HasPrefix(r.header.Get("Cache-Control"), "private") {
			t.Fatalf("signed fetch %d: %d X-Cache %q Cache-Control %q", i+1, r.status, r.header.Get("X-Cache"), r.header.Get("Cache-Control"))
		}
	}
	if r := h.get(storageE2EHost, strings.Replace(signed, "signature=", "signature=x", 1)); r.status != 403 || r.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("altered signature: %d %q", r.status, r.header.Get("Cache-Control"))
	}

	for _, tc := range []struct {
		name, method, path string
		status             int
	}{
		{"root", "GET", "/", 404},
		{"API", "GET", "/api/buckets/" + pub.ID, 404},
		{"API objects", "GET", "/api/buckets/" + pub.ID + "/objects/docs/hello.txt", 404},
		{"edge protocol", "GET", snapshot.ConfigPath, 404},
		{"bucket without key", "GET", "/storage/" + pub.ID + "/", 404},
		{"private bucket unsigned", "GET", "/storage/" + priv.ID + "/secret.txt", 404},
		{"unknown bucket", "GET", "/storage/bkt_aaaaaaaaaaaaaaaaaaaa/docs/hello.txt", 404},
		{"missing object", "GET", "/storage/" + pub.ID + "/nope.txt", 404},
		{"HEAD of an object", "HEAD", obj, 200},
		{"POST to an object", "POST", obj, 405},
		{"PUT to an object", "PUT", obj, 405},
		{"DELETE of an object", "DELETE", obj, 405},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.do(tc.method, storageE2EHost, tc.path, strings.NewReader("x"))
			if r.status != tc.status {
				t.Fatalf("%s %s: %d, want %d: %s", tc.method, tc.path, r.status, tc.status, r.body)
			}
			if tc.status != 200 && r.header.Get("Cache-Control") != "no-store" {
				t.Fatalf("%s %s: Cache-Control %q", tc.method, tc.path, r.header.Get("Cache-Control"))
			}
		})
	}
	// The refused PUT and DELETE changed nothing.
	if r := h.get(storageE2EHost, obj); r.status != 200 || r.body != "hello from a public bucket" {
		t.Fatalf("after refused writes: %d %q", r.status, r.body)
	}

	h.env.Owner.Must(200, "PATCH", "/api/buckets/"+pub.ID, map[string]any{"public": false})
	h.synced()
	if r := h.get(storageE2EHost, obj); r.status != 404 || r.header.Get("X-Cache") != "" || r.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("bucket made private: %d X-Cache %q Cache-Control %q", r.status, r.header.Get("X-Cache"), r.header.Get("Cache-Control"))
	}
	if r := h.get(storageE2EHost, signedPath(t, h, pub.ID, "docs/hello.txt")); r.status != 200 || r.body != "hello from a public bucket" {
		t.Fatalf("signed URL of the bucket made private: %d %q", r.status, r.body)
	}
	// Public again, then deleted: gone at the edge with the next snapshot.
	h.env.Owner.Must(200, "PATCH", "/api/buckets/"+pub.ID, map[string]any{"public": true})
	h.synced()
	if r := h.get(storageE2EHost, obj); r.status != 200 {
		t.Fatalf("public again: %d", r.status)
	}
	h.env.Owner.Must(200, "DELETE", "/api/buckets/"+pub.ID+"?force=true", nil)
	h.synced()
	if r := h.get(storageE2EHost, obj); r.status != 404 || r.header.Get("X-Cache") != "" {
		t.Fatalf("bucket deleted: %d X-Cache %q", r.status, r.header.Get("X-Cache"))
	}
}
