package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/svcplatform/platform/controlplane/jobs"
	"github.com/svcplatform/platform/controlplane/store"
)

const (
	emptyKind = "bench.empty"
	crashKind = "bench.crash"
	// runTimeout bounds one run of N jobs.
	runTimeout = 10 * time.Minute
)

// platformDSN makes a fresh database for the platform's store: a SQLite
// file in o.dir or a PostgreSQL database.
func freshDSN(ctx context.Context, o options, engine string, pg *pgServer, name string) (string, func(), error) {
	if engine == "postgres" {
		dsn, err := pg.createDB(ctx, name)
		return dsn, func() { pg.admin.Exec(context.Background(), `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`) }, err
	}
	path := filepath.Join(o.dir, name+".db")
	rm := func() {
		for _, s := range []string{"", "-wal", "-shm"} {
			os.Remove(path + s)
		}
	}
	rm()
	return path, rm, nil
}

// benchPlatform enqueues o.n empty jobs in one transaction, then runs them
// with o.workers workers until every outcome is written (Close waits for
// the last ones).
func benchPlatform(ctx context.Context, o options, engine string, pg *pgServer, round int) (result, error) {
	dsn, cleanup, err := freshDSN(ctx, o, engine, pg, fmt.Sprintf("platform_%d", round))
	if err != nil {
		return result{}, err
	}
	defer cleanup()
	db, err := store.Open(ctx, dsn)
	if err != nil {
		return result{}, err
	}
	defer db.Close()
	r, err := jobs.New(jobs.Config{Workers: o.workers, PollInterval: o.poll}, jobs.Deps{DB: db})
	if err != nil {
		return result{}, err
	}
	var ran atomic.Int64
	all := make(chan struct{})
	n := int64(o.n)
	r.Register(emptyKind, func(context.Context, jobs.Job) error {
		if ran.Add(1) == n {
			close(all)
		}
		return nil
	}, jobs.KindOptions{})

	res := result{n: o.n}
	start := time.Now()
	err = db.Tx(ctx, func(tx *sql.Tx) error {
		_, err := r.EnqueueMany(ctx, tx, emptyKind, make([]jobs.Item, o.n))
		return err
	})
	if err != nil {
		return result{}, err
	}
	res.enqueue = time.Since(start)

	start = time.Now()
	stopped := make(chan error, 1)
	go func() { stopped <- r.Run(ctx) }()
	select {
	case <-all:
	case <-time.After(runTimeout):
		r.Close()
		return result{}, fmt.Errorf("%d of %d jobs ran in %s", ran.Load(), n, runTimeout)
	}
	r.Close() // waits for the outcomes in progress
	if err := <-stopped; err != nil {
		return result{}, err
	}
	res.run = time.Since(start)

	var done int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM jobs WHERE state = 'done'`).Scan(&done); err != nil {
		return result{}, err
	}
	if done != o.n {
		return result{}, fmt.Errorf("%d of %d jobs done after the run", done, o.n)
	}
	return res, nil
}

// effectTable is where crash-check handlers record what they did: one row
// per handler run that committed; applied is 1 for the run whose effect
// counts.
const effectTable = `CREATE TABLE bench_effect (job_id TEXT NOT NULL, attempt INTEGER NOT NULL, pid INTEGER NOT NULL, applied INTEGER NOT NULL)`

// preparePlatform creates the effect table and enqueues n crash-check jobs.
func preparePlatform(ctx context.Context, dsn string, n int) error {
	db, err := store.Open(ctx, dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, effectTable); err != nil {
		return err
	}
	r, err := jobs.New(jobs.Config{Workers: -1}, jobs.Deps{DB: db})
	if err != nil {
		return err
	}
	r.Register(crashKind, func(context.Context, jobs.Job) error { return nil }, jobs.KindOptions{})
	return db.Tx(ctx, func(tx *sql.Tx) error {
		for i := range n {
			if _, err := r.Enqueue(ctx, tx, crashKind, map[string]int{"seq": i}, jobs.EnqueueOptions{}); err != nil {
				return err
			}
		}
		return nil
	})
}

// crashLease is the crash check's lease: a kind's Timeout plus LeaseGrace.
const (
	crashTimeout    = 2 * time.Second
	crashLeaseGrace = time.Second
)

// childPlatform runs crash-check jobs until total are done. The handler is
// idempotent the way a real one is: in one transaction it looks for its
// effect and applies it only when absent, so a re-run after a crash (at
// least once) changes nothing.
func childPlatform(ctx context.Context, o options) error {
	db, err := store.Open(ctx, o.childDSN)
	if err != nil {
		return err
	}
	defer db.Close()
	r, err := jobs.New(jobs.Config{Workers: o.workers, PollInterval: o.poll, LeaseGrace: crashLeaseGrace}, jobs.Deps{DB: db})
	if err != nil {
		return err
	}
	pid := os.Getpid()
	r.Register(crashKind, func(ctx context.Context, j jobs.Job) error {
		time.Sleep(o.jobSleep) // the job's work
		return db.Tx(ctx, func(tx *sql.Tx) error {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM bench_effect WHERE job_id = ? AND applied = 1`, j.ID).Scan(&n); err != nil {
				return err
			}
			applied := 0
			if n == 0 {
				applied = 1
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO bench_effect (job_id, attempt, pid, applied) VALUES (?,?,?,?)`, j.ID, j.Attempt, pid, applied)
			return err
		})
	}, jobs.KindOptions{Timeout: crashTimeout, MaxAttempts: 100})
	if db.Dialect() == store.SQLite {
		// The process owns the file, as the control plane does at start.
		if _, err := r.ReclaimAbandoned(ctx); err != nil {
			return err
		}
	}
	stopped := make(chan error, 1)
	go func() { stopped <- r.Run(ctx) }()
	err = waitCount(ctx, db.DB, `SELECT count(*) FROM jobs WHERE state = 'done'`, o.childTotal)
	r.Close()
	return errors.Join(err, <-stopped)
}

// waitCount polls query until it counts want (the child's exit condition;
// the parent kills it before, except the last time).
func waitCount(ctx context.Context, db *sql.DB, query string, want int) error {
	for {
		var n int
		if err := db.QueryRowContext(ctx, query).Scan(&n); err != nil {
			return err
		}
		if n >= want {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
