package memory

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/internal/areatest"
	"github.com/svcplatform/platform/controlplane/jobs"
	"github.com/svcplatform/platform/controlplane/metering"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// The tests' world and callers are areatest's (ws_a on hobby with prj_a,
// prj_b and prj_dead; ws_b on pro with prj_c).
var (
	eachEngine = areatest.EachEngine
	callers    = areatest.Callers
)

// The assembly's services are what the area depends on.
var (
	_ Projects               = (*projects.Service)(nil)
	_ metering.BatchRecorder = (*metering.Meter)(nil)
)

// fakeJobs records the area's job kinds so a test runs them when it
// chooses.
type fakeJobs struct {
	mu       sync.Mutex
	handlers map[string]jobs.Handler
	every    map[string]time.Duration
}

func (j *fakeJobs) Register(kind string, h jobs.Handler, _ jobs.KindOptions) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.handlers[kind] = h
}

func (j *fakeJobs) Every(kind string, d time.Duration) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.every[kind] = d
}

// Enqueue is not used by the area: its jobs are periodic.
func (j *fakeJobs) Enqueue(context.Context, store.Querier, string, any, jobs.EnqueueOptions) (string, error) {
	return "", errors.New("fakeJobs: memory enqueues no job")
}

func (j *fakeJobs) Wake() {}

var t0 = time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)

// fixture is the area on a fresh store, its routes mounted on a test
// server.
type fixture struct {
	t     testing.TB
	db    *store.DB
	clk   *clock.Fake
	meter *metering.Meter
	jobs  *fakeJobs
	svc   *Service
	srv   *httptest.Server
}

// newFixture builds the area with cfg over a fresh store of engine e.
func newFixture(t testing.TB, e pgtest.Engine, cfg Config) *fixture {
	t.Helper()
	f := &fixture{t: t, db: e.Open(t), clk: clock.NewFake(t0), jobs: &fakeJobs{handlers: map[string]jobs.Handler{}, every: map[string]time.Duration{}}}
	f.meter = metering.New(f.db, f.clk)
	if cfg.FlushEvery == 0 {
		cfg.FlushEvery = time.Hour // tests flush when they look
	}
	prj := areatest.StandardProjects()
	var err error
	f.svc, err = New(cfg, Deps{DB: f.db, Clock: f.clk, Meter: f.meter, Jobs: f.jobs, Projects: prj,
		Plans: areatest.StandardPlans(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.svc.Close() })
	mux := http.NewServeMux()
	api.Mount(mux, Routes(Handlers{S: f.svc}), api.MountOptions{Authn: callers})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

// response is an answer of the test server.
type response = areatest.Response

// call sends a request as key; body is sent as is when it is a string or
// []byte, as JSON otherwise. header is name, value pairs.
func (f *fixture) call(key, method, path string, body any, header ...string) response {
	f.t.Helper()
	return areatest.Call(f.t, f.srv, key, method, path, body, header...)
}

// must calls and fails the test unless the status is want.
func (f *fixture) must(want int, key, method, path string, body any, header ...string) response {
	f.t.Helper()
	return areatest.Must(f.t, want, f.srv, key, method, path, body, header...)
}

// create makes a store of prj_a as dev.
func (f *fixture) create(name string) Store {
	f.t.Helper()
	var a StoreAnswer
	f.must(http.StatusCreated, "dev", "POST", "/api/projects/prj_a/memory", map[string]any{"name": name}).Decode(f.t, &a)
	return a.Store
}

// store reads a store as the viewer.
func (f *fixture) store(id string) Store {
	f.t.Helper()
	var a StoreAnswer
	f.must(http.StatusOK, "viewer", "GET", "/api/memory/"+id, nil).Decode(f.t, &a)
	return a.Store
}

// count counts rows of a table (with an optional WHERE clause).
func (f *fixture) count(table string, where ...any) int {
	f.t.Helper()
	q := `SELECT count(*) FROM ` + table
	var args []any
	if len(where) > 0 {
		q += ` WHERE ` + where[0].(string)
		args = where[1:]
	}
	var n int
	if err := f.db.QueryRowContext(context.Background(), q, args...).Scan(&n); err != nil {
		f.t.Fatal(err)
	}
	return n
}

// consistent checks that a store's counts are the sums of its rows.
func (f *fixture) consistent(id string) {
	f.t.Helper()
	var keys, bytes, rows, sum int64
	err := f.db.QueryRowContext(context.Background(), `SELECT key_count, bytes, (SELECT count(*) FROM memory_keys WHERE store_id = s.id),
		(SELECT coalesce(sum(size), 0) FROM memory_keys WHERE store_id = s.id) FROM memory_stores s WHERE id = ?`, id).Scan(&keys, &bytes, &rows, &sum)
	if err != nil {
		f.t.Fatal(err)
	}
	if keys != rows || bytes != sum {
		f.t.Fatalf("store %s counts %d keys, %d bytes; its rows are %d keys, %d bytes", id, keys, bytes, rows, sum)
	}
}

// sweep runs the area's registered sweep job as the runner would.
func (f *fixture) sweep() {
	f.t.Helper()
	f.jobs.mu.Lock()
	h := f.jobs.handlers[JobSweep]
	f.jobs.mu.Unlock()
	if h == nil {
		f.t.Fatalf("no %s job registered", JobSweep)
	}
	if err := h(context.Background(), jobs.Job{Kind: JobSweep}); err != nil {
		f.t.Fatal(err)
	}
}

// operations is the memory_operations metered for ws_a after a flush.
func (f *fixture) operations() float64 {
	f.t.Helper()
	if err := f.svc.Flush(context.Background()); err != nil {
		f.t.Fatal(err)
	}
	n, err := f.meter.Total(context.Background(), "ws_a", "", metering.MemoryOperations, t0.Add(-24*time.Hour), t0.Add(365*24*time.Hour))
	if err != nil {
		f.t.Fatal(err)
	}
	return n
}
