package jobs

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"slices"
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
	cs, _, err := r.step(ctx, nil, limit, true)
	return cs, err
}

// step writes the outcomes of ended attempts and claims up to limit due
// jobs, in one transaction: a busy runner pays one commit for each batch
// of finished jobs and their successors instead of two per job. It reports
// which outcomes were kept (see writeOutcomes).
func (r *Runner) step(ctx context.Context, es []ended, limit int, expired bool) ([]claimed, []bool, error) {
	if r.pipelined(es, expired) {
		cs, kept, err := r.stepPipelined(ctx, es, limit)
		if !errors.Is(err, errNoPipeline) {
			if err != nil {
				return nil, nil, fmt.Errorf("jobs: claim: %w", err)
			}
			return cs, kept, nil
		}
	}
	var out []claimed
	var kept []bool
	err := r.claimTx(ctx, func(tx *sql.Tx) error {
		out = out[:0]
		var err error
		if kept, err = r.writeOutcomes(ctx, tx, es); err != nil {
			return err
		}
		if limit <= 0 {
			return nil
		}
		out, err = r.claimIn(ctx, tx, limit, expired, out)
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("jobs: claim: %w", err)
	}
	return out, kept, nil
}

// claimIn leases up to limit due jobs in tx and appends them to out: jobs
// whose lease expired first when expired is set (a lease expires with the
// clock, so the loop looks for them on its poll and wake-ups, not on every
// claim), then queued ones.
func (r *Runner) claimIn(ctx context.Context, tx *sql.Tx, limit int, expired bool, out []claimed) ([]claimed, error) {
	kinds := r.kindNames()
	now := r.clk.Now()
	ts := store.FormatTime(now)
	until := r.leaseUntil(now)
	if expired {
		cands, err := expiredLeases(ctx, tx, r.db.Dialect(), kinds, ts, limit)
		if err != nil {
			return out, err
		}
		// Leases are taken with one UPDATE per lease length (per kind's
		// Timeout), each re-checking that its rows are still due.
		type group struct {
			until string
			ids   []string
		}
		var groups []group
		take := make([]*kind, len(cands))
		for i, c := range cands {
			k, ok := r.kind(c.Kind)
			if !ok {
				continue
			}
			if c.Attempt >= k.o.MaxAttempts {
				reason := fmt.Sprintf("lease expired during attempt %d of %d: its runner stopped or the attempt overran its timeout", c.Attempt, k.o.MaxAttempts)
				buried, err := bury(ctx, tx, c.ID, ts, reason)
				if err != nil {
					return out, err
				}
				if buried {
					r.m.runs.WithLabelValues(c.Kind, "dead").Inc()
					r.log.Warn("job dead", "job", c.ID, "kind", c.Kind, "attempt", c.Attempt, "err", reason)
					if k.period > 0 {
						if err := scheduleNext(ctx, tx, c.Kind, k.period, now); err != nil {
							return out, err
						}
					}
				}
				continue
			}
			take[i] = k
			u := store.FormatTime(now.Add(k.o.Timeout + r.cfg.LeaseGrace))
			gi := slices.IndexFunc(groups, func(g group) bool { return g.until == u })
			if gi < 0 {
				groups = append(groups, group{until: u})
				gi = len(groups) - 1
			}
			groups[gi].ids = append(groups[gi].ids, c.ID)
		}
		got := map[string]bool{}
		for _, g := range groups {
			if err := lease(ctx, tx, g.ids, r.owner, ts, g.until, got); err != nil {
				return out, err
			}
		}
		for i, c := range cands {
			if take[i] != nil && got[c.ID] {
				j := c.Job
				j.Attempt++
				out = append(out, claimed{Job: j, k: take[i]})
				limit--
			}
		}
	}
	queued, err := leaseQueued(ctx, tx, r.db.Dialect(), until, r.owner, ts, limit)
	if err != nil {
		return out, err
	}
	for _, in := range queued {
		if k, ok := r.kind(in.Kind); ok {
			out = append(out, claimed{Job: in.Job, k: k})
		}
	}
	return out, nil
}

// leaseUntil is when a lease taken at now ends, by registered kind.
func (r *Runner) leaseUntil(now time.Time) map[string]string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	until := make(map[string]string, len(r.kinds))
	for name, k := range r.kinds {
		until[name] = store.FormatTime(now.Add(k.o.Timeout + r.cfg.LeaseGrace))
	}
	return until
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
	plan := func(tx *sql.Tx) error {
		// The claim's queries must walk jobs_due and jobs_lease in order
		// and stop at their LIMIT. Right after a burst of enqueues the
		// table's statistics still count a handful of rows, and the planner
		// would rather read every due row and sort them, on each claim.
		if _, err := tx.ExecContext(ctx, `SET LOCAL enable_sort = off; SET LOCAL enable_bitmapscan = off`); err != nil {
			return err
		}
		return fn(tx)
	}
	for attempt := 1; ; attempt++ {
		err = readCommitted(ctx, r.db, plan)
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

// ended is an attempt that has ended, its outcome not yet written.
type ended struct {
	c      claimed
	o      outcome
	err    error
	result string    // metric label: done, retry, dead, released
	at     time.Time // when it ended (the runner's clock)
}

// attempt runs one claimed job and returns how it ended. ctx is the
// runner's: when it ends mid-attempt (shutdown) the attempt is given back.
func (r *Runner) attempt(ctx context.Context, c claimed) ended {
	start := time.Now()
	hctx, cancel := context.WithTimeout(ctx, c.k.o.Timeout)
	err := call(hctx, c.k.h, c.Job)
	cancel()
	r.m.seconds.WithLabelValues(c.Kind).Observe(time.Since(start).Seconds())

	now := r.clk.Now()
	e := ended{c: c, err: err, at: now}
	switch {
	case err == nil:
		e.o, e.result = outcome{state: Done}, "done"
	case ctx.Err() != nil:
		e.o, e.result = outcome{state: Queued, release: true, runAt: now}, "released"
	case IsPermanent(err) || c.Attempt >= c.k.o.MaxAttempts:
		e.o, e.result = outcome{state: Dead, lastError: clip(err.Error())}, "dead"
	default:
		e.o, e.result = outcome{state: Queued, runAt: now.Add(c.k.o.backoff(c.Attempt)), lastError: clip(err.Error())}, "retry"
	}
	return e
}

// run runs one claimed job and records how it ended.
func (r *Runner) run(ctx context.Context, c claimed) {
	r.record(ctx, []ended{r.attempt(ctx, c)})
}

// record writes the outcomes of es in a transaction of their own.
func (r *Runner) record(ctx context.Context, es []ended) {
	fctx, fcancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer fcancel()
	var kept []bool
	ferr := r.db.Tx(fctx, func(tx *sql.Tx) error {
		var err error
		kept, err = r.writeOutcomes(fctx, tx, es)
		return err
	})
	r.recorded(es, kept, ferr)
}

// writeOutcomes records the outcomes of es in tx, each fenced by this
// runner's lease and the attempt it ran: kept[i] is false when the job's
// lease was lost (another runner claimed it meanwhile) and nothing was
// written for it. Done outcomes are written with one UPDATE per batch; a
// periodic kind's done or dead job schedules its next slot.
func (r *Runner) writeOutcomes(ctx context.Context, tx *sql.Tx, es []ended) ([]bool, error) {
	if len(es) == 0 {
		return nil, nil
	}
	kept := make([]bool, len(es))
	var done []int
	for i, e := range es {
		if e.o.state != Done {
			ok, err := finish(ctx, tx, e.c.ID, r.owner, e.c.Attempt, e.o, e.at)
			if err != nil {
				return nil, err
			}
			kept[i] = ok
			continue
		}
		done = append(done, i)
	}
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
		got, err := finishDone(ctx, tx, refs, r.owner, at)
		if err != nil {
			return nil, err
		}
		for _, i := range done[:n] {
			kept[i] = got[es[i].c.ID]
		}
		done = done[n:]
	}
	for i, e := range es {
		if kept[i] && e.c.k.period > 0 && (e.o.state == Done || e.o.state == Dead) {
			if err := scheduleNext(ctx, tx, e.c.Kind, e.c.k.period, e.at); err != nil {
				return nil, err
			}
		}
	}
	return kept, nil
}

// recorded logs and counts the outcomes of es once their transaction
// ended with ferr.
func (r *Runner) recorded(es []ended, kept []bool, ferr error) {
	for i, e := range es {
		c, result := e.c, e.result
		switch {
		case ferr != nil:
			r.log.Error("job outcome not recorded; the lease will expire and the job run again", "job", c.ID, "kind", c.Kind, "err", ferr)
			result = "lost"
		case !kept[i]:
			r.log.Warn("job lease lost before the attempt ended; its outcome is dropped", "job", c.ID, "kind", c.Kind, "attempt", c.Attempt)
			result = "lost"
		case e.o.state == Dead:
			r.log.Warn("job dead", "job", c.ID, "kind", c.Kind, "attempt", c.Attempt, "err", e.err)
		case result == "retry":
			r.log.Info("job failed, will retry", "job", c.ID, "kind", c.Kind, "attempt", c.Attempt, "retry_at", e.o.runAt, "err", e.err)
		}
		r.m.runs.WithLabelValues(c.Kind, result).Inc()
	}
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
	_, err := insertJobs(ctx, tx, kindName, []jobRow{{id: store.NewID("job"), key: slotKey(slot), payload: []byte("null"), runAt: slot}}, now)
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

// stepped is a step's answer to the loop.
type stepped struct {
	es    []ended
	limit int
	cs    []claimed
	kept  []bool
	err   error
}

// loop claims and runs due jobs until ctx ends, then waits for them. The
// workers hand their ended attempts back to the loop, which writes their
// outcomes and claims their successors in one transaction (step). On
// PostgreSQL up to four steps may be in flight at once, so that commits'
// flushes overlap the next steps' work (SKIP LOCKED keeps their claims
// apart); SQLite has one writer and runs one step at a time.
func (r *Runner) loop(ctx context.Context) {
	results := make(chan ended, r.cfg.Workers)
	maxSteps := 1
	if r.db.Dialect() == store.Postgres {
		maxSteps = 4
	}
	steps := make(chan stepped, maxSteps)
	running, reserved, inFlight := 0, 0, 0
	var pending []ended
	// idle: the last claim found fewer due jobs than it asked for; claim
	// again on a wake-up, the poll, or when a worker frees a slot.
	idle := false
	// expired: the next claim also looks for expired leases (at start, on
	// a wake-up and on the poll).
	expired := true
	timer := time.NewTimer(r.cfg.PollInterval)
	defer timer.Stop()
	var lastPurge time.Time
	var lastPeriodic time.Time // wall time: the schedule is a safety net, checked once a poll
	done := func(st stepped) {
		inFlight--
		reserved -= st.limit
		if st.err != nil && len(st.es) > 0 {
			// Try the outcomes alone; a claim error must not lose them.
			r.record(ctx, st.es)
		} else {
			r.recorded(st.es, st.kept, nil)
		}
		if st.err != nil && ctx.Err() == nil {
			r.log.Error("jobs: claim", "err", st.err)
		}
		if st.limit > 0 {
			idle = st.err != nil || len(st.cs) < st.limit
		}
		for _, c := range st.cs {
			running++
			go func(c claimed) { results <- r.attempt(ctx, c) }(c)
		}
	}
	for {
		for drained := false; !drained; {
			select {
			case e := <-results:
				pending, running, idle = append(pending, e), running-1, false
			case st := <-steps:
				done(st)
			default:
				drained = true
			}
		}
		if ctx.Err() != nil {
			// The attempts in progress see their context end: wait for
			// them and give them back.
			for inFlight > 0 {
				done(<-steps)
			}
			for ; running > 0; running-- {
				pending = append(pending, <-results)
			}
			if len(pending) > 0 {
				r.record(ctx, pending)
			}
			return
		}
		if time.Since(lastPeriodic) >= r.cfg.PollInterval {
			lastPeriodic, expired = time.Now(), true
			if err := r.ensurePeriodic(ctx); err != nil && ctx.Err() == nil {
				r.log.Error("jobs: periodic schedule", "err", err)
			}
		}
		if now := r.clk.Now(); now.Sub(lastPurge) >= time.Hour {
			lastPurge = now
			if _, err := r.Purge(ctx); err != nil && ctx.Err() == nil {
				r.log.Error("jobs: purge", "err", err)
			}
		}
		free := r.cfg.Workers - running - reserved
		if idle {
			free = 0
		}
		if inFlight < maxSteps && (free > 0 || len(pending) > 0) {
			st := stepped{es: pending, limit: max(free, 0)}
			pending = nil
			check := expired && st.limit > 0
			if check {
				expired = false
			}
			inFlight++
			reserved += st.limit
			go func() {
				// The outcomes are written even when ctx ends meanwhile.
				sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
				st.cs, st.kept, st.err = r.step(sctx, st.es, st.limit, check)
				cancel()
				steps <- st
			}()
			continue
		}
		if inFlight == 0 {
			timer.Reset(r.cfg.PollInterval)
		}
		select {
		case <-ctx.Done():
		case <-r.wake:
			idle, expired = false, true
		case <-timer.C:
			idle, expired = false, true
		case e := <-results:
			pending, running, idle = append(pending, e), running-1, false
		case st := <-steps:
			done(st)
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
