package usage_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/billing"
	"github.com/svcplatform/platform/controlplane/metering"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/usage"
)

func day(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

func TestParsePeriod(t *testing.T) {
	tests := []struct {
		name     string
		from, to time.Time
		days     int
	}{
		{"", day(2026, 10, 4), day(2026, 11, 3), 30},
		{"30d", day(2026, 10, 4), day(2026, 11, 3), 30},
		{"7d", day(2026, 10, 27), day(2026, 11, 3), 7},
		{"90d", day(2026, 8, 5), day(2026, 11, 3), 90},
		{"month", day(2026, 11, 1), day(2026, 11, 3), 2},
		{"last_month", day(2026, 10, 1), day(2026, 11, 1), 31},
	}
	for _, tt := range tests {
		t.Run("ok/"+tt.name, func(t *testing.T) {
			p, err := usage.ParsePeriod(tt.name, now0)
			if err != nil {
				t.Fatal(err)
			}
			if !p.From.Equal(tt.from) || !p.To.Equal(tt.to) || p.Days != tt.days {
				t.Fatalf("period = %+v, want %v..%v (%d days)", p, tt.from, tt.to, tt.days)
			}
		})
	}
	for _, bad := range []string{"1d", "30D", "week", "month ", "-7d", "last-month", "365d"} {
		t.Run("bad/"+bad, func(t *testing.T) {
			_, err := usage.ParsePeriod(bad, now0)
			if !errors.Is(err, usage.ErrBadPeriod) {
				t.Fatalf("err = %v, want ErrBadPeriod", err)
			}
			if e := api.AsError(err); e.Kind.Status() != 400 || e.Code != "invalid_period" {
				t.Fatalf("error = %d %s, want 400 invalid_period", e.Kind.Status(), e.Code)
			}
		})
	}
	t.Run("january's last_month is december", func(t *testing.T) {
		p, _ := usage.ParsePeriod("last_month", time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC))
		if !p.From.Equal(day(2026, 12, 1)) || !p.To.Equal(day(2027, 1, 1)) || p.Days != 31 {
			t.Fatalf("period = %+v", p)
		}
	})
}

func FuzzParsePeriod(f *testing.F) {
	for _, s := range []string{"", "7d", "30d", "90d", "month", "last_month", "x", "\xff"} {
		f.Add(s, int64(0))
	}
	f.Fuzz(func(t *testing.T, s string, offset int64) {
		now := now0.Add(time.Duration(offset%(1<<50)) * time.Millisecond)
		p, err := usage.ParsePeriod(s, now)
		if err != nil {
			if !errors.Is(err, usage.ErrBadPeriod) || api.AsError(err).Kind.Status() != 400 {
				t.Fatalf("bad period %q: %v", s, err)
			}
			return
		}
		if p.Days < 1 || p.Days > 90 || !p.From.Before(p.To) || p.From.Hour() != 0 || p.To.Hour() != 0 {
			t.Fatalf("period %q at %v = %+v", s, now, p)
		}
		if p.Name != "last_month" && !now.Before(p.To) {
			t.Fatalf("period %q at %v ends before now: %+v", s, now, p)
		}
	})
}

// A row at 23:59:59 UTC on the period's last day counts; one at 00:00:00
// the next day does not; likewise at the first day's start.
func TestPeriodBoundaries(t *testing.T) {
	for _, name := range []string{"month", "last_month", "7d", "30d", "90d"} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			p, err := usage.ParsePeriod(name, now0)
			if err != nil {
				t.Fatal(err)
			}
			e.record("prj_a", metering.Deploys, 1, p.From)                      // first second: counts
			e.record("prj_a", metering.Deploys, 10, p.To.Add(-time.Second))     // 23:59:59 on the last day: counts
			e.record("prj_a", metering.Deploys, 100, p.To)                      // 00:00:00 the next day: not
			e.record("prj_a", metering.Deploys, 1000, p.From.Add(-time.Second)) // the day before: not
			r := e.report(owner, usage.Query{Period: name})
			if got := num(r.Totals["deploys"]); got != 11 {
				t.Fatalf("deploys = %v, want 11", got)
			}
			if len(r.Daily) != p.Days {
				t.Fatalf("daily has %d days, want %d", len(r.Daily), p.Days)
			}
			if first, last := r.Daily[0], r.Daily[len(r.Daily)-1]; first.Metrics["deploys"] != 1 || last.Metrics["deploys"] != 10 {
				t.Fatalf("first day %+v, last day %+v", first, last)
			}
		})
	}
}

