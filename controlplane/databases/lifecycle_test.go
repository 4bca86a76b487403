package databases_test

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svcplatform/platform/controlplane"
	"github.com/svcplatform/platform/controlplane/cptest"
	"github.com/svcplatform/platform/controlplane/databases"
	"github.com/svcplatform/platform/controlplane/plans"
)

// A created database is a real SQLite file in WAL mode under
// DATA/databases, and the read endpoint shows its endpoint and limits.
func TestCreateAndRead(t *testing.T) {
	e := newEnv(t, plans.Pro)
	var created databases.DatabaseAnswer
	e.Owner.Must(http.StatusCreated, "POST", "/api/projects/"+e.project+"/databases", map[string]any{"name": "main", "engine": "sqlite"}).JSON(t, &created)
	d := created.Database
	if !strings.HasPrefix(d.ID, "db_") || d.Name != "main" || d.Engine != "sqlite" || d.Status != databases.StatusReady || d.ProjectID != e.project {
		t.Fatalf("created %+v", d)
	}
	var read databases.DatabaseAnswer
	e.Owner.Must(http.StatusOK, "GET", "/api/databases/"+d.ID, nil).JSON(t, &read)
	got := read.Database
	if got.Endpoint != e.Server.URL+"/api/databases/"+d.ID {
		t.Errorf("endpoint %q", got.Endpoint)
	}
	l := got.Limits
	if l.DatabaseBytes != 10*plans.GB || l.ValueBytes != 2_000_000 || l.SQLBytes != 100_000 || l.ParamsPerStatement != 100 ||
		l.ColumnsPerTable != 100 || l.StatementsPerBatch != 100 || l.QueryTimeoutSeconds != 30 || l.QueryRequests != 600 ||
		l.WindowSeconds != 300 || l.WorkspaceStorageBytes != 5*plans.GB || l.WorkspaceDatabases != 10 {
		t.Errorf("limits %+v", l)
	}
	path := filepath.Join(e.CP.Config().DataDir, "databases", d.ID+".db")
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database file: %v", err)
	}
	a := e.run(e.Owner, d.ID, "PRAGMA journal_mode")
	if len(a.Results) != 1 || a.Results[0]["journal_mode"] != "wal" {
		t.Errorf("journal mode %v", a.Results)
	}
	a = e.run(e.Owner, d.ID, "PRAGMA auto_vacuum")
	if a.Results[0]["auto_vacuum"] != float64(2) {
		t.Errorf("auto_vacuum %v, want 2 (incremental)", a.Results)
	}
}

func TestCreateRefused(t *testing.T) {
	e := newEnv(t, plans.Pro)
	for _, tc := range []struct {
		name   string
		path   string
		body   any
		status int
		code   string
	}{
		{"postgres", "", map[string]any{"name": "a", "engine": "postgres"}, 501, "engine_unavailable"},
		{"mysql", "", map[string]any{"name": "a", "engine": "mysql"}, 501, "engine_unavailable"},
		{"redis", "", map[string]any{"name": "a", "engine": "Redis"}, 501, "engine_unavailable"},
		{"foo", "", map[string]any{"name": "a", "engine": "foo"}, 501, "engine_unavailable"},
		{"oracle", "", map[string]any{"name": "a", "engine": "oracle"}, 501, "engine_unavailable"},
		{"sqlite3", "", map[string]any{"name": "a", "engine": "sqlite3"}, 501, "engine_unavailable"},
		{"long engine", "", map[string]any{"name": "a", "engine": strings.Repeat("x", 500)}, 501, "engine_unavailable"},
		{"no name", "", map[string]any{"engine": "sqlite"}, 400, "invalid_request"},
		{"blank name", "", map[string]any{"name": "  "}, 400, "invalid_request"},
		{"long name", "", map[string]any{"name": strings.Repeat("n", 101)}, 400, "invalid_request"},
		{"unknown field", "", map[string]any{"name": "a", "size": 5}, 400, "unknown_field"},
		{"unknown project", "/api/projects/prj_missing/databases", map[string]any{"name": "a"}, 404, "not_found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.path
			if path == "" {
				path = "/api/projects/" + e.project + "/databases"
			}
			expect(t, e.Owner.Do("POST", path, tc.body), tc.status, tc.code)
		})
	}
	// Nothing was stored: the pro plan's ten databases are all still free.
	for i := range 10 {
		e.create("db" + string(rune('a'+i)))
	}
	expect(t, e.Owner.Do("POST", "/api/projects/"+e.project+"/databases", map[string]any{"name": "eleventh"}), 402, "plan_limit")
}

