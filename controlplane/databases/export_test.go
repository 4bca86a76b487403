package databases_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/svcplatform/platform/controlplane/databases"
	"github.com/svcplatform/platform/controlplane/plans"
)

// richSchema has a table of every storage class with values that are hard
// to write back (text with newlines and quotes, blobs with zero bytes,
// NULLs, floats at the edges), AUTOINCREMENT, WITHOUT ROWID, a rowid table
// with gaps, generated columns, indexes, a view, a trigger, a virtual
// table, statistics and a user version.
const richSchema = `
CREATE TABLE kinds(id INTEGER PRIMARY KEY AUTOINCREMENT, i INTEGER, r REAL, t TEXT, b BLOB, n NUMERIC, d DATETIME, f BOOLEAN, any_);
INSERT INTO kinds(i, r, t, b, n, d, f, any_) VALUES
	(0, 0.1, 'plain', x'', NULL, '2024-01-02 03:04:05', 1, NULL),
	(-9223372036854775808, 1.0/3, 'two
lines and ''quotes'' and "double" and ; and -- not a comment', x'00ff00', 12.50, 1700000000, 0, 5),
	(9223372036854775807, 5e-324, 'unicode é ✓ 𝄞', randomblob(300), '1e3', 'not a date', 2, x'00'),
	(NULL, 1.7976931348623157e308, '', zeroblob(10), -0.0, NULL, NULL, 3.5),
	(42, 1e308 * 10, 'tab	and cr' || char(13) || ' end', NULL, 0x7f, '', -1, 'text'),
	(43, -1e308 * 10, 'backslash \ and $1 and ?', x'5c27', 1e-300, 0.5, 1.5, -2.5),
	(44, 2.5, 'deleted, leaving a gap', NULL, NULL, NULL, NULL, NULL);
DELETE FROM kinds WHERE i = 44;
INSERT INTO kinds(i) VALUES (7);
CREATE TABLE norowid(k TEXT PRIMARY KEY, v) WITHOUT ROWID;
INSERT INTO norowid VALUES ('b', 2), ('a', 1);
CREATE TABLE gaps(a TEXT, b);
INSERT INTO gaps(rowid, a, b) VALUES (5, 'five', 5), (100, 'hundred', 100), (7, 'seven', NULL);
CREATE TABLE gen(a INTEGER, b INTEGER GENERATED ALWAYS AS (a * 2) VIRTUAL, c TEXT GENERATED ALWAYS AS ('x' || a) STORED);
INSERT INTO gen(a) VALUES (1), (2);
CREATE TABLE "odd ""name""; table"("col ""q""" TEXT, [br] INT, ` + "`bt`" + ` INT, rowid_ TEXT);
INSERT INTO "odd ""name""; table" VALUES ('x', 1, 2, 'y');
CREATE INDEX kinds_i ON kinds(i);
CREATE UNIQUE INDEX kinds_t ON kinds(t) WHERE t <> '';
CREATE VIEW kinds_view AS SELECT id, t FROM kinds WHERE i > 0;
CREATE TABLE audit(msg);
CREATE TRIGGER kinds_audit AFTER UPDATE ON kinds BEGIN
	INSERT INTO audit VALUES (CASE WHEN new.i > 0 THEN 'up; more' ELSE 'down' END);
END;
UPDATE kinds SET i = i + 1 WHERE id = 1;
CREATE VIRTUAL TABLE docs USING fts4(title, body);
INSERT INTO docs VALUES ('first', 'the quick brown fox'), ('second', 'jumps over; the lazy dog');
ANALYZE;
PRAGMA user_version = 12;
`

