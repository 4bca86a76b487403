package jobs

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/svcplatform/platform/controlplane/store"
)

type sqlTx = sql.Tx

// insertJob writes a queued job; with a key already used for kind it writes
// nothing and returns the existing job's id.
// jobRow is a job to insert.
type jobRow struct {
	id, key string
	payload []byte
	runAt   time.Time
}

// insertJobs inserts rows of one kind, enqueueBatch to a statement, and
// returns their ids in order: a row whose key a kept job (or an earlier
// row) already has is not inserted and gets that job's id.
func insertJobs(ctx context.Context, q store.Querier, kindName string, rows []jobRow, now time.Time) ([]string, error) {
	ids := make([]string, len(rows))
	ts := store.FormatTime(now)
	var sb strings.Builder
	for start := 0; start < len(rows); start += enqueueBatch {
		part := rows[start:min(start+enqueueBatch, len(rows))]
		sb.Reset()
		sb.WriteString(`INSERT INTO jobs (id, kind, key, payload, state, attempt, run_at, created_at, updated_at) VALUES `)
		args := make([]any, 0, 7*len(part))
		for i, row := range part {
			if i > 0 {
				sb.WriteByte(',')
			}
			sb.WriteString(`(?,?,?,?,'queued',0,?,?,?)`)
			args = append(args, row.id, kindName, row.key, row.payload, store.FormatTime(row.runAt), ts, ts)
		}
		sb.WriteString(` ON CONFLICT (kind, key) WHERE key <> '' DO NOTHING RETURNING id`)
		res, err := q.QueryContext(ctx, sb.String(), args...)
		if err != nil {
			return nil, err
		}
		inserted, err := store.AppendRows(nil, res, store.ScanString)
		if err != nil {
			return nil, err
		}
		in := make(map[string]bool, len(inserted))
		for _, id := range inserted {
			in[id] = true
		}
		for i, row := range part {
			ids[start+i] = row.id
			if in[row.id] {
				continue
			}
			// Not inserted: its key is taken.
			if err := q.QueryRowContext(ctx, `SELECT id FROM jobs WHERE kind = ? AND key = ?`, kindName, row.key).Scan(&ids[start+i]); err != nil {
				return nil, err
			}
		}
	}
	return ids, nil
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

// kindsIn is "kind IN (?,...)" for kinds.
func kindsIn(kinds []string) string {
	return `kind IN (?` + strings.Repeat(",?", len(kinds)-1) + `)`
}

// expiredLeases lists up to limit running jobs of the given kinds whose
// lease expired before now, oldest lease first, walking jobs_lease. On
// PostgreSQL it locks them (FOR UPDATE) and passes over rows another
// runner's claim holds (SKIP LOCKED): concurrent claims get disjoint jobs.
func expiredLeases(ctx context.Context, tx *sql.Tx, d store.Dialect, kinds []string, now string, limit int) ([]Info, error) {
	if len(kinds) == 0 || limit <= 0 {
		return nil, nil
	}
	args := make([]any, 0, len(kinds)+2)
	args = append(args, now)
	for _, k := range kinds {
		args = append(args, k)
	}
	args = append(args, limit)
	rows, err := tx.QueryContext(ctx, `SELECT `+jobColumns+` FROM jobs WHERE state = 'running' AND lease_until < ? AND `+kindsIn(kinds)+`
		ORDER BY lease_until LIMIT ?`+lockClause(d), args...)
	if err != nil {
		return nil, err
	}
	return store.AppendRows[Info](nil, rows, scanInfo)
}

// leaseQueued leases up to limit queued jobs due at now, oldest run_at
// first, to owner in one statement: the inner SELECT walks jobs_due in
// order and stops at limit (on PostgreSQL locking its rows and skipping
// rows another claim holds), the UPDATE re-checks that each row is still
// queued and due and sets its lease to until[kind]. It returns the jobs as
// leased (attempt already counted), oldest first.
func leaseQueued(ctx context.Context, tx *sql.Tx, d store.Dialect, until map[string]string, owner, now string, limit int) ([]Info, error) {
	if len(until) == 0 || limit <= 0 {
		return nil, nil
	}
	q, args := leaseQueuedQuery(d, until, owner, now, limit)
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	out, err := store.AppendRows[Info](nil, rows, scanInfo)
	slices.SortStableFunc(out, func(a, b Info) int { return a.RunAt.Compare(b.RunAt) })
	return out, err
}

// leaseQueuedQuery is leaseQueued's statement (until not empty, limit > 0).
func leaseQueuedQuery(d store.Dialect, until map[string]string, owner, now string, limit int) (string, []any) {
	kinds := make([]string, 0, len(until))
	for k := range until {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	args := make([]any, 0, 3*len(kinds)+6)
	args = append(args, now)
	for _, k := range kinds {
		args = append(args, k)
	}
	args = append(args, limit)
	var cases strings.Builder
	for _, k := range kinds {
		cases.WriteString(" WHEN ? THEN ?")
		args = append(args, k, until[k])
	}
	args = append(args, owner, now, now)
	// The candidates are a materialized CTE: as a subquery of the UPDATE,
	// PostgreSQL may run the SELECT once per row it joins, each time
	// taking limit more rows.
	return `WITH due AS MATERIALIZED (SELECT id FROM jobs WHERE state = 'queued' AND run_at <= ? AND ` + kindsIn(kinds) + `
			ORDER BY run_at LIMIT ?` + lockClause(d) + `)
		UPDATE jobs SET state = 'running', attempt = attempt + 1,
		lease_until = CASE kind` + cases.String() + ` END, lease_owner = ?, updated_at = ?
		WHERE id IN (SELECT id FROM due) AND state = 'queued' AND run_at <= ?
		RETURNING ` + jobColumns, args
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

// maxBatch bounds the rows one lease or outcome statement names.
const maxBatch = 100

// lease takes the jobs ids for owner until leaseUntil, each as its attempt+1,
// provided it is still claimable at now, and adds the ids it got to got.
func lease(ctx context.Context, tx *sql.Tx, ids []string, owner, now, leaseUntil string, got map[string]bool) error {
	for len(ids) > 0 {
		n := min(len(ids), maxBatch)
		args := make([]any, 0, n+5)
		args = append(args, owner, leaseUntil, now)
		for _, id := range ids[:n] {
			args = append(args, id)
		}
		args = append(args, now, now)
		rows, err := tx.QueryContext(ctx, `UPDATE jobs SET state = 'running', attempt = attempt + 1, lease_owner = ?, lease_until = ?, updated_at = ?
			WHERE id IN (?`+strings.Repeat(",?", n-1)+`) AND `+dueCond+` RETURNING id`, args...)
		if err != nil {
			return err
		}
		if err := scanIDs(rows, got); err != nil {
			return err
		}
		ids = ids[n:]
	}
	return nil
}

// scanIDs adds the ids rows returns to set and closes rows.
func scanIDs(rows *sql.Rows, set map[string]bool) error {
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return err
		}
		set[id] = true
	}
	return rows.Err()
}

// attemptRef names one attempt of one job.
type attemptRef struct {
	id      string
	attempt int
}

// finishDone marks the attempts refs (at most maxBatch) done, each only if
// owner still holds its lease on that attempt (the fence of finish), and
// returns the ids it marked.
func finishDone(ctx context.Context, tx *sql.Tx, refs []attemptRef, owner string, now time.Time) (map[string]bool, error) {
	q, args := finishDoneQuery(refs, owner, now)
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	got := make(map[string]bool, len(refs))
	return got, scanIDs(rows, got)
}

// finishDoneQuery is finishDone's statement; it returns the ids it marked.
func finishDoneQuery(refs []attemptRef, owner string, now time.Time) (string, []any) {
	ts := store.FormatTime(now)
	args := make([]any, 0, 3+3*len(refs))
	args = append(args, ts, ts, owner)
	for _, r := range refs {
		args = append(args, r.id)
	}
	var fence strings.Builder
	for i, r := range refs {
		if i > 0 {
			fence.WriteString(" OR ")
		}
		fence.WriteString("(id = ? AND attempt = ?)")
		args = append(args, r.id, r.attempt)
	}
	return `UPDATE jobs SET state = 'done', lease_owner = '', lease_until = '', last_error = '', finished_at = ?, updated_at = ?
		WHERE state = 'running' AND lease_owner = ? AND id IN (?` + strings.Repeat(",?", len(refs)-1) + `) AND (` + fence.String() + `) RETURNING id`, args
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
	q, args := finishQuery(id, owner, attempt, o, now)
	res, err := tx.ExecContext(ctx, q, args...)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// finishQuery is finish's statement: it changes one row when owner still
// holds attempt of job id.
func finishQuery(id, owner string, attempt int, o outcome, now time.Time) (string, []any) {
	ts := store.FormatTime(now)
	fence := ` WHERE id = ? AND state = 'running' AND lease_owner = ? AND attempt = ?`
	switch {
	case o.state == Done:
		return `UPDATE jobs SET state = 'done', lease_owner = '', lease_until = '', last_error = '', finished_at = ?, updated_at = ?` + fence,
			[]any{ts, ts, id, owner, attempt}
	case o.state == Dead:
		return `UPDATE jobs SET state = 'dead', lease_owner = '', lease_until = '', last_error = ?, finished_at = ?, updated_at = ?` + fence,
			[]any{o.lastError, ts, ts, id, owner, attempt}
	case o.release:
		return `UPDATE jobs SET state = 'queued', attempt = attempt - 1, lease_owner = '', lease_until = '', run_at = ?, updated_at = ?` + fence,
			[]any{store.FormatTime(o.runAt), ts, id, owner, attempt}
	default:
		return `UPDATE jobs SET state = 'queued', lease_owner = '', lease_until = '', last_error = ?, run_at = ?, updated_at = ?` + fence,
			[]any{o.lastError, store.FormatTime(o.runAt), ts, id, owner, attempt}
	}
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