func TestReportTotalsDailyByProject(t *testing.T) {
	e := newEnv(t)
	yesterday := now0.AddDate(0, 0, -1)
	e.record("prj_a", metering.DatabaseQueries, 5, now0)
	e.record("prj_a", metering.DatabaseQueries, 2, yesterday)
	e.record("prj_b", metering.RowsWritten, 7, now0)
	e.record("", metering.APIKeyCalls, 3, now0)
	e.record("prj_gone", metering.Deploys, 1, now0)
	e.record("prj_a", metering.Metric("custom_metric"), 4, now0)
	r := e.report(owner, usage.Query{Period: "7d"})
	want := map[string]float64{"database_queries": 7, "database_rows_written": 7, "api_key_calls": 3, "deploys": 1, "custom_metric": 4,
		"ai_requests": 0}
	for m, n := range want {
		got, ok := r.Totals[m]
		if !ok || got == nil || *got != n {
			t.Errorf("totals[%s] = %v (present %v), want %v", m, got, ok, n)
		}
	}
	for _, m := range usage.Catalog {
		if _, ok := r.Totals[string(m.Metric)]; !ok {
			t.Errorf("catalog metric %s missing from totals", m.Metric)
		}
	}
	last, prev := r.Daily[len(r.Daily)-1], r.Daily[len(r.Daily)-2]
	if last.Day != "2026-11-02" || last.Metrics["database_queries"] != 5 || prev.Metrics["database_queries"] != 2 {
		t.Fatalf("daily tail = %+v, %+v", prev, last)
	}
	by := map[string]usage.ProjectUsage{}
	for _, p := range r.ByProject {
		by[p.ProjectID] = p
	}
	if a := by["prj_a"]; a.Name != "A" || a.Totals["database_queries"] != 7 || a.Totals["custom_metric"] != 4 {
		t.Errorf("prj_a = %+v", a)
	}
	if w := by[""]; w.Totals["api_key_calls"] != 3 {
		t.Errorf("workspace row = %+v", w)
	}
	if g := by["prj_gone"]; !g.Deleted || g.Totals["deploys"] != 1 {
		t.Errorf("deleted project row = %+v", g)
	}
	if r.DeployTime.Deploys != 1 || r.Project != nil {
		t.Errorf("deployTime = %+v, project = %v", r.DeployTime, r.Project)
	}
}

