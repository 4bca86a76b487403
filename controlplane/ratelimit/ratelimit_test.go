package ratelimit

import (
	"context"
	"errors"
	"fmt"
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

func TestMain(m *testing.M) { pgtest.Main(m) }

var t0 = time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)

// impl is one limiter under test, on a fresh state.
type impl struct {
	name string
	new  func(t *testing.T, clk clock.Clock) Limiter
}

func impls() []impl {
	return []impl{
		{"memory", func(_ *testing.T, clk clock.Clock) Limiter { return NewMemory(clk) }},
		{"store-sqlite", func(t *testing.T, clk clock.Clock) Limiter { return NewStore(pgtest.OpenSQLite(t), clk) }},
		{"store-postgres", func(t *testing.T, clk clock.Clock) Limiter { return NewStore(pgtest.Open(t), clk) }},
	}
}

func eachImpl(t *testing.T, test func(t *testing.T, mk func(clock.Clock) Limiter)) {
	for _, im := range impls() {
		t.Run(im.name, func(t *testing.T) { test(t, func(c clock.Clock) Limiter { return im.new(t, c) }) })
	}
}

// step is one Allow at an offset from t0 and its exact answer.
type step struct {
	at    time.Duration
	key   string // bucket; "" is "chat"
	cost  int64
	ok    bool
	retry time.Duration // when refused
}

func TestAllowanceSequences(t *testing.T) { eachImpl(t, testAllowanceSequences) }

func testAllowanceSequences(t *testing.T, mk func(clock.Clock) Limiter) {
	cases := []struct {
		name  string
		limit Limit
		steps []step
	}{
		{"6 a minute: burst then one every 10 s", PerMinute(6), []step{
			{0, "", 1, true, 0}, {0, "", 1, true, 0}, {0, "", 1, true, 0},
			{0, "", 1, true, 0}, {0, "", 1, true, 0}, {0, "", 1, true, 0},
			{0, "", 1, false, 10 * time.Second},
			{9 * time.Second, "", 1, false, time.Second},
			{10 * time.Second, "", 1, true, 0},
			{10 * time.Second, "", 1, false, 10 * time.Second},
			{10 * time.Second, "other", 1, true, 0}, // buckets are apart
			{80 * time.Second, "", 6, true, 0},      // idle again: the whole burst
			{80 * time.Second, "", 1, false, 10 * time.Second},
		}},
		{"refusal spends nothing", Limit{Rate: 2, Per: time.Second, Burst: 2}, []step{
			{0, "", 2, true, 0},
			{0, "", 1, false, 500 * time.Millisecond},
			{100 * time.Millisecond, "", 1, false, 400 * time.Millisecond},
			{200 * time.Millisecond, "", 1, false, 300 * time.Millisecond},
			{500 * time.Millisecond, "", 1, true, 0},
			{500 * time.Millisecond, "", 1, false, 500 * time.Millisecond},
		}},
		{"cost n", Limit{Rate: 10, Per: 10 * time.Second, Burst: 5}, []step{
			{0, "", 3, true, 0},
			{0, "", 3, false, time.Second},
			{time.Second, "", 3, true, 0},
			{time.Second, "", 5, false, 5 * time.Second}, // tat 6 s: 6+5-1 is 5 s over a 5 s burst
			{5 * time.Second, "", 5, false, time.Second},
			{6 * time.Second, "", 5, true, 0},
		}},
		{"burst above rate", Limit{Rate: 1, Per: time.Second, Burst: 3}, []step{
			{0, "", 1, true, 0}, {0, "", 1, true, 0}, {0, "", 1, true, 0},
			{0, "", 1, false, time.Second},
			{2500 * time.Millisecond, "", 2, true, 0},
			{2500 * time.Millisecond, "", 2, false, 1500 * time.Millisecond},
		}},
		{"unlimited", Limit{}, []step{{0, "", 1, true, 0}, {0, "", 1000, true, 0}}},
		{"window: 3 a minute, exact", PerWindow(3, time.Minute), []step{
			{0, "", 1, true, 0}, {time.Second, "", 1, true, 0}, {2 * time.Second, "", 1, true, 0},
			{10 * time.Second, "", 1, false, 50 * time.Second}, // the oldest leaves at 60 s
			{10 * time.Second, "other", 1, true, 0},
			{59 * time.Second, "", 1, false, time.Second},
			{60 * time.Second, "", 1, true, 0},
			{60 * time.Second, "", 1, false, time.Second}, // a GCRA would admit one every 20 s from here
			{61 * time.Second, "", 1, true, 0},
			{62 * time.Second, "", 1, true, 0},
			{62 * time.Second, "", 1, false, 58 * time.Second},
		}},
		{"window: cost n", PerWindow(5, 10*time.Second), []step{
			{0, "", 2, true, 0},
			{time.Second, "", 3, true, 0},
			{2 * time.Second, "", 1, false, 8 * time.Second},
			{2 * time.Second, "", 3, false, 9 * time.Second}, // three must leave: the third newest at 11 s
			{10 * time.Second, "", 2, true, 0},
			{10 * time.Second, "", 1, false, time.Second},
		}},
		// databases' TestRateLimit at a tenth of the scale: the oldest
		// request leaves the 5-minute window 4 minutes on.
		{"window: n per 5 minutes, Retry-After 240", PerWindow(60, 5*time.Minute), append(append(
			[]step{{0, "", 1, true, 0}},
			repeat(step{time.Minute, "", 1, true, 0}, 59)...),
			step{time.Minute, "", 1, false, 4 * time.Minute},
			step{5*time.Minute - time.Second, "", 1, false, time.Second},
			step{5 * time.Minute, "", 1, true, 0},
			step{5 * time.Minute, "", 1, false, time.Minute},
		)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clk := clock.NewFake(t0)
			l := mk(clk)
			for i, s := range c.steps {
				clk.Set(t0.Add(s.at))
				b := s.key
				if b == "" {
					b = "chat"
				}
				d, err := l.Allow(context.Background(), Key{"ws_1", b}, c.limit, s.cost)
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				if d.Allowed != s.ok || d.RetryAfter != s.retry || d.FailedOpen {
					t.Fatalf("step %d (%+v): got %+v", i, s, d)
				}
			}
		})
	}
}