// An empty or omitted engine, or sqlite in any case, is sqlite.
func TestCreateEngineDefault(t *testing.T) {
	e := newEnv(t, plans.Pro)
	for i, body := range []map[string]any{
		{"name": "omitted"},
		{"name": "empty", "engine": ""},
		{"name": "upper", "engine": " SQLite "},
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			var out databases.DatabaseAnswer
			e.Owner.Must(http.StatusCreated, "POST", "/api/projects/"+e.project+"/databases", body).JSON(t, &out)
			if out.Database.Engine != databases.EngineSQLite {
				t.Fatalf("engine %q", out.Database.Engine)
			}
		})
	}
}

// Hobby holds one database; a second is refused until the first goes.
func TestPlanDatabaseCount(t *testing.T) {
	e := newEnv(t, plans.Hobby)
	id := e.create("one")
	r := e.Owner.Do("POST", "/api/projects/"+e.project+"/databases", map[string]any{"name": "two"})
	body := expect(t, r, http.StatusPaymentRequired, "plan_limit")
	if body["limit"] != float64(1) || body["current"] != float64(1) || body["required_plan"] != "pro" {
		t.Errorf("error %v", body)
	}
	expect(t, e.Owner.Do("POST", "/api/projects/"+e.project+"/databases", map[string]any{"name": "one"}), 402, "plan_limit")
	e.Owner.Must(http.StatusOK, "DELETE", "/api/databases/"+id, nil)
	e.create("two")
}

// Names are unique among a project's databases.
func TestNameTaken(t *testing.T) {
	e := newEnv(t, plans.Pro)
	e.create("main")
	expect(t, e.Owner.Do("POST", "/api/projects/"+e.project+"/databases", map[string]any{"name": "main"}), 409, "name_taken")
}

// A create whose file cannot be made leaves the database failed with the
// reason; queries answer 409 with it; PATCH retry makes it, without taking
// a second place in the plan.
func TestFailedCreateAndRetry(t *testing.T) {
	e := newEnv(t, plans.Hobby)
	dir := filepath.Join(e.CP.Config().DataDir, "databases")
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, []byte("in the way"), 0o600); err != nil { // the directory cannot be made
		t.Fatal(err)
	}
	r := e.Owner.Do("POST", "/api/projects/"+e.project+"/databases", map[string]any{"name": "main"})
	body := expect(t, r, http.StatusConflict, "create_failed")
	reason, _ := body["reason"].(string)
	if !strings.Contains(reason, "not a directory") || strings.Contains(reason, dir) {
		t.Errorf("reason %q (must say why, without the server's paths)", reason)
	}
	id := body["database"].(map[string]any)["id"].(string)

	var read databases.DatabaseAnswer
	e.Owner.Must(http.StatusOK, "GET", "/api/databases/"+id, nil).JSON(t, &read)
	if read.Database.Status != databases.StatusFailed || read.Database.Error != reason {
		t.Errorf("read %+v", read.Database)
	}
	// The refusal's database has the same absolute endpoint as every
	// other answer's.
	if got := body["database"].(map[string]any)["endpoint"]; got != read.Database.Endpoint || !strings.HasPrefix(read.Database.Endpoint, "http://") {
		t.Errorf("create_failed endpoint %q, GET's %q: want the same absolute URL", got, read.Database.Endpoint)
	}
	q := expect(t, e.Owner.Do("POST", "/api/databases/"+id, sqlBody("SELECT 1")), http.StatusConflict, "database_unavailable")
	if q["reason"] != reason {
		t.Errorf("query refusal %v", q)
	}
	expect(t, e.Owner.Do("POST", "/api/databases/"+id+"/export", nil), http.StatusConflict, "database_unavailable")
	// The failed database holds the hobby plan's one place.
	expect(t, e.Owner.Do("POST", "/api/projects/"+e.project+"/databases", map[string]any{"name": "other"}), 402, "plan_limit")

	retried := expect(t, e.Owner.Do("PATCH", "/api/databases/"+id, map[string]any{"action": "retry"}), http.StatusConflict, "create_failed")
	if got := retried["database"].(map[string]any)["endpoint"]; got != read.Database.Endpoint {
		t.Errorf("retry's create_failed endpoint %q, want %q", got, read.Database.Endpoint)
	}
	expect(t, e.Owner.Do("PATCH", "/api/databases/"+id, map[string]any{"action": "rebuild"}), 400, "invalid_request")

	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	read = databases.DatabaseAnswer{}
	e.Owner.Must(http.StatusOK, "PATCH", "/api/databases/"+id, map[string]any{"action": "retry"}).JSON(t, &read)
	if read.Database.Status != databases.StatusReady || read.Database.Error != "" {
		t.Fatalf("after retry %+v", read.Database)
	}
	e.run(e.Owner, id, "CREATE TABLE t(a); INSERT INTO t VALUES (1)")
	// Retrying a ready database changes nothing.
	e.Owner.Must(http.StatusOK, "PATCH", "/api/databases/"+id, map[string]any{"action": "retry"})
	if a := e.run(e.Owner, id, "SELECT count(*) AS n FROM t"); a.Results[0]["n"] != float64(1) {
		t.Fatalf("data after a second retry: %v", a.Results)
	}
	expect(t, e.Owner.Do("POST", "/api/projects/"+e.project+"/databases", map[string]any{"name": "other"}), 402, "plan_limit")
}

