package buckets

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

// TestBucketLifecycle: a bucket is created private, listed, made public
// (a public URL appears), its signing key replaced, refused deletion while
// it holds an object, and deleted with force; each change is audited.
func TestBucketLifecycle(t *testing.T) { eachEngine(t, testBucketLifecycle) }

func testBucketLifecycle(t *testing.T, e pgtest.Engine) {
	f := newFixture(t, e, Config{PublicBaseURL: "https://files.example"}, t0)
	b := f.bucket("photos", false)
	if b.Name != "photos" || b.Public || b.PublicURL != nil || b.ProjectID != "prj_a" || !strings.HasPrefix(b.ID, "bkt_") {
		t.Fatalf("created = %+v", b)
	}
	var l BucketList
	f.must(http.StatusOK, "viewer", "GET", "/api/projects/prj_a/buckets", nil).Decode(t, &l)
	if len(l.Buckets) != 1 || l.Buckets[0].ID != b.ID {
		t.Fatalf("list = %+v", l)
	}
	var a BucketAnswer
	f.must(http.StatusOK, "dev", "PATCH", "/api/buckets/"+b.ID, map[string]any{"public": true}).Decode(t, &a)
	if !a.Bucket.Public || a.Bucket.PublicURL == nil || *a.Bucket.PublicURL != "https://files.example/storage/"+b.ID+"/" {
		t.Fatalf("made public = %+v", a.Bucket)
	}
	f.must(http.StatusOK, "dev", "POST", "/api/buckets/"+b.ID+"/signing-key", nil)
	f.put(b.ID, "a.txt", []byte("hello"))
	if got := f.readBucket(b.ID); got.Objects != 1 || got.Bytes != 5 {
		t.Fatalf("after a put: %+v", got)
	}
	if r := f.call("dev", "DELETE", "/api/buckets/"+b.ID, nil); r.Status != http.StatusConflict || r.Code() != "bucket_not_empty" {
		t.Fatalf("delete non-empty: %d %s", r.Status, r.Body)
	}
	f.must(http.StatusOK, "dev", "DELETE", "/api/buckets/"+b.ID+"?force=true", nil)
	f.must(http.StatusNotFound, "viewer", "GET", "/api/buckets/"+b.ID, nil)
	if n := f.count("storage_objects"); n != 0 {
		t.Fatalf("objects left after a forced delete: %d", n)
	}
	entries, _, err := audit.New(f.db, f.clk).List(context.Background(), audit.Query{Workspace: "ws_a", Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, en := range entries {
		actions = append(actions, en.Action)
	}
	for _, want := range []string{"bucket.create", "bucket.update", "bucket.signing_key_rotate", "bucket.delete"} {
		if !strings.Contains(strings.Join(actions, " "), want) {
			t.Errorf("audit lacks %s: %v", want, actions)
		}
	}
}

// TestBucketRefusals: every refused bucket request answers a code that
// says what to fix, and creates nothing.
func TestBucketRefusals(t *testing.T) { eachEngine(t, testBucketRefusals) }

func testBucketRefusals(t *testing.T, e pgtest.Engine) {
	f := newFixture(t, e, Config{BucketsPerProject: 2}, t0)
	f.bucket("taken", false)
	f.must(http.StatusCreated, "dev", "POST", "/api/projects/prj_b/buckets", map[string]any{"name": "full-1"})
	f.must(http.StatusCreated, "dev", "POST", "/api/projects/prj_b/buckets", map[string]any{"name": "full-2"})
	for _, c := range []struct {
		name, key, project string
		body               any
		status             int
		code               string
	}{
		{"name too short", "dev", "prj_a", map[string]any{"name": "ab"}, 400, "invalid_bucket_name"},
		{"name too long", "dev", "prj_a", map[string]any{"name": strings.Repeat("a", 64)}, 400, "invalid_bucket_name"},
		{"upper case", "dev", "prj_a", map[string]any{"name": "Photos"}, 400, "invalid_bucket_name"},
		{"dot", "dev", "prj_a", map[string]any{"name": "my.bucket"}, 400, "invalid_bucket_name"},
		{"leading hyphen", "dev", "prj_a", map[string]any{"name": "-abc"}, 400, "invalid_bucket_name"},
		{"name taken", "dev", "prj_a", map[string]any{"name": "taken"}, 409, "bucket_exists"},
		{"bucket limit", "dev", "prj_b", map[string]any{"name": "full-3"}, 409, "bucket_limit"},
		{"unknown field", "dev", "prj_a", map[string]any{"name": "abc", "acl": "x"}, 400, "unknown_field"},
		{"no body", "dev", "prj_a", nil, 400, "invalid_request"},
		{"project in teardown", "dev", "prj_dead", map[string]any{"name": "abc"}, 409, "project_teardown_failed"},
		{"unknown project", "dev", "prj_zzz", map[string]any{"name": "abc"}, 404, "not_found"},
		{"another workspace", "stranger", "prj_a", map[string]any{"name": "abc"}, 404, "not_found"},
		{"viewer", "viewer", "prj_a", map[string]any{"name": "abc"}, 403, "insufficient_role"},
		{"read-only key", "readonly", "prj_a", map[string]any{"name": "abc"}, 403, "read_only_key"},
		{"other project's key", "otherprj", "prj_a", map[string]any{"name": "abc"}, 403, "project_key_mismatch"},
		{"no credentials", "", "prj_a", map[string]any{"name": "abc"}, 401, "unauthenticated"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := f.call(c.key, "POST", "/api/projects/"+c.project+"/buckets", c.body)
			if r.Status != c.status || r.Code() != c.code {
				t.Fatalf("status %d code %q, want %d %q: %s", r.Status, r.Code(), c.status, c.code, r.Body)
			}
		})
	}
	if n := f.count("storage_buckets"); n != 3 {
		t.Fatalf("buckets after refusals: %d, want 3", n)
	}
	// A bucket of another workspace, or of another project for a project
	// key, is not reachable by id either.
	b := f.bucket("mine", false)
	for _, c := range []struct {
		key, method, path string
		body              any
		status            int
	}{
		{"stranger", "GET", "/api/buckets/" + b.ID, nil, 404},
		{"stranger", "DELETE", "/api/buckets/" + b.ID, nil, 404},
		{"otherprj", "GET", "/api/buckets/" + b.ID, nil, 403},
		{"viewer", "PATCH", "/api/buckets/" + b.ID, map[string]any{"public": true}, 403},
		{"viewer", "DELETE", "/api/buckets/" + b.ID, nil, 403},
		{"dev", "DELETE", "/api/buckets/" + b.ID + "?force=maybe", nil, 400},
		{"dev", "GET", "/api/buckets/bkt_nope", nil, 404},
	} {
		t.Run(c.key+" "+c.method+" "+c.path, func(t *testing.T) {
			if r := f.call(c.key, c.method, c.path, c.body); r.Status != c.status {
				t.Fatalf("status %d, want %d: %s", r.Status, c.status, r.Body)
			}
		})
	}
	if got := f.readBucket(b.ID); got.Public {
		t.Fatal("a refused PATCH changed the bucket")
	}
}

// TestObjectRoundTrip: objects are stored with their headers and metadata,
// read back byte for byte (Range, HEAD) with headers that keep browsers
// from running them, listed, overwritten (counters follow) and deleted;
// keys with empty, "." and ".." segments and any UTF-8 survive.
func TestObjectRoundTrip(t *testing.T) { eachEngine(t, testObjectRoundTrip) }

func testObjectRoundTrip(t *testing.T, e pgtest.Engine) {
	f := newFixture(t, e, Config{}, t0)
	b := f.bucket("docs", false)
	data := []byte("<html><script>alert(1)</script></html>")
	sum := md5.Sum(data)
	for _, key := range []string{"page.html", "a//b/../c", "./x", "ünï cödé?#%&+=", "dir/sub/file.txt", "%2F", strings.Repeat("k", MaxKeyBytes)} {
		t.Run(key[:min(len(key), 20)], func(t *testing.T) {
			o := f.put(b.ID, key, data, "Content-Type", "text/html", "Cache-Control", "max-age=10", "X-Meta-Owner", "Ada",
				"Content-Md5", base64.StdEncoding.EncodeToString(sum[:]))
			if o.Key != key || o.Size != int64(len(data)) || o.ETag != fmt.Sprintf("%x", sum) || o.ContentType != "text/html" || o.Metadata["owner"] != "Ada" {
				t.Fatalf("put = %+v", o)
			}
			r := f.must(http.StatusOK, "dev", "GET", "/api/buckets/"+b.ID+"/objects/"+keyPath(key), nil)
			if !bytes.Equal(r.Body, data) {
				t.Fatalf("read %q", r.Body)
			}
			for h, want := range map[string]string{"Content-Type": "text/html", "Content-Security-Policy": "sandbox", "X-Content-Type-Options": "nosniff",
				"Etag": `"` + o.ETag + `"`, "X-Meta-Owner": "Ada", "Cache-Control": "private, no-store"} {
				if got := r.Header.Get(h); got != want {
					t.Errorf("%s = %q, want %q", h, got, want)
				}
			}
		})
	}
	r := f.must(http.StatusPartialContent, "dev", "GET", "/api/buckets/"+b.ID+"/objects/page.html", nil, "Range", "bytes=6-13")
	if string(r.Body) != "<script>" {
		t.Fatalf("range = %q", r.Body)
	}
	r = f.must(http.StatusOK, "dev", "HEAD", "/api/buckets/"+b.ID+"/objects/page.html", nil)
	if len(r.Body) != 0 || r.Header.Get("Content-Length") != fmt.Sprint(len(data)) {
		t.Fatalf("HEAD: %q, length %q", r.Body, r.Header.Get("Content-Length"))
	}
	f.must(http.StatusNotModified, "dev", "GET", "/api/buckets/"+b.ID+"/objects/page.html", nil, "If-None-Match", r.Header.Get("Etag"))
	if got := f.readBucket(b.ID); got.Objects != 7 || got.Bytes != int64(7*len(data)) {
		t.Fatalf("counters = %d objects %d bytes", got.Objects, got.Bytes)
	}
	// Overwriting replaces the object and moves the byte count by the
	// difference; the default content type applies.
	o := f.put(b.ID, "page.html", []byte("short"))
	if o.ContentType != DefaultContentType || len(o.Metadata) != 0 {
		t.Fatalf("overwritten = %+v", o)
	}
	if got := f.readBucket(b.ID); got.Objects != 7 || got.Bytes != int64(6*len(data)+5) {
		t.Fatalf("counters after overwrite = %d objects %d bytes", got.Objects, got.Bytes)
	}
	var del ObjectDeleted
	f.must(http.StatusOK, "dev", "DELETE", "/api/buckets/"+b.ID+"/objects/page.html", nil).Decode(t, &del)
	if !del.Deleted || del.Key != "page.html" {
		t.Fatalf("deleted = %+v", del)
	}
	f.must(http.StatusNotFound, "dev", "GET", "/api/buckets/"+b.ID+"/objects/page.html", nil)
	f.must(http.StatusNotFound, "dev", "DELETE", "/api/buckets/"+b.ID+"/objects/page.html", nil)
	if got := f.readBucket(b.ID); got.Objects != 6 || got.Bytes != int64(6*len(data)) {
		t.Fatalf("counters after delete = %d objects %d bytes", got.Objects, got.Bytes)
	}
}

// TestObjectRefusals: every refused object request says what to fix and
// stores nothing: no object row, no change of the bucket's counters.
func TestObjectRefusals(t *testing.T) { eachEngine(t, testObjectRefusals) }

func testObjectRefusals(t *testing.T, e pgtest.Engine) {
	f := newFixture(t, e, Config{MaxPutBytes: 1000, BytesPerPlan: map[plans.Name]int64{plans.Hobby: 1500}}, t0)
	b := f.bucket("docs", false)
	other := func() Bucket {
		var a BucketAnswer
		f.must(http.StatusCreated, "dev", "POST", "/api/projects/prj_b/buckets", map[string]any{"name": "blog"}).Decode(t, &a)
		return a.Bucket
	}()
	f.put(b.ID, "existing", bytes.Repeat([]byte("e"), 900))
	before := f.readBucket(b.ID)
	path := "/api/buckets/" + b.ID + "/objects/"
	for _, c := range []struct {
		name, key, method, path string
		body                    any
		header                  []string
		status                  int
		code                    string
	}{
		{"key too long", "dev", "PUT", path + strings.Repeat("k", MaxKeyBytes+1), "x", nil, 400, "invalid_key"},
		{"empty key", "dev", "PUT", path, "x", nil, 400, "invalid_key"},
		{"control character", "dev", "PUT", path + "a%0Ab", "x", nil, 400, "invalid_key"},
		{"invalid UTF-8", "dev", "PUT", path + "a%FFb", "x", nil, 400, "invalid_key"},
		{"metadata not ASCII", "dev", "PUT", path + "k", "x", []string{"X-Meta-Name", "é"}, 400, "invalid_metadata"},
		{"metadata too large", "dev", "PUT", path + "k", "x", []string{"X-Meta-Big", strings.Repeat("v", MaxMetadataBytes)}, 400, "invalid_metadata"},
		{"content type not ASCII", "dev", "PUT", path + "k", "x", []string{"Content-Type", "text/é"}, 400, "invalid_request"},
		{"bad Content-MD5", "dev", "PUT", path + "k", "x", []string{"Content-Md5", "nope"}, 400, "bad_digest"},
		{"Content-MD5 of other bytes", "dev", "PUT", path + "k", "x", []string{"Content-Md5", base64.StdEncoding.EncodeToString(make([]byte, 16))}, 400, "bad_digest"},
		{"over the size limit", "dev", "PUT", path + "k", strings.Repeat("x", 1001), nil, 413, "object_too_large"},
		{"over the size limit, no length", "dev", "PUT", path + "k", io.MultiReader(strings.NewReader(strings.Repeat("x", 1001))), nil, 413, "object_too_large"},
		{"over the plan's bytes", "dev", "PUT", path + "k", strings.Repeat("x", 700), nil, 402, "plan_limit"},
		{"over the plan's bytes, no length", "dev", "PUT", path + "k", io.MultiReader(strings.NewReader(strings.Repeat("x", 700))), nil, 402, "plan_limit"},
		{"viewer writes", "viewer", "PUT", path + "k", "x", nil, 403, "insufficient_role"},
		{"read-only key writes", "readonly", "PUT", path + "k", "x", nil, 403, "read_only_key"},
		{"other project's key", "otherprj", "PUT", path + "k", "x", nil, 403, "project_key_mismatch"},
		{"another workspace", "stranger", "PUT", path + "k", "x", nil, 404, "not_found"},
		{"unknown bucket", "dev", "PUT", "/api/buckets/bkt_nope/objects/k", "x", nil, 404, "not_found"},
		{"viewer reads bytes", "viewer", "GET", path + "existing", nil, nil, 403, "insufficient_role"},
		{"read-only key reads bytes", "readonly", "GET", path + "existing", nil, nil, 403, "full_access_required"},
		{"viewer deletes", "viewer", "DELETE", path + "existing", nil, nil, 403, "insufficient_role"},
		{"bad listing cursor", "viewer", "GET", "/api/buckets/" + b.ID + "/objects?cursor=zz", nil, nil, 400, "invalid_request"},
		{"bad listing limit", "viewer", "GET", "/api/buckets/" + b.ID + "/objects?limit=1001", nil, nil, 400, "invalid_request"},
		{"bad listing prefix", "viewer", "GET", "/api/buckets/" + b.ID + "/objects?prefix=%01", nil, nil, 400, "invalid_request"},
		{"other project's bucket", "prjkey", "PUT", "/api/buckets/" + other.ID + "/objects/k", "x", nil, 403, "project_key_mismatch"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := f.call(c.key, c.method, c.path, c.body, c.header...)
			if r.Status != c.status || r.Code() != c.code {
				t.Fatalf("status %d code %q, want %d %q: %s", r.Status, r.Code(), c.status, c.code, r.Body)
			}
		})
	}
	if n, got := f.count("storage_objects"), f.readBucket(b.ID); n != 1 || got.Bytes != before.Bytes || got.Objects != before.Objects {
		t.Fatalf("after refusals: %d objects, bucket %+v (before %+v)", n, got, before)
	}
	// A project in teardown keeps its objects readable and deletable only.
	f.prj.SetStatus("prj_a", projects.StatusTeardownFailed)
	if r := f.call("dev", "PUT", path+"k", "x"); r.Status != 409 || r.Code() != "project_teardown_failed" {
		t.Fatalf("put in teardown: %d %s", r.Status, r.Body)
	}
	f.must(http.StatusOK, "dev", "GET", path+"existing", nil)
	f.must(http.StatusOK, "dev", "DELETE", path+"existing", nil)
	// A larger plan takes more.
	f.prj.SetStatus("prj_a", projects.StatusActive)
	f.plans.Set("ws_a", plans.Pro)
	f.put(b.ID, "k", bytes.Repeat([]byte("x"), 1000))
}