func repeat(s step, n int) []step {
	out := make([]step, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func TestRefusals(t *testing.T) { eachImpl(t, testRefusals) }

func testRefusals(t *testing.T, mk func(clock.Clock) Limiter) {
	l := mk(clock.NewFake(t0))
	cases := []struct {
		name  string
		key   Key
		limit Limit
		cost  int64
		want  error
	}{
		{"no workspace", Key{"", "chat"}, PerMinute(6), 1, ErrBadKey},
		{"no bucket", Key{"ws_1", ""}, PerMinute(6), 1, ErrBadKey},
		{"NUL in the key", Key{"agt_1\x00203.0.113.7", "chat"}, PerMinute(6), 1, ErrBadKey},
		{"no period", Key{"ws_1", "chat"}, Limit{Rate: 5}, 1, ErrBadLimit},
		{"zero cost", Key{"ws_1", "chat"}, PerMinute(6), 0, ErrBadCost},
		{"cost over the burst can never pass", Key{"ws_1", "chat"}, PerMinute(6), 7, ErrBadCost},
		{"cost over a window's rate", Key{"ws_1", "chat"}, PerWindow(3, time.Minute), 4, ErrBadCost},
		{"window without a period", Key{"ws_1", "chat"}, Limit{Rate: 3, Window: true}, 1, ErrBadLimit},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := l.Allow(context.Background(), c.key, c.limit, c.cost); !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
		})
	}
	// None of them spent anything.
	for range 6 {
		if d, _ := l.Allow(context.Background(), Key{"ws_1", "chat"}, PerMinute(6), 1); !d.Allowed {
			t.Fatal("a refused call spent budget")
		}
	}
}

