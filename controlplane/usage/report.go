package usage

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/billing"
	"github.com/svcplatform/platform/controlplane/metering"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/projects"
)

// MetricsDays is the span of the report's metrics object.
const MetricsDays = 30

// Query asks for a report.
type Query struct {
	// Period is month, last_month, 7d, 30d or 90d ("" for 30d).
	Period string
	// Project narrows the report to one project ("" for the workspace).
	Project string
}

// Report is the answer of GET /api/usage.
type Report struct {
	Period Period `json:"period"`
	// Project is the project the report is narrowed to (null: workspace).
	Project *string `json:"project"`
	// Totals sums every metric over the period; every catalog metric is
	// present, zero when nothing was recorded, null when it is not measured
	// (Catalog's NotMeasured: listed in NotMeasured, explained in Notes).
	Totals map[string]*float64 `json:"totals" doc:"every metric summed over the period: 0 when nothing was recorded, null when the metric is not measured (named in notMeasured, explained in notes)"`
	// Daily is every day of the period, oldest first, with the metrics
	// recorded that day.
	Daily []Day `json:"daily"`
	// ByProject is the totals of each project that recorded something;
	// projectId "" is the workspace's own use (workspace keys, AI calls
	// outside a project).
	ByProject []ProjectUsage `json:"byProject"`
	// Storage and Databases are what the daily measuring found.
	Storage   Measured `json:"storage"`
	Databases Measured `json:"databases"`
	// DeployTime is the period's deploys and the time their builds took.
	DeployTime DeployTime `json:"deployTime"`
	// NotMeasured lists what is not measured at all: the specification's
	// list, then the metrics whose areas are not built yet.
	NotMeasured []string `json:"notMeasured" doc:"what is not measured: requests and bandwidth to sites and apps, function-URL traffic, errors, latency, then the metrics whose areas are not built yet (null in totals)"`
	// Notes says, by metric, why a metric is not measured.
	Notes map[string]string `json:"notes" doc:"by metric id: why the metric is not measured"`
	// Counts are the resources there are now.
	Counts map[string]int `json:"counts"`
	// Limits are the plan's limits.
	Limits Limits `json:"limits"`
	// AICredits is this month's AI credit (null when unavailable).
	AICredits *AICredits `json:"aiCredits"`
	// Metrics are the last 30 days whatever the period.
	Metrics Metrics `json:"metrics"`
}

// Day is one day of the daily series.
type Day struct {
	Day     string             `json:"day"`
	Metrics map[string]float64 `json:"metrics"`
}

// ProjectUsage is one project's totals over the period.
type ProjectUsage struct {
	ProjectID string             `json:"projectId"`
	Name      string             `json:"name,omitempty"`
	Slug      string             `json:"slug,omitempty"`
	Deleted   bool               `json:"deleted,omitempty"`
	Totals    map[string]float64 `json:"totals"`
}

// Measured is the latest daily measurement in the period of one kind.
type Measured struct {
	Bytes   int64 `json:"bytes"`
	Objects int64 `json:"objects"`
	// MeasuredAt is when it was measured (null: never in the period).
	MeasuredAt *time.Time `json:"measuredAt"`
	// ByProject is bytes per project at that measurement.
	ByProject map[string]int64 `json:"byProject"`
	// Daily is each measured day of the period.
	Daily []MeasuredDay `json:"daily"`
}

// MeasuredDay is one day's measurement.
type MeasuredDay struct {
	Day     string `json:"day"`
	Bytes   int64  `json:"bytes"`
	Objects int64  `json:"objects"`
}

// DeployTime is the period's deploys and build time.
type DeployTime struct {
	Deploys      float64 `json:"deploys"`
	BuildSeconds float64 `json:"buildSeconds"`
	// BuildMachineSeconds is the build-machine time: builds run on the
	// control plane's own machine, so it is the build time.
	BuildMachineSeconds float64 `json:"buildMachineSeconds"`
}

// Limits are the plan and its limits.
type Limits struct {
	Plan plans.Name `json:"plan"`
	plans.Limits
}

// AICredits is this month's included AI credit and the Balance, in
// micro-dollars. The Balance is shown to admins only (null for others),
// as GET /api/billing is.
type AICredits struct {
	Month          string          `json:"month"`
	IncludedMicros billing.Micros  `json:"includedMicros"`
	UsedMicros     billing.Micros  `json:"usedMicros"`
	LeftMicros     billing.Micros  `json:"leftMicros"`
	BalanceMicros  *billing.Micros `json:"balanceMicros"`
}