// TestConcurrentPuts: puts racing on one key and on different keys all
// succeed (PostgreSQL retries the conflicting transactions) and leave the
// bucket's counters equal to what it holds.
func TestConcurrentPuts(t *testing.T) { eachEngine(t, testConcurrentPuts) }

func testConcurrentPuts(t *testing.T, e pgtest.Engine) {
	f := newFixture(t, e, Config{}, t0)
	b := f.bucket("race", false)
	const n = 8
	errs := make(chan error, 2*n)
	for i := range n {
		for _, key := range []string{"same", fmt.Sprintf("own-%d", i)} {
			go func() {
				req, _ := http.NewRequest("PUT", f.srv.URL+"/api/buckets/"+b.ID+"/objects/"+key, strings.NewReader(strings.Repeat("x", i+1)))
				req.Header.Set("Authorization", "Bearer dev")
				resp, err := f.srv.Client().Do(req)
				if err == nil {
					body, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						err = fmt.Errorf("put %s: %d %s", key, resp.StatusCode, body)
					}
				}
				errs <- err
			}()
		}
	}
	for range 2 * n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	var sum int64
	if err := f.db.QueryRowContext(context.Background(), `SELECT coalesce(sum(size), 0) FROM storage_objects WHERE bucket_id = ?`, b.ID).Scan(&sum); err != nil {
		t.Fatal(err)
	}
	if got := f.readBucket(b.ID); got.Objects != n+1 || got.Bytes != sum || f.count("storage_objects") != n+1 {
		t.Fatalf("bucket %+v, %d rows holding %d bytes", got, f.count("storage_objects"), sum)
	}
}
