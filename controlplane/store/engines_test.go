package store_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func seedWorkspace(t *testing.T, db *store.DB, id string) {
	t.Helper()
	if _, err := db.Exec(`INSERT INTO workspaces(id,name,created_at) VALUES(?,'a','t')`, id); err != nil {
		t.Fatal(err)
	}
}

// TestEngines runs the store's contract on SQLite and PostgreSQL.
func TestEngines(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		run  func(t *testing.T, db *store.DB)
	}{
		{"tx rolls back on error", func(t *testing.T, db *store.DB) {
			boom := errors.New("boom")
			err := db.Tx(ctx, func(tx *sql.Tx) error {
				if _, err := tx.Exec(`INSERT INTO workspaces(id,name,created_at) VALUES('w1','a','t')`); err != nil {
					return err
				}
				return boom
			})
			if !errors.Is(err, boom) {
				t.Fatalf("err = %v", err)
			}
			var n int
			db.QueryRow(`SELECT count(*) FROM workspaces`).Scan(&n)
			if n != 0 {
				t.Fatalf("rolled-back row visible: %d", n)
			}
		}},
		{"tx rolls back on panic", func(t *testing.T, db *store.DB) {
			func() {
				defer func() { recover() }()
				db.Tx(ctx, func(tx *sql.Tx) error {
					tx.Exec(`INSERT INTO workspaces(id,name,created_at) VALUES('w1','a','t')`)
					panic("boom")
				})
			}()
			var n int
			db.QueryRow(`SELECT count(*) FROM workspaces`).Scan(&n)
			if n != 0 {
				t.Fatalf("row of a panicking tx visible: %d", n)
			}
		}},
		{"read-then-write transactions never lose an update", func(t *testing.T, db *store.DB) {
			// Each writer reads the count and inserts it: on SQLite writers
			// queue (IMMEDIATE), on PostgreSQL serialization failures rerun fn.
			seedWorkspace(t, db, "w1")
			var wg sync.WaitGroup
			errs := make(chan error, 64)
			for range 6 {
				wg.Go(func() {
					for range 15 {
						err := db.Tx(ctx, func(tx *sql.Tx) error {
							var n int
							if err := tx.QueryRow(`SELECT count(*) FROM usage_events`).Scan(&n); err != nil {
								return err
							}
							_, err := tx.Exec(`INSERT INTO usage_events(workspace_id,metric,quantity,at,day) VALUES('w1','m',?,'t','d')`, n)
							return err
						})
						if err != nil {
							errs <- err
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			// Serial execution: the quantities are exactly 0..89.
			rows, err := db.Query(`SELECT quantity FROM usage_events ORDER BY quantity`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			want := 0.0
			for rows.Next() {
				var q float64
				rows.Scan(&q)
				if q != want {
					t.Fatalf("quantity %v, want %v: two transactions saw the same count", q, want)
				}
				want++
			}
			if want != 90 {
				t.Fatalf("rows = %v, want 90", want)
			}
		}},
		{"unique violation", func(t *testing.T, db *store.DB) {
			seedWorkspace(t, db, "w1")
			_, err := db.Exec(`INSERT INTO workspaces(id,name,created_at) VALUES('w1','a','t')`)
			if !store.IsUniqueViolation(err) || store.IsForeignKeyViolation(err) {
				t.Fatalf("IsUniqueViolation(%v) = false", err)
			}
			if store.IsUniqueViolation(errors.New("x")) || store.IsUniqueViolation(nil) {
				t.Fatal("plain error reported as unique violation")
			}
			wrapped := fmt.Errorf("area: %w", err)
			if !store.IsUniqueViolation(wrapped) {
				t.Fatal("wrapped unique violation not seen")
			}
		}},
		{"foreign key violation", func(t *testing.T, db *store.DB) {
			_, err := db.Exec(`INSERT INTO projects(id,workspace_id,name,slug,created_at,updated_at) VALUES('p','nope','n','s','t','t')`)
			if !store.IsForeignKeyViolation(err) || store.IsUniqueViolation(err) {
				t.Fatalf("IsForeignKeyViolation(%v) = false", err)
			}
		}},
		{"check violation", func(t *testing.T, db *store.DB) {
			seedWorkspace(t, db, "w1")
			_, err := db.Exec(`INSERT INTO members(id,workspace_id,email,role,created_at) VALUES('m','w1','a@b','king','t')`)
			if !store.IsCheckViolation(err) {
				t.Fatalf("IsCheckViolation(%v) = false", err)
			}
		}},
		{"bools are 0 and 1", func(t *testing.T, db *store.DB) {
			seedWorkspace(t, db, "w1")
			if _, err := db.Exec(`INSERT INTO members(id,workspace_id,email,role,email_verified,totp_enabled,created_at) VALUES('m','w1','a@b','owner',?,?,'t')`, true, false); err != nil {
				t.Fatal(err)
			}
			var v, e int
			var vb bool
			if err := db.QueryRow(`SELECT email_verified, totp_enabled, email_verified FROM members WHERE email_verified = ?`, true).Scan(&v, &e, &vb); err != nil {
				t.Fatal(err)
			}
			if v != 1 || e != 0 || !vb {
				t.Fatalf("stored %d %d %v, want 1 0 true", v, e, vb)
			}
		}},
		{"numbers bind to text columns as text", func(t *testing.T, db *store.DB) {
			if _, err := db.Exec(`INSERT INTO workspaces(id,name,created_at) VALUES(?,?,'t')`, "w1", 42); err != nil {
				t.Fatal(err)
			}
			var name string
			if err := db.QueryRow(`SELECT name FROM workspaces WHERE name = ?`, int64(42)).Scan(&name); err != nil || name != "42" {
				t.Fatalf("name = %q, %v", name, err)
			}
		}},
		{"question marks in literals are not placeholders", func(t *testing.T, db *store.DB) {
			if _, err := db.Exec(`INSERT INTO workspaces(id,name,created_at) VALUES(?, 'why?', ?) -- really?`, "w?", "t"); err != nil {
				t.Fatal(err)
			}
			var id, name string
			if err := db.QueryRow(`SELECT id, name FROM workspaces WHERE name = 'why?' AND id = ?`, "w?").Scan(&id, &name); err != nil {
				t.Fatal(err)
			}
			if id != "w?" || name != "why?" {
				t.Fatalf("got %q %q", id, name)
			}
		}},
		{"numbered placeholders", func(t *testing.T, db *store.DB) {
			if _, err := db.Exec(`INSERT INTO workspaces(id,name,created_at) VALUES(?1, ?2, ?1)`, "w1", "n"); err != nil {
				t.Fatal(err)
			}
			var c string
			db.QueryRow(`SELECT created_at FROM workspaces WHERE id = ?`, "w1").Scan(&c)
			if c != "w1" {
				t.Fatalf("created_at = %q", c)
			}
		}},
		{"text sorts in byte order", func(t *testing.T, db *store.DB) {
			for _, id := range []string{"a_b", "aB", "ab", "a-b", "A"} {
				seedWorkspace(t, db, id)
			}
			rows, err := db.Query(`SELECT id FROM workspaces ORDER BY id`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var got []string
			for rows.Next() {
				var s string
				rows.Scan(&s)
				got = append(got, s)
			}
			want := []string{"A", "a-b", "aB", "a_b", "ab"}
			if !slices.Equal(got, want) {
				t.Fatalf("order %q, want %q", got, want)
			}
		}},
		{"querier works in and out of a tx", func(t *testing.T, db *store.DB) {
			count := func(q store.Querier) (n int) {
				q.QueryRowContext(ctx, `SELECT count(*) FROM workspaces WHERE id = ?`, "w1").Scan(&n)
				return n
			}
			err := db.Tx(ctx, func(tx *sql.Tx) error {
				if _, err := tx.ExecContext(ctx, `INSERT INTO workspaces(id,name,created_at) VALUES(?,?,?)`, "w1", "n", "t"); err != nil {
					return err
				}
				if count(tx) != 1 {
					return errors.New("own insert not visible in tx")
				}
				return nil
			})
			if err != nil || count(db) != 1 {
				t.Fatalf("err %v, count %d", err, count(db))
			}
		}},
	}
	for _, e := range pgtest.Engines() {
		t.Run(e.Name, func(t *testing.T) {
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) { c.run(t, e.Open(t)) })
			}
		})
	}
}

func TestDialect(t *testing.T) {
	for _, e := range pgtest.Engines() {
		t.Run(e.Name, func(t *testing.T) {
			if got := e.Open(t).Dialect().String(); got != e.Name {
				t.Fatalf("Dialect() = %s", got)
			}
		})
	}
}

// TestPostgresReplicasMigrateTogether opens one empty database from
// several replicas at once: each migration applies once, all succeed.
func TestPostgresReplicasMigrateTogether(t *testing.T) {
	dsn := pgtest.DSN(t)
	ctx := context.Background()
	const replicas = 4
	dbs := make([]*store.DB, replicas)
	errs := make([]error, replicas)
	var wg sync.WaitGroup
	for i := range replicas {
		wg.Go(func() { dbs[i], errs[i] = store.Open(ctx, dsn) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("replica %d: %v", i, err)
		}
		defer dbs[i].Close()
	}
	names, _ := store.Migrations(store.Postgres)
	var n, distinct int
	dbs[0].QueryRow(`SELECT count(*), count(DISTINCT name) FROM schema_migrations`).Scan(&n, &distinct)
	if n != len(names) || distinct != n {
		t.Fatalf("schema_migrations has %d rows (%d distinct), want %d", n, distinct, len(names))
	}
	var at string
	dbs[0].QueryRow(`SELECT applied_at FROM schema_migrations ORDER BY name LIMIT 1`).Scan(&at)
	if store.ParseTime(at).IsZero() {
		t.Fatalf("applied_at %q is not a stored time", at)
	}
}

func TestPostgresOpenRefusals(t *testing.T) {
	srv := pgtest.Get(t)
	ctx := context.Background()
	name := fmt.Sprintf("icu_%d", os.Getpid())
	cases := []struct {
		name string
		dsn  func(t *testing.T) string
		want error
		hide string
	}{
		{"malformed address", func(*testing.T) string { return "postgres://u:hunter2@[::1" }, store.ErrBadDSN, "hunter2"},
		{"non-C collation", func(t *testing.T) string {
			db := name
			pg, err := sql.Open("pgx", srv.DSNFor("postgres"))
			if err != nil {
				t.Fatal(err)
			}
			defer pg.Close()
			if _, err := pg.Exec(`CREATE DATABASE ` + db + ` TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C'`); err != nil {
				t.Skipf("no ICU in this server: %v", err)
			}
			t.Cleanup(func() {
				pg, _ := sql.Open("pgx", srv.DSNFor("postgres"))
				pg.Exec(`DROP DATABASE ` + db + ` WITH (FORCE)`)
				pg.Close()
			})
			return srv.DSNFor(db)
		}, store.ErrCollation, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db, err := store.Open(ctx, c.dsn(t))
			if err == nil {
				db.Close()
				t.Fatal("opened")
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
			if c.hide != "" && strings.Contains(err.Error(), c.hide) {
				t.Fatalf("error shows the password: %v", err)
			}
		})
	}
}

// TestMigrationsHaveTwins: every SQLite migration has its PostgreSQL twin
// of the same name and the reverse, so both engines reach one schema.
func TestMigrationsHaveTwins(t *testing.T) {
	lite, err := store.Migrations(store.SQLite)
	if err != nil {
		t.Fatal(err)
	}
	pg, err := store.Migrations(store.Postgres)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range lite {
		if !slices.Contains(pg, n) {
			t.Errorf("migrations/%s has no PostgreSQL twin migrations/postgres/%s", n, n)
		}
	}
	for _, n := range pg {
		if !slices.Contains(lite, n) {
			t.Errorf("migrations/postgres/%s has no SQLite twin migrations/%s", n, n)
		}
	}
}

// TestSchemasMatch compares the columns of every table on both engines.
func TestSchemasMatch(t *testing.T) {
	lite, pg := pgtest.OpenSQLite(t), pgtest.Open(t)
	cols := func(db *store.DB, q string) map[string][]string {
		rows, err := db.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string][]string{}
		for rows.Next() {
			var table, col string
			if err := rows.Scan(&table, &col); err != nil {
				t.Fatal(err)
			}
			out[table] = append(out[table], col)
		}
		for _, c := range out {
			slices.Sort(c)
		}
		return out
	}
	a := cols(lite, `SELECT m.name, p.name FROM sqlite_schema m, pragma_table_info(m.name) p
		WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite%'`)
	b := cols(pg, `SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'public'`)
	for table, c := range a {
		if !slices.Equal(c, b[table]) {
			t.Errorf("table %s: sqlite columns %v, postgres %v", table, c, b[table])
		}
	}
	for table := range b {
		if _, ok := a[table]; !ok {
			t.Errorf("table %s only on postgres", table)
		}
	}
}
