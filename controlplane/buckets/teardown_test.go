package buckets

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/blobs"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

// TestAccessKeys: a key's secret is shown once, kept sealed (not in the
// clear in the database), never listed; refusals say what to fix; making
// and revoking keys are audited as key events (admins' eyes only).
func TestAccessKeys(t *testing.T) { eachEngine(t, testAccessKeys) }

func testAccessKeys(t *testing.T, e pgtest.Engine) {
	f := newFixture(t, e, Config{KeysPerProject: 2}, t0)
	var ck CreatedKey
	f.must(http.StatusCreated, "dev", "POST", "/api/projects/prj_a/storage-keys",
		map[string]any{"name": "backup job", "readOnly": true, "buckets": []string{"photos", "docs", "photos"}}).Decode(t, &ck)
	if len(ck.Key.ID) != 20 || !strings.HasPrefix(ck.Key.ID, "SVC") || len(ck.SecretAccessKey) != 40 || !ck.Key.ReadOnly ||
		strings.Join(ck.Key.Buckets, ",") != "docs,photos" || ck.Region != DefaultRegion {
		t.Fatalf("created = %+v", ck)
	}
	var sealed []byte
	if err := f.db.QueryRowContext(context.Background(), `SELECT secret_sealed FROM storage_access_keys WHERE id = ?`, ck.Key.ID).Scan(&sealed); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte(ck.SecretAccessKey)) {
		t.Fatal("the secret is stored in the clear")
	}
	r := f.must(http.StatusOK, "viewer", "GET", "/api/projects/prj_a/storage-keys", nil)
	if strings.Contains(string(r.Body), ck.SecretAccessKey) {
		t.Fatal("the listing shows the secret")
	}
	var l KeyList
	r.Decode(t, &l)
	if len(l.Keys) != 1 || l.Keys[0].ID != ck.Key.ID || l.Keys[0].LastUsedAt != nil {
		t.Fatalf("list = %+v", l)
	}
	f.must(http.StatusCreated, "dev", "POST", "/api/projects/prj_a/storage-keys", map[string]any{"name": "second"})
	for _, c := range []struct {
		name, key, method, path string
		body                    any
		status                  int
		code                    string
	}{
		{"key limit", "dev", "POST", "/api/projects/prj_a/storage-keys", map[string]any{"name": "third"}, 409, "key_limit"},
		{"no name", "dev", "POST", "/api/projects/prj_b/storage-keys", map[string]any{"name": " "}, 400, "invalid_request"},
		{"bad bucket name", "dev", "POST", "/api/projects/prj_b/storage-keys", map[string]any{"name": "x", "buckets": []string{"No"}}, 400, "invalid_bucket_name"},
		{"viewer makes one", "viewer", "POST", "/api/projects/prj_b/storage-keys", map[string]any{"name": "x"}, 403, "insufficient_role"},
		{"read-only key makes one", "readonly", "POST", "/api/projects/prj_b/storage-keys", map[string]any{"name": "x"}, 403, "read_only_key"},
		{"project in teardown", "dev", "POST", "/api/projects/prj_dead/storage-keys", map[string]any{"name": "x"}, 409, "project_teardown_failed"},
		{"another workspace revokes", "stranger", "DELETE", "/api/storage-keys/" + ck.Key.ID, nil, 404, "not_found"},
		{"other project's key revokes", "otherprj", "DELETE", "/api/storage-keys/" + ck.Key.ID, nil, 403, "project_key_mismatch"},
		{"viewer revokes", "viewer", "DELETE", "/api/storage-keys/" + ck.Key.ID, nil, 403, "insufficient_role"},
		{"unknown key", "dev", "DELETE", "/api/storage-keys/SVCNOPE", nil, 404, "not_found"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := f.call(c.key, c.method, c.path, c.body)
			if r.Status != c.status || r.Code() != c.code {
				t.Fatalf("status %d code %q, want %d %q: %s", r.Status, r.Code(), c.status, c.code, r.Body)
			}
		})
	}
	f.must(http.StatusOK, "dev", "DELETE", "/api/storage-keys/"+ck.Key.ID, nil)
	entries, _, err := audit.New(f.db, f.clk).List(context.Background(), audit.Query{Workspace: "ws_a", Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]string{}
	for _, en := range entries {
		found[en.Action] = en.Category
		if strings.Contains(en.Summary, ck.SecretAccessKey) {
			t.Fatalf("the audit log holds the secret: %s", en.Summary)
		}
	}
	if found["bucket.access_key_create"] != audit.CategoryKey || found["bucket.access_key_delete"] != audit.CategoryKey {
		t.Fatalf("audit = %v", found)
	}
}

// TestTeardownAndBlobCleanup: the blob cleanup keeps every blob an object,
// a multipart object's part or an unfinished upload's part names (the area
// is a blobs.RefSource); a project's deletion removes its buckets, objects,
// uploads and keys, after which the cleanup frees their blobs; another
// project's stay.
func TestTeardownAndBlobCleanup(t *testing.T) { eachEngine(t, testTeardownAndBlobCleanup) }

