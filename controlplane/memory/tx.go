package memory

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/svcplatform/platform/controlplane/store"
)

// writeTx runs fn in a transaction for changes to one store's keys; fn
// locks the store's row first (storeByID with lock), so the store's counts
// stay exact. On SQLite write transactions already run one at a time
// (BEGIN IMMEDIATE). On PostgreSQL the transaction is READ COMMITTED and
// the row lock (FOR UPDATE) queues concurrent writes to one store instead
// of failing them as SERIALIZABLE would; writes to other stores do not
// wait. A deadlock is retried like store.DB.Tx retries, so fn must keep its
// effects inside tx.
func (s *Service) writeTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if s.d.DB.Dialect() != store.Postgres {
		return s.d.DB.Tx(ctx, fn)
	}
	for attempt := 1; ; attempt++ {
		err := readCommitted(ctx, s.d.DB, fn)
		if !store.IsRetryable(err) || attempt == store.MaxTxAttempts {
			return err
		}
	}
}

// readCommitted runs fn in one READ COMMITTED transaction on db.
func readCommitted(ctx context.Context, db *store.DB, fn func(tx *sql.Tx) error) (err error) {
	tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return fmt.Errorf("memory: begin: %w", err)
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
	if err = fn(tx); err != nil {
		return err
	}
	if err = tx.Commit(); err != nil {
		return fmt.Errorf("memory: commit: %w", err)
	}
	return nil
}

// in renders n placeholders for an IN list: "?,?,?".
func in(n int) string {
	return strings.TrimSuffix(strings.Repeat("?,", n), ",")
}
