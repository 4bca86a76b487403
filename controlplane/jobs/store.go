package jobs

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/svcplatform/platform/controlplane/store"
)

type sqlTx = sql.Tx

// insertJob writes a queued job; with a key already used for kind it writes
// nothing and returns the existing job's id.
func insertJob(ctx context.Context, q store.Querier, kindName, key string, payload []byte, runAt, now time.Time) (string, error) {
	id := store.NewID("job")
	res, err := q.ExecContext(ctx, `INSERT INTO jobs (id, kind, key, payload, state, attempt, run_at, created_at, updated_at)
		VALUES (?,?,?,?,'queued',0,?,?,?)
		ON CONFLICT (kind, key) WHERE key <> '' DO NOTHING`,
		id, kindName, key, payload, store.FormatTime(runAt), store.FormatTime(now), store.FormatTime(now))
	if err != nil {
		return "", err
	}
	if n, err := res.RowsAffected(); err != nil {
		return "", err
	} else if n == 1 {
		return id, nil
	}
	err = q.QueryRowContext(ctx, `SELECT id FROM jobs WHERE kind = ? AND key = ?`, kindName, key).Scan(&id)
	return id, err
}

const jobColumns = `id, kind, key, payload, attempt, run_at, state, last_error, lease_until, finished_at`

func scanInfo(row interface{ Scan(...any) error }) (Info, error) {
	var in Info
	var runAt, state, lease, finished string
	err := row.Scan(&in.ID, &in.Kind, &in.Key, &in.Payload, &in.Attempt, &runAt, &state, &in.LastError, &lease, &finished)
	in.RunAt, in.State, in.LeaseUntil, in.FinishedAt = store.ParseTime(runAt), State(state), store.ParseTime(lease), store.ParseTime(finished)
	return in, err
}

