package databases_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/cptest"
	"github.com/svcplatform/platform/controlplane/metering"
	"github.com/svcplatform/platform/controlplane/plans"
)

// A workspace sends at most 600 query requests per 5 minutes; a batch
// counts once; the next answers 429 with Retry-After until the window
// moves on (the fake clock moves it).
func TestRateLimit(t *testing.T) {
	e := newEnv(t, plans.Pro)
	id := e.create("main")
	batch := map[string]any{"batch": []map[string]any{{"sql": "SELECT 1"}, {"sql": "SELECT 2"}, {"sql": "SELECT 3"}}}
	e.Owner.Must(http.StatusOK, "POST", "/api/databases/"+id, batch)
	e.Clock.Advance(time.Minute)
	for range 599 {
		e.Owner.Must(http.StatusOK, "POST", "/api/databases/"+id, sqlBody("SELECT 1"))
	}
	r := e.Owner.Do("POST", "/api/databases/"+id, sqlBody("SELECT 1"))
	expect(t, r, http.StatusTooManyRequests, "rate_limited")
	// The oldest request (the batch) leaves the window in 4 minutes.
	if r.Header.Get("Retry-After") != "240" {
		t.Fatalf("Retry-After %q, want 240", r.Header.Get("Retry-After"))
	}
	// Other calls are not query requests.
	e.Owner.Must(http.StatusOK, "GET", "/api/databases/"+id, nil)
	e.Clock.Advance(4*time.Minute - time.Second)
	r = e.Owner.Do("POST", "/api/databases/"+id, sqlBody("SELECT 1"))
	expect(t, r, http.StatusTooManyRequests, "rate_limited")
	if r.Header.Get("Retry-After") != "1" {
		t.Fatalf("Retry-After %q, want 1", r.Header.Get("Retry-After"))
	}
	e.Clock.Advance(time.Second)
	e.Owner.Must(http.StatusOK, "POST", "/api/databases/"+id, sqlBody("SELECT 1"))
	expect(t, e.Owner.Do("POST", "/api/databases/"+id, sqlBody("SELECT 1")), http.StatusTooManyRequests, "rate_limited")
}

// Queries need full access even for SELECT; project keys reach only their
// project's databases; viewers read a database's record but cannot query.
func TestPermissions(t *testing.T) {
	e := newEnv(t, plans.Pro)
	id := e.create("main")
	other := e.CreateProject("other")
	e.run(e.Owner, id, "CREATE TABLE t(a); INSERT INTO t VALUES (1)")
	readOnly := e.NewKey("read_only", "")
	ownKey := e.NewKey("full", e.project)
	otherKey := e.NewKey("full", other)
	viewer := e.Member("viewer@example.com", "viewer")
	developer := e.Member("dev@example.com", "developer")
	query := sqlBody("SELECT a FROM t")
	for _, tc := range []struct {
		name   string
		r      *cptest.Response
		status int
		code   string
	}{
		{"read-only key SELECT", readOnly.Do("POST", "/api/databases/"+id, query), 403, "full_access_required"},
		{"read-only key reads the record", readOnly.Do("GET", "/api/databases/"+id, nil), 200, ""},
		{"read-only key export", readOnly.Do("POST", "/api/databases/"+id+"/export", nil), 403, "read_only_key"},
		{"read-only key delete", readOnly.Do("DELETE", "/api/databases/"+id, nil), 403, "read_only_key"},
		{"other project's key query", otherKey.Do("POST", "/api/databases/"+id, query), 403, "project_key_mismatch"},
		{"other project's key read", otherKey.Do("GET", "/api/databases/"+id, nil), 403, "project_key_mismatch"},
		{"other project's key export", otherKey.Do("POST", "/api/databases/"+id+"/export", nil), 403, "project_key_mismatch"},
		{"other project's key download", otherKey.Do("GET", "/api/databases/"+id+"/export?bookmark=x", nil), 403, "project_key_mismatch"},
		{"other project's key retry", otherKey.Do("PATCH", "/api/databases/"+id, map[string]any{"action": "retry"}), 403, "project_key_mismatch"},
		{"other project's key delete", otherKey.Do("DELETE", "/api/databases/"+id, nil), 403, "project_key_mismatch"},
		{"other project's key create here", otherKey.Do("POST", "/api/projects/"+e.project+"/databases", map[string]any{"name": "x"}), 403, "project_key_mismatch"},
		{"own project's key query", ownKey.Do("POST", "/api/databases/"+id, query), 200, ""},
		{"own project's key read", ownKey.Do("GET", "/api/databases/"+id, nil), 200, ""},
		{"viewer query", viewer.Do("POST", "/api/databases/"+id, query), 403, "insufficient_role"},
		{"viewer reads the record", viewer.Do("GET", "/api/databases/"+id, nil), 200, ""},
		{"viewer creates", viewer.Do("POST", "/api/projects/"+e.project+"/databases", map[string]any{"name": "x"}), 403, "insufficient_role"},
		{"developer query", developer.Do("POST", "/api/databases/"+id, query), 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.r.Status != tc.status || tc.r.ErrorCode() != tc.code {
				t.Fatalf("got %d %s, want %d %q", tc.r.Status, tc.r.Body, tc.status, tc.code)
			}
		})
	}
	// An unknown database is 404 whoever asks.
	expect(t, ownKey.Do("POST", "/api/databases/db_unknown", query), http.StatusNotFound, "not_found")
}

// Queries and rows are metered per workspace and project.
func TestMetered(t *testing.T) {
	e := newEnv(t, plans.Pro)
	id := e.create("main")
	e.run(e.Owner, id, "CREATE TABLE t(a); INSERT INTO t VALUES (1), (2), (3)")
	e.run(e.Owner, id, "SELECT * FROM t")
	if err := e.svc.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	ws := e.CP.Bootstrap.Workspace.ID
	from, to := e.Clock.Now().Add(-time.Hour), e.Clock.Now().Add(time.Hour)
	for metric, want := range map[metering.Metric]float64{metering.DatabaseQueries: 3, metering.RowsRead: 3, metering.RowsWritten: 3} {
		got, err := e.CP.Meter.Total(context.Background(), ws, e.project, metric, from, to)
		if err != nil || got != want {
			t.Errorf("%s = %v (%v), want %v", metric, got, err, want)
		}
	}
}

// A project in teardown_failed takes reads and deletes only: queries that
// write are refused with 409 project_teardown_failed, reads and exports
// run, and the database can be deleted.
func TestTeardownFailedReadsOnly(t *testing.T) {
	e := newEnv(t, plans.Pro)
	id := e.create("main")
	e.run(e.Owner, id, "CREATE TABLE t(a); INSERT INTO t VALUES (1)")
	if _, err := e.CP.DB.Exec(`UPDATE projects SET status = 'teardown_failed' WHERE id = ?`, e.project); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"INSERT INTO t VALUES (2)", "DELETE FROM t", "CREATE TABLE u(a)", "SELECT 1; UPDATE t SET a = 3"} {
		t.Run(q, func(t *testing.T) {
			expect(t, e.Owner.Do("POST", "/api/databases/"+id, sqlBody(q)), http.StatusConflict, "project_teardown_failed")
		})
	}
	if a := e.run(e.Owner, id, "SELECT count(*) AS n FROM t"); a.Results[0]["n"] != float64(1) {
		t.Fatalf("rows %v", a.Results)
	}
	e.Owner.Must(http.StatusOK, "POST", "/api/databases/"+id+"/export", map[string]any{})
	e.Owner.Must(http.StatusOK, "DELETE", "/api/databases/"+id, nil)
}
