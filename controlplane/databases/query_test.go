package databases_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/databases"
	"github.com/svcplatform/platform/controlplane/plans"
)

// Every kind of value goes in as a parameter and comes back as it was
// stored, whatever the column's declared type; meta says what happened.
func TestValuesRoundTrip(t *testing.T) {
	e := newEnv(t, plans.Pro)
	id := e.create("main")
	a := e.run(e.Owner, id, `CREATE TABLE v(id INTEGER PRIMARY KEY, i INT, r REAL, s TEXT, b BLOB, n, d DATETIME, f BOOLEAN, big INTEGER);
		INSERT INTO v(i, r, s, b, n, d, f, big) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		42, 0.1, "line one\nit's \"quoted\" \u00e9 \u2028", map[string]string{"$blob": base64.StdEncoding.EncodeToString([]byte{0, 1, 254, 255})},
		nil, "2024-01-02 03:04:05", true, json.Number("9007199254740993"))
	if a.Statements != 2 || a.Meta.Changes != 1 || a.Meta.RowsWritten != 1 || a.Meta.LastRowID != 1 || !a.Meta.ChangedDB || a.Meta.SizeAfter <= 0 {
		t.Errorf("meta of the insert %+v, statements %d", a.Meta, a.Statements)
	}
	r := e.Owner.Must(http.StatusOK, "POST", "/api/databases/"+id, sqlBody("SELECT i, r, s, b, n, d, f, big, typeof(d) AS td, 1e308 * 10 AS inf, 2.0 AS two, 1e-7 AS small FROM v"))
	want := `{"i":42,"r":0.1,"s":"line one\nit's \"quoted\" é \u2028","b":{"$blob":"AAH+/w=="},"n":null,"d":"2024-01-02 03:04:05","f":1,"big":9007199254740993,"td":"text","inf":null,"two":2,"small":1e-7}`
	var raw struct {
		Results []json.RawMessage `json:"results"`
		Meta    databases.Meta    `json:"meta"`
	}
	r.JSON(t, &raw)
	if len(raw.Results) != 1 || string(raw.Results[0]) != want {
		t.Fatalf("row\n got %s\nwant %s", raw.Results, want)
	}
	if raw.Meta.RowsRead != 1 || raw.Meta.RowsWritten != 0 || raw.Meta.ChangedDB || raw.Meta.Changes != 0 {
		t.Errorf("meta of the select %+v", raw.Meta)
	}
	// Floats come back to the same bits.
	for _, f := range []float64{math.Pi, 1.0 / 3, 5e-324, math.MaxFloat64, -0.5} {
		a := e.run(e.Owner, id, "SELECT ? AS f", f)
		if got := a.Results[0]["f"].(float64); got != f {
			t.Errorf("float %v came back %v", f, got)
		}
	}
	// Columns of one name: the last value, once.
	if a := e.run(e.Owner, id, "SELECT 1 AS x, 2 AS y, 3 AS x"); len(a.Results[0]) != 2 || a.Results[0]["x"] != float64(3) {
		t.Errorf("duplicate names %v", a.Results)
	}
}

// Several statements run in order: placeholders bind in order across them
// and the answer has the rows of the last one.
func TestSeveralStatements(t *testing.T) {
	e := newEnv(t, plans.Pro)
	id := e.create("main")
	a := e.run(e.Owner, id, "CREATE TABLE t(a); INSERT INTO t VALUES (?), (?); INSERT INTO t VALUES (:x); SELECT a FROM t ORDER BY a", 1, 2, 3)
	if a.Statements != 4 || len(a.Results) != 3 || a.Results[2]["a"] != float64(3) || a.Meta.RowsWritten != 3 || a.Meta.Changes != 3 || a.Meta.RowsRead != 3 {
		t.Fatalf("answer %+v", a)
	}
	a = e.run(e.Owner, id, "UPDATE t SET a = a + 10 RETURNING a")
	if len(a.Results) != 3 || a.Meta.Changes != 3 || a.Meta.RowsRead != 3 {
		t.Fatalf("returning %+v", a)
	}
}

// A batch is one transaction: it answers one entry per statement, and a
// failing statement rolls back all of them and is named in the answer.
func TestBatch(t *testing.T) {
	e := newEnv(t, plans.Pro)
	id := e.create("main")
	var a answer
	e.Owner.Must(http.StatusOK, "POST", "/api/databases/"+id, map[string]any{"batch": []map[string]any{
		{"sql": "CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT NOT NULL)"},
		{"sql": "INSERT INTO t(b) VALUES (?)", "params": []any{"x"}},
		{"sql": "SELECT * FROM t"},
	}}).JSON(t, &a)
	if len(a.Batch) != 3 || a.Batch[1].Meta.LastRowID != 1 || a.Batch[1].Meta.Changes != 1 || len(a.Batch[2].Results) != 1 || a.Batch[2].Results[0]["b"] != "x" {
		t.Fatalf("batch %+v", a)
	}
	// last_row_id: a statement that only reads reports 0, even on the
	// writer right after an insert of the same request; one that writes
	// reports the connection's last inserted rowid; an sql's meta reports
	// the last one that is not 0.
	for _, tc := range []struct {
		name  string
		batch []string
		want  []int64
	}{
		{"select after insert", []string{"INSERT INTO t(b) VALUES ('y')", "SELECT * FROM t"}, []int64{2, 0}},
		{"with select and values after insert", []string{"INSERT INTO t(b) VALUES ('z')", "WITH c AS (SELECT 1) SELECT * FROM c", "VALUES (1)", "EXPLAIN SELECT 1"}, []int64{3, 0, 0, 0}},
		{"update after insert keeps the rowid", []string{"INSERT INTO t(b) VALUES ('w')", "UPDATE t SET b = b WHERE a = 1"}, []int64{4, 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			items := []map[string]any{}
			for _, q := range tc.batch {
				items = append(items, map[string]any{"sql": q})
			}
			var a answer
			e.Owner.Must(http.StatusOK, "POST", "/api/databases/"+id, map[string]any{"batch": items}).JSON(t, &a)
			for i, w := range tc.want {
				if a.Batch[i].Meta.LastRowID != w {
					t.Errorf("statement %d (%s): last_row_id %d, want %d", i, tc.batch[i], a.Batch[i].Meta.LastRowID, w)
				}
			}
		})
	}
	for _, tc := range []struct {
		name, sql string
		want      int64
	}{
		{"insert then select", "INSERT INTO t(b) VALUES ('v'); SELECT * FROM t", 5},
		{"select only", "SELECT * FROM t", 0},
	} {
		t.Run("sql "+tc.name, func(t *testing.T) {
			if a := e.run(e.Owner, id, tc.sql); a.Meta.LastRowID != tc.want {
				t.Errorf("%s: last_row_id %d, want %d", tc.sql, a.Meta.LastRowID, tc.want)
			}
		})
	}
	e.run(e.Owner, id, "DELETE FROM t WHERE a > 1")
	r := e.Owner.Do("POST", "/api/databases/"+id, map[string]any{"batch": []map[string]any{
		{"sql": "INSERT INTO t(b) VALUES ('y')"},
		{"sql": "UPDATE t SET b = 'changed'"},
		{"sql": "INSERT INTO t(b) VALUES (NULL)"},
		{"sql": "INSERT INTO t(b) VALUES ('never')"},
	}})
	body := expect(t, r, http.StatusBadRequest, "sql_error")
	if body["statement"] != float64(2) || !strings.Contains(body["message"].(string), "NOT NULL constraint failed: t.b") {
		t.Fatalf("failure %v", body)
	}
	a = e.run(e.Owner, id, "SELECT b FROM t")
	if len(a.Results) != 1 || a.Results[0]["b"] != "x" {
		t.Fatalf("after the rolled back batch: %v", a.Results)
	}
	// The same holds for several statements in one sql.
	body = expect(t, e.Owner.Do("POST", "/api/databases/"+id, sqlBody("DELETE FROM t; SELEC 1")), http.StatusBadRequest, "sql_error")
	if body["statement"] != float64(1) || body["message"] != `near "SELEC": syntax error` {
		t.Fatalf("failure %v", body)
	}
	if a := e.run(e.Owner, id, "SELECT count(*) AS n FROM t"); a.Results[0]["n"] != float64(1) {
		t.Fatalf("DELETE kept: %v", a.Results)
	}
}

// Each limit is enforced: by SQLite's own sqlite3_limit where SQLite has
// one (its message says so), by the service elsewhere; and what the
// platform does not offer is refused. Nothing refused is stored.
func TestLimitsAndRefusals(t *testing.T) {
	e := newEnv(t, plans.Pro)
	id := e.create("main")
	e.run(e.Owner, id, "CREATE TABLE t(a); CREATE TABLE pair(a, b); CREATE TABLE parent(id INTEGER PRIMARY KEY); CREATE TABLE child(p REFERENCES parent(id))")
	placeholders := func(n int) string { return strings.TrimSuffix(strings.Repeat("?,", n), ",") }
	values := func(n int) []any {
		v := make([]any, n)
		for i := range v {
			v[i] = i
		}
		return v
	}
	cols := func(n int) string {
		c := make([]string, n)
		for i := range c {
			c[i] = fmt.Sprintf("c%d", i)
		}
		return strings.Join(c, ", ")
	}
	batch := func(n int) map[string]any {
		items := make([]map[string]any, n)
		for i := range items {
			items[i] = map[string]any{"sql": "INSERT INTO t VALUES (1)"}
		}
		return map[string]any{"batch": items}
	}
	for _, tc := range []struct {
		name    string
		body    any
		status  int
		code    string
		message string // part of the message
	}{
		{"SQL over 100 KB", sqlBody("SELECT '" + strings.Repeat("x", 100_000) + "'"), 400, "sql_too_long", "at most 100000"},
		{"statement over 100 KB in a batch", map[string]any{"batch": []map[string]any{{"sql": "SELECT '" + strings.Repeat("x", 100_000) + "'"}}}, 400, "sql_too_long", ""},
		{"101 parameters", sqlBody("INSERT INTO t SELECT "+placeholders(101), values(101)...), 400, "too_many_params", "at most 100"},
		{"?101", sqlBody("SELECT ?101"), 400, "sql_error", "variable number must be between ?1 and ?100"},
		{"101 columns", sqlBody("CREATE TABLE wide(" + cols(101) + ")"), 400, "sql_error", "too many columns on wide"},
		{"101 result columns", sqlBody("SELECT " + placeholders(0) + strings.Repeat("1,", 100) + "1"), 400, "sql_error", "too many columns in result set"},
		{"value over 2 MB as a parameter", sqlBody("INSERT INTO t VALUES (?)", strings.Repeat("v", 2_000_001)), 400, "too_big", "string or blob too big"},
		{"blob over 2 MB made in SQL", sqlBody("INSERT INTO t VALUES (zeroblob(2000001))"), 400, "too_big", "string or blob too big"},
		{"row over 2 MB", sqlBody("INSERT INTO pair VALUES (zeroblob(1500000), zeroblob(1500000))"), 400, "too_big", "string or blob too big"},
		{"foreign key", sqlBody("INSERT INTO child VALUES (5)"), 400, "sql_error", "FOREIGN KEY constraint failed"},
		{"batch of 101", batch(101), 400, "batch_too_large", "at most 100"},
		{"101 statements in sql", sqlBody(strings.Repeat("SELECT 1;", 101)), 400, "too_many_statements", ""},
		{"empty batch", map[string]any{"batch": []any{}}, 400, "invalid_request", ""},
		{"two statements in a batch item", map[string]any{"batch": []map[string]any{{"sql": "SELECT 1; SELECT 2"}}}, 400, "one_statement_per_item", ""},
		{"no statement", sqlBody(" -- nothing\n;"), 400, "invalid_request", "no statement"},
		{"sql and batch", map[string]any{"sql": "SELECT 1", "batch": []any{}}, 400, "invalid_request", ""},
		{"neither", map[string]any{}, 400, "invalid_request", ""},
		{"too few params", sqlBody("SELECT ?, ?", 1), 400, "params_mismatch", ""},
		{"too many params", sqlBody("SELECT ?", 1, 2), 400, "params_mismatch", ""},
		{"array param", sqlBody("SELECT ?", []int{1}), 400, "invalid_request", "array"},
		{"bad blob", sqlBody("SELECT ?", map[string]any{"$blob": "%%%"}), 400, "invalid_request", "base64"},
		{"object param", sqlBody("SELECT ?", map[string]any{"a": "b"}), 400, "invalid_request", "$blob"},
		{"integer out of range", sqlBody("SELECT ?", json.Number("99999999999999999999")), 400, "invalid_request", "64-bit"},
		{"syntax error", sqlBody("SELEC 1"), 400, "sql_error", `near "SELEC": syntax error`},
		{"no such table", sqlBody("SELECT * FROM nope"), 400, "sql_error", "no such table: nope"},
		{"BEGIN", sqlBody("BEGIN; INSERT INTO t VALUES (1); COMMIT"), 400, "transaction_statement", ""},
		{"ROLLBACK", sqlBody("ROLLBACK"), 400, "transaction_statement", ""},
		{"ATTACH", sqlBody("ATTACH 'other.db' AS o"), 400, "not_allowed", "ATTACH"},
		{"VACUUM", sqlBody("VACUUM"), 400, "not_allowed", "VACUUM"},
		{"VACUUM INTO", sqlBody("VACUUM INTO '/tmp/copy.db'"), 400, "not_allowed", ""},
		{"journal mode", sqlBody("PRAGMA journal_mode = DELETE"), 400, "not_allowed", "can be read but not set"},
		{"max page count", sqlBody("PRAGMA max_page_count = 1000000000"), 400, "not_allowed", ""},
		{"synchronous", sqlBody("PRAGMA synchronous = OFF"), 400, "not_allowed", "synchronous is not available"},
		{"writable schema", sqlBody("PRAGMA writable_schema = ON"), 400, "not_allowed", ""},
		{"temporary table", sqlBody("CREATE TEMP TABLE x(a)"), 400, "not_allowed", "temporary"},
		{"load_extension", sqlBody("SELECT load_extension('x')"), 400, "not_allowed", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := expect(t, e.Owner.Do("POST", "/api/databases/"+id, tc.body), tc.status, tc.code)
			if !strings.Contains(body["message"].(string), tc.message) {
				t.Fatalf("message %q does not say %q", body["message"], tc.message)
			}
		})
	}
	if a := e.run(e.Owner, id, "SELECT (SELECT count(*) FROM t) + (SELECT count(*) FROM pair) + (SELECT count(*) FROM child) AS n"); a.Results[0]["n"] != float64(0) {
		t.Fatalf("a refused request stored rows: %v", a.Results)
	}
	// What stays allowed: reading pragmas, savepoints, a value of exactly 2 MB.
	e.run(e.Owner, id, "PRAGMA table_info(t)")
	e.run(e.Owner, id, "SELECT * FROM pragma_table_list")
	e.run(e.Owner, id, "PRAGMA user_version = 7")
	e.run(e.Owner, id, "SAVEPOINT s; INSERT INTO t VALUES (1); ROLLBACK TO s; RELEASE s")
	e.run(e.Owner, id, "INSERT INTO t VALUES (?)", strings.Repeat("v", 1_999_990))
	if a := e.run(e.Owner, id, "SELECT count(*) AS n FROM t"); a.Results[0]["n"] != float64(1) {
		t.Fatalf("rows: %v", a.Results)
	}
}

// A database stops growing at its size limit (SQLite's max_page_count).
func TestDatabaseSizeLimit(t *testing.T) {
	e := newEnv(t, plans.Pro)
	lim := e.svc.Limits()
	lim.DatabaseBytes = 256 << 10
	if err := e.svc.SetLimits(lim); err != nil {
		t.Fatal(err)
	}
	id := e.create("main")
	e.run(e.Owner, id, "CREATE TABLE t(a)")
	for i := 0; ; i++ {
		r := e.Owner.Do("POST", "/api/databases/"+id, sqlBody("INSERT INTO t VALUES (randomblob(50000))"))
		if r.Status == http.StatusOK {
			if i > 10 {
				t.Fatal("the database grew past its limit")
			}
			continue
		}
		body := expect(t, r, http.StatusBadRequest, "database_full")
		if body["limit"] != float64(256<<10) {
			t.Errorf("error %v", body)
		}
		break
	}
	// Deleting makes room again.
	e.run(e.Owner, id, "DELETE FROM t")
	e.run(e.Owner, id, "INSERT INTO t VALUES (randomblob(50000))")
}

// A query is interrupted at the time limit with a clear error; what it
// changed is undone and the database goes on working.
func TestQueryTimeout(t *testing.T) {
	e := newEnv(t, plans.Pro)
	lim := e.svc.Limits()
	lim.QueryTimeout = 300 * time.Millisecond
	if err := e.svc.SetLimits(lim); err != nil {
		t.Fatal(err)
	}
	id := e.create("main")
	e.run(e.Owner, id, "CREATE TABLE t(a)")
	forever := "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c) SELECT count(*) FROM c"
	body := expect(t, e.Owner.Do("POST", "/api/databases/"+id, sqlBody("INSERT INTO t VALUES (1); "+forever)), http.StatusBadRequest, "query_timeout")
	if body["statement"] != float64(1) {
		t.Errorf("error %v", body)
	}
	expect(t, e.Owner.Do("POST", "/api/databases/"+id, sqlBody(forever)), http.StatusBadRequest, "query_timeout")
	if a := e.run(e.Owner, id, "SELECT count(*) AS n FROM t"); a.Results[0]["n"] != float64(0) {
		t.Fatalf("the interrupted request's insert was kept: %v", a.Results)
	}
	e.run(e.Owner, id, "INSERT INTO t VALUES (2)")
}
