package ratelimit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/store"
)

// StoreTimeout bounds one rate-limit statement: a slow database must not
// hold requests up; past it the request is admitted (fail open).
const StoreTimeout = 2 * time.Second

// Store is the limiter whose state is the ratelimit_tat table (migration
// 0130_ratelimit.sql): every replica on one PostgreSQL spends the same
// budget. A decision is one statement, an upsert that moves tat only when
// the cost fits (a row lock orders concurrent replicas); a refusal changes
// nothing. Time is the limiter's clock (replicas' clocks are assumed
// synchronised, as for every other time the store keeps). When the store
// fails, the request is admitted and counted in
// platform_ratelimit_store_errors_total: a database hiccup must not turn
// into refusals.
type Store struct {
	db  *store.DB
	clk clock.Clock
	m   *metrics
	// Log, when set, receives store errors (each admitted a request
	// uncounted). Set it before use.
	Log *slog.Logger

	upsert, read, sweep, sweepLog string

	mu    sync.Mutex
	swept int64
}

// NewStore returns the limiter on db's ratelimit_tat table. It works on
// both engines (For uses it on PostgreSQL only).
func NewStore(db *store.DB, clk clock.Clock) *Store {
	greatest := "GREATEST"
	if db.Dialect() == store.SQLite {
		greatest = "max"
	}
	return &Store{
		db: db, clk: clk, m: newMetrics("store"),
		// ?1 workspace, ?2 bucket, ?3 now + cost*T (a new key's tat),
		// ?4 now, ?5 cost*T, ?6 the highest tat that still admits the cost
		// (now + burst*T - cost*T). No row back: refused, nothing written.
		upsert: `INSERT INTO ratelimit_tat AS r (workspace, bucket, tat) VALUES (?, ?, ?)
			ON CONFLICT (workspace, bucket) DO UPDATE SET tat = ` + greatest + `(r.tat, ?) + ?
			WHERE r.tat <= ?
			RETURNING tat`,
		read:     `SELECT tat FROM ratelimit_tat WHERE workspace = ? AND bucket = ?`,
		sweep:    `DELETE FROM ratelimit_tat WHERE tat < ?`,
		sweepLog: `DELETE FROM ratelimit_log WHERE until <= ?`,
	}
}

// Allow implements Limiter.
func (l *Store) Allow(ctx context.Context, k Key, lim Limit, cost int64) (Decision, error) {
	unlimited, err := check(k, lim, cost)
	if err != nil {
		return Decision{}, err
	}
	if unlimited {
		d := Decision{Allowed: true}
		l.m.count(k.Bucket, d)
		return d, nil
	}
	now := l.clk.Now().UnixNano()
	decide := l.decide
	if lim.Window {
		decide = l.decideWindow
	}
	d, err := decide(ctx, k, lim, cost, now)
	if err != nil {
		l.m.storeErrors.Inc()
		if l.Log != nil {
			l.Log.Warn("ratelimit: store failed; request admitted uncounted", "bucket", k.Bucket, "err", err)
		}
		d = Decision{Allowed: true, FailedOpen: true}
	}
	l.m.count(k.Bucket, d)
	if err == nil {
		l.maybeSweep(ctx, now)
	}
	return d, nil
}

func (l *Store) decide(ctx context.Context, k Key, lim Limit, cost, now int64) (Decision, error) {
	ctx, cancel := context.WithTimeout(ctx, StoreTimeout)
	defer cancel()
	t := lim.interval()
	costT, burstT := cost*t, lim.burst()*t
	var tat int64
	err := l.db.QueryRowContext(ctx, l.upsert, k.Workspace, k.Bucket, now+costT, now, costT, now+burstT-costT).Scan(&tat)
	if err == nil {
		return Decision{Allowed: true}, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return Decision{}, fmt.Errorf("ratelimit: %s: %w", k.Bucket, err)
	}
	// Refused. How long to wait is advice: read tat (it may have moved).
	err = l.db.QueryRowContext(ctx, l.read, k.Workspace, k.Bucket).Scan(&tat)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		tat = now
	case err != nil:
		return Decision{RetryAfter: time.Duration(costT)}, nil // refused all the same
	}
	_, _, wait := gcra(tat, now, lim, cost)
	return Decision{RetryAfter: max(wait, time.Nanosecond)}, nil
}