// Function test runs, which nothing records, are not measured: null in
// totals (not 0), named in notMeasured, explained in notes. Memory
// operations, which the memory area records, are a number (0 here).
func TestReportNotMeasured(t *testing.T) {
	e := newEnv(t)
	e.record("prj_a", metering.Deploys, 1, now0)
	r := e.report(owner, usage.Query{Period: "7d"})
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Totals      map[string]any    `json:"totals"`
		NotMeasured []string          `json:"notMeasured"`
		Notes       map[string]string `json:"notes"`
		Metrics     struct {
			Totals        map[string]any `json:"totals"`
			TestRuns30d   any            `json:"testRuns30d"`
			TotalTestRuns any            `json:"totalTestRuns"`
		} `json:"metrics"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ metric, label string }{
		{"function_test_runs", "function test runs"},
	} {
		t.Run(c.metric, func(t *testing.T) {
			if v, ok := doc.Totals[c.metric]; !ok || v != nil {
				t.Errorf("totals.%s = %v (present %v), want null", c.metric, v, ok)
			}
			if v, ok := doc.Metrics.Totals[c.metric]; !ok || v != nil {
				t.Errorf("metrics.totals.%s = %v (present %v), want null", c.metric, v, ok)
			}
			if !slices.Contains(doc.NotMeasured, c.label) {
				t.Errorf("notMeasured %v does not name %q", doc.NotMeasured, c.label)
			}
			if !strings.Contains(doc.Notes[c.metric], "not measured") {
				t.Errorf("notes.%s = %q", c.metric, doc.Notes[c.metric])
			}
		})
	}
	if doc.Metrics.TestRuns30d != nil || doc.Metrics.TotalTestRuns != nil {
		t.Errorf("test runs %v / %v, want null while not measured", doc.Metrics.TestRuns30d, doc.Metrics.TotalTestRuns)
	}
	if doc.Totals["deploys"] != 1.0 || doc.Totals["ai_requests"] != 0.0 || doc.Totals["memory_operations"] != 0.0 {
		t.Errorf("measured metrics: deploys %v, ai_requests %v, memory_operations %v", doc.Totals["deploys"], doc.Totals["ai_requests"], doc.Totals["memory_operations"])
	}
	if slices.Contains(doc.NotMeasured, "memory operations") {
		t.Errorf("notMeasured %v names memory operations, which the memory area records", doc.NotMeasured)
	}
	for _, want := range []string{"requests to sites and apps", "bandwidth to sites and apps", "function-URL traffic", "errors", "latency"} {
		if !slices.Contains(doc.NotMeasured, want) {
			t.Errorf("notMeasured %v lacks %q", doc.NotMeasured, want)
		}
	}
	if len(doc.Notes) != 1 {
		t.Errorf("notes %v: only the metrics not measured carry one", doc.Notes)
	}
}

// num is a total's number (NaN for null, which no test wants).
func num(v *float64) float64 {
	if v == nil {
		return math.NaN()
	}
	return *v
}

func TestReportProjectScope(t *testing.T) {
	e := newEnv(t)
	e.record("prj_a", metering.Deploys, 1, now0)
	e.record("prj_b", metering.Deploys, 2, now0)
	projectKey := &auth.Principal{WorkspaceID: "ws", MemberID: "m", KeyID: "k", Role: auth.Developer, ProjectID: "prj_b"}
	tests := []struct {
		name    string
		p       *auth.Principal
		project string
		want    float64
		status  int
	}{
		{"workspace", owner, "", 3, 200},
		{"filtered", owner, "prj_a", 1, 200},
		{"project key sees its project", projectKey, "", 2, 200},
		{"project key names its project", projectKey, "prj_b", 2, 200},
		{"project key asks for another", projectKey, "prj_a", 0, 403},
		{"unknown project", owner, "prj_nope", 0, 404},
		{"another workspace's project", owner, "prj_x", 0, 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := e.service().Report(context.Background(), tt.p, usage.Query{Project: tt.project})
			if tt.status != 200 {
				if got := api.AsError(err).Kind.Status(); got != tt.status {
					t.Fatalf("status = %d (%v), want %d", got, err, tt.status)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if num(r.Totals["deploys"]) != tt.want {
				t.Fatalf("deploys = %v, want %v", num(r.Totals["deploys"]), tt.want)
			}
			if tt.p.ProjectID != "" && (r.Project == nil || *r.Project != tt.p.ProjectID || r.Counts["projects"] != 1) {
				t.Fatalf("project = %v, counts = %v", r.Project, r.Counts)
			}
		})
	}
}

func TestReportCountsLimitsCredits(t *testing.T) {
	e := newEnv(t)
	e.deps.Counters = []usage.Counter{fakeCounter{"databases", map[string]int{"prj_a": 2, "prj_b": 1, "prj_x": 9}}}
	e.deps.WorkspaceCounts = map[string]usage.CountFunc{"repos": func(context.Context, string) (int, error) { return 4, nil }}
	e.deps.Credits = &fakeCredits{sum: billing.Summary{Month: "2026-11", Included: 10_000_000, IncludedUsed: 2_500_000, IncludedLeft: 7_500_000, Balance: 3_000_000}}
	r := e.report(owner, usage.Query{})
	if r.Counts["projects"] != 2 || r.Counts["databases"] != 3 || r.Counts["repos"] != 4 {
		t.Errorf("counts = %v", r.Counts)
	}
	if r.Limits.Plan != plans.Pro || r.Limits.Databases != 10 || r.Limits.DatabaseStorageBytes != 5*plans.GB {
		t.Errorf("limits = %+v", r.Limits)
	}
	c := r.AICredits
	if c == nil || c.IncludedMicros != 10_000_000 || c.UsedMicros != 2_500_000 || c.LeftMicros != 7_500_000 || c.BalanceMicros == nil || *c.BalanceMicros != 3_000_000 {
		t.Fatalf("aiCredits = %+v", c)
	}
	viewer := &auth.Principal{WorkspaceID: "ws", MemberID: "v", KeyID: "k", Role: auth.Viewer}
	if r := e.report(viewer, usage.Query{}); r.AICredits == nil || r.AICredits.BalanceMicros != nil {
		t.Errorf("viewer aiCredits = %+v, want the Balance hidden", r.AICredits)
	}
	filtered := e.report(owner, usage.Query{Project: "prj_a"})
	if filtered.Counts["databases"] != 2 || filtered.Counts["projects"] != 1 {
		t.Errorf("project counts = %v", filtered.Counts)
	}
	if _, ok := filtered.Counts["repos"]; ok {
		t.Errorf("workspace-wide counts in a project report: %v", filtered.Counts)
	}
	e.deps.Credits = &fakeCredits{err: errDown}
	if _, err := e.service().Report(context.Background(), owner, usage.Query{}); !errors.Is(err, errDown) {
		t.Errorf("err = %v, want the ledger's", err)
	}
}

func TestReportMetrics(t *testing.T) {
	e := newEnv(t)
	e.record("prj_a", metering.FunctionTestRuns, 2, now0)
	e.record("prj_a", metering.FunctionTestRuns, 3, now0.AddDate(0, 0, -29))
	e.record("prj_a", metering.FunctionTestRuns, 5, now0.AddDate(0, 0, -31))
	e.record("prj_a", metering.Deploys, 1, now0.AddDate(0, 0, -40))
	r := e.report(owner, usage.Query{Period: "7d"})
	// Once something records function test runs, they are numbers.
	if r.Metrics.Days != 30 || num(r.Metrics.TestRuns30d) != 5 || num(r.Metrics.TotalTestRuns) != 10 || num(r.Metrics.Totals["function_test_runs"]) != 5 {
		t.Fatalf("metrics = %+v", r.Metrics)
	}
	if num(r.Totals["function_test_runs"]) != 2 {
		t.Fatalf("7d test runs = %v, want 2", num(r.Totals["function_test_runs"]))
	}
	b, err := json.Marshal(r.Metrics)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	for _, k := range []string{"invocations30d", "totalInvocations"} {
		if v, ok := m[k]; !ok || v != nil {
			t.Errorf("%s = %v (present %v), want null", k, v, ok)
		}
	}
}

func TestMeasure(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	sizes := map[string][]usage.Size{"ws": {{Project: "prj_a", Resource: "db_1", Bytes: 1000}, {Project: "prj_b", Resource: "db_2", Bytes: 500}}}
	fail := false
	e.deps.Sizers = map[string]usage.Sizer{
		usage.KindDatabases: usage.SizerFunc(func(_ context.Context, ws string) ([]usage.Size, error) { return sizes[ws], nil }),
		usage.KindStorage: usage.SizerFunc(func(_ context.Context, ws string) ([]usage.Size, error) {
			if fail {
				return nil, errDown
			}
			return []usage.Size{{Project: "prj_a", Bytes: 4096, Objects: 3}}, nil
		}),
	}
	e.deps.Workspaces = func(context.Context) ([]string, error) { return []string{"ws"}, nil }
	s := e.service()
	if r := e.report(owner, usage.Query{}); r.Databases.MeasuredAt != nil || r.Storage.Bytes != 0 {
		t.Fatalf("before measuring: %+v", r.Databases)
	}
	if n, err := s.Measure(ctx); err != nil || n != 2 {
		t.Fatalf("Measure = %d, %v", n, err)
	}
	// Measured again the same day: replaced, not added.
	e.clk.Advance(time.Hour)
	sizes["ws"][0].Bytes = 1500
	if _, err := s.Measure(ctx); err != nil {
		t.Fatal(err)
	}
	r := e.report(owner, usage.Query{})
	if r.Databases.Bytes != 2000 || r.Databases.Objects != 0 || r.Databases.ByProject["prj_a"] != 1500 || len(r.Databases.Daily) != 1 {
		t.Fatalf("databases = %+v", r.Databases)
	}
	if r.Databases.MeasuredAt == nil || !r.Databases.MeasuredAt.Equal(now0.Add(time.Hour)) {
		t.Fatalf("measuredAt = %v", r.Databases.MeasuredAt)
	}
	if r.Storage.Bytes != 4096 || r.Storage.Objects != 3 {
		t.Fatalf("storage = %+v", r.Storage)
	}
	// The next day: a failing sizer keeps its last measurement, the others move on.
	e.clk.Advance(24 * time.Hour)
	fail = true
	sizes["ws"] = sizes["ws"][:1]
	if n, err := s.Measure(ctx); !errors.Is(err, errDown) || n != 1 {
		t.Fatalf("Measure = %d, %v", n, err)
	}
	r = e.report(owner, usage.Query{})
	if r.Databases.Bytes != 1500 || len(r.Databases.Daily) != 2 || r.Storage.Bytes != 4096 {
		t.Fatalf("next day: databases %+v storage %+v", r.Databases, r.Storage)
	}
	if p := e.report(owner, usage.Query{Project: "prj_b"}); p.Databases.Bytes != 500 {
		t.Fatalf("prj_b databases = %+v (its last measurement was the day before)", p.Databases)
	}
}

func TestRegistersJobs(t *testing.T) {
	e := newEnv(t)
	r := &fakeQueue{}
	e.deps.Jobs = r
	e.service()
	if r.kind != usage.JobMeasure || r.every != 24*time.Hour || r.handler == nil {
		t.Fatalf("registered %+v", r)
	}
}