// Metrics are the last 30 days (and two all-time totals).
type Metrics struct {
	Days int `json:"days"`
	// Totals sums every metric over the 30 days (null when not measured,
	// as the report's totals).
	Totals map[string]*float64 `json:"totals" doc:"every metric summed over the last 30 days: null when the metric is not measured"`
	// TestRuns30d and TotalTestRuns count function_test_runs (null while
	// function test runs are not measured).
	TestRuns30d   *float64 `json:"testRuns30d" doc:"function_test_runs over the last 30 days; null while function test runs are not measured"`
	TotalTestRuns *float64 `json:"totalTestRuns" doc:"function_test_runs ever; null while function test runs are not measured"`
	// Invocations30d and TotalInvocations are null: function invocations
	// are not measured (function-URL traffic is in notMeasured).
	Invocations30d   *float64 `json:"invocations30d"`
	TotalInvocations *float64 `json:"totalInvocations"`
}

// Report builds the usage report for caller p. A key limited to a project
// gets that project's report whatever it asks for, and 403 for another
// project; an unknown project is a 404.
func (s *Service) Report(ctx context.Context, p *auth.Principal, q Query) (Report, error) {
	now := s.d.Clock.Now()
	period, err := ParsePeriod(q.Period, now)
	if err != nil {
		return Report{}, err
	}
	ws := p.WorkspaceID
	project := q.Project
	if p.ProjectID != "" {
		if project != "" && project != p.ProjectID {
			return Report{}, api.Forbidden("project_key_mismatch", "this key is limited to another project")
		}
		project = p.ProjectID
	}
	prjs, err := s.d.Projects.List(ctx, p)
	if err != nil {
		return Report{}, fmt.Errorf("usage: projects: %w", err)
	}
	byID := make(map[string]projects.Project, len(prjs))
	for _, pr := range prjs {
		byID[pr.ID] = pr
	}
	r := Report{Period: period, NotMeasured: NotMeasured, Notes: notes()}
	if project != "" {
		if _, ok := byID[project]; !ok {
			return Report{}, api.NotFound("project")
		}
		r.Project = &project
	}

	sums, err := s.d.Meter.Sums(ctx, ws, project, period.FromDay(), period.ToDay())
	if err != nil {
		return Report{}, err
	}
	r.Totals, r.Daily, r.ByProject = aggregate(sums, period, byID)
	deploys, build := value(r.Totals[string(metering.Deploys)]), value(r.Totals[string(metering.BuildSeconds)])
	r.DeployTime = DeployTime{Deploys: deploys, BuildSeconds: build, BuildMachineSeconds: build}

	if r.Storage, err = s.measured(ctx, ws, KindStorage, project, period); err != nil {
		return Report{}, err
	}
	if r.Databases, err = s.measured(ctx, ws, KindDatabases, project, period); err != nil {
		return Report{}, err
	}
	if r.Counts, err = s.counts(ctx, ws, project, prjs); err != nil {
		return Report{}, err
	}
	plan := s.d.Plans.Plan(ctx, ws)
	r.Limits = Limits{Plan: plan, Limits: plans.Of(plan)}
	if s.d.Credits != nil {
		sum, err := s.d.Credits.Summary(ctx, ws)
		if err != nil {
			return Report{}, fmt.Errorf("usage: ai credits: %w", err)
		}
		r.AICredits = &AICredits{Month: sum.Month, IncludedMicros: sum.Included, UsedMicros: sum.IncludedUsed, LeftMicros: sum.IncludedLeft}
		if p.Role >= auth.Admin {
			r.AICredits.BalanceMicros = &sum.Balance
		}
	}
	if r.Metrics, err = s.metrics(ctx, ws, project, now); err != nil {
		return Report{}, err
	}
	return r, nil
}

