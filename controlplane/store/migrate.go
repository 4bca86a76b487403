package store

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strings"
)

// migrations holds the schema of both engines: migrations/*.sql for
// SQLite and migrations/postgres/*.sql, the same files by name, for
// PostgreSQL.
//
//go:embed migrations/*.sql migrations/postgres/*.sql
var migrations embed.FS

// migrationLockKey is the pg_advisory_lock key migrations hold, so that
// replicas starting together apply each migration once, one after the other.
const migrationLockKey = 0x706c6174666f726d // "platform"

// Migrations lists the embedded migration names (0001_core.sql, ...) of
// dialect d in the order they apply.
func Migrations(d Dialect) ([]string, error) {
	names, err := fs.Glob(migrations, migrationDir(d)+"/*.sql")
	if err != nil {
		return nil, fmt.Errorf("store: list migrations: %w", err)
	}
	for i, n := range names {
		names[i] = n[strings.LastIndexByte(n, '/')+1:]
	}
	sort.Strings(names)
	return names, nil
}

func migrationDir(d Dialect) string {
	if d == Postgres {
		return "migrations/postgres"
	}
	return "migrations"
}

// migrate applies, in name order and each in its own transaction, the
// embedded migrations not yet recorded in schema_migrations. On PostgreSQL
// it holds a session advisory lock throughout.
func (db *DB) migrate(ctx context.Context) error {
	names, err := Migrations(db.dialect)
	if err != nil {
		return err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("store: migrations: %w", err)
	}
	defer conn.Close()
	table := `CREATE TABLE IF NOT EXISTS schema_migrations (
		name TEXT PRIMARY KEY, applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')))`
	if db.dialect == Postgres {
		if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock(?)`, int64(migrationLockKey)); err != nil {
			return fmt.Errorf("store: migrations lock: %w", err)
		}
		// Unlock even when ctx is done: the connection goes back to the pool.
		defer conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(?)`, int64(migrationLockKey))
		table = `CREATE TABLE IF NOT EXISTS schema_migrations (
		name TEXT PRIMARY KEY, applied_at TEXT NOT NULL DEFAULT to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))`
	}
	if _, err := conn.ExecContext(ctx, table); err != nil {
		return fmt.Errorf("store: migrations table: %w", err)
	}
	for _, name := range names {
		body, err := migrations.ReadFile(migrationDir(db.dialect) + "/" + name)
		if err != nil {
			return fmt.Errorf("store: read %s: %w", name, err)
		}
		if err := applyMigration(ctx, conn, name, string(body)); err != nil {
			return fmt.Errorf("store: migrate %s (%s): %w", name, db.dialect, err)
		}
	}
	return nil
}

// applyMigration runs one migration unless schema_migrations has it.
func applyMigration(ctx context.Context, conn *sql.Conn, name, body string) (err error) {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE name = ?`, name).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return tx.Rollback()
	}
	if _, err := tx.ExecContext(ctx, body); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations(name) VALUES (?)`, name); err != nil {
		return err
	}
	return tx.Commit()
}
