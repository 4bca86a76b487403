package memory

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

// TestStoreLifecycle: a store is created (audited), listed, read with its
// limits, counted as the project's memoryStores, deleted (audited) with
// its keys, and its name is free again.
func TestStoreLifecycle(t *testing.T) { eachEngine(t, testStoreLifecycle) }

func testStoreLifecycle(t *testing.T, e pgtest.Engine) {
	f := newFixture(t, e, Config{})
	st := f.create(" sessions ")
	if st.Name != "sessions" || st.ProjectID != "prj_a" || !strings.HasPrefix(st.ID, "mem_") || st.Keys != 0 || st.Bytes != 0 {
		t.Fatalf("created = %+v", st)
	}
	want := StoreLimits{Keys: 10_000, Bytes: 100 * MB, KeyBytes: MaxKeyBytes, ValueBytes: MaxValueBytes, MetadataBytes: MaxMetadataBytes, BulkKeys: MaxBulkKeys}
	if st.Limits != want {
		t.Fatalf("limits = %+v, want %+v", st.Limits, want)
	}
	f.must(http.StatusOK, "dev", "PUT", "/api/memory/"+st.ID+"/keys/a", "1")
	f.must(http.StatusOK, "dev", "PUT", "/api/memory/"+st.ID+"/keys/b", "22")
	if got := f.store(st.ID); got.Keys != 2 || got.Bytes != 1+1+1+2 {
		t.Fatalf("after two puts = %+v", got)
	}
	var l StoreList
	f.must(http.StatusOK, "viewer", "GET", "/api/projects/prj_a/memory", nil).Decode(t, &l)
	if len(l.Stores) != 1 || l.Stores[0].ID != st.ID {
		t.Fatalf("list = %+v", l)
	}
	f.must(http.StatusOK, "viewer", "GET", "/api/projects/prj_b/memory", nil).Decode(t, &l)
	if len(l.Stores) != 0 {
		t.Fatalf("prj_b lists %+v", l)
	}
	if n, err := f.svc.Count(context.Background(), "prj_a"); err != nil || n != 1 || f.svc.Service() != "memoryStores" {
		t.Fatalf("count = %d, %v (%s)", n, err, f.svc.Service())
	}
	if n := f.count("audit_log", "action = ? AND target_id = ? AND project_id = ?", "memory.create", st.ID, "prj_a"); n != 1 {
		t.Fatalf("create audited %d times", n)
	}
	f.must(http.StatusOK, "dev", "DELETE", "/api/memory/"+st.ID, nil)
	if n := f.count("audit_log", "action = ? AND target_id = ?", "memory.delete", st.ID); n != 1 {
		t.Fatalf("delete audited %d times", n)
	}
	f.must(http.StatusNotFound, "viewer", "GET", "/api/memory/"+st.ID, nil)
	f.must(http.StatusNotFound, "viewer", "GET", "/api/memory/"+st.ID+"/keys/a", nil)
	f.must(http.StatusNotFound, "dev", "PUT", "/api/memory/"+st.ID+"/keys/c", "x")
	f.must(http.StatusNotFound, "dev", "DELETE", "/api/memory/"+st.ID, nil)
	if n, m := f.count("memory_keys"), f.count("memory_stores"); n != 0 || m != 0 {
		t.Fatalf("after delete: %d keys, %d stores left", n, m)
	}
	if again := f.create("sessions"); again.ID == st.ID {
		t.Fatal("a new store got the deleted one's id")
	}
}

// TestStoreRefusals: every refused store call, with the code that says
// what to fix; nothing is stored or audited.
func TestStoreRefusals(t *testing.T) { eachEngine(t, testStoreRefusals) }