func getJob(ctx context.Context, q store.Querier, id string) (Info, error) {
	in, err := scanInfo(q.QueryRowContext(ctx, `SELECT `+jobColumns+` FROM jobs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Info{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return Info{}, fmt.Errorf("jobs: get %s: %w", id, err)
	}
	return in, nil
}

// dueCond selects jobs a runner may claim at ?1: queued and due, or running
// with an expired lease (its runner is gone).
const dueCond = `((state = 'queued' AND run_at <= ?) OR (state = 'running' AND lease_until < ?))`

// claimable lists up to limit due jobs of the given kinds, oldest first. On
// PostgreSQL it locks them (FOR UPDATE) and passes over rows another
// runner's claim holds (SKIP LOCKED): concurrent claims get disjoint jobs.
func claimable(ctx context.Context, tx *sql.Tx, d store.Dialect, kinds []string, now string, limit int) ([]Info, error) {
	if len(kinds) == 0 || limit <= 0 {
		return nil, nil
	}
	args := make([]any, 0, len(kinds)+3)
	for _, k := range kinds {
		args = append(args, k)
	}
	args = append(args, now, now, limit)
	rows, err := tx.QueryContext(ctx, `SELECT `+jobColumns+` FROM jobs
		WHERE kind IN (?`+strings.Repeat(",?", len(kinds)-1)+`) AND `+dueCond+`
		ORDER BY run_at, created_at, id LIMIT ?`+lockClause(d), args...)
	if err != nil {
		return nil, err
	}
	return store.AppendRows[Info](nil, rows, scanInfo)
}

// lockClause ends the candidate SELECT: on PostgreSQL the rows are locked
// and rows locked by another claim skipped; SQLite's claim already holds
// the database's write lock.
func lockClause(d store.Dialect) string {
	if d == store.Postgres {
		return ` FOR UPDATE SKIP LOCKED`
	}
	return ""
}

// lease takes job id for owner until leaseUntil, as attempt+1, provided it
// is still claimable at now. It reports whether this runner got it.
func lease(ctx context.Context, tx *sql.Tx, id, owner, now, leaseUntil string) (bool, error) {
	res, err := tx.ExecContext(ctx, `UPDATE jobs SET state = 'running', attempt = attempt + 1, lease_owner = ?, lease_until = ?, updated_at = ?
		WHERE id = ? AND `+dueCond, owner, leaseUntil, now, id, now, now)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// bury marks job id dead with reason if it is still claimable at now (an
// expired lease on its last attempt).
func bury(ctx context.Context, tx *sql.Tx, id, now, reason string) (bool, error) {
	res, err := tx.ExecContext(ctx, `UPDATE jobs SET state = 'dead', lease_owner = '', lease_until = '', last_error = ?, finished_at = ?, updated_at = ?
		WHERE id = ? AND `+dueCond, reason, now, now, id, now, now)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// outcome is how an attempt ended.
type outcome struct {
	state     State     // Done, Queued (retry or release) or Dead
	runAt     time.Time // for Queued
	lastError string
	release   bool // give the attempt back (shutdown): attempt - 1
}

// finish records the outcome of attempt of job id held by owner. It reports
// false when the lease was lost (another runner claimed the job meanwhile),
// in which case nothing is written.
func finish(ctx context.Context, tx *sql.Tx, id, owner string, attempt int, o outcome, now time.Time) (bool, error) {
	ts := store.FormatTime(now)
	var res sql.Result
	var err error
	fence := ` WHERE id = ? AND state = 'running' AND lease_owner = ? AND attempt = ?`
	switch {
	case o.state == Done:
		res, err = tx.ExecContext(ctx, `UPDATE jobs SET state = 'done', lease_owner = '', lease_until = '', last_error = '', finished_at = ?, updated_at = ?`+fence,
			ts, ts, id, owner, attempt)
	case o.state == Dead:
		res, err = tx.ExecContext(ctx, `UPDATE jobs SET state = 'dead', lease_owner = '', lease_until = '', last_error = ?, finished_at = ?, updated_at = ?`+fence,
			o.lastError, ts, ts, id, owner, attempt)
	case o.release:
		res, err = tx.ExecContext(ctx, `UPDATE jobs SET state = 'queued', attempt = attempt - 1, lease_owner = '', lease_until = '', run_at = ?, updated_at = ?`+fence,
			store.FormatTime(o.runAt), ts, id, owner, attempt)
	default:
		res, err = tx.ExecContext(ctx, `UPDATE jobs SET state = 'queued', lease_owner = '', lease_until = '', last_error = ?, run_at = ?, updated_at = ?`+fence,
			o.lastError, store.FormatTime(o.runAt), ts, id, owner, attempt)
	}
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// pendingPeriodic reports whether kind has a queued or running row.
func pendingPeriodic(ctx context.Context, q store.Querier, kindName string) (bool, error) {
	var n int
	err := q.QueryRowContext(ctx, `SELECT count(*) FROM jobs WHERE kind = ? AND state IN ('queued','running')`, kindName).Scan(&n)
	return n > 0, err
}

// purgeDone deletes done jobs finished before cutoff.
func purgeDone(ctx context.Context, q store.Querier, cutoff time.Time) (int, error) {
	res, err := q.ExecContext(ctx, `DELETE FROM jobs WHERE state = 'done' AND finished_at < ?`, store.FormatTime(cutoff))
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// depth counts jobs by kind and state (queued, running, dead).
func depth(ctx context.Context, q store.Querier) (map[[2]string]int, error) {
	rows, err := q.QueryContext(ctx, `SELECT kind, state, count(*) FROM jobs WHERE state IN ('queued','running','dead') GROUP BY kind, state`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[[2]string]int{}
	for rows.Next() {
		var k, s string
		var n int
		if err := rows.Scan(&k, &s, &n); err != nil {
			return nil, err
		}
		out[[2]string{k, s}] = n
	}
	return out, rows.Err()
}