// An export is a .sql dump that any SQLite tool loads back into the same
// database: loaded by the driver, every table holds the same rows; loaded
// by the sqlite3 command line, .sha3sum matches the original's.
func TestExportRoundTrip(t *testing.T) {
	e := newEnv(t, plans.Pro)
	id := e.create("rich")
	e.run(e.Owner, id, richSchema)
	// The start call waits for the export to finish (its completion is a
	// signal, not a poll), however slow the machine.
	lim := e.svc.Limits()
	lim.ExportInline = time.Hour
	if err := e.svc.SetLimits(lim); err != nil {
		t.Fatal(err)
	}

	var a databases.ExportAnswer
	e.Owner.Must(http.StatusOK, "POST", "/api/databases/"+id+"/export", map[string]any{}).JSON(t, &a)
	if a.Status != databases.ExportComplete || a.Bookmark == "" || a.Download != e.Server.URL+"/api/databases/"+id+"/export?bookmark="+a.Bookmark {
		t.Fatalf("export %+v", a)
	}
	r := e.Owner.Must(http.StatusOK, "GET", strings.TrimPrefix(a.Download, e.Server.URL), nil)
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/sql") {
		t.Errorf("content type %q", ct)
	}
	if cd := r.Header.Get("Content-Disposition"); !strings.Contains(cd, `filename="rich-`) {
		t.Errorf("content disposition %q", cd)
	}
	dump := string(r.Body)
	if os.Getenv("SHOW_DUMP") != "" {
		t.Log(dump)
	}
	if !strings.HasPrefix(dump, "PRAGMA foreign_keys=OFF;\nBEGIN TRANSACTION;\n") || !strings.HasSuffix(dump, "COMMIT;\n") {
		t.Fatalf("dump frame:\n%s", dump)
	}

	dir := t.TempDir()
	dumpPath := filepath.Join(dir, "dump.sql")
	if err := os.WriteFile(dumpPath, r.Body, 0o600); err != nil {
		t.Fatal(err)
	}
	original := filepath.Join(e.CP.Config().DataDir, "databases", id+".db")

	// Loaded by the driver, table by table, row by row.
	loaded := filepath.Join(dir, "driver.db")
	db, err := sql.Open("sqlite3", loaded)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(dump); err != nil {
		t.Fatalf("loading the dump: %v", err)
	}
	db.Close()
	if got, want := contents(t, loaded), contents(t, original); got != want {
		t.Fatalf("loaded database differs\n got %s\nwant %s", got, want)
	}

	// Loaded by the sqlite3 command line.
	cli, err := exec.LookPath("sqlite3")
	if err != nil {
		t.Skip("sqlite3 command line not on PATH (apt-get install sqlite3): the .sha3sum comparison did not run")
	}
	fresh := filepath.Join(dir, "cli.db")
	if out, err := exec.Command(cli, fresh, ".read "+dumpPath).CombinedOutput(); err != nil || len(out) > 0 {
		t.Fatalf("sqlite3 .read: %v\n%s", err, out)
	}
	// The schema rows come in another order (tables first, as in the
	// shell's .dump) and on other pages; their content is the same.
	for _, cmd := range []string{".sha3sum", "SELECT type, name, tbl_name, sql FROM sqlite_schema ORDER BY type, name"} {
		want, err := exec.Command(cli, original, cmd).CombinedOutput()
		if err != nil {
			t.Fatalf("%s of the original: %v\n%s", cmd, err, want)
		}
		got, err := exec.Command(cli, fresh, cmd).CombinedOutput()
		if err != nil {
			t.Fatalf("%s of the loaded dump: %v\n%s", cmd, err, got)
		}
		if string(got) != string(want) || len(want) == 0 {
			t.Errorf("%s differs\n got %s\nwant %s", cmd, got, want)
		}
	}
}

// contents renders every table of a database file, rows in order, values
// by quote(): equal renderings are equal data.
func contents(t *testing.T, path string) string {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var tables []string
	rows, err := db.Query(`SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_stat%' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n string
		rows.Scan(&n)
		tables = append(tables, n)
	}
	rows.Close()
	var b strings.Builder
	for _, tbl := range tables {
		q := `"` + strings.ReplaceAll(tbl, `"`, `""`) + `"`
		var cols []string
		crows, err := db.Query(`SELECT name FROM pragma_table_xinfo(?) WHERE hidden <> 1 ORDER BY cid`, tbl)
		if err != nil {
			t.Fatal(err)
		}
		for crows.Next() {
			var c string
			crows.Scan(&c)
			cols = append(cols, "quote(\""+strings.ReplaceAll(c, `"`, `""`)+"\")")
		}
		crows.Close()
		order := ""
		if strings.HasPrefix(tbl, "docs") || tbl == "sqlite_sequence" {
			order = " ORDER BY 1"
		}
		r, err := db.Query("SELECT quote(rowid)||':'||" + strings.Join(cols, "||','||") + " FROM " + q + order)
		if err != nil { // WITHOUT ROWID
			r, err = db.Query("SELECT " + strings.Join(cols, "||','||") + " FROM " + q + order)
		}
		if err != nil {
			t.Fatalf("%s: %v", tbl, err)
		}
		b.WriteString(tbl + ":")
		for r.Next() {
			var s string
			r.Scan(&s)
			b.WriteString(" [" + s + "]")
		}
		r.Close()
		b.WriteString("\n")
	}
	var uv int
	db.QueryRow(`PRAGMA user_version`).Scan(&uv)
	fmt.Fprintf(&b, "user_version %d\n", uv)
	return b.String()
}

