// Package store opens the control plane's metadata database, applies the
// embedded migrations and runs transactions, on SQLite (the embedded
// default) or PostgreSQL (several control-plane replicas sharing one
// server).
//
// SQLite: one file under the data directory, in WAL mode with foreign keys
// on, synchronous=FULL (an acknowledged change survives a crash or power
// loss) and a busy timeout. Write transactions begin IMMEDIATE so two
// writers queue on the busy timeout instead of failing with "database is
// locked" when a read lock cannot be upgraded.
//
// Driver: github.com/mattn/go-sqlite3 (cgo, SQLite amalgamation). Measured on
// this 2-core machine against modernc.org/sqlite v1.61.1 (pure Go) with a
// 10,000-row table (go test -bench . -count 2, /tmp/sqlbench):
//
//	point SELECT by primary key   mattn 3.0 µs/op   modernc 4.2 µs/op
//	single-row INSERT (autocommit) mattn 5.1 µs/op   modernc 6.8 µs/op
//
// mattn is 1.25-1.4x faster and exposes sqlite3_limit, sqlite3_interrupt
// (through context cancellation) and the online backup API that customer
// databases need, so the platform uses one driver for both.
//
// PostgreSQL (Open with a postgres:// address): github.com/jackc/pgx/v5
// through database/sql. Its connections rebind ? placeholders to $n (see
// Rebind), so area code keeps *sql.Tx, Querier and one SQL text for both
// engines; Tx runs SERIALIZABLE and reruns fn on a serialization failure,
// which keeps the read-then-write rules SQLite's single writer gave. The
// schema is migrations/postgres/, the twin of migrations/ file for file.
//
// Each area of the control plane defines its own store interface next to its
// service and implements it on *DB.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mattn/go-sqlite3"
)

// DB is the metadata database.
type DB struct {
	*sql.DB
	// OnTx, when set before use, observes each Tx: its duration and error
	// (the control plane's platform_store_tx_duration_seconds).
	OnTx func(d time.Duration, err error)

	dialect Dialect
	path    string          // SQLite file
	pgcfg   *pgx.ConnConfig // PostgreSQL connection settings

	notifyOnce sync.Once
	notifier   *Notifier
}

// ErrNotFound is returned by area stores when a row does not exist.
var ErrNotFound = errors.New("store: not found")

// Dialect reports the engine behind db.
func (db *DB) Dialect() Dialect { return db.dialect }

// Open opens and migrates the metadata database named by dsn: a
// postgres:// or postgresql:// address selects PostgreSQL, anything else
// is the path of a SQLite file (created if needed).
func Open(ctx context.Context, dsn string) (*DB, error) {
	if IsPostgresDSN(dsn) {
		return openPostgres(ctx, dsn)
	}
	return openSQLite(ctx, dsn)
}

