package databases_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/databases"
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

func (f funder) ChargeStorage(context.Context, string, string, int64) (int64, error) {
	return 0, nil
}

// ledger is a fake billing ledger: a Balance in micro-dollars, charges
// idempotent by reference.
type ledger struct {
	mu      sync.Mutex
	balance int64
	charges map[string]int64
}

func (l *ledger) CanFundStorage(context.Context, string, int64) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.balance > 0, nil
}

func (l *ledger) ChargeStorage(_ context.Context, _, ref string, amount int64) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n, ok := l.charges[ref]; ok {
		return n, nil
	}
	n := min(amount, l.balance)
	l.balance -= n
	l.charges[ref] = n
	return n, nil
}

// On paid plans storage past the allowance is charged daily through the
// funder at 1.00 dollar per GB-month instead of pausing writes; once the
// funder cannot pay, writes that add data are held with usage_paused while
// reads and deletes run. Hobby is never charged.
func TestStorageOverageCharged(t *testing.T) {
	e, id := holdEnv(t, plans.Team)
	l := &ledger{balance: 1_000_000, charges: map[string]int64{}}
	e.svc.SetStorageFunder(l)
	// Past the allowance, the workspace pays: writes run.
	a := e.run(e.Owner, id, "INSERT INTO t VALUES (2, randomblob(500000))")
	over := a.Meta.SizeAfter - 64<<10
	charges, err := e.svc.ChargeStorage(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := databases.DailyStorageCharge(over, e.Clock.Now())
	if len(charges) != 1 || charges[0].OverBytes != over || charges[0].Amount != want || charges[0].Charged != want || l.balance != 1_000_000-want {
		t.Fatalf("charges %+v, want %d for %d bytes; balance %d", charges, want, over, l.balance)
	}
	// Once a day: the same day charges nothing more.
	if _, err := e.svc.ChargeStorage(context.Background()); err != nil || l.balance != 1_000_000-want {
		t.Fatalf("charged twice a day: balance %d, %v", l.balance, err)
	}
	// The next day, with the Balance nearly gone, the charge falls short
	// and writes that add data are held; reads and DELETE run.
	e.Clock.Advance(24 * time.Hour)
	l.mu.Lock()
	l.balance = 1
	l.mu.Unlock()
	charges, err = e.svc.ChargeStorage(context.Background())
	if err != nil || len(charges) != 1 || charges[0].Charged != 1 {
		t.Fatalf("charges %+v, %v", charges, err)
	}
	expect(t, e.Owner.Do("POST", "/api/databases/"+id, sqlBody("INSERT INTO t VALUES (3, 'x')")), http.StatusPaymentRequired, "usage_paused")
	e.run(e.Owner, id, "SELECT count(*) FROM t")
	e.run(e.Owner, id, "DROP TRIGGER keep")
	e.run(e.Owner, id, "DELETE FROM t WHERE a = 2")

	// Hobby is held, never charged.
	h, hid := holdEnv(t, plans.Hobby)
	hl := &ledger{balance: 1_000_000, charges: map[string]int64{}}
	h.svc.SetStorageFunder(hl)
	expect(t, h.Owner.Do("POST", "/api/databases/"+hid, sqlBody("INSERT INTO t VALUES (3, 'x')")), http.StatusPaymentRequired, "usage_limit")
	if charges, err := h.svc.ChargeStorage(context.Background()); err != nil || len(charges) != 0 || hl.balance != 1_000_000 {
		t.Fatalf("hobby charged: %+v %v", charges, err)
	}
}

// Issue 11 item 6: a foreign key ON DELETE SET DEFAULT to a large default
// blob made a DELETE grow the database 15x while INSERTs were held, and
// ANALYZE ran while held. A DELETE that can add data (foreign-key actions
// SET NULL and SET DEFAULT, triggers) is held; ANALYZE and REINDEX are
// held; VACUUM is refused whatever the storage; and whatever the hold lets
// run by its verbs is held by its effect once it grows the database.
func TestStorageHoldByEffect(t *testing.T) {
	e := newEnv(t, plans.Pro)
	lim := e.svc.Limits()
	lim.StorageBytes = 256 << 10
	if err := e.svc.SetLimits(lim); err != nil {
		t.Fatal(err)
	}
	fk := e.create("fk")
	e.run(e.Owner, fk, `CREATE TABLE parent(id INTEGER PRIMARY KEY);
		CREATE TABLE child(id INTEGER PRIMARY KEY, p INTEGER DEFAULT 0 REFERENCES parent(id) ON DELETE SET DEFAULT, pad BLOB DEFAULT (zeroblob(0)));
		CREATE TABLE big(b BLOB DEFAULT (zeroblob(20000)));
		CREATE TABLE setnull(id INTEGER PRIMARY KEY, p REFERENCES parent(id) ON DELETE SET NULL);
		INSERT INTO parent(id) VALUES (0), (1), (2);
		INSERT INTO child(p) SELECT 1 FROM (WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 50) SELECT i FROM c);
		CREATE INDEX child_p ON child(p)`)
	plain := e.create("plain")
	e.run(e.Owner, plain, `CREATE TABLE t(a, b); CREATE INDEX ta ON t(a); CREATE VIRTUAL TABLE docs USING fts4(body);
		INSERT INTO t VALUES (1, randomblob(300000)), (2, 'x')`)

	for _, tc := range []struct {
		name, db, sql string
		held          bool
	}{
		{"delete with SET DEFAULT foreign key", fk, "DELETE FROM parent WHERE id = 1", true},
		{"delete of a table with no foreign key in a database with one", fk, "DELETE FROM big", true},
		{"ANALYZE", plain, "ANALYZE", true},
		{"ANALYZE one table", plain, "analyze t", true},
		{"REINDEX", plain, "REINDEX", true},
		{"with delete on plain database", plain, "WITH x AS (SELECT 2) DELETE FROM t WHERE a IN x", false},
		{"select", plain, "SELECT count(*) FROM t", false},
		{"pragma user_version", plain, "PRAGMA user_version = 3", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.Owner.Do("POST", "/api/databases/"+tc.db, sqlBody(tc.sql))
			if tc.held {
				expect(t, r, http.StatusPaymentRequired, "usage_paused")
			} else if r.Status != http.StatusOK {
				t.Fatalf("status %d: %s", r.Status, r.Body)
			}
		})
	}
	// The child rows still point at parent 1: the DELETE did not run.
	if a := e.run(e.Owner, fk, "SELECT count(*) AS n FROM child WHERE p = 1"); a.Results[0]["n"] != float64(50) {
		t.Fatalf("held delete ran: %v", a.Results)
	}
	// VACUUM is refused whatever the storage (PRAGMA incremental_vacuum runs).
	expect(t, e.Owner.Do("POST", "/api/databases/"+plain, sqlBody("VACUUM")), http.StatusBadRequest, "not_allowed")
	e.run(e.Owner, plain, "PRAGMA incremental_vacuum")
	// Deleting data with no way to add any runs and lifts the hold.
	e.run(e.Owner, plain, "DELETE FROM t WHERE a = 1")
	e.run(e.Owner, plain, "PRAGMA incremental_vacuum")
	e.run(e.Owner, plain, "ANALYZE")
}

