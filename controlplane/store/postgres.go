package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// IsPostgresDSN reports whether dsn names a PostgreSQL server
// (postgres://... or postgresql://...) rather than a SQLite file.
func IsPostgresDSN(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// openPostgres opens a pool of pgx connections whose statements are
// rebound from ? to $n, and migrates the database.
func openPostgres(ctx context.Context, dsn string) (*DB, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		// The parse error quotes the DSN, password included: say only where.
		return nil, fmt.Errorf("store: open postgres: %w", ErrBadDSN)
	}
	where := fmt.Sprintf("postgres %s:%d/%s", cfg.Host, cfg.Port, cfg.Database)
	sqldb := sql.OpenDB(rebindConnector{stdlib.GetConnector(*cfg, stdlib.OptionAfterConnect(afterConnect))})
	sqldb.SetMaxOpenConns(16)
	sqldb.SetMaxIdleConns(16)
	if err := sqldb.PingContext(ctx); err != nil {
		sqldb.Close()
		return nil, fmt.Errorf("store: open %s: %w", where, err)
	}
	if err := checkCollation(ctx, sqldb); err != nil {
		sqldb.Close()
		return nil, fmt.Errorf("store: open %s: %w", where, err)
	}
	db := &DB{DB: sqldb, dialect: Postgres, pgcfg: cfg}
	if err := db.migrate(ctx); err != nil {
		sqldb.Close()
		return nil, err
	}
	return db, nil
}

// ErrCollation is returned by Open for a PostgreSQL database whose text
// order is not byte order: ids, times stored as text and keyset pages
// must sort as they do on SQLite.
var ErrCollation = errors.New("database collation is not C (create it with: CREATE DATABASE name TEMPLATE template0 LOCALE 'C')")

// checkCollation refuses a database whose default collation is not
// byte order (C or POSIX from libc).
func checkCollation(ctx context.Context, db *sql.DB) error {
	var collate string
	var version int
	err := db.QueryRowContext(ctx, `SELECT datcollate, current_setting('server_version_num')::int FROM pg_database WHERE datname = current_database()`).
		Scan(&collate, &version)
	if err != nil {
		return fmt.Errorf("read collation: %w", err)
	}
	provider := "c"
	if version >= 150000 { // ICU as a database default came with PostgreSQL 15
		if err := db.QueryRowContext(ctx, `SELECT datlocprovider::text FROM pg_database WHERE datname = current_database()`).Scan(&provider); err != nil {
			return fmt.Errorf("read collation: %w", err)
		}
	}
	switch {
	case provider != "c":
		return fmt.Errorf("%w: locale provider %q", ErrCollation, provider)
	case collate == "C", collate == "POSIX", strings.EqualFold(collate, "C.UTF-8"), strings.EqualFold(collate, "C.utf8"):
		return nil
	}
	return fmt.Errorf("%w: %s", ErrCollation, collate)
}

// ErrBadDSN is returned by Open for a postgres:// address it cannot parse.
var ErrBadDSN = errors.New("malformed postgres address (want postgres://user:password@host:port/database?sslmode=...)")

// rebindConnector hands out connections that rebind placeholders.
type rebindConnector struct{ driver.Connector }

func (c rebindConnector) Connect(ctx context.Context) (driver.Conn, error) {
	cn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &rebindConn{cn.(*stdlib.Conn)}, nil
}

// rebindConn is a pgx connection that rewrites each statement with Rebind
// and passes Go bools as 0/1, the integer booleans both schemas use.
type rebindConn struct{ c *stdlib.Conn }

var (
	_ driver.Conn               = (*rebindConn)(nil)
	_ driver.ConnPrepareContext = (*rebindConn)(nil)
	_ driver.ConnBeginTx        = (*rebindConn)(nil)
	_ driver.ExecerContext      = (*rebindConn)(nil)
	_ driver.QueryerContext     = (*rebindConn)(nil)
	_ driver.Pinger             = (*rebindConn)(nil)
	_ driver.NamedValueChecker  = (*rebindConn)(nil)
	_ driver.SessionResetter    = (*rebindConn)(nil)
)

func (r *rebindConn) Prepare(query string) (driver.Stmt, error) { return r.c.Prepare(Rebind(query)) }
func (r *rebindConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	return r.c.PrepareContext(ctx, Rebind(query))
}
func (r *rebindConn) Close() error              { return r.c.Close() }
func (r *rebindConn) Begin() (driver.Tx, error) { return r.c.Begin() }
func (r *rebindConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return r.c.BeginTx(ctx, opts)
}
func (r *rebindConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	return r.c.ExecContext(ctx, Rebind(query), args)
}
func (r *rebindConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	return r.c.QueryContext(ctx, Rebind(query), args)
}
func (r *rebindConn) Ping(ctx context.Context) error              { return r.c.Ping(ctx) }
func (r *rebindConn) ResetSession(ctx context.Context) error      { return r.c.ResetSession(ctx) }
func (r *rebindConn) CheckNamedValue(nv *driver.NamedValue) error { return checkValue(nv) }

// Raw is the pgx connection under a database/sql connection, for
// (*sql.Conn).Raw callers such as the Notifier.
func (r *rebindConn) Raw() *pgx.Conn { return r.c.Conn() }

// checkValue converts a bool argument to 0 or 1: booleans are INTEGER
// columns on both engines, and pgx refuses a Go bool for an int8.
func checkValue(nv *driver.NamedValue) error {
	if b, ok := nv.Value.(bool); ok {
		if b {
			nv.Value = int64(1)
		} else {
			nv.Value = int64(0)
		}
	}
	return nil
}

// pgCode returns the SQLSTATE of a PostgreSQL error in err's chain, or "".
func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// PostgreSQL SQLSTATEs the store recognises.
const (
	pgUniqueViolation      = "23505"
	pgForeignKeyViolation  = "23503"
	pgCheckViolation       = "23514"
	pgSerializationFailure = "40001"
	pgDeadlockDetected     = "40P01"
)
