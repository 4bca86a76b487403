package jobs

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"runtime/debug"
	"sync"
	"time"

	"github.com/svcplatform/platform/controlplane/store"
)

// maxErrorLen bounds the last error kept on a job row.
const maxErrorLen = 2000

// claimed is a job this runner holds a lease on.
type claimed struct {
	Job
	k *kind
}

// claim leases up to limit due jobs of the registered kinds in one
// transaction. A job whose lease expired on its last attempt is buried
// (dead) instead of claimed.
func (r *Runner) claim(ctx context.Context, limit int) ([]claimed, error) {
	kinds := r.kindNames()
	var out []claimed
	err := r.claimTx(ctx, func(tx *sql.Tx) error {
		out = out[:0]
		now := r.clk.Now()
		ts := store.FormatTime(now)
		cands, err := claimable(ctx, tx, r.db.Dialect(), kinds, ts, limit)
		if err != nil {
			return err
		}
		for _, c := range cands {
			k, ok := r.kind(c.Kind)
			if !ok {
				continue
			}
			if c.State == Running && c.Attempt >= k.o.MaxAttempts {
				reason := fmt.Sprintf("lease expired during attempt %d of %d: its runner stopped or the attempt overran its timeout", c.Attempt, k.o.MaxAttempts)
				buried, err := bury(ctx, tx, c.ID, ts, reason)
				if err != nil {
					return err
				}
				if buried {
					r.m.runs.WithLabelValues(c.Kind, "dead").Inc()
					r.log.Warn("job dead", "job", c.ID, "kind", c.Kind, "attempt", c.Attempt, "err", reason)
					if k.period > 0 {
						if err := scheduleNext(ctx, tx, c.Kind, k.period, now); err != nil {
							return err
						}
					}
				}
				continue
			}
			got, err := lease(ctx, tx, c.ID, r.owner, ts, store.FormatTime(now.Add(k.o.Timeout+r.cfg.LeaseGrace)))
			if err != nil {
				return err
			}
			if got {
				j := c.Job
				j.Attempt++
				out = append(out, claimed{Job: j, k: k})
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("jobs: claim: %w", err)
	}
	return out, nil
}

// claimTx runs a claim. On SQLite it is an ordinary (IMMEDIATE) Tx: the
// claim is alone in the database. On PostgreSQL it is READ COMMITTED: the
// candidates are locked with FOR UPDATE SKIP LOCKED, so runners on several
// replicas each take different due jobs at once instead of queueing on the
// same rows, and every lease UPDATE re-checks dueCond on the row it holds
// locked. SERIALIZABLE would make concurrent claims abort each other (the
// candidate SELECTs read overlapping ranges that the others write) without
// adding anything the row locks do not already give.
func (r *Runner) claimTx(ctx context.Context, fn func(tx *sql.Tx) error) (err error) {
	if r.db.Dialect() != store.Postgres {
		return r.db.Tx(ctx, fn)
	}
	if r.db.OnTx != nil {
		start := time.Now()
		defer func() { r.db.OnTx(time.Since(start), err) }()
	}
	for attempt := 1; ; attempt++ {
		err = readCommitted(ctx, r.db, fn)
		// A deadlock cannot arise from SKIP LOCKED alone, but a lease
		// UPDATE may meet a finishing runner's row: run the claim again.
		if !store.IsRetryable(err) || attempt == store.MaxTxAttempts {
			return err
		}
	}
}

// readCommitted runs fn in one READ COMMITTED transaction on db.
func readCommitted(ctx context.Context, db *store.DB, fn func(tx *sql.Tx) error) (err error) {
	tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return fmt.Errorf("begin: %w", err)
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
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// call runs h, turning a panic into an error.
func call(ctx context.Context, h Handler, j Job) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("jobs: handler panicked: %v\n%s", p, debug.Stack())
		}
	}()
	return h(ctx, j)
}

// run runs one claimed job and records how it ended. ctx is the runner's:
// when it ends mid-attempt (shutdown) the attempt is given back.
func (r *Runner) run(ctx context.Context, c claimed) {
	start := time.Now()
	hctx, cancel := context.WithTimeout(ctx, c.k.o.Timeout)
	err := call(hctx, c.k.h, c.Job)
	cancel()
	r.m.seconds.WithLabelValues(c.Kind).Observe(time.Since(start).Seconds())

	now := r.clk.Now()
	var o outcome
	result := ""
	switch {
	case err == nil:
		o, result = outcome{state: Done}, "done"
	case ctx.Err() != nil:
		o, result = outcome{state: Queued, release: true, runAt: now}, "released"
	case IsPermanent(err) || c.Attempt >= c.k.o.MaxAttempts:
		o, result = outcome{state: Dead, lastError: clip(err.Error())}, "dead"
	default:
		o, result = outcome{state: Queued, runAt: now.Add(c.k.o.backoff(c.Attempt)), lastError: clip(err.Error())}, "retry"
	}
	fctx, fcancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer fcancel()
	var kept bool
	ferr := r.db.Tx(fctx, func(tx *sql.Tx) error {
		var err error
		kept, err = finish(fctx, tx, c.ID, r.owner, c.Attempt, o, now)
		if err != nil || !kept {
			return err
		}
		if c.k.period > 0 && (o.state == Done || o.state == Dead) {
			return scheduleNext(fctx, tx, c.Kind, c.k.period, now)
		}
		return nil
	})
	switch {
	case ferr != nil:
		r.log.Error("job outcome not recorded; the lease will expire and the job run again", "job", c.ID, "kind", c.Kind, "err", ferr)
		result = "lost"
	case !kept:
		r.log.Warn("job lease lost before the attempt ended; its outcome is dropped", "job", c.ID, "kind", c.Kind, "attempt", c.Attempt)
		result = "lost"
	case o.state == Dead:
		r.log.Warn("job dead", "job", c.ID, "kind", c.Kind, "attempt", c.Attempt, "err", err)
	case result == "retry":
		r.log.Info("job failed, will retry", "job", c.ID, "kind", c.Kind, "attempt", c.Attempt, "retry_at", o.runAt, "err", err)
	}
	r.m.runs.WithLabelValues(c.Kind, result).Inc()
}

func clip(s string) string {
	if len(s) > maxErrorLen {
		return s[:maxErrorLen]
	}
	return s
}

// slotKey is the idempotency key of a periodic job's slot.
func slotKey(slot time.Time) string { return "every:" + store.FormatTime(slot) }

// scheduleNext writes the periodic kind's job for the first slot after now.
func scheduleNext(ctx context.Context, tx *sql.Tx, kindName string, period time.Duration, now time.Time) error {
	slot := now.Truncate(period).Add(period)
	_, err := insertJob(ctx, tx, kindName, slotKey(slot), []byte("null"), slot, now)
	return err
}

// ensurePeriodic makes sure every periodic kind has a pending row: the
// current slot if it has not run yet, else the next one.
func (r *Runner) ensurePeriodic(ctx context.Context) error {
	for name, period := range r.periodic() {
		pending, err := pendingPeriodic(ctx, r.db, name)
		if err != nil {
			return fmt.Errorf("jobs: periodic %s: %w", name, err)
		}
		if pending {
			continue
		}
		err = r.db.Tx(ctx, func(tx *sql.Tx) error {
			if pending, err := pendingPeriodic(ctx, tx, name); err != nil || pending {
				return err
			}
			now := r.clk.Now()
			slot := now.Truncate(period)
			res, err := tx.ExecContext(ctx, `INSERT INTO jobs (id, kind, key, payload, state, attempt, run_at, created_at, updated_at)
				VALUES (?,?,?,'null','queued',0,?,?,?) ON CONFLICT (kind, key) WHERE key <> '' DO NOTHING`,
				store.NewID("job"), name, slotKey(slot), store.FormatTime(slot), store.FormatTime(now), store.FormatTime(now))
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 1 {
				return nil
			}
			return scheduleNext(ctx, tx, name, period, now) // this slot already ran
		})
		if err != nil {
			return fmt.Errorf("jobs: periodic %s: %w", name, err)
		}
	}
	return nil
}

// RunDue runs, one after another in the calling goroutine, every job due at
// the clock's now (including jobs whose lease expired), each once, and
// returns how many it ran. Tests drive the runner with it and a fake clock.
func (r *Runner) RunDue(ctx context.Context) (int, error) {
	if err := r.ensurePeriodic(ctx); err != nil {
		return 0, err
	}
	cs, err := r.claim(ctx, math.MaxInt32)
	if err != nil {
		return 0, err
	}
	for _, c := range cs {
		r.run(ctx, c)
	}
	return len(cs), nil
}

// Purge deletes done jobs finished more than Config.KeepDone ago and
// returns how many. Run calls it hourly.
func (r *Runner) Purge(ctx context.Context) (int, error) {
	n, err := purgeDone(ctx, r.db, r.clk.Now().Add(-r.cfg.KeepDone))
	if err != nil {
		return 0, fmt.Errorf("jobs: purge: %w", err)
	}
	return n, nil
}

// Run runs Config.Workers jobs at a time until ctx ends or Close is
// called, then waits for the attempts in progress (given back, see Close)
// and returns nil. Workers wake on Enqueue (or Wake) and otherwise look for
// due jobs every PollInterval. With no workers (Config.Workers negative),
// after Close, or while another Run runs, it returns at once.
func (r *Runner) Run(ctx context.Context) error {
	r.mu.Lock()
	select {
	case <-r.closing:
		r.mu.Unlock()
		return nil
	default:
	}
	if r.started || r.cfg.Workers < 0 {
		r.mu.Unlock()
		return nil
	}
	r.started = true
	ctx, r.stop = context.WithCancel(ctx)
	r.wg.Add(1)
	r.mu.Unlock()
	defer r.wg.Done()
	r.loop(ctx)
	return nil
}

// loop claims and runs due jobs until ctx ends, then waits for them.
func (r *Runner) loop(ctx context.Context) {
	var workers sync.WaitGroup
	defer workers.Wait()
	sem := make(chan struct{}, r.cfg.Workers)
	timer := time.NewTimer(r.cfg.PollInterval)
	defer timer.Stop()
	var lastPurge time.Time
	for ctx.Err() == nil {
		if err := r.ensurePeriodic(ctx); err != nil && ctx.Err() == nil {
			r.log.Error("jobs: periodic schedule", "err", err)
		}
		if now := r.clk.Now(); now.Sub(lastPurge) >= time.Hour {
			lastPurge = now
			if _, err := r.Purge(ctx); err != nil && ctx.Err() == nil {
				r.log.Error("jobs: purge", "err", err)
			}
		}
		free := cap(sem) - len(sem)
		if free > 0 {
			cs, err := r.claim(ctx, free)
			if err != nil && ctx.Err() == nil {
				r.log.Error("jobs: claim", "err", err)
			}
			for _, c := range cs {
				sem <- struct{}{}
				workers.Add(1)
				go func(c claimed) {
					defer workers.Done()
					r.run(ctx, c)
					<-sem
					r.Wake()
				}(c)
			}
			if err == nil && len(cs) == free {
				continue // there may be more due
			}
		}
		timer.Reset(r.cfg.PollInterval)
		select {
		case <-ctx.Done():
		case <-r.wake:
		case <-timer.C:
		}
	}
}

// Close stops Run's workers: attempts in progress see their context end
// and are given back (queued again without using up an attempt). It waits
// for them and is safe to call more than once.
func (r *Runner) Close() error {
	r.once.Do(func() {
		close(r.closing)
		r.mu.Lock()
		stop := r.stop
		r.mu.Unlock()
		if stop != nil {
			stop()
		}
	})
	r.wg.Wait()
	return nil
}

// ReclaimAbandoned makes every job still marked running due at once: the
// process that leased it is gone. Only a runner that knows it is the sole
// user of the database may call it (SQLite: one process owns the data
// directory); on a shared database, leases expire by themselves. The
// abandoned attempt counts as an attempt, as a crash does.
func (r *Runner) ReclaimAbandoned(ctx context.Context) (int, error) {
	// An empty lease sorts before every time: due on the next look.
	res, err := r.db.ExecContext(ctx, `UPDATE jobs SET lease_until = '', updated_at = ? WHERE state = 'running'`,
		store.FormatTime(r.clk.Now()))
	if err != nil {
		return 0, fmt.Errorf("jobs: reclaim abandoned: %w", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}
