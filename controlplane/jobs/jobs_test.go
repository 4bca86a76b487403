package jobs

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

var t0 = time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)

func TestMain(m *testing.M) { pgtest.Main(m) }

// eachEngine runs test once on SQLite and once on PostgreSQL.
func eachEngine(t *testing.T, test func(t *testing.T, e pgtest.Engine)) {
	for _, e := range pgtest.Engines() {
		t.Run(e.Name, func(t *testing.T) { test(t, e) })
	}
}

func openDB(t *testing.T, path string) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// mustNew is New, failing the test on error.
func mustNew(t *testing.T, db *store.DB, clk clock.Clock, cfg Config) *Runner {
	t.Helper()
	r, err := New(cfg, Deps{DB: db, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func newRunner(t *testing.T, db *store.DB, clk clock.Clock, cfg Config) *Runner {
	t.Helper()
	r := mustNew(t, db, clk, cfg)
	t.Cleanup(func() { r.Close() })
	return r
}

// Run returns at once when it has nothing to run: no workers, a runner
// closed, or another Run already running; New refuses a missing database.
func TestRunReturnsAtOnce(t *testing.T) {
	db := openDB(t, filepath.Join(t.TempDir(), "jobs.db"))
	clk := clock.NewFake(t0)
	running := newRunner(t, db, clk, Config{})
	ctx, stop := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() { first <- running.Run(ctx) }()
	for _, tc := range []struct {
		name string
		r    func() *Runner
	}{
		{"no workers", func() *Runner { return newRunner(t, db, clk, Config{Workers: -1}) }},
		{"closed", func() *Runner { r := newRunner(t, db, clk, Config{}); r.Close(); return r }},
		{"already running", func() *Runner { return running }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.r()
			if r == running {
				// The first Run may not have started yet: close the race by
				// waiting until it holds the runner.
				for {
					r.mu.Lock()
					started := r.started
					r.mu.Unlock()
					if started {
						break
					}
					runtime.Gosched()
				}
			}
			if err := r.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
	stop()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{}, Deps{}); !errors.Is(err, ErrNotConfigured) {
		t.Fatalf("New without a database: %v", err)
	}
}

func env(t *testing.T, e pgtest.Engine) (*store.DB, *clock.Fake, *Runner) {
	db := openDB(t, e.DSN(t))
	clk := clock.NewFake(t0)
	return db, clk, newRunner(t, db, clk, Config{})
}

func mustRunDue(t *testing.T, r *Runner, want int) {
	t.Helper()
	n, err := r.RunDue(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n != want {
		t.Fatalf("RunDue ran %d jobs, want %d", n, want)
	}
}

func mustGet(t *testing.T, r *Runner, id string) Info {
	t.Helper()
	in, err := r.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func TestRetryScheduleExact(t *testing.T) { eachEngine(t, testRetryScheduleExact) }

func testRetryScheduleExact(t *testing.T, e pgtest.Engine) {
	_, clk, r := env(t, e)
	ctx := context.Background()
	var attempts []int
	r.Register("flaky", func(ctx context.Context, j Job) error {
		attempts = append(attempts, j.Attempt)
		return fmt.Errorf("upstream said no (attempt %d)", j.Attempt)
	}, KindOptions{MaxAttempts: 4, Backoff: []time.Duration{time.Minute, 5 * time.Minute}})
	id, err := r.Enqueue(ctx, nil, "flaky", map[string]int{"n": 1}, EnqueueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name    string
		advance time.Duration
		ran     int
		state   State
		runAt   time.Time
	}{
		{"first attempt at once", 0, 1, Queued, t0.Add(time.Minute)},
		{"not before the first backoff", 59 * time.Second, 0, Queued, t0.Add(time.Minute)},
		{"second attempt after 1m", time.Second, 1, Queued, t0.Add(6 * time.Minute)},
		{"third attempt after 5m", 5 * time.Minute, 1, Queued, t0.Add(11 * time.Minute)},
		{"last backoff repeats, fourth attempt is the last", 5 * time.Minute, 1, Dead, t0.Add(11 * time.Minute)},
		{"dead jobs do not run", 24 * time.Hour, 0, Dead, t0.Add(11 * time.Minute)},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			clk.Advance(s.advance)
			mustRunDue(t, r, s.ran)
			in := mustGet(t, r, id)
			if in.State != s.state || !in.RunAt.Equal(s.runAt) {
				t.Fatalf("state %s run_at %s; want %s %s", in.State, in.RunAt, s.state, s.runAt)
			}
		})
	}
	in := mustGet(t, r, id)
	if in.Attempt != 4 || in.LastError != "upstream said no (attempt 4)" || in.FinishedAt.IsZero() {
		t.Fatalf("dead job not kept with its last error: %+v", in)
	}
	if fmt.Sprint(attempts) != "[1 2 3 4]" {
		t.Fatalf("attempts %v", attempts)
	}
	if got := counterValue(t, r.m.runs.WithLabelValues("flaky", "retry")); got != 3 {
		t.Fatalf("retry count %v", got)
	}
	if got := counterValue(t, r.m.runs.WithLabelValues("flaky", "dead")); got != 1 {
		t.Fatalf("dead count %v", got)
	}
}

func TestOutcomes(t *testing.T) { eachEngine(t, testOutcomes) }

func testOutcomes(t *testing.T, e pgtest.Engine) {
	cases := []struct {
		name    string
		h       Handler
		state   State
		attempt int
		errHas  string
	}{
		{"done", func(context.Context, Job) error { return nil }, Done, 1, ""},
		{"permanent error dies at once", func(context.Context, Job) error { return Permanent(errors.New("refused")) }, Dead, 1, "refused"},
		{"panic is an error", func(context.Context, Job) error { panic("boom") }, Queued, 1, "panicked: boom"},
		{"timeout ends the attempt", func(ctx context.Context, _ Job) error { <-ctx.Done(); return ctx.Err() }, Queued, 1, "deadline exceeded"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, r := env(t, e)
			r.Register("k", c.h, KindOptions{MaxAttempts: 3, Timeout: 20 * time.Millisecond})
			id, err := r.Enqueue(context.Background(), nil, "k", nil, EnqueueOptions{})
			if err != nil {
				t.Fatal(err)
			}
			mustRunDue(t, r, 1)
			in := mustGet(t, r, id)
			if in.State != c.state || in.Attempt != c.attempt || !strings.Contains(in.LastError, c.errHas) {
				t.Fatalf("%s attempt %d error %q", in.State, in.Attempt, in.LastError)
			}
		})
	}
}

func TestEnqueue(t *testing.T) { eachEngine(t, testEnqueue) }

func testEnqueue(t *testing.T, e pgtest.Engine) {
	db, clk, r := env(t, e)
	ctx := context.Background()
	var got []Job
	r.Register("mail", func(_ context.Context, j Job) error { got = append(got, j); return nil }, KindOptions{})

	t.Run("idempotency key returns the first id", func(t *testing.T) {
		a, err := r.Enqueue(ctx, nil, "mail", map[string]string{"to": "a"}, EnqueueOptions{Key: "order-1"})
		if err != nil {
			t.Fatal(err)
		}
		b, err := r.Enqueue(ctx, nil, "mail", map[string]string{"to": "b"}, EnqueueOptions{Key: "order-1"})
		if err != nil || a != b {
			t.Fatalf("second enqueue: %q %v, want %q", b, err, a)
		}
		mustRunDue(t, r, 1)
		if string(got[0].Payload) != `{"to":"a"}` || got[0].Key != "order-1" {
			t.Fatalf("ran %+v", got[0])
		}
		c, err := r.Enqueue(ctx, nil, "mail", nil, EnqueueOptions{Key: "order-1"})
		if err != nil || c != a {
			t.Fatalf("after done: %q %v", c, err)
		}
		mustRunDue(t, r, 0)
	})
	t.Run("run at a later time", func(t *testing.T) {
		got = nil
		if _, err := r.Enqueue(ctx, nil, "mail", json.RawMessage(`{"later":true}`), EnqueueOptions{RunAt: clk.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		mustRunDue(t, r, 0)
		clk.Advance(time.Hour)
		mustRunDue(t, r, 1)
		if string(got[0].Payload) != `{"later":true}` || !got[0].RunAt.Equal(clk.Now()) {
			t.Fatalf("ran %+v", got[0])
		}
	})
	t.Run("rolled back with the caller's transaction", func(t *testing.T) {
		boom := errors.New("caller failed")
		var id string
		err := db.Tx(ctx, func(tx *sql.Tx) error {
			var err error
			if id, err = r.Enqueue(ctx, tx, "mail", nil, EnqueueOptions{Key: "tx-1"}); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatal(err)
		}
		if _, err := r.Get(ctx, id); !errors.Is(err, ErrNotFound) {
			t.Fatalf("job survived the rollback: %v", err)
		}
		mustRunDue(t, r, 0)
		err = db.Tx(ctx, func(tx *sql.Tx) error {
			_, err := r.Enqueue(ctx, tx, "mail", nil, EnqueueOptions{Key: "tx-1"})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		mustRunDue(t, r, 1)
	})
	refusals := []struct {
		name string
		kind string
		p    any
		o    EnqueueOptions
		want error
	}{
		{"unknown kind", "nope", nil, EnqueueOptions{}, ErrUnknownKind},
		{"key too long", "mail", nil, EnqueueOptions{Key: strings.Repeat("k", MaxKeyLength+1)}, ErrBadKey},
		{"payload not JSON", "mail", make(chan int), EnqueueOptions{}, nil},
	}
	for _, c := range refusals {
		t.Run(c.name, func(t *testing.T) {
			_, err := r.Enqueue(ctx, nil, c.kind, c.p, c.o)
			if err == nil || (c.want != nil && !errors.Is(err, c.want)) {
				t.Fatalf("err %v, want %v", err, c.want)
			}
		})
	}
	mustRunDue(t, r, 0)
}

// A runner that claimed a job and vanished holds it until the lease
// expires; then another runner runs it, and the vanished one's late outcome
// is dropped.
func TestLeaseExpiryAfterCrash(t *testing.T) { eachEngine(t, testLeaseExpiryAfterCrash) }

func testLeaseExpiryAfterCrash(t *testing.T, e pgtest.Engine) {
	path := e.DSN(t)
	clk := clock.NewFake(t0)
	cfg := Config{LeaseGrace: 10 * time.Second}
	a := newRunner(t, openDB(t, path), clk, cfg)
	b := newRunner(t, openDB(t, path), clk, cfg)
	var ranB atomic.Int32
	a.Register("work", func(context.Context, Job) error { return nil }, KindOptions{Timeout: time.Minute, MaxAttempts: 2})
	b.Register("work", func(_ context.Context, j Job) error {
		if j.Attempt != 2 {
			return fmt.Errorf("attempt %d", j.Attempt)
		}
		ranB.Add(1)
		return nil
	}, KindOptions{Timeout: time.Minute, MaxAttempts: 2})
	ctx := context.Background()
	id, err := a.Enqueue(ctx, nil, "work", nil, EnqueueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	held, err := a.claim(ctx, 10) // a claims, then "crashes"
	if err != nil || len(held) != 1 {
		t.Fatalf("claim: %v %d", err, len(held))
	}
	if in := mustGet(t, b, id); in.State != Running || !in.LeaseUntil.Equal(t0.Add(70*time.Second)) {
		t.Fatalf("lease: %+v", in)
	}
	mustRunDue(t, b, 0)
	clk.Advance(70 * time.Second)
	mustRunDue(t, b, 0) // lease_until is not yet past
	clk.Advance(time.Millisecond)
	mustRunDue(t, b, 1)
	if in := mustGet(t, b, id); in.State != Done || in.Attempt != 2 || ranB.Load() != 1 {
		t.Fatalf("after takeover: %+v", in)
	}
	a.run(ctx, held[0]) // the late runner finishes: fenced off
	if in := mustGet(t, b, id); in.State != Done || in.Attempt != 2 {
		t.Fatalf("late outcome overwrote: %+v", in)
	}
	if got := counterValue(t, a.m.runs.WithLabelValues("work", "lost")); got != 1 {
		t.Fatalf("lost count %v", got)
	}

	t.Run("expired lease on the last attempt is dead", func(t *testing.T) {
		id, err := a.Enqueue(ctx, nil, "work", nil, EnqueueOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if held, err := a.claim(ctx, 10); err != nil || len(held) != 1 {
				t.Fatalf("claim: %v %d", err, len(held))
			}
			clk.Advance(71 * time.Second)
		}
		mustRunDue(t, b, 0)
		in := mustGet(t, b, id)
		if in.State != Dead || !strings.Contains(in.LastError, "lease expired during attempt 2 of 2") {
			t.Fatalf("%+v", in)
		}
	})
}

// Two runners on one database (two connections pools, as two processes
// would have) drain a queue together: every job runs exactly once.
func TestTwoRunnersRunEachJobOnce(t *testing.T) { eachEngine(t, testTwoRunnersRunEachJobOnce) }

func testTwoRunnersRunEachJobOnce(t *testing.T, e pgtest.Engine) {
	path := e.DSN(t)
	clk := clock.NewFake(t0)
	const n = 200
	var mu sync.Mutex
	runs := map[string]int{}
	h := func(_ context.Context, j Job) error {
		mu.Lock()
		runs[j.ID]++
		mu.Unlock()
		return nil
	}
	ctx := context.Background()
	var rs []*Runner
	for range 2 {
		r := newRunner(t, openDB(t, path), clk, Config{Workers: 4, PollInterval: time.Hour})
		r.Register("work", h, KindOptions{})
		rs = append(rs, r)
	}
	for i := range n {
		if _, err := rs[i%2].Enqueue(ctx, nil, "work", i, EnqueueOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("RunDue concurrently", func(t *testing.T) {
		var wg sync.WaitGroup
		var total atomic.Int64
		for _, r := range rs {
			wg.Go(func() {
				for range 3 {
					k, err := r.RunDue(ctx)
					if err != nil {
						t.Error(err)
					}
					total.Add(int64(k))
				}
			})
		}
		wg.Wait()
		if total.Load() != n || len(runs) != n {
			t.Fatalf("ran %d (%d distinct), want %d", total.Load(), len(runs), n)
		}
		for id, c := range runs {
			if c != 1 {
				t.Fatalf("job %s ran %d times", id, c)
			}
		}
	})
	t.Run("Run workers", func(t *testing.T) {
		done := make(chan string, n)
		for _, r := range rs {
			r.Register("work2", func(_ context.Context, j Job) error {
				h(ctx, j)
				done <- j.ID
				return nil
			}, KindOptions{})
			go r.Run(ctx)
		}
		for i := range n {
			if _, err := rs[i%2].Enqueue(ctx, nil, "work2", i, EnqueueOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		for i := range n {
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				t.Fatalf("only %d of %d jobs ran: the workers did not wake", i, n)
			}
		}
		for _, r := range rs {
			r.Close()
		}
		if len(runs) != 2*n {
			t.Fatalf("%d distinct jobs ran, want %d", len(runs), 2*n)
		}
		for id, c := range runs {
			if c != 1 {
				t.Fatalf("job %s ran %d times", id, c)
			}
		}
	})
}

// Run's workers wake on Enqueue even with an hour-long poll interval.
func TestRunWakesOnEnqueue(t *testing.T) { eachEngine(t, testRunWakesOnEnqueue) }

func testRunWakesOnEnqueue(t *testing.T, e pgtest.Engine) {
	_, _, r := env(t, e)
	r.cfg.PollInterval = time.Hour
	got := make(chan Job, 1)
	r.Register("ping", func(_ context.Context, j Job) error { got <- j; return nil }, KindOptions{})
	go r.Run(context.Background())
	id, err := r.Enqueue(context.Background(), nil, "ping", "hi", EnqueueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case j := <-got:
		if j.ID != id || string(j.Payload) != `"hi"` {
			t.Fatalf("%+v", j)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("worker did not wake on Enqueue")
	}
	r.Close()
	if _, err := r.Enqueue(context.Background(), nil, "ping", nil, EnqueueOptions{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("enqueue after close: %v", err)
	}
}

// Close gives an attempt in progress back: it runs again after a restart
// without using up an attempt.
func TestRestartResumes(t *testing.T) { eachEngine(t, testRestartResumes) }

func testRestartResumes(t *testing.T, e pgtest.Engine) {
	path := e.DSN(t)
	clk := clock.NewFake(t0)
	ctx := context.Background()
	a := mustNew(t, openDB(t, path), clk, Config{PollInterval: time.Hour})
	started := make(chan struct{})
	a.Register("long", func(ctx context.Context, _ Job) error {
		close(started)
		<-ctx.Done()
		return ctx.Err()
	}, KindOptions{MaxAttempts: 1})
	a.Register("later", func(context.Context, Job) error { return nil }, KindOptions{})
	id, err := a.Enqueue(ctx, nil, "long", nil, EnqueueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	later, err := a.Enqueue(ctx, nil, "later", nil, EnqueueOptions{RunAt: t0.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	go a.Run(ctx)
	<-started
	a.Close()
	if in := mustGet(t, a, id); in.State != Queued || in.Attempt != 0 {
		t.Fatalf("after close: %+v", in)
	}

	b := newRunner(t, openDB(t, path), clk, Config{})
	var ran []string
	for _, k := range []string{"long", "later"} {
		b.Register(k, func(_ context.Context, j Job) error { ran = append(ran, j.Kind); return nil }, KindOptions{MaxAttempts: 1})
	}
	mustRunDue(t, b, 1)
	clk.Advance(time.Hour)
	mustRunDue(t, b, 1)
	if fmt.Sprint(ran) != "[long later]" {
		t.Fatalf("ran %v", ran)
	}
	for _, id := range []string{id, later} {
		if in := mustGet(t, b, id); in.State != Done || in.Attempt != 1 {
			t.Fatalf("%+v", in)
		}
	}
}

func TestPeriodic(t *testing.T) { eachEngine(t, testPeriodic) }

func testPeriodic(t *testing.T, e pgtest.Engine) {
	path := e.DSN(t)
	clk := clock.NewFake(t0.Add(25 * time.Minute)) // 10:25
	var slots []string
	h := func(_ context.Context, j Job) error {
		slots = append(slots, j.RunAt.Format("15:04"))
		return nil
	}
	r := newRunner(t, openDB(t, path), clk, Config{})
	r.Register("hourly", h, KindOptions{})
	r.Every("hourly", time.Hour)
	steps := []struct {
		name    string
		advance time.Duration
		ran     int
	}{
		{"current slot runs at start", 0, 1},
		{"not again in the same slot", 30 * time.Minute, 0},
		{"next slot", 5 * time.Minute, 1},
		{"five hours down: one run, not five", 5 * time.Hour, 1},
		{"then the first slot after now", 59 * time.Minute, 0},
		{"and on", time.Minute, 1},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			clk.Advance(s.advance)
			mustRunDue(t, r, s.ran)
		})
	}
	if fmt.Sprint(slots) != "[10:00 11:00 12:00 17:00]" {
		t.Fatalf("slots %v", slots)
	}
	t.Run("a restarted runner keeps the schedule", func(t *testing.T) {
		r.Close()
		r2 := newRunner(t, openDB(t, path), clk, Config{})
		r2.Register("hourly", h, KindOptions{})
		r2.Every("hourly", time.Hour)
		mustRunDue(t, r2, 0)
		clk.Advance(time.Hour)
		mustRunDue(t, r2, 1)
		if slots[len(slots)-1] != "18:00" {
			t.Fatalf("slots %v", slots)
		}
	})
}

func TestPurgeAndMetrics(t *testing.T) { eachEngine(t, testPurgeAndMetrics) }

func testPurgeAndMetrics(t *testing.T, e pgtest.Engine) {
	_, clk, r := env(t, e)
	ctx := context.Background()
	r.Register("ok", func(context.Context, Job) error { return nil }, KindOptions{})
	r.Register("bad", func(context.Context, Job) error { return errors.New("no") }, KindOptions{MaxAttempts: 1})
	ok, _ := r.Enqueue(ctx, nil, "ok", nil, EnqueueOptions{Key: "once"})
	bad, _ := r.Enqueue(ctx, nil, "bad", nil, EnqueueOptions{})
	if _, err := r.Enqueue(ctx, nil, "ok", nil, EnqueueOptions{RunAt: t0.Add(30 * 24 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	mustRunDue(t, r, 2)

	reg := prometheus.NewPedanticRegistry()
	for _, c := range r.Collectors() {
		reg.MustRegister(c)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			v := m.GetGauge().GetValue() + m.GetCounter().GetValue() + float64(m.GetHistogram().GetSampleCount())
			got[mf.GetName()+"{"+strings.Join(labels, ",")+"}"] = fmt.Sprint(v)
		}
	}
	want := map[string]string{
		"platform_jobs_queue_depth{kind=bad,state=dead}":  "1",
		"platform_jobs_queue_depth{kind=ok,state=queued}": "1",
		"platform_jobs_runs_total{kind=bad,result=dead}":  "1",
		"platform_jobs_runs_total{kind=ok,result=done}":   "1",
		"platform_jobs_run_seconds{kind=bad}":             "1",
		"platform_jobs_run_seconds{kind=ok}":              "1",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("metrics\n%v\nwant\n%v", got, want)
	}

	clk.Advance(DefaultKeepDone - time.Second)
	if n, err := r.Purge(ctx); err != nil || n != 0 {
		t.Fatalf("purge too early: %d %v", n, err)
	}
	clk.Advance(2 * time.Second)
	if n, err := r.Purge(ctx); err != nil || n != 1 {
		t.Fatalf("purge: %d %v", n, err)
	}
	if _, err := r.Get(ctx, ok); !errors.Is(err, ErrNotFound) {
		t.Fatalf("done job kept: %v", err)
	}
	if in := mustGet(t, r, bad); in.State != Dead {
		t.Fatalf("dead job purged: %+v", in)
	}
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// TestReclaimAbandoned: a process killed while running a job leaves it
// leased; the next process on the same SQLite file takes it back at once
// instead of waiting for the lease, and the abandoned attempt counts.
func TestReclaimAbandoned(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jobs.db")
	clk := clock.NewFake(t0)
	a := newRunner(t, openDB(t, path), clk, Config{})
	a.Register("work", func(context.Context, Job) error { return nil }, KindOptions{Timeout: time.Hour})
	ctx := context.Background()
	id, err := a.Enqueue(ctx, nil, "work", nil, EnqueueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if held, err := a.claim(ctx, 10); err != nil || len(held) != 1 { // a claims, then is killed
		t.Fatalf("claim: %v %d", err, len(held))
	}
	b := newRunner(t, openDB(t, path), clk, Config{})
	var ran atomic.Int32
	b.Register("work", func(_ context.Context, j Job) error {
		ran.Add(1)
		if j.Attempt != 2 {
			return fmt.Errorf("attempt %d, want 2", j.Attempt)
		}
		return nil
	}, KindOptions{Timeout: time.Hour})
	mustRunDue(t, b, 0) // leased for an hour: not due
	if n, err := b.ReclaimAbandoned(ctx); err != nil || n != 1 {
		t.Fatalf("reclaimed %d, %v", n, err)
	}
	mustRunDue(t, b, 1) // the same instant: taken back at once
	if in := mustGet(t, b, id); in.State != Done || ran.Load() != 1 {
		t.Fatalf("after reclaim: %+v", in)
	}
}

// A claim takes at most its limit, oldest run_at first, and Run never holds
// more leases than it has workers.
func TestClaimLimit(t *testing.T) { eachEngine(t, testClaimLimit) }

func testClaimLimit(t *testing.T, e pgtest.Engine) {
	db, _, r := env(t, e)
	ctx := context.Background()
	r.Register("work", func(context.Context, Job) error { return nil }, KindOptions{})
	var want []string
	err := db.Tx(ctx, func(tx *sql.Tx) error {
		for i := range 50 {
			// Enqueued newest first: the claim must order by run_at.
			id, err := r.Enqueue(ctx, tx, "work", i, EnqueueOptions{RunAt: t0.Add(-time.Duration(i) * time.Second)})
			if err != nil {
				return err
			}
			want = append(want, id)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Reverse(want)
	countRunning := func() int {
		var n int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM jobs WHERE state = 'running'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, tc := range []struct {
		name  string
		limit int
	}{{"one", 1}, {"seven", 7}, {"the rest and more", 100}} {
		t.Run(tc.name, func(t *testing.T) {
			before := countRunning()
			cs, err := r.claim(ctx, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			wantN := min(tc.limit, 50-before)
			if len(cs) != wantN || countRunning() != before+wantN {
				t.Fatalf("claim(%d) took %d jobs, %d leased in the store; want %d", tc.limit, len(cs), countRunning()-before, wantN)
			}
			for i, c := range cs {
				if c.ID != want[before+i] || c.Attempt != 1 {
					t.Fatalf("claim %d: job %s attempt %d, want %s (oldest first) attempt 1", i, c.ID, c.Attempt, want[before+i])
				}
			}
		})
	}
	t.Run("Run holds one lease per worker", func(t *testing.T) {
		db2, _, r2 := env(t, e)
		release := make(chan struct{})
		started := make(chan struct{}, 50)
		r2.cfg.Workers = 3
		r2.Register("block", func(ctx context.Context, j Job) error {
			started <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil
		}, KindOptions{})
		for i := range 20 {
			if _, err := r2.Enqueue(ctx, nil, "block", i, EnqueueOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		done := make(chan error, 1)
		go func() { done <- r2.Run(ctx) }()
		wait := func(k int) {
			for i := range k {
				select {
				case <-started:
				case <-time.After(20 * time.Second):
					t.Fatalf("%d of %d jobs started: the workers did not claim them", i, k)
				}
			}
		}
		wait(3)
		var n int
		if err := db2.QueryRowContext(ctx, `SELECT count(*) FROM jobs WHERE state = 'running'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 3 {
			t.Fatalf("%d jobs leased with 3 workers busy, want 3", n)
		}
		close(release)
		wait(17)
		r2.Close()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// Run's batched outcome writes record every kind of ending: done, a retry
// then done, and dead.
func TestRunRecordsEveryOutcome(t *testing.T) { eachEngine(t, testRunRecordsEveryOutcome) }

func testRunRecordsEveryOutcome(t *testing.T, e pgtest.Engine) {
	_, _, r := env(t, e)
	r.cfg.Workers = 4
	ctx := context.Background()
	calls := make(chan string, 100)
	var flaky sync.Map
	r.Register("ok", func(context.Context, Job) error { calls <- "ok"; return nil }, KindOptions{})
	r.Register("flaky", func(_ context.Context, j Job) error {
		calls <- "flaky"
		if _, again := flaky.LoadOrStore(j.ID, true); !again {
			return errors.New("first attempt fails")
		}
		return nil
	}, KindOptions{Backoff: []time.Duration{time.Nanosecond}}) // due again at once on the fake clock
	r.Register("bad", func(context.Context, Job) error { calls <- "bad"; return Permanent(errors.New("refused")) }, KindOptions{})
	const n = 5
	ids := map[string][]string{}
	for _, k := range []string{"ok", "flaky", "bad"} {
		for i := range n {
			id, err := r.Enqueue(ctx, nil, k, i, EnqueueOptions{})
			if err != nil {
				t.Fatal(err)
			}
			ids[k] = append(ids[k], id)
		}
	}
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	for i := range 4 * n { // ok n, flaky 2n, bad n
		select {
		case <-calls:
		case <-time.After(20 * time.Second):
			t.Fatalf("%d of %d handler calls", i, 4*n)
		}
	}
	r.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		kind    string
		state   State
		attempt int
		lastErr string
	}{{"ok", Done, 1, ""}, {"flaky", Done, 2, ""}, {"bad", Dead, 1, "refused"}} {
		t.Run(tc.kind, func(t *testing.T) {
			for _, id := range ids[tc.kind] {
				in, err := r.Get(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				if in.State != tc.state || in.Attempt != tc.attempt || in.LastError != tc.lastErr {
					t.Fatalf("%s: state %s attempt %d error %q, want %s %d %q", id, in.State, in.Attempt, in.LastError, tc.state, tc.attempt, tc.lastErr)
				}
			}
		})
	}
}

func TestEnqueueMany(t *testing.T) { eachEngine(t, testEnqueueMany) }

// testEnqueueMany: many jobs in multi-row inserts, ids in order, keys
// deduplicated within the batch and against kept jobs, batches past
// enqueueBatch, and refusals that store nothing.
func testEnqueueMany(t *testing.T, e pgtest.Engine) {
	db, _, r := env(t, e)
	ctx := context.Background()
	var ran []string
	r.Register("mail", func(_ context.Context, j Job) error { ran = append(ran, string(j.Payload)); return nil }, KindOptions{})
	count := func() int {
		var n int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM jobs`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	first, err := r.Enqueue(ctx, nil, "mail", "kept", EnqueueOptions{Key: "k-kept"})
	if err != nil {
		t.Fatal(err)
	}
	items := make([]Item, 2*enqueueBatch+3)
	for i := range items {
		items[i].Payload = i
	}
	items[1].Options.Key = "k-dup"
	items[enqueueBatch+5].Options.Key = "k-dup" // in the next statement
	items[2].Options.Key = "k-kept"
	items[3].Options.Key = "k-in"
	items[4].Options.Key = "k-in" // the same statement
	ids, err := r.EnqueueMany(ctx, nil, "mail", items)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != len(items) {
		t.Fatalf("%d ids for %d items", len(ids), len(items))
	}
	seen := map[string]int{}
	for i, id := range ids {
		if j, dup := seen[id]; dup {
			ok := (i == enqueueBatch+5 && j == 1) || (i == 4 && j == 3)
			if !ok {
				t.Fatalf("items %d and %d got the same id %s", j, i, id)
			}
			continue
		}
		seen[id] = i
	}
	if ids[2] != first {
		t.Fatalf("a kept job's key: id %s, want %s", ids[2], first)
	}
	if ids[enqueueBatch+5] != ids[1] || ids[4] != ids[3] {
		t.Fatalf("a key repeated in the batch got another id")
	}
	want := 1 + len(items) - 3 // the kept job, every item but the three repeats
	if n := count(); n != want {
		t.Fatalf("%d rows, want %d", n, want)
	}
	mustRunDue(t, r, want)
	if len(ran) != want {
		t.Fatalf("ran %d jobs, want %d", len(ran), want)
	}

	for _, tc := range []struct {
		name  string
		kind  string
		items []Item
		err   error
	}{
		{"unknown kind", "nope", []Item{{Payload: 1}}, ErrUnknownKind},
		{"a key too long among good items", "mail", []Item{{Payload: 1}, {Options: EnqueueOptions{Key: strings.Repeat("k", MaxKeyLength+1)}}}, ErrBadKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := count()
			if _, err := r.EnqueueMany(ctx, nil, tc.kind, tc.items); !errors.Is(err, tc.err) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			if n := count(); n != before {
				t.Fatalf("%d rows after a refusal, had %d", n, before)
			}
		})
	}
}
