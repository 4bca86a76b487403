package jobs

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

// A claim on PostgreSQL passes over jobs another claim holds locked instead
// of waiting for it or aborting: a replica in the middle of a claim does not
// stall the others.
func TestClaimSkipsLockedJobs(t *testing.T) {
	path := pgtest.MigratedDSN(t)
	clk := clock.NewFake(t0)
	ctx := context.Background()
	a := newRunner(t, openDB(t, path), clk, Config{})
	b := newRunner(t, openDB(t, path), clk, Config{})
	var ran sync.Map
	for _, r := range []*Runner{a, b} {
		r.Register("work", func(_ context.Context, j Job) error { ran.Store(j.ID, true); return nil }, KindOptions{})
	}
	var ids []string
	for i := range 5 {
		id, err := a.Enqueue(ctx, nil, "work", i, EnqueueOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	// Another replica's claim, caught between its SELECT and its commit,
	// holds the two oldest jobs.
	held, err := a.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Rollback()
	rows, err := held.QueryContext(ctx, `SELECT id FROM jobs WHERE id IN (?,?) FOR UPDATE`, ids[0], ids[1])
	if err != nil {
		t.Fatal(err)
	}
	rows.Close()

	done := make(chan error, 1)
	go func() {
		n, err := b.RunDue(ctx)
		if err == nil && n != 3 {
			t.Errorf("RunDue beside a held claim ran %d jobs, want the 3 not held", n)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the claim waited for the rows another claim holds instead of skipping them")
	}
	for i, id := range ids {
		_, ok := ran.Load(id)
		if ok != (i >= 2) {
			t.Fatalf("job %d ran=%v", i, ok)
		}
	}
	if err := held.Rollback(); err != nil {
		t.Fatal(err)
	}
	mustRunDue(t, b, 2) // released: now claimed
}

// Many replicas' workers drain one queue at once: each job runs exactly
// once, and claims do not fail under contention.
func TestReplicasDrainOnce(t *testing.T) {
	path := pgtest.MigratedDSN(t)
	clk := clock.NewFake(t0)
	ctx := context.Background()
	const replicas, n = 3, 300
	var mu sync.Mutex
	runs := map[string]int{}
	done := make(chan struct{}, n)
	var rs []*Runner
	for range replicas {
		r := newRunner(t, openDB(t, path), clk, Config{Workers: 4, PollInterval: 5 * time.Millisecond})
		r.Register("work", func(_ context.Context, j Job) error {
			mu.Lock()
			runs[j.ID]++
			mu.Unlock()
			done <- struct{}{}
			return nil
		}, KindOptions{})
		rs = append(rs, r)
	}
	// Enqueued before any worker starts, so that they all compete for the
	// same backlog.
	for i := range n {
		if _, err := rs[i%replicas].Enqueue(ctx, nil, "work", i, EnqueueOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range rs {
		go r.Run(ctx)
	}
	deadline := time.After(60 * time.Second)
	for i := range n {
		select {
		case <-done:
		case <-deadline:
			t.Fatalf("%d of %d jobs ran", i, n)
		}
	}
	for _, r := range rs {
		r.Close()
	}
	if len(runs) != n {
		t.Fatalf("%d distinct jobs ran, want %d", len(runs), n)
	}
	for id, c := range runs {
		if c != 1 {
			t.Fatalf("job %s ran %d times", id, c)
		}
	}
	var per []float64
	for _, r := range rs {
		per = append(per, counterValue(t, r.m.runs.WithLabelValues("work", "done")))
	}
	t.Logf("jobs done per replica: %v", per)
}

// A replica that dies in the middle of a job (its process gone: no
// outcome is ever written, its store handle closed) leaves the job leased;
// another replica's running workers take it over once the lease expires,
// on their ordinary poll and not only at start.
func TestDeadReplicaJobTakenOverAfterLease(t *testing.T) {
	for _, e := range pgtest.Engines() {
		t.Run(e.Name, func(t *testing.T) { testDeadReplicaJobTakenOver(t, e) })
	}
}

func testDeadReplicaJobTakenOver(t *testing.T, e pgtest.Engine) {
	path := e.DSN(t)
	clk := clock.NewFake(t0)
	ctx := context.Background()
	opts := KindOptions{Timeout: time.Minute, MaxAttempts: 3}
	cfg := Config{LeaseGrace: 10 * time.Second, PollInterval: 5 * time.Millisecond}

	// Replica A: its handler starts and then the process "dies": its
	// database handle goes away, so whatever the attempt ends with cannot
	// be written, as after kill -9.
	dbA, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	a := mustNew(t, dbA, clk, cfg)
	started := make(chan Job, 1)
	release := make(chan struct{})
	a.Register("deliver", func(_ context.Context, j Job) error {
		started <- j
		<-release
		return nil
	}, opts)
	b := newRunner(t, openDB(t, path), clk, cfg)
	finished := make(chan Job, 1)
	b.Register("deliver", func(_ context.Context, j Job) error { finished <- j; return nil }, opts)

	id, err := a.Enqueue(ctx, nil, "deliver", map[string]string{"event": "evt_1"}, EnqueueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A's death stops its workers' claims too: one begun before the
	// handle closed would otherwise still run (database/sql lets a started
	// transaction finish), which kill -9 never allows.
	actx, killA := context.WithCancel(ctx)
	go a.Run(actx)
	var j Job
	select {
	case j = <-started:
	case <-time.After(20 * time.Second):
		t.Fatal("replica A did not start the job")
	}
	if j.ID != id || j.Attempt != 1 {
		t.Fatalf("A runs %+v", j)
	}
	killA()
	dbA.Close() // A is gone

	go b.Run(ctx)
	// B polls all along; the lease (timeout + grace = 70 s) holds it off.
	if in := mustGet(t, b, id); in.State != Running || !in.LeaseUntil.Equal(t0.Add(70*time.Second)) {
		t.Fatalf("while A holds it: %+v", in)
	}
	clk.Advance(70 * time.Second)
	b.Wake()
	if in := mustGet(t, b, id); in.State != Running || in.Attempt != 1 {
		t.Fatalf("taken over before the lease expired: %+v", in)
	}
	clk.Advance(time.Millisecond) // the lease is past: B's next poll claims it
	select {
	case j := <-finished:
		if j.ID != id || j.Attempt != 2 || string(j.Payload) != `{"event":"evt_1"}` {
			t.Fatalf("B ran %+v", j)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("replica B did not take the job over after its lease expired: %+v", mustGet(t, b, id))
	}
	b.Close()
	if in := mustGet(t, b, id); in.State != Done || in.Attempt != 2 {
		t.Fatalf("after takeover: %+v", in)
	}
	// A's handler returns after all: its outcome cannot be recorded.
	close(release)
	a.Close()
	if got := counterValue(t, a.m.runs.WithLabelValues("deliver", "lost")); got != 1 {
		t.Fatalf("A's late outcome: lost count %v", got)
	}
	if in := mustGet(t, b, id); in.State != Done || in.Attempt != 2 {
		t.Fatalf("A's late outcome changed the job: %+v", in)
	}
}

// A replica shut down cleanly (its context cancelled) gives its attempt
// back at once: another replica runs it without waiting for the lease and
// without using up an attempt.
func TestStoppedReplicaGivesJobBack(t *testing.T) {
	for _, e := range pgtest.Engines() {
		t.Run(e.Name, func(t *testing.T) {
			path := e.DSN(t)
			clk := clock.NewFake(t0)
			cfg := Config{PollInterval: 5 * time.Millisecond}
			actx, stopA := context.WithCancel(context.Background())
			a := newRunner(t, openDB(t, path), clk, cfg)
			started := make(chan struct{})
			a.Register("agent.run", func(ctx context.Context, _ Job) error {
				close(started)
				<-ctx.Done()
				return ctx.Err()
			}, KindOptions{MaxAttempts: 1})
			b := newRunner(t, openDB(t, path), clk, cfg)
			var ranB atomic.Int32
			finished := make(chan Job, 1)
			b.Register("agent.run", func(_ context.Context, j Job) error { ranB.Add(1); finished <- j; return nil }, KindOptions{MaxAttempts: 1})
			id, err := a.Enqueue(context.Background(), nil, "agent.run", nil, EnqueueOptions{})
			if err != nil {
				t.Fatal(err)
			}
			go a.Run(actx)
			<-started
			go b.Run(context.Background())
			stopA()
			a.Close()
			select {
			case j := <-finished:
				if j.ID != id || j.Attempt != 1 {
					t.Fatalf("B ran %+v", j)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("B did not run the job A gave back")
			}
			b.Close()
			if in := mustGet(t, b, id); in.State != Done || ranB.Load() != 1 {
				t.Fatalf("%+v", in)
			}
		})
	}
}
