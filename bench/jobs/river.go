package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/mattn/go-sqlite3"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/svcplatform/platform/controlplane/store"
)

type emptyArgs struct{}

func (emptyArgs) Kind() string { return "bench_empty" }

type crashArgs struct {
	Seq int `json:"seq"`
}

func (crashArgs) Kind() string { return "bench_crash" }

// riverDB is River on one engine: its driver and what a handler needs to
// run its own transaction on it.
type riverDB[TTx any] struct {
	driver   riverdriver.Driver[TTx]
	begin    func(ctx context.Context) (TTx, error)
	exec     func(ctx context.Context, tx TTx, query string) error
	commit   func(ctx context.Context, tx TTx) error
	rollback func(ctx context.Context, tx TTx)
	count    func(ctx context.Context, query string) (int, error)
	close    func()
}

// sqliteDSN is the platform store's SQLite settings (controlplane/store),
// so that both libraries write with the same durability.
func sqliteDSN(path string) string {
	q := url.Values{}
	q.Set("_journal_mode", "WAL")
	q.Set("_foreign_keys", "on")
	q.Set("_busy_timeout", "10000")
	q.Set("_synchronous", "FULL")
	q.Set("_txlock", "immediate")
	return (&url.URL{Scheme: "file", Opaque: path, RawQuery: q.Encode()}).String()
}

func riverSQLite(path string, conns int) (*riverDB[*sql.Tx], error) {
	db, err := sql.Open("sqlite3", sqliteDSN(path))
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	if err := db.Ping(); err != nil {
		db.Close()
		return nil, err
	}
	return &riverDB[*sql.Tx]{
		driver: riversqlite.New(db),
		begin:  func(ctx context.Context) (*sql.Tx, error) { return db.BeginTx(ctx, nil) },
		exec: func(ctx context.Context, tx *sql.Tx, q string) error {
			_, err := tx.ExecContext(ctx, q)
			return err
		},
		commit:   func(_ context.Context, tx *sql.Tx) error { return tx.Commit() },
		rollback: func(_ context.Context, tx *sql.Tx) { tx.Rollback() },
		count: func(ctx context.Context, q string) (n int, err error) {
			err = db.QueryRowContext(ctx, q).Scan(&n)
			return n, err
		},
		close: func() { db.Close() },
	}, nil
}

func riverPostgres(ctx context.Context, dsn string) (*riverDB[pgx.Tx], error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = 16 // as the platform's store
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &riverDB[pgx.Tx]{
		driver: riverpgxv5.New(pool),
		begin:  func(ctx context.Context) (pgx.Tx, error) { return pool.Begin(ctx) },
		exec: func(ctx context.Context, tx pgx.Tx, q string) error {
			_, err := tx.Exec(ctx, q)
			return err
		},
		commit:   func(ctx context.Context, tx pgx.Tx) error { return tx.Commit(ctx) },
		rollback: func(ctx context.Context, tx pgx.Tx) { tx.Rollback(ctx) },
		count: func(ctx context.Context, q string) (n int, err error) {
			err = pool.QueryRow(ctx, q).Scan(&n)
			return n, err
		},
		close: pool.Close,
	}, nil
}

func (d *riverDB[TTx]) migrate(ctx context.Context) error {
	m, err := rivermigrate.New(d.driver, &rivermigrate.Config{Logger: quiet()})
	if err != nil {
		return err
	}
	_, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	return err
}

func quiet() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
}

// benchRiver runs River's half of a round on engine.
func benchRiver(ctx context.Context, o options, engine string, pg *pgServer, round int) (result, error) {
	dsn, cleanup, err := freshDSN(ctx, o, engine, pg, fmt.Sprintf("river_%d", round))
	if err != nil {
		return result{}, err
	}
	defer cleanup()
	if engine == "postgres" {
		d, err := riverPostgres(ctx, dsn)
		if err != nil {
			return result{}, err
		}
		defer d.close()
		return benchRiverOn(ctx, o, d)
	}
	d, err := riverSQLite(dsn, o.riverConn)
	if err != nil {
		return result{}, err
	}
	defer d.close()
	return benchRiverOn(ctx, o, d)
}

