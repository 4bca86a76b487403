package jobs

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/svcplatform/platform/controlplane/store"
)

// errNoPipeline: the connection is not the store's pgx connection.
var errNoPipeline = errors.New("jobs: no pgx connection to pipeline on")

// pipelined reports whether step may send its transaction as one pgx
// pipeline: on PostgreSQL, when it need not look for expired leases (that
// claim reads before it writes) and no outcome schedules a periodic job
// (that write depends on the fence's answer).
func (r *Runner) pipelined(es []ended, expired bool) bool {
	if r.db.Dialect() != store.Postgres || expired {
		return false
	}
	for _, e := range es {
		if e.c.k.period > 0 {
			return false
		}
	}
	return true
}

// stepPipelined is step's transaction sent to PostgreSQL in one round
// trip: BEGIN (READ COMMITTED), the plan settings of claimTx, the fenced
// outcome UPDATEs, the lease UPDATE of queued jobs, COMMIT. The statements
// and their guarantees are step's; only the waiting between them goes. A
// failed pipeline discards its connection (the transaction never commits).
func (r *Runner) stepPipelined(ctx context.Context, es []ended, limit int) (cs []claimed, kept []bool, err error) {
	if r.db.OnTx != nil {
		start := time.Now()
		defer func() { r.db.OnTx(time.Since(start), err) }()
	}
	conn, err := r.db.Conn(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer conn.Close()
	err = conn.Raw(func(dc any) error {
		raw, ok := dc.(interface{ Raw() *pgx.Conn })
		if !ok {
			return errNoPipeline
		}
		var perr error
		cs, kept, perr = r.pipeline(ctx, raw.Raw(), es, limit)
		if perr != nil {
			return errors.Join(perr, driver.ErrBadConn)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return cs, kept, nil
}

func (r *Runner) pipeline(ctx context.Context, pc *pgx.Conn, es []ended, limit int) ([]claimed, []bool, error) {
	b := &pgx.Batch{}
	b.Queue(`BEGIN ISOLATION LEVEL READ COMMITTED`)
	b.Queue(`SET LOCAL enable_sort = off`)
	b.Queue(`SET LOCAL enable_bitmapscan = off`)
	kept := make([]bool, len(es))
	var others, done []int
	for i, e := range es {
		if e.o.state == Done {
			done = append(done, i)
			continue
		}
		q, args := finishQuery(e.c.ID, r.owner, e.c.Attempt, e.o, e.at)
		b.Queue(store.Rebind(q), args...)
		others = append(others, i)
	}
	var chunks [][]int
	for len(done) > 0 {
		n := min(len(done), maxBatch)
		refs := make([]attemptRef, n)
		var at time.Time
		for j, i := range done[:n] {
			refs[j] = attemptRef{id: es[i].c.ID, attempt: es[i].c.Attempt}
			if es[i].at.After(at) {
				at = es[i].at
			}
		}
		q, args := finishDoneQuery(refs, r.owner, at)
		b.Queue(store.Rebind(q), args...)
		chunks = append(chunks, done[:n])
		done = done[n:]
	}
	now := r.clk.Now()
	until := r.leaseUntil(now)
	claiming := limit > 0 && len(until) > 0
	if claiming {
		q, args := leaseQueuedQuery(store.Postgres, until, r.owner, store.FormatTime(now), limit)
		b.Queue(store.Rebind(q), args...)
	}
	b.Queue(`COMMIT`)

	br := pc.SendBatch(ctx, b)
	var out []claimed
	err := func() error {
		for range 3 {
			if _, err := br.Exec(); err != nil {
				return err
			}
		}
		for _, i := range others {
			tag, err := br.Exec()
			if err != nil {
				return err
			}
			kept[i] = tag.RowsAffected() == 1
		}
		for _, chunk := range chunks {
			got := make(map[string]bool, len(chunk))
			rows, err := br.Query()
			if err != nil {
				return err
			}
			for rows.Next() {
				var id string
				if err := rows.Scan(&id); err != nil {
					rows.Close()
					return err
				}
				got[id] = true
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			for _, i := range chunk {
				kept[i] = got[es[i].c.ID]
			}
		}
		if claiming {
			rows, err := br.Query()
			if err != nil {
				return err
			}
			var infos []Info
			for rows.Next() {
				in, err := scanInfo(rows)
				if err != nil {
					rows.Close()
					return err
				}
				infos = append(infos, in)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			slices.SortStableFunc(infos, func(a, b Info) int { return a.RunAt.Compare(b.RunAt) })
			for _, in := range infos {
				if k, ok := r.kind(in.Kind); ok {
					out = append(out, claimed{Job: in.Job, k: k})
				}
			}
		}
		tag, err := br.Exec()
		if err != nil {
			return err
		}
		if tag.String() != "COMMIT" {
			return fmt.Errorf("commit answered %q", tag.String())
		}
		return nil
	}()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, nil, err
	}
	return out, kept, nil
}