// Two replicas (two store handles on one PostgreSQL) spend one budget,
// also when they ask at the same time.
func TestReplicasShareBudget(t *testing.T) {
	dsn := pgtest.MigratedDSN(t)
	clk := clock.NewFake(t0)
	var ls []*Store
	for range 2 {
		db, err := store.Open(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		l := For(db, clk)
		s, ok := l.(*Store)
		if !ok {
			t.Fatalf("For(postgres) = %T, want *Store", l)
		}
		ls = append(ls, s)
	}
	k, lim := Key{"ws_1", "ai.chat"}, PerMinute(60)
	ctx := context.Background()
	t.Run("alternating", func(t *testing.T) {
		for i := range 60 {
			if d, _ := ls[i%2].Allow(ctx, k, lim, 1); !d.Allowed {
				t.Fatalf("request %d refused", i)
			}
		}
		for _, l := range ls {
			if d, _ := l.Allow(ctx, k, lim, 1); d.Allowed || d.RetryAfter != time.Second {
				t.Fatalf("61st: %+v", d)
			}
		}
		clk.Advance(time.Second)
		if d, _ := ls[1].Allow(ctx, k, lim, 1); !d.Allowed {
			t.Fatal("refused after a second")
		}
		if d, _ := ls[0].Allow(ctx, k, lim, 1); d.Allowed {
			t.Fatal("the other replica admitted past the budget")
		}
	})
	for _, lim := range []Limit{PerMinute(60), PerWindow(60, time.Minute)} {
		t.Run(fmt.Sprintf("concurrent window=%v", lim.Window), func(t *testing.T) {
			concurrent(t, ls, lim)
		})
	}
	t.Run("window alternating", func(t *testing.T) {
		k, lim := Key{"ws_3", "databases.query"}, PerWindow(10, time.Minute)
		for i := range 10 {
			if d, _ := ls[i%2].Allow(ctx, k, lim, 1); !d.Allowed {
				t.Fatalf("request %d refused", i)
			}
		}
		for _, l := range ls {
			if d, _ := l.Allow(ctx, k, lim, 1); d.Allowed || d.RetryAfter != time.Minute {
				t.Fatalf("11th: %+v", d)
			}
		}
	})
}

// concurrent sends 200 requests at once from 8 goroutines over the
// replicas: exactly the budget of 60 is admitted.
func concurrent(t *testing.T, ls []*Store, lim Limit) {
	ctx := context.Background()
	{
		k := Key{"ws_2", fmt.Sprint("concurrent.", lim.Window)}
		var allowed atomic.Int64
		var wg sync.WaitGroup
		for _, l := range ls {
			for range 4 {
				wg.Go(func() {
					for range 25 {
						d, err := l.Allow(ctx, k, lim, 1)
						if err != nil || d.FailedOpen {
							t.Errorf("%+v %v", d, err)
						}
						if d.Allowed {
							allowed.Add(1)
						}
					}
				})
			}
		}
		wg.Wait()
		if got := allowed.Load(); got != 60 {
			t.Fatalf("200 concurrent requests over two replicas: %d admitted, want exactly 60", got)
		}
	}
}

func TestForSQLiteIsMemory(t *testing.T) {
	if l := For(pgtest.OpenSQLite(t), clock.NewFake(t0)); fmt.Sprintf("%T", l) != "*ratelimit.Memory" {
		t.Fatalf("For(sqlite) = %T", l)
	}
}

// A store that fails admits the request, counted in the metric.
func TestStoreFailsOpen(t *testing.T) {
	for _, e := range pgtest.Engines() {
		t.Run(e.Name, func(t *testing.T) {
			db, err := store.Open(context.Background(), e.DSN(t))
			if err != nil {
				t.Fatal(err)
			}
			l := NewStore(db, clock.NewFake(t0))
			lim := Limit{Rate: 1, Per: time.Hour}
			k := Key{"ws_1", "ai.chat"}
			if d, _ := l.Allow(context.Background(), k, lim, 1); !d.Allowed || d.FailedOpen {
				t.Fatalf("%+v", d)
			}
			if d, _ := l.Allow(context.Background(), k, lim, 1); d.Allowed {
				t.Fatalf("second of 1 an hour: %+v", d)
			}
			db.Close()
			d, err := l.Allow(context.Background(), k, lim, 1)
			if err != nil || !d.Allowed || !d.FailedOpen {
				t.Fatalf("store gone: %+v %v", d, err)
			}
			if got := counter(t, l.m.storeErrors); got != 1 {
				t.Fatalf("store errors %v", got)
			}
			if got := counter(t, l.m.decisions.WithLabelValues("ai.chat", "failed_open")); got != 1 {
				t.Fatalf("failed_open %v", got)
			}
			if got := counter(t, l.m.decisions.WithLabelValues("ai.chat", "refused")); got != 1 {
				t.Fatalf("refused %v", got)
			}
		})
	}
}

// Idle keys leave: the memory map and the store's table stay as large as
// the recently busy keys.
func TestSweep(t *testing.T) {
	ctx := context.Background()
	t.Run("memory", func(t *testing.T) {
		clk := clock.NewFake(t0)
		l := NewMemory(clk)
		for i := range 10 {
			l.Allow(ctx, Key{fmt.Sprint("ws_", i), "b"}, PerMinute(6), 1)
		}
		if l.Len() != 10 {
			t.Fatalf("%d keys", l.Len())
		}
		clk.Advance(SweepEvery)
		l.Allow(ctx, Key{"ws_new", "b"}, PerMinute(6), 1)
		if l.Len() != 1 {
			t.Fatalf("after sweep: %d keys", l.Len())
		}
	})
	for _, e := range pgtest.Engines() {
		t.Run("store-"+e.Name, func(t *testing.T) {
			db := e.Open(t)
			clk := clock.NewFake(t0)
			l := NewStore(db, clk)
			rows := func() int {
				var n int
				if err := db.QueryRowContext(ctx, `SELECT count(*) FROM ratelimit_tat`).Scan(&n); err != nil {
					t.Fatal(err)
				}
				return n
			}
			for i := range 10 {
				l.Allow(ctx, Key{fmt.Sprint("ws_", i), "b"}, PerMinute(6), 1)
			}
			if rows() != 10 {
				t.Fatalf("%d rows", rows())
			}
			clk.Advance(30 * time.Second)
			l.Allow(ctx, Key{"ws_busy", "b"}, Limit{Rate: 1, Per: time.Hour}, 1) // tat an hour ahead
			if rows() != 11 {
				t.Fatalf("swept before SweepEvery: %d rows", rows())
			}
			clk.Advance(SweepEvery)
			l.Allow(ctx, Key{"ws_new", "b"}, PerMinute(6), 1)
			if rows() != 2 { // ws_busy and ws_new
				t.Fatalf("after sweep: %d rows", rows())
			}
			logged := func() int {
				var n int
				if err := db.QueryRowContext(ctx, `SELECT count(*) FROM ratelimit_log`).Scan(&n); err != nil {
					t.Fatal(err)
				}
				return n
			}
			for range 2 {
				l.Allow(ctx, Key{"ws_w", "b"}, PerWindow(5, time.Second), 2)
			}
			if logged() != 4 {
				t.Fatalf("%d logged units", logged())
			}
			clk.Advance(SweepEvery)
			l.Allow(ctx, Key{"ws_new2", "b"}, PerMinute(6), 1)
			if logged() != 0 {
				t.Fatalf("after sweep: %d logged units", logged())
			}
		})
	}
}

func counter(t *testing.T, c prometheus.Collector) float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 1)
	c.Collect(ch)
	var m dto.Metric
	if err := (<-ch).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// FuzzStoreMatchesMemory replays one random sequence of (advance, cost,