// aggregate turns day sums into totals, the daily series and byProject.
func aggregate(sums []metering.DaySum, period Period, byID map[string]projects.Project) (map[string]*float64, []Day, []ProjectUsage) {
	totals := zeroTotals()
	days := period.days()
	daily := make([]Day, len(days))
	index := make(map[string]int, len(days))
	for i, d := range days {
		daily[i] = Day{Day: d, Metrics: map[string]float64{}}
		index[d] = i
	}
	perProject := map[string]map[string]float64{}
	for _, ds := range sums {
		m := string(ds.Metric)
		add(totals, m, ds.Quantity)
		if i, ok := index[ds.Day]; ok {
			daily[i].Metrics[m] += ds.Quantity
		}
		pt := perProject[ds.Project]
		if pt == nil {
			pt = map[string]float64{}
			perProject[ds.Project] = pt
		}
		pt[m] += ds.Quantity
	}
	out := make([]ProjectUsage, 0, len(perProject))
	for id, t := range perProject {
		pu := ProjectUsage{ProjectID: id, Totals: t}
		if p, ok := byID[id]; ok {
			pu.Name, pu.Slug = p.Name, p.Slug
		} else if id != "" {
			pu.Deleted = true
		}
		out = append(out, pu)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ProjectID < out[j].ProjectID })
	return totals, daily, out
}

// measured returns the latest measurement of kind in the period, with the
// measured days.
func (s *Service) measured(ctx context.Context, ws, kind, project string, period Period) (Measured, error) {
	rows, err := measurements(ctx, s.d.DB, ws, kind, project, period.FromDay(), period.ToDay())
	if err != nil {
		return Measured{}, err
	}
	out := Measured{ByProject: map[string]int64{}, Daily: []MeasuredDay{}}
	for _, m := range rows {
		if n := len(out.Daily); n == 0 || out.Daily[n-1].Day != m.Day {
			out.Daily = append(out.Daily, MeasuredDay{Day: m.Day})
		}
		d := &out.Daily[len(out.Daily)-1]
		d.Bytes += m.Bytes
		d.Objects += m.Objects
	}
	if len(out.Daily) == 0 {
		return out, nil
	}
	last := out.Daily[len(out.Daily)-1]
	out.Bytes, out.Objects = last.Bytes, last.Objects
	for _, m := range rows {
		if m.Day != last.Day {
			continue
		}
		out.ByProject[m.Project] += m.Bytes
		if out.MeasuredAt == nil || m.MeasuredAt.After(*out.MeasuredAt) {
			at := m.MeasuredAt
			out.MeasuredAt = &at
		}
	}
	return out, nil
}

// counts counts the resources there are now: projects, each counter summed
// over the projects, and (for the whole workspace) the workspace counts.
func (s *Service) counts(ctx context.Context, ws, project string, prjs []projects.Project) (map[string]int, error) {
	out := map[string]int{}
	var ids []string
	for _, p := range prjs {
		if project == "" || p.ID == project {
			ids = append(ids, p.ID)
		}
	}
	out["projects"] = len(ids)
	for _, c := range s.d.Counters {
		total := 0
		for _, id := range ids {
			n, err := c.Count(ctx, id)
			if err != nil {
				return nil, fmt.Errorf("usage: count %s: %w", c.Service(), err)
			}
			total += n
		}
		out[c.Service()] = total
	}
	if project == "" {
		for name, f := range s.d.WorkspaceCounts {
			n, err := f(ctx, ws)
			if err != nil {
				return nil, fmt.Errorf("usage: count %s: %w", name, err)
			}
			out[name] = n
		}
	}
	return out, nil
}

// metrics sums the last 30 days (today included) and the all-time test runs.
func (s *Service) metrics(ctx context.Context, ws, project string, now time.Time) (Metrics, error) {
	p, err := ParsePeriod(Period30d, now)
	if err != nil {
		return Metrics{}, err
	}
	sums, err := s.d.Meter.Sums(ctx, ws, project, p.FromDay(), p.ToDay())
	if err != nil {
		return Metrics{}, err
	}
	totals := zeroTotals()
	for _, ds := range sums {
		add(totals, string(ds.Metric), ds.Quantity)
	}
	out := Metrics{Days: MetricsDays, Totals: totals, TestRuns30d: totals[string(metering.FunctionTestRuns)]}
	all, err := s.d.Meter.Total(ctx, ws, project, metering.FunctionTestRuns, time.Time{}, p.To)
	if err != nil {
		return Metrics{}, err
	}
	if all != 0 || out.TestRuns30d != nil {
		out.TotalTestRuns = &all
	}
	return out, nil
}

// value is a total's number (0 for null).
func value(v *float64) float64 {
	if v == nil {
		return 0
	}
	return *v
}