func benchRiverOn[TTx any](ctx context.Context, o options, d *riverDB[TTx]) (result, error) {
	if err := d.migrate(ctx); err != nil {
		return result{}, fmt.Errorf("migrate: %w", err)
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, river.WorkFunc(func(context.Context, *river.Job[emptyArgs]) error { return nil }))
	client, err := river.NewClient(d.driver, &river.Config{
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: o.workers}},
		Workers:           workers,
		FetchCooldown:     o.cooldown,
		FetchPollInterval: o.poll,
		Logger:            quiet(),
	})
	if err != nil {
		return result{}, err
	}
	// Completion events are sent once the completer has written the jobs.
	events, unsubscribe := client.SubscribeConfig(&river.SubscribeConfig{Kinds: []river.EventKind{river.EventKindJobCompleted}, ChanSize: o.n + 100})
	defer unsubscribe()

	params := make([]river.InsertManyParams, o.n)
	for i := range params {
		params[i] = river.InsertManyParams{Args: emptyArgs{}}
	}
	res := result{n: o.n}
	start := time.Now()
	if _, err := client.InsertMany(ctx, params); err != nil {
		return result{}, fmt.Errorf("insert: %w", err)
	}
	res.enqueue = time.Since(start)

	start = time.Now()
	if err := client.Start(ctx); err != nil {
		return result{}, err
	}
	deadline := time.After(runTimeout)
	for got := 0; got < o.n; {
		select {
		case <-events:
			got++
		case <-deadline:
			client.Stop(ctx)
			return result{}, fmt.Errorf("%d of %d jobs completed in %s", got, o.n, runTimeout)
		}
	}
	res.run = time.Since(start)
	stopCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := client.Stop(stopCtx); err != nil {
		return result{}, fmt.Errorf("stop: %w", err)
	}
	n, err := d.count(ctx, `SELECT count(*) FROM river_job WHERE state = 'completed'`)
	if err != nil {
		return result{}, err
	}
	if n != o.n {
		return result{}, fmt.Errorf("%d of %d jobs completed after the run", n, o.n)
	}
	return res, nil
}

// prepareRiver migrates, creates the effect table and inserts n crash-check jobs.
func prepareRiver[TTx any](ctx context.Context, d *riverDB[TTx], n int) error {
	if err := d.migrate(ctx); err != nil {
		return err
	}
	tx, err := d.begin(ctx)
	if err != nil {
		return err
	}
	if err := d.exec(ctx, tx, effectTable); err != nil {
		d.rollback(ctx, tx)
		return err
	}
	if err := d.commit(ctx, tx); err != nil {
		return err
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, river.WorkFunc(func(context.Context, *river.Job[crashArgs]) error { return nil }))
	client, err := river.NewClient(d.driver, &river.Config{Workers: workers, Logger: quiet()})
	if err != nil {
		return err
	}
	params := make([]river.InsertManyParams, n)
	for i := range params {
		params[i] = river.InsertManyParams{Args: crashArgs{Seq: i}, InsertOpts: &river.InsertOpts{MaxAttempts: 100}}
	}
	_, err = client.InsertMany(ctx, params)
	return err
}

// childRiver runs crash-check jobs until total are completed. The handler
// records its effect and completes the job in one transaction
// (river.JobCompleteTx): the effect and the completion commit together.
func childRiver[TDriver riverdriver.Driver[TTx], TTx any](ctx context.Context, o options, d *riverDB[TTx]) error {
	pid := os.Getpid()
	workers := river.NewWorkers()
	river.AddWorker(workers, river.WorkFunc(func(ctx context.Context, j *river.Job[crashArgs]) error {
		time.Sleep(o.jobSleep) // the job's work
		tx, err := d.begin(ctx)
		if err != nil {
			return err
		}
		q := fmt.Sprintf(`INSERT INTO bench_effect (job_id, attempt, pid, applied) VALUES ('%d', %d, %d, 1)`, j.ID, j.Attempt, pid)
		if err := d.exec(ctx, tx, q); err != nil {
			d.rollback(ctx, tx)
			return err
		}
		if _, err := river.JobCompleteTx[TDriver](ctx, tx, j); err != nil {
			d.rollback(ctx, tx)
			return err
		}
		return d.commit(ctx, tx)
	}))
	client, err := river.NewClient(d.driver, &river.Config{
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: o.workers}},
		Workers:           workers,
		FetchCooldown:     o.cooldown,
		FetchPollInterval: o.poll,
		// A killed child's running jobs are rescued (run again) this long
		// after they started, as the platform's lease expires.
		JobTimeout:           crashTimeout,
		RescueStuckJobsAfter: crashTimeout + crashLeaseGrace,
		Logger:               quiet(),
	})
	if err != nil {
		return err
	}
	if err := client.Start(ctx); err != nil {
		return err
	}
	werr := waitCountFn(ctx, func() (int, error) {
		return d.count(ctx, `SELECT count(*) FROM river_job WHERE state = 'completed'`)
	}, o.childTotal)
	return errors.Join(werr, client.Stop(ctx))
}

func waitCountFn(ctx context.Context, count func() (int, error), want int) error {
	for {
		n, err := count()
		if err != nil {
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

// runChild is the crash check's child process.
func runChild(o options) error {
	ctx := context.Background()
	switch o.child {
	case "platform":
		return childPlatform(ctx, o)
	case "river":
		if store.IsPostgresDSN(o.childDSN) {
			d, err := riverPostgres(ctx, o.childDSN)
			if err != nil {
				return err
			}
			defer d.close()
			return childRiver[*riverpgxv5.Driver](ctx, o, d)
		}
		d, err := riverSQLite(o.childDSN, o.riverConn)
		if err != nil {
			return err
		}
		defer d.close()
		return childRiver[*riversqlite.Driver](ctx, o, d)
	}
	return errors.New("unknown -child " + strconv.Quote(o.child))
}
