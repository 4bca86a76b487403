package store

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

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