// While an export is active the database takes no queries: a query waits
// for it up to the limit, then answers 409 export_active with
// Retry-After; asking again returns the running export.
func TestQueriesDuringExport(t *testing.T) {
	e := newEnv(t, plans.Pro)
	id := e.create("main")
	e.run(e.Owner, id, "CREATE TABLE t(a); INSERT INTO t VALUES (1)")
	lim := e.svc.Limits()
	lim.ExportWait, lim.ExportInline = -1, -1
	if err := e.svc.SetLimits(lim); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	var once sync.Once
	releaseAll := func() { once.Do(func() { close(release) }) }
	t.Cleanup(releaseAll) // before the control plane closes, should the test stop early
	databases.PauseExports(e.svc, release)
	var a databases.ExportAnswer
	e.Owner.Must(http.StatusOK, "POST", "/api/databases/"+id+"/export", nil).JSON(t, &a)
	if a.Status != databases.ExportActive || a.Download != "" {
		t.Fatalf("export %+v", a)
	}
	r := e.Owner.Do("POST", "/api/databases/"+id, sqlBody("SELECT a FROM t"))
	expect(t, r, http.StatusConflict, "export_active")
	if r.Header.Get("Retry-After") != "1" {
		t.Errorf("Retry-After %q", r.Header.Get("Retry-After"))
	}
	var again databases.ExportAnswer
	e.Owner.Must(http.StatusOK, "POST", "/api/databases/"+id+"/export", nil).JSON(t, &again)
	if again.Bookmark != a.Bookmark || again.Status != databases.ExportActive {
		t.Fatalf("second start %+v, want the running %s", again, a.Bookmark)
	}
	expect(t, e.Owner.Do("GET", "/api/databases/"+id+"/export?bookmark="+a.Bookmark, nil), http.StatusConflict, "export_active")
	expect(t, e.Owner.Do("POST", "/api/databases/"+id+"/export", map[string]any{"bookmark": "exp_unknown"}), http.StatusNotFound, "not_found")

	// A query allowed to wait runs once the export completes.
	lim.ExportWait = 30 * time.Second
	if err := e.svc.SetLimits(lim); err != nil {
		t.Fatal(err)
	}
	waiting := make(chan struct{}, 1)
	databases.OnExportWait(e.svc, func() { waiting <- struct{}{} })
	done := make(chan int)
	go func() {
		status, _, _ := post(e.Server.URL, id, sqlBody("INSERT INTO t VALUES (2)"))
		done <- status
	}()
	<-waiting // the query is waiting for the export: now let the export end
	releaseAll()
	if status := <-done; status != http.StatusOK {
		t.Fatalf("waiting query answered %d", status)
	}
	e.Owner.Must(http.StatusOK, "POST", "/api/databases/"+id+"/export", map[string]any{"bookmark": a.Bookmark}).JSON(t, &a)
	if a.Status != databases.ExportComplete {
		t.Fatalf("export %+v", a)
	}
	// The export is of the database as it was when it started.
	dump := string(e.Owner.Must(http.StatusOK, "GET", "/api/databases/"+id+"/export?bookmark="+a.Bookmark, nil).Body)
	if !strings.Contains(dump, "VALUES(1,1);") || strings.Contains(dump, "VALUES(2,2);") {
		t.Fatalf("dump:\n%s", dump)
	}
	if err := e.svc.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}