func testTeardownAndBlobCleanup(t *testing.T, e pgtest.Engine) {
	f := newFixture(t, e, Config{MinPartBytes: 1}, t0)
	collect := func() blobs.GCStats {
		t.Helper()
		// Every blob counts as old: only references keep them.
		st, err := blobs.Collect(context.Background(), f.blobs, []blobs.RefSource{f.svc}, time.Now().Add(48*time.Hour), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	b := f.bucket("data", false)
	f.put(b.ID, "single", []byte("one blob"))
	var ua UploadAnswer
	f.must(http.StatusCreated, "dev", "POST", "/api/buckets/"+b.ID+"/uploads", map[string]any{"key": "multi"}).Decode(t, &ua)
	var p1, p2 PartAnswer
	f.must(http.StatusOK, "dev", "PUT", partPath(b.ID, ua.Upload.ID, 1), "part one").Decode(t, &p1)
	f.must(http.StatusOK, "dev", "PUT", partPath(b.ID, ua.Upload.ID, 2), "part two").Decode(t, &p2)
	f.must(http.StatusOK, "dev", "POST", "/api/buckets/"+b.ID+"/uploads/"+ua.Upload.ID+"/complete",
		map[string]any{"parts": []CompletePart{{1, p1.Part.ETag}, {2, p2.Part.ETag}}})
	f.must(http.StatusCreated, "dev", "POST", "/api/buckets/"+b.ID+"/uploads", map[string]any{"key": "pending"}).Decode(t, &ua)
	f.must(http.StatusOK, "dev", "PUT", partPath(b.ID, ua.Upload.ID, 1), "pending part")
	f.must(http.StatusCreated, "dev", "POST", "/api/projects/prj_a/storage-keys", map[string]any{"name": "k"})
	var other BucketAnswer
	f.must(http.StatusCreated, "dev", "POST", "/api/projects/prj_b/buckets", map[string]any{"name": "kept"}).Decode(t, &other)
	f.put(other.Bucket.ID, "x", []byte("another project's"))
	if n := f.blobCount(); n != 5 {
		t.Fatalf("blobs = %d, want 5", n)
	}
	if st := collect(); st.Deleted != 0 || st.Referenced != 5 {
		t.Fatalf("cleanup with every blob named: %+v", st)
	}
	if err := f.svc.Remove(context.Background(), "prj_a"); err != nil {
		t.Fatal(err)
	}
	if err := f.svc.Remove(context.Background(), "prj_a"); err != nil {
		t.Fatalf("a second removal: %v", err)
	}
	for _, table := range []string{"storage_object_parts", "storage_uploads", "storage_upload_parts"} {
		if n := f.count(table); n != 0 {
			t.Errorf("%s: %d rows left", table, n)
		}
	}
	if nb, no, nk := f.count("storage_buckets"), f.count("storage_objects"), f.count("storage_access_keys"); nb != 1 || no != 1 || nk != 0 {
		t.Fatalf("left: %d buckets, %d objects, %d keys; want prj_b's bucket and object only", nb, no, nk)
	}
	if st := collect(); st.Deleted != 4 || f.blobCount() != 1 {
		t.Fatalf("cleanup after the teardown: %+v, %d blobs left", st, f.blobCount())
	}
	f.must(http.StatusOK, "dev", "GET", "/api/buckets/"+other.Bucket.ID+"/objects/x", nil)
}

// TestSizesAndCounts: the usage sizer reports each bucket's bytes
// (objects and unfinished uploads) and objects; the counter counts a
// project's buckets.
func TestSizesAndCounts(t *testing.T) {
	f := newFixture(t, pgtest.Engines()[0], Config{}, t0)
	b := f.bucket("one", false)
	f.bucket("two", false)
	f.put(b.ID, "a", []byte("12345"))
	f.put(b.ID, "b", []byte("678"))
	var ua UploadAnswer
	f.must(http.StatusCreated, "dev", "POST", "/api/buckets/"+b.ID+"/uploads", map[string]any{"key": "c"}).Decode(t, &ua)
	f.must(http.StatusOK, "dev", "PUT", partPath(b.ID, ua.Upload.ID, 1), "90")
	sizes, err := f.svc.Sizes(context.Background(), "ws_a")
	if err != nil {
		t.Fatal(err)
	}
	if len(sizes) != 2 || sizes[0].Resource != "bucket one" || sizes[0].Bytes != 10 || sizes[0].Objects != 2 || sizes[0].Project != "prj_a" ||
		sizes[1].Bytes != 0 {
		t.Fatalf("sizes = %+v", sizes)
	}
	if n, err := f.svc.Count(context.Background(), "prj_a"); err != nil || n != 2 || f.svc.Service() != "buckets" {
		t.Fatalf("count = %d, %v", n, err)
	}
	if other, _ := f.svc.Sizes(context.Background(), "ws_b"); len(other) != 0 {
		t.Fatalf("another workspace's sizes: %+v", other)
	}
}

// TestAttention: the attention list warns at 80% of the plan's bytes and
// is critical at the cap; nothing below.
func TestAttention(t *testing.T) {
	f := newFixture(t, pgtest.Engines()[0], Config{BytesPerPlan: map[plans.Name]int64{plans.Hobby: 100}}, t0)
	b := f.bucket("one", false)
	for _, c := range []struct {
		size     int
		severity string
	}{{0, ""}, {79, ""}, {80, "warning"}, {100, "critical"}} {
		if c.size > 0 {
			f.put(b.ID, "k", bytes.Repeat([]byte("x"), c.size))
		}
		items, err := f.svc.Attention(context.Background(), "ws_a")
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if len(items) == 1 {
			got = string(items[0].Severity)
		}
		if len(items) > 1 || got != c.severity {
			t.Fatalf("at %d bytes: %+v, want %q", c.size, items, c.severity)
		}
	}
}