func testStoreRefusals(t *testing.T, e pgtest.Engine) {
	f := newFixture(t, e, Config{Limits: map[plans.Name]Limits{plans.Hobby: {StoresPerProject: 2, KeysPerStore: 10, BytesPerStore: 1000}}})
	a := f.create("a")
	f.create("b")
	f.must(http.StatusCreated, "owner", "POST", "/api/projects/prj_b/memory", map[string]any{"name": "x"})
	before := f.count("audit_log")
	for _, c := range []struct {
		name, key, method, path string
		body                    any
		status                  int
		code                    string
	}{
		{"no name", "dev", "POST", "/api/projects/prj_a/memory", map[string]any{"name": "  "}, 400, "invalid_name"},
		{"name too long", "dev", "POST", "/api/projects/prj_a/memory", map[string]any{"name": strings.Repeat("n", MaxNameLen+1)}, 400, "invalid_name"},
		{"name with a control character", "dev", "POST", "/api/projects/prj_a/memory", map[string]any{"name": "a\nb"}, 400, "invalid_name"},
		{"unknown field", "dev", "POST", "/api/projects/prj_a/memory", map[string]any{"name": "c", "ttl": 1}, 400, "unknown_field"},
		{"empty body", "dev", "POST", "/api/projects/prj_a/memory", "", 400, "invalid_request"},
		{"plan's stores per project", "dev", "POST", "/api/projects/prj_a/memory", map[string]any{"name": "c"}, 402, "plan_limit"},
		{"name taken in the project", "dev", "POST", "/api/projects/prj_b/memory", map[string]any{"name": "x"}, 409, "name_taken"},
		{"project in teardown", "dev", "POST", "/api/projects/prj_dead/memory", map[string]any{"name": "c"}, 409, "project_teardown_failed"},
		{"unknown project", "dev", "POST", "/api/projects/prj_zzz/memory", map[string]any{"name": "c"}, 404, "not_found"},
		{"another workspace's project", "stranger", "POST", "/api/projects/prj_a/memory", map[string]any{"name": "c"}, 404, "not_found"},
		{"viewer creates", "viewer", "POST", "/api/projects/prj_b/memory", map[string]any{"name": "c"}, 403, "insufficient_role"},
		{"read-only key creates", "readonly", "POST", "/api/projects/prj_b/memory", map[string]any{"name": "c"}, 403, "read_only_key"},
		{"key of another project creates", "otherprj", "POST", "/api/projects/prj_a/memory", map[string]any{"name": "c"}, 403, "project_key_mismatch"},
		{"no credentials", "", "POST", "/api/projects/prj_b/memory", map[string]any{"name": "c"}, 401, "unauthenticated"},
		{"list of another workspace's project", "stranger", "GET", "/api/projects/prj_a/memory", nil, 404, "not_found"},
		{"read another workspace's store", "stranger", "GET", "/api/memory/" + a.ID, nil, 404, "not_found"},
		{"read with a key of another project", "otherprj", "GET", "/api/memory/" + a.ID, nil, 403, "project_key_mismatch"},
		{"read an unknown store", "viewer", "GET", "/api/memory/mem_zzz", nil, 404, "not_found"},
		{"viewer deletes", "viewer", "DELETE", "/api/memory/" + a.ID, nil, 403, "insufficient_role"},
		{"read-only key deletes", "readonly", "DELETE", "/api/memory/" + a.ID, nil, 403, "read_only_key"},
		{"key of another project deletes", "otherprj", "DELETE", "/api/memory/" + a.ID, nil, 403, "project_key_mismatch"},
		{"another workspace deletes", "stranger", "DELETE", "/api/memory/" + a.ID, nil, 404, "not_found"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := f.call(c.key, c.method, c.path, c.body)
			if r.Status != c.status || r.Code() != c.code {
				t.Fatalf("status %d code %q, want %d %q: %s", r.Status, r.Code(), c.status, c.code, r.Body)
			}
			if c.code == "plan_limit" && (r.Field("limit") != float64(2) || r.Field("current") != float64(2) ||
				r.Field("limitName") != "stores_per_project" || r.Field("required_plan") != "pro") {
				t.Fatalf("plan_limit fields: %s", r.Body)
			}
		})
	}
	if n := f.count("memory_stores"); n != 3 {
		t.Fatalf("%d stores after refusals, want 3", n)
	}
	if n := f.count("audit_log"); n != before {
		t.Fatalf("refusals audited: %d rows, want %d", n, before)
	}
	// The cap is per project: another project of the workspace has room.
	f.must(http.StatusCreated, "owner", "POST", "/api/projects/prj_b/memory", map[string]any{"name": "a"})
}
