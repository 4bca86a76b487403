package databases_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/svcplatform/platform/controlplane/plans"
)

// holdEnv is a database whose workspace has used up a 64 KB storage
// allowance; it has a table t, a table log and a trigger on t.
func holdEnv(t *testing.T, plan plans.Name) (*env, string) {
	e := newEnv(t, plan)
	lim := e.svc.Limits()
	lim.StorageBytes = 64 << 10
	if err := e.svc.SetLimits(lim); err != nil {
		t.Fatal(err)
	}
	id := e.create("main")
	e.run(e.Owner, id, `CREATE TABLE t(a, b);
		CREATE TABLE log(x);
		CREATE TRIGGER keep AFTER DELETE ON t BEGIN INSERT INTO log VALUES (old.a); END;
		INSERT INTO t VALUES (1, randomblob(100000))`)
	return e, id
}

// Once the allowance is used up, statements that add data are held with
// 402 usage_limit (hobby) while reads, DELETE and DROP run; words in
// strings, quoted names and comments do not count; a batch holding one
// adding statement is held whole; DELETE is held while the database has a
// trigger; and freeing space lifts the hold at the next request.
func TestStorageHoldHobby(t *testing.T) {
	e, id := holdEnv(t, plans.Hobby)
	held := []string{
		"INSERT INTO t VALUES (2, 'x')",
		"insert into t values (2, 'x') on conflict do nothing",
		"REPLACE INTO t VALUES (2, 'x')",
		"UPDATE t SET b = 'smaller'",
		"CREATE TABLE u(a)",
		"CREATE INDEX ta ON t(a)",
		"ALTER TABLE t ADD COLUMN c",
		"WITH n AS (SELECT 5) INSERT INTO t SELECT * , 1 FROM n",
		"/* INSERT */ UPDATE t SET a = 3 -- held",
		"SELECT 1; INSERT INTO t VALUES (2, 'x')",
		"DELETE FROM t", // t has a trigger that inserts
	}
	for _, q := range held {
		t.Run("held/"+q, func(t *testing.T) {
			body := expect(t, e.Owner.Do("POST", "/api/databases/"+id, sqlBody(q)), http.StatusPaymentRequired, "usage_limit")
			if body["allowanceBytes"] != float64(64<<10) || body["usedBytes"].(float64) < 64<<10 {
				t.Fatalf("error %v", body)
			}
		})
	}
	// A batch with one adding statement is held whole: its DROP did not run.
	body := map[string]any{"batch": []map[string]any{{"sql": "DROP TRIGGER keep"}, {"sql": "SELECT 1"}, {"sql": "INSERT INTO log VALUES (1)"}}}
	expect(t, e.Owner.Do("POST", "/api/databases/"+id, body), http.StatusPaymentRequired, "usage_limit")
	if a := e.run(e.Owner, id, "SELECT count(*) AS n FROM sqlite_schema WHERE type = 'trigger'"); a.Results[0]["n"] != float64(1) {
		t.Fatalf("part of a held batch ran: %v", a.Results)
	}
	for _, q := range []string{
		"SELECT a FROM t",
		"SELECT 'INSERT INTO t VALUES (1)' AS s",
		`SELECT "a" AS "update", [b] AS [create] FROM t`,
		"-- UPDATE t SET a = 1\nSELECT count(*) FROM t",
		"PRAGMA table_info(t)",
		"DROP TRIGGER keep",
		"DELETE FROM log",
		"DROP TABLE log",
	} {
		e.run(e.Owner, id, q)
	}
	// Without the trigger DELETE runs, and the space it frees lifts the hold.
	e.run(e.Owner, id, "DELETE FROM t")
	e.run(e.Owner, id, "INSERT INTO t VALUES (2, 'x')")
}

// On a paid plan the hold answers usage_paused: the workspace cannot pay
// for more storage (no storage funder says it can).
func TestStorageHoldPaid(t *testing.T) {
	e, id := holdEnv(t, plans.Pro)
	expect(t, e.Owner.Do("POST", "/api/databases/"+id, sqlBody("INSERT INTO t VALUES (2, 'x')")), http.StatusPaymentRequired, "usage_paused")
	e.run(e.Owner, id, "SELECT count(*) FROM t")
	e.svc.SetStorageFunder(funder(true))
	e.run(e.Owner, id, "INSERT INTO t VALUES (2, 'x')")
}

type funder bool

func (f funder) CanFundStorage(context.Context, string, int64) (bool, error) {
	return bool(f), nil
}
