package store

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

func openTest(t *testing.T) *DB {
	t.Helper()
	db, err := Open(context.Background(), filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestOpenIsIdempotentAndMigrated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.db")
	for i := 0; i < 2; i++ {
		db, err := Open(context.Background(), path)
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		var mode string
		if err := db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
			t.Fatalf("journal_mode = %q, %v; want wal", mode, err)
		}
		var fk int
		if err := db.QueryRow(`PRAGMA foreign_keys`).Scan(&fk); err != nil || fk != 1 {
			t.Fatalf("foreign_keys = %d, %v", fk, err)
		}
		var n int
		db.QueryRow(`SELECT count(*) FROM schema_migrations`).Scan(&n)
		if n == 0 {
			t.Fatal("no migrations recorded")
		}
		db.Close()
	}
}

func TestTxRollsBackOnError(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
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
}

func TestConcurrentWritersNeverSeeLocked(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	if _, err := db.Exec(`INSERT INTO workspaces(id,name,created_at) VALUES('w1','a','t')`); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				err := db.Tx(ctx, func(tx *sql.Tx) error {
					var n int
					if err := tx.QueryRow(`SELECT count(*) FROM usage_events`).Scan(&n); err != nil {
						return err
					}
					_, err := tx.Exec(`INSERT INTO usage_events(workspace_id,metric,quantity,at,day) VALUES('w1','m',?, 't','d')`, n)
					return err
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var n int
	db.QueryRow(`SELECT count(*) FROM usage_events`).Scan(&n)
	if n != 200 {
		t.Fatalf("rows = %d, want 200", n)
	}
}

func TestUniqueViolation(t *testing.T) {
	db := openTest(t)
	db.Exec(`INSERT INTO workspaces(id,name,created_at) VALUES('w1','a','t')`)
	_, err := db.Exec(`INSERT INTO workspaces(id,name,created_at) VALUES('w1','a','t')`)
	if !IsUniqueViolation(err) {
		t.Fatalf("IsUniqueViolation(%v) = false", err)
	}
	if IsUniqueViolation(errors.New("x")) {
		t.Fatal("plain error reported as unique violation")
	}
}

func TestNewID(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 1000; i++ {
		id := NewID("prj")
		if len(id) != 24 || id[:4] != "prj_" || seen[id] {
			t.Fatalf("bad or repeated id %q", id)
		}
		seen[id] = true
	}
}

// TestOpenPathWithURICharacters opens databases whose paths hold the
// characters a file: URI gives meaning to; each is its own file.
func TestOpenPathWithURICharacters(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a#01.db", "a?x=1.db", "a%20b.db", "a.db"} {
		db, err := Open(context.Background(), filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		db.Close()
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Fatalf("%s: not created under its own name: %v", name, err)
		}
	}
}