// decideWindow decides a Window limit in one short transaction: the key's
// deciders are serialised (PostgreSQL: a transaction-scoped advisory lock
// on the key, then READ COMMITTED reads see every earlier decision; SQLite:
// the write lock), the key's units that left the window are deleted, the
// (Rate-cost+1)-th newest unit still in it refuses, else cost units are
// logged.
func (l *Store) decideWindow(ctx context.Context, k Key, lim Limit, cost, now int64) (Decision, error) {
	ctx, cancel := context.WithTimeout(ctx, StoreTimeout)
	defer cancel()
	var d Decision
	err := l.keyTx(ctx, k, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM ratelimit_log WHERE workspace = ? AND bucket = ? AND until <= ?`,
			k.Workspace, k.Bucket, now); err != nil {
			return err
		}
		var until int64
		err := tx.QueryRowContext(ctx, `SELECT until FROM ratelimit_log WHERE workspace = ? AND bucket = ?
			ORDER BY until DESC LIMIT 1 OFFSET ?`, k.Workspace, k.Bucket, lim.Rate-cost).Scan(&until)
		switch {
		case err == nil:
			d = Decision{RetryAfter: time.Duration(until - now)}
			return nil
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		for range cost {
			if _, err := tx.ExecContext(ctx, `INSERT INTO ratelimit_log (workspace, bucket, until) VALUES (?, ?, ?)`,
				k.Workspace, k.Bucket, now+int64(lim.Per)); err != nil {
				return err
			}
		}
		d = Decision{Allowed: true}
		return nil
	})
	if err != nil {
		return Decision{}, fmt.Errorf("ratelimit: %s: %w", k.Bucket, err)
	}
	return d, nil
}

// Refund implements Limiter.
func (l *Store) Refund(ctx context.Context, k Key, lim Limit, cost int64) error {
	unlimited, err := check(k, lim, cost)
	if err != nil || unlimited {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, StoreTimeout)
	defer cancel()
	if !lim.Window {
		_, err = l.db.ExecContext(ctx, `UPDATE ratelimit_tat SET tat = tat - ? WHERE workspace = ? AND bucket = ?`,
			cost*lim.interval(), k.Workspace, k.Bucket)
	} else {
		row := "rowid"
		if l.db.Dialect() == store.Postgres {
			row = "ctid"
		}
		err = l.keyTx(ctx, k, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `DELETE FROM ratelimit_log WHERE `+row+` IN (SELECT `+row+` FROM ratelimit_log
				WHERE workspace = ? AND bucket = ? ORDER BY until DESC LIMIT ?)`, k.Workspace, k.Bucket, cost)
			return err
		})
	}
	if err != nil {
		return fmt.Errorf("ratelimit: refund %s: %w", k.Bucket, err)
	}
	return nil
}

// keyTx runs fn with the key's decisions serialised.
func (l *Store) keyTx(ctx context.Context, k Key, fn func(tx *sql.Tx) error) (err error) {
	if l.db.Dialect() != store.Postgres {
		return l.db.Tx(ctx, fn)
	}
	tx, err := l.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	if _, err = tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext(?))`, "ratelimit/"+k.Workspace+"/"+k.Bucket); err != nil {
		return err
	}
	if err = fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// maybeSweep deletes idle keys (tat past) at most every SweepEvery per
// replica; a failure is left for the next sweep.
func (l *Store) maybeSweep(ctx context.Context, now int64) {
	l.mu.Lock()
	due := now-l.swept >= int64(SweepEvery)
	if due {
		l.swept = now
	}
	l.mu.Unlock()
	if !due {
		return
	}
	if _, err := l.Sweep(ctx); err != nil && l.Log != nil {
		l.Log.Warn("ratelimit: sweep", "err", err)
	}
}

// Sweep deletes the rows of idle keys (tat before the clock's now) and the
// logged units that left their window, and returns how many. Allow calls it every SweepEvery.
func (l *Store) Sweep(ctx context.Context) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, StoreTimeout)
	defer cancel()
	now := l.clk.Now().UnixNano()
	total := 0
	for _, q := range []string{l.sweep, l.sweepLog} {
		res, err := l.db.ExecContext(ctx, q, now)
		if err != nil {
			return total, fmt.Errorf("ratelimit: sweep: %w", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return total, fmt.Errorf("ratelimit: sweep: %w", err)
		}
		total += int(n)
	}
	return total, nil
}

// Collectors implements Limiter.
func (l *Store) Collectors() []prometheus.Collector { return l.m.collectors() }
