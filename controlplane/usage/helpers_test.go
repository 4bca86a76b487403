package usage_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/billing"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/jobs"
	"github.com/svcplatform/platform/controlplane/metering"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/controlplane/usage"
)

var now0 = time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)

type fakeProjects struct{ list []projects.Project }

func (f *fakeProjects) List(_ context.Context, pr *auth.Principal) ([]projects.Project, error) {
	var out []projects.Project
	for _, p := range f.list {
		if p.WorkspaceID == pr.WorkspaceID && (pr.ProjectID == "" || p.ID == pr.ProjectID) {
			out = append(out, p)
		}
	}
	return out, nil
}

type fakePlans struct{ plan plans.Name }

func (f *fakePlans) Plan(context.Context, string) plans.Name { return f.plan }

type fakeCredits struct {
	sum billing.Summary
	err error
}

func (f *fakeCredits) Summary(context.Context, string) (billing.Summary, error) { return f.sum, f.err }

type fakeCounter struct {
	name string
	per  map[string]int
}

func (f fakeCounter) Service() string { return f.name }
func (f fakeCounter) Count(_ context.Context, id string) (int, error) {
	return f.per[id], nil
}

type env struct {
	t     *testing.T
	db    *store.DB
	clk   *clock.Fake
	meter *metering.Meter
	prjs  *fakeProjects
	plans *fakePlans
	deps  usage.Deps
}

func newEnv(t *testing.T) *env {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "u.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	clk := clock.NewFake(now0)
	e := &env{t: t, db: db, clk: clk, meter: metering.New(db, clk), plans: &fakePlans{plan: plans.Pro},
		prjs: &fakeProjects{list: []projects.Project{
			{ID: "prj_a", Name: "A", Slug: "a", WorkspaceID: "ws", Status: projects.StatusActive},
			{ID: "prj_b", Name: "B", Slug: "b", WorkspaceID: "ws", Status: projects.StatusActive},
			{ID: "prj_x", Name: "X", Slug: "x", WorkspaceID: "other", Status: projects.StatusActive},
		}}}
	e.deps = usage.Deps{DB: db, Clock: clk, Meter: e.meter, Projects: e.prjs, Plans: e.plans, Jobs: &fakeQueue{},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	return e
}

func (e *env) service() *usage.Service {
	e.t.Helper()
	s, err := usage.New(usage.Config{}, e.deps)
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

func (e *env) record(project string, m metering.Metric, q float64, at time.Time) {
	e.t.Helper()
	if err := e.meter.Record(context.Background(), metering.Event{Workspace: "ws", Project: project, Metric: m, Quantity: q, At: at}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) report(p *auth.Principal, q usage.Query) usage.Report {
	e.t.Helper()
	r, err := e.service().Report(context.Background(), p, q)
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

var owner = &auth.Principal{WorkspaceID: "ws", MemberID: "mem", KeyID: "key", Role: auth.Owner}

var errDown = errors.New("down")

// fakeQueue keeps the kind registered and its interval.
type fakeQueue struct {
	kind    string
	every   time.Duration
	handler jobs.Handler
}

var _ jobs.Queue = (*fakeQueue)(nil)

func (f *fakeQueue) Register(kind string, h jobs.Handler, _ jobs.KindOptions) {
	f.kind, f.handler = kind, h
}
func (f *fakeQueue) Every(kind string, d time.Duration) { f.every = d }
func (f *fakeQueue) Enqueue(context.Context, store.Querier, string, any, jobs.EnqueueOptions) (string, error) {
	return "", errors.New("fake queue: nothing is enqueued")
}
func (f *fakeQueue) Wake() {}