// DELETE is permanent: the file goes and every later call answers 410.
func TestDeleteThenGone(t *testing.T) {
	e := newEnv(t, plans.Pro)
	id := e.create("main")
	e.run(e.Owner, id, "CREATE TABLE t(a); INSERT INTO t VALUES (1)")
	e.Owner.Must(http.StatusOK, "DELETE", "/api/databases/"+id, nil)
	for _, call := range []struct{ method, path string }{
		{"GET", ""}, {"POST", ""}, {"PATCH", ""}, {"DELETE", ""}, {"POST", "/export"}, {"GET", "/export?bookmark=x"},
	} {
		var body any
		switch {
		case call.method == "PATCH":
			body = map[string]any{"action": "retry"}
		case call.method == "POST" && call.path == "":
			body = sqlBody("SELECT 1")
		}
		expect(t, e.Owner.Do(call.method, "/api/databases/"+id+call.path, body), http.StatusGone, "database_deleted")
	}
	path := filepath.Join(e.CP.Config().DataDir, "databases", id+".db")
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("file still there: %v", err)
	}
	expect(t, e.Owner.Do("GET", "/api/databases/db_never", nil), http.StatusNotFound, "not_found")
}

// Deleting a project deletes its databases.
func TestProjectDeleteRemovesDatabases(t *testing.T) {
	e := newEnv(t, plans.Pro)
	id := e.create("main")
	e.run(e.Owner, id, "CREATE TABLE t(a)")
	e.Owner.Must(http.StatusOK, "DELETE", "/api/projects/"+e.project, nil)
	expect(t, e.Owner.Do("GET", "/api/databases/"+id, nil), http.StatusGone, "database_deleted")
	if _, err := os.Stat(filepath.Join(e.CP.Config().DataDir, "databases", id+".db")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("file still there: %v", err)
	}
}

// Creates, deletes and exports are in the audit log.
func TestAudited(t *testing.T) {
	e := newEnv(t, plans.Pro)
	id := e.create("main")
	e.Owner.Must(http.StatusOK, "POST", "/api/databases/"+id+"/export", nil)
	e.Owner.Must(http.StatusOK, "DELETE", "/api/databases/"+id, nil)
	var page struct {
		Entries []struct {
			Action   string `json:"action"`
			TargetID string `json:"targetId"`
		} `json:"entries"`
	}
	e.Owner.Must(http.StatusOK, "GET", "/api/orgs/"+e.CP.Bootstrap.Workspace.ID+"/audit-logs", nil).JSON(t, &page)
	seen := map[string]bool{}
	for _, en := range page.Entries {
		if en.TargetID == id {
			seen[en.Action] = true
		}
	}
	for _, a := range []string{"database.create", "database.export", "database.delete"} {
		if !seen[a] {
			t.Errorf("no audit row %s in %+v", a, page.Entries)
		}
	}
}

// A restart settles what a stopped process left: a create cut short is
// failed (and can be retried), files of a deleted database are removed.
func TestRestartRecovers(t *testing.T) {
	e := newEnv(t, plans.Pro)
	dataDir := e.CP.Config().DataDir
	gone := e.create("gone")
	e.Owner.Must(http.StatusOK, "DELETE", "/api/databases/"+gone, nil)
	leftover := filepath.Join(dataDir, "databases", gone+".db")
	if err := os.WriteFile(leftover, []byte("left behind"), 0o600); err != nil {
		t.Fatal(err)
	}
	cut := e.create("cut")
	if _, err := e.CP.DB.Exec(`UPDATE databases SET status = 'creating' WHERE id = ?`, cut); err != nil {
		t.Fatal(err)
	}

	again := newCP(t, cptest.Options{Plan: plans.Pro, Configure: func(c *controlplane.Config) { c.DataDir = dataDir }})
	if _, err := os.Stat(leftover); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("leftover file of a deleted database: %v", err)
	}
	var read databases.DatabaseAnswer
	again.Owner.Must(http.StatusOK, "GET", "/api/databases/"+cut, nil).JSON(t, &read)
	if read.Database.Status != databases.StatusFailed || !strings.Contains(read.Database.Error, "interrupted") {
		t.Fatalf("cut create after restart: %+v", read.Database)
	}
	again.Owner.Must(http.StatusOK, "PATCH", "/api/databases/"+cut, map[string]any{"action": "retry"})
	again.Owner.Must(http.StatusOK, "POST", "/api/databases/"+cut, sqlBody("CREATE TABLE t(a)"))
}
