package metering_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/metering"
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

func open(t *testing.T, e pgtest.Engine) (*metering.Meter, *clock.Fake, *store.DB) {
	t.Helper()
	db := e.Open(t)
	clk := clock.NewFake(t0)
	return metering.New(db, clk), clk, db
}

func total(t *testing.T, m *metering.Meter, ws, project string, metric metering.Metric) float64 {
	t.Helper()
	n, err := m.Total(context.Background(), ws, project, metric, time.Time{}, t0.AddDate(1, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestRecordBatch(t *testing.T) { eachEngine(t, testRecordBatch) }

func testRecordBatch(t *testing.T, e pgtest.Engine) {
	ctx := context.Background()
	tests := []struct {
		name    string
		batches [][]metering.Event
		ids     []string
		want    float64
		wantErr error
	}{
		{name: "one batch", ids: []string{"b1"}, batches: [][]metering.Event{{{Workspace: "ws", Metric: metering.Deploys, Quantity: 2}}}, want: 2},
		{name: "same id twice counts once", ids: []string{"b1", "b1"},
			batches: [][]metering.Event{{{Workspace: "ws", Metric: metering.Deploys, Quantity: 2}}, {{Workspace: "ws", Metric: metering.Deploys, Quantity: 2}}}, want: 2},
		{name: "two ids count twice", ids: []string{"b1", "b2"},
			batches: [][]metering.Event{{{Workspace: "ws", Metric: metering.Deploys, Quantity: 2}}, {{Workspace: "ws", Metric: metering.Deploys, Quantity: 3}}}, want: 5},
		{name: "invalid event stores nothing", ids: []string{"b1"}, wantErr: metering.ErrInvalidEvent,
			batches: [][]metering.Event{{{Workspace: "ws", Metric: metering.Deploys, Quantity: 2}, {Metric: metering.Deploys, Quantity: 1}}}, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _, _ := open(t, e)
			var err error
			for i, b := range tt.batches {
				err = errors.Join(err, m.RecordBatch(ctx, tt.ids[i], b))
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if got := total(t, m, "ws", "", metering.Deploys); got != tt.want {
				t.Fatalf("total = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRecordBatchForgetsOldIDs(t *testing.T) { eachEngine(t, testRecordBatchForgetsOldIDs) }

func testRecordBatchForgetsOldIDs(t *testing.T, e pgtest.Engine) {
	ctx := context.Background()
	m, clk, db := open(t, e)
	ev := []metering.Event{{Workspace: "ws", Metric: metering.Deploys, Quantity: 1}}
	if err := m.RecordBatch(ctx, "old", ev); err != nil {
		t.Fatal(err)
	}
	clk.Advance(metering.BatchRetention + time.Hour)
	if err := m.RecordBatch(ctx, "new", ev); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM usage_batches`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("batch ids kept = %d, want 1 (the old one forgotten)", n)
	}
}

// lossy commits a batch and then reports an error, as a write whose answer
// was lost would.
type lossy struct {
	mu    sync.Mutex
	rec   metering.BatchRecorder
	fails int
	ids   []string
}

func (l *lossy) RecordBatch(ctx context.Context, id string, events []metering.Event) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ids = append(l.ids, id)
	if err := l.rec.RecordBatch(ctx, id, events); err != nil {
		return err
	}
	if l.fails > 0 {
		l.fails--
		return errors.New("answer lost")
	}
	return nil
}

func TestAggregatorFlushRetryCountsOnce(t *testing.T) {
	eachEngine(t, testAggregatorFlushRetryCountsOnce)
}

func testAggregatorFlushRetryCountsOnce(t *testing.T, e pgtest.Engine) {
	ctx := context.Background()
	m, _, _ := open(t, e)
	l := &lossy{rec: m, fails: 2}
	a := metering.NewAggregator(l, m)
	for range 5 {
		a.Add("ws", "prj", metering.DatabaseQueries, 1, time.Time{})
	}
	if err := a.Flush(ctx); err == nil {
		t.Fatal("first flush should report the lost answer")
	}
	a.Add("ws", "prj", metering.DatabaseQueries, 10, time.Time{}) // added while the batch waits
	if err := a.Flush(ctx); err == nil {
		t.Fatal("second flush should report the lost answer")
	}
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := total(t, m, "ws", "prj", metering.DatabaseQueries); got != 15 {
		t.Fatalf("total = %v, want exactly 15", got)
	}
	if l.ids[0] != l.ids[1] || l.ids[1] != l.ids[2] || l.ids[3] == l.ids[0] {
		t.Fatalf("batch ids %v: a retried batch keeps its id, the next gets a new one", l.ids)
	}
}

func TestAggregatorDays(t *testing.T) { eachEngine(t, testAggregatorDays) }

func testAggregatorDays(t *testing.T, e pgtest.Engine) {
	ctx := context.Background()
	m, _, _ := open(t, e)
	a := metering.NewAggregator(m, m)
	last := time.Date(2026, 10, 31, 23, 59, 59, 0, time.UTC)
	a.Add("ws", "", metering.RowsRead, 3, last)
	a.Add("ws", "", metering.RowsRead, 4, last.Add(-time.Hour))
	a.Add("ws", "", metering.RowsRead, 5, last.Add(time.Second))
	a.Add("", "", metering.RowsRead, 5, last) // no workspace: ignored
	a.Add("ws", "", metering.RowsRead, 0, last)
	if got := a.Pending(); got != 2 {
		t.Fatalf("pending = %d, want 2 (one per day)", got)
	}
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	sums, err := m.Sums(ctx, "ws", "", "2026-10-01", "2026-11-02")
	if err != nil {
		t.Fatal(err)
	}
	want := []metering.DaySum{{Day: "2026-10-31", Metric: metering.RowsRead, Quantity: 7}, {Day: "2026-11-01", Metric: metering.RowsRead, Quantity: 5}}
	if len(sums) != len(want) {
		t.Fatalf("sums = %+v, want %+v", sums, want)
	}
	for i := range want {
		if sums[i] != want[i] {
			t.Fatalf("sums[%d] = %+v, want %+v", i, sums[i], want[i])
		}
	}
}

func TestKeyCalls(t *testing.T) { eachEngine(t, testKeyCalls) }

func testKeyCalls(t *testing.T, e pgtest.Engine) {
	ctx := context.Background()
	m, _, _ := open(t, e)
	k := metering.NewKeyCalls(m, 0, nil)
	key := &auth.Principal{WorkspaceID: "ws", KeyID: "key_1"}
	projectKey := &auth.Principal{WorkspaceID: "ws", KeyID: "key_2", ProjectID: "prj"}
	session := &auth.Principal{WorkspaceID: "ws", MemberID: "mem", Session: true}
	for _, p := range []*auth.Principal{key, key, projectKey, session, nil} {
		k.KeyCall(p)
	}
	if err := k.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	k.KeyCall(key)
	// Run stops when its context ends; Close writes what it left.
	stopped, stop := context.WithCancel(ctx)
	stop()
	if err := k.Run(stopped); err != nil {
		t.Fatal(err)
	}
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	if got := total(t, m, "ws", "", metering.APIKeyCalls); got != 4 {
		t.Fatalf("calls = %v, want 4 (sessions are not key calls)", got)
	}
	if got := total(t, m, "ws", "prj", metering.APIKeyCalls); got != 1 {
		t.Fatalf("project calls = %v, want 1", got)
	}
}

// failing fails its first n Records.
type failing struct {
	rec metering.Recorder
	n   int
}

func (f *failing) Record(ctx context.Context, e metering.Event) error {
	if f.n > 0 {
		f.n--
		return errors.New("down")
	}
	return f.rec.Record(ctx, e)
}

func TestKeyCallsPlainRecorderRetries(t *testing.T) { eachEngine(t, testKeyCallsPlainRecorderRetries) }

func testKeyCallsPlainRecorderRetries(t *testing.T, e pgtest.Engine) {
	ctx := context.Background()
	m, _, _ := open(t, e)
	k := metering.NewKeyCalls(&failing{rec: m, n: 1}, 0, nil)
	k.KeyCall(&auth.Principal{WorkspaceID: "ws", KeyID: "k"})
	k.KeyCall(&auth.Principal{WorkspaceID: "ws", KeyID: "k", ProjectID: "p"})
	if err := k.Flush(ctx); err == nil {
		t.Fatal("want the failure reported")
	}
	if err := k.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := total(t, m, "ws", "", metering.APIKeyCalls); got != 2 {
		t.Fatalf("calls = %v, want 2", got)
	}
}

func BenchmarkAggregatorAdd(b *testing.B) {
	a := metering.NewAggregator(nil, nil)
	at := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		a.Add("ws_0123456789", "prj_0123456789", metering.DatabaseQueries, 1, at)
	}
}

func BenchmarkKeyCall(b *testing.B) {
	k := metering.NewKeyCalls(metering.New(nil, nil), 0, nil)
	p := &auth.Principal{WorkspaceID: "ws_0123456789", KeyID: "key_1"}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			k.KeyCall(p)
		}
	})
}

// TestNilAggregator: an area built without a meter holds a nil Aggregator,
// which counts nothing and flushes nothing.
func TestNilAggregator(t *testing.T) {
	var a *metering.Aggregator
	a.Add("ws_1", "prj_1", metering.DatabaseQueries, 3, time.Time{})
	if err := a.Flush(context.Background()); err != nil {
		t.Fatalf("Flush on nil: %v", err)
	}
}