// bucket) on the memory limiter and on the store limiter (SQLite): the
// one-statement upsert decides exactly as the in-memory GCRA.
func FuzzStoreMatchesMemory(f *testing.F) {
	f.Add([]byte{0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 200, 1, 1, 3, 6, 0})
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	db := pgtest.OpenSQLite(f)
	var round atomic.Int64
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 300 {
			ops = ops[:300]
		}
		clk := clock.NewFake(t0)
		mem, st := NewMemory(clk), NewStore(db, clk)
		ws := fmt.Sprint("ws_", round.Add(1)) // fresh keys in the shared table
		gcra, window := Limit{Rate: 5, Per: time.Second, Burst: 6}, PerWindow(6, time.Second)
		ctx := context.Background()
		for i := 0; i+2 < len(ops); i += 3 {
			clk.Advance(time.Duration(ops[i]) * 10 * time.Millisecond)
			cost := int64(ops[i+1]%6) + 1
			bucket := ops[i+2] % 4
			k, lim := Key{ws, fmt.Sprint("b", bucket)}, gcra
			if bucket >= 2 {
				lim = window
			}
			a, errA := mem.Allow(ctx, k, lim, cost)
			b, errB := st.Allow(ctx, k, lim, cost)
			if errA != nil || errB != nil || a != b {
				t.Fatalf("op %d: memory %+v %v, store %+v %v", i/3, a, errA, b, errB)
			}
		}
	})
}