// openSQLite opens (creating if needed) the SQLite database at path and migrates it.
func openSQLite(ctx context.Context, path string) (*DB, error) {
	q := url.Values{}
	q.Set("_journal_mode", "WAL")
	q.Set("_foreign_keys", "on")
	q.Set("_busy_timeout", "10000")
	q.Set("_synchronous", "FULL")
	q.Set("_txlock", "immediate")
	sqldb, err := sql.Open("sqlite3", (&url.URL{Scheme: "file", Opaque: uriPath(path), RawQuery: q.Encode()}).String())
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	sqldb.SetMaxOpenConns(8)
	// As many idle as open: the default of two closes and reopens
	// connections (and reruns their PRAGMAs) under concurrent load.
	sqldb.SetMaxIdleConns(8)
	if err := sqldb.PingContext(ctx); err != nil {
		sqldb.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	db := &DB{DB: sqldb, dialect: SQLite, path: absPath(path)}
	if err := db.migrate(ctx); err != nil {
		sqldb.Close()
		return nil, err
	}
	return db, nil
}

// uriPath escapes the characters that end or change a path inside a
// file: URI (a temp dir named after a subtest "x#01" would otherwise open
// "x"), keeping the slashes SQLite expects.
func uriPath(path string) string {
	return strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
}

// MaxTxAttempts is how many times Tx runs fn on PostgreSQL when the
// transaction fails with a serialization failure or a deadlock.
const MaxTxAttempts = 30

// ErrTxContention is wrapped in Tx's error when every attempt lost to
// concurrent transactions.
var ErrTxContention = errors.New("store: transaction kept conflicting with concurrent ones")

// Tx runs fn in a transaction, committing when fn returns nil and rolling
// back otherwise (also on panic).
//
// On SQLite the transaction begins IMMEDIATE: writers run one at a time.
// On PostgreSQL it is SERIALIZABLE, and when it fails with a serialization
// failure or a deadlock (in fn or at commit) it is rolled back and fn runs
// again, up to MaxTxAttempts times with a short random backoff: fn must
// keep its effects inside tx (or make them repeatable).
func (db *DB) Tx(ctx context.Context, fn func(tx *sql.Tx) error) (err error) {
	if db.OnTx != nil {
		start := time.Now()
		defer func() { db.OnTx(time.Since(start), err) }()
	}
	if db.dialect != Postgres {
		return db.tx(ctx, nil, fn)
	}
	opts := &sql.TxOptions{Isolation: sql.LevelSerializable}
	backoff := time.Millisecond
	for attempt := 1; ; attempt++ {
		err = db.tx(ctx, opts, fn)
		if !IsRetryable(err) {
			return err
		}
		if attempt == MaxTxAttempts {
			return fmt.Errorf("store: %d attempts: %w: %w", attempt, ErrTxContention, err)
		}
		t := time.NewTimer(backoff/2 + rand.N(backoff))
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("store: retry: %w", ctx.Err())
		case <-t.C:
		}
		backoff = min(2*backoff, 50*time.Millisecond)
	}
}

// tx is one attempt of Tx.
func (db *DB) tx(ctx context.Context, opts *sql.TxOptions, fn func(tx *sql.Tx) error) (err error) {
	tx, err := db.BeginTx(ctx, opts)
	if err != nil {
		return fmt.Errorf("store: begin: %w", err)
	}
	defer func() {
		if p := recover(); p != nil {
			tx.Rollback()
			panic(p)
		}
		if err != nil {
			tx.Rollback()
		}
	}()
	if db.dialect != Postgres {
		// Notifications wait for the commit (SQLite delivers them in-process).
		n := db.Notifier()
		n.begin(tx)
		committed := false
		defer func() { n.end(tx, committed) }()
		if err = fn(tx); err != nil {
			return err
		}
		if err = tx.Commit(); err != nil {
			return fmt.Errorf("store: commit: %w", err)
		}
		committed = true
		return nil
	}
	if err = fn(tx); err != nil {
		return err
	}
	if err = tx.Commit(); err != nil {
		return fmt.Errorf("store: commit: %w", err)
	}
	return nil
}

// IsRetryable reports whether err is a PostgreSQL serialization failure
// or deadlock: the transaction lost a race and may simply run again.
func IsRetryable(err error) bool {
	c := pgCode(err)
	return c == pgSerializationFailure || c == pgDeadlockDetected
}

// IsUniqueViolation reports whether err is a UNIQUE or PRIMARY KEY constraint failure.
func IsUniqueViolation(err error) bool {
	var se sqlite3.Error
	if errors.As(err, &se) {
		return se.ExtendedCode == sqlite3.ErrConstraintUnique || se.ExtendedCode == sqlite3.ErrConstraintPrimaryKey
	}
	return pgCode(err) == pgUniqueViolation
}

// IsForeignKeyViolation reports whether err is a FOREIGN KEY constraint failure.
func IsForeignKeyViolation(err error) bool {
	var se sqlite3.Error
	if errors.As(err, &se) {
		return se.ExtendedCode == sqlite3.ErrConstraintForeignKey
	}
	return pgCode(err) == pgForeignKeyViolation
}

// IsCheckViolation reports whether err is a CHECK constraint failure.
func IsCheckViolation(err error) bool {
	var se sqlite3.Error
	if errors.As(err, &se) {
		return se.ExtendedCode == sqlite3.ErrConstraintCheck
	}
	return pgCode(err) == pgCheckViolation
}

// Querier is what both *sql.DB and *sql.Tx offer, so area stores can run the
// same statements inside or outside a transaction.
type Querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

var (
	_ Querier = (*sql.DB)(nil)
	_ Querier = (*sql.Tx)(nil)
)