// Issue 11 item 7: twelve concurrent large INSERTs just under the
// allowance were nine admitted, leaving the database at 7x the allowance.
// The hold is checked again where writes are serialised, so of the twelve
// at most the one that crosses the line commits after it; the same holds
// for writers spread over two databases of the workspace.
func TestStorageHoldRace(t *testing.T) {
	const allowance, row = 1 << 20, 200_000
	for _, dbs := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d databases", dbs), func(t *testing.T) {
			e := newEnv(t, plans.Pro)
			lim := e.svc.Limits()
			lim.StorageBytes = allowance
			if err := e.svc.SetLimits(lim); err != nil {
				t.Fatal(err)
			}
			ids := make([]string, dbs)
			for i := range ids {
				ids[i] = e.create(fmt.Sprint("db", i))
				e.run(e.Owner, ids[i], "CREATE TABLE t(b)")
			}
			// Fill to just under the allowance: one more row crosses it.
			var used int64
			for used+row < allowance-row {
				a := e.run(e.Owner, ids[0], "INSERT INTO t VALUES (randomblob(?))", row)
				used = a.Meta.SizeAfter
				for _, other := range ids[1:] {
					used += e.run(e.Owner, other, "SELECT 1").Meta.SizeAfter
				}
			}
			start := make(chan struct{})
			statuses := make(chan int, 12)
			var wg sync.WaitGroup
			for i := range 12 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					status, _, _ := post(e.Server.URL, ids[i%dbs], sqlBody("INSERT INTO t VALUES (randomblob(?))", row))
					statuses <- status
				}()
			}
			close(start)
			wg.Wait()
			close(statuses)
			ok, held := 0, 0
			for s := range statuses {
				switch s {
				case http.StatusOK:
					ok++
				case http.StatusPaymentRequired:
					held++
				default:
					t.Errorf("status %d", s)
				}
			}
			var total int64
			for _, id := range ids {
				total += e.run(e.Owner, id, "SELECT 1").Meta.SizeAfter
			}
			// The fill stops with less than two rows of room: one or two
			// rows (pages apart) fit before the line, and one crosses it.
			if ok > 3 || held < 9 || total > allowance+2*row {
				t.Fatalf("%d admitted, %d held; %d bytes used of %d", ok, held, total, allowance)
			}
		})
	}
}
