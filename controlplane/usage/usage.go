// Package usage answers what a workspace uses and what needs doing: the
// usage report (GET /api/usage) over the metering events, the daily
// measurements of stored bytes and database sizes, resource counts, plan
// limits and AI credit; and the attention list (GET /api/attention), a
// ranked to-do list gathered from sources each area plugs in.
//
// The package reads no other area's tables: every fact comes through a
// small interface in Deps, wired by the control plane's assembly.
package usage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/billing"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/jobs"
	"github.com/svcplatform/platform/controlplane/metering"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/controlplane/store"
)

// Meter sums usage events (*metering.Meter).
type Meter interface {
	Sums(ctx context.Context, workspace, project, fromDay, toDay string) ([]metering.DaySum, error)
	Total(ctx context.Context, workspace, project string, metric metering.Metric, from, to time.Time) (float64, error)
}

// Projects lists a workspace's projects (*projects.Service); a principal
// limited to one project gets only that one.
type Projects interface {
	List(ctx context.Context, pr *auth.Principal) ([]projects.Project, error)
}

// Credits is a workspace's money this month (*billing.Ledger).
type Credits interface {
	Summary(ctx context.Context, workspace string) (billing.Summary, error)
}

// Counter counts one kind of a project's resources; it has the shape of
// projects.Counter, so the areas that count for the project read (vectors,
// media, payments) plug in unchanged.
type Counter interface {
	// Service is the key in counts ("vectors", "media", "paymentAccount",
	// "databases").
	Service() string
	Count(ctx context.Context, projectID string) (int, error)
}

// CountFunc counts a workspace-wide resource (repos).
type CountFunc func(ctx context.Context, workspace string) (int, error)

// Size is one measured resource: a database, or what a project stores.
type Size struct {
	Project  string
	Resource string
	Bytes    int64
	Objects  int64
}

// Sizer measures a workspace's resources of one kind, for the daily
// measuring job.
type Sizer interface {
	Sizes(ctx context.Context, workspace string) ([]Size, error)
}

// SizerFunc adapts a function to Sizer.
type SizerFunc func(ctx context.Context, workspace string) ([]Size, error)

// Sizes calls f.
func (f SizerFunc) Sizes(ctx context.Context, workspace string) ([]Size, error) {
	return f(ctx, workspace)
}

// The measured kinds the report shows.
const (
	// KindDatabases are database sizes (one Size per database).
	KindDatabases = "databases"
	// KindStorage is stored bytes and object counts.
	KindStorage = "storage"
)

// Deps are what the service is built on. DB, Clock, Meter, Projects and
// Plans are required; the rest may be nil or empty, and what they would
// report is then absent (null or missing), never made up.
type Deps struct {
	DB       *store.DB
	Clock    clock.Clock
	Meter    Meter
	Projects Projects
	Plans    plans.Source
	// Jobs runs the daily measuring (JobMeasure).
	Jobs jobs.Queue
	// Credits gives aiCredits (null without it).
	Credits Credits
	// Counters count project resources (summed over the workspace).
	Counters []Counter
	// WorkspaceCounts count workspace-wide resources by name ("repos").
	WorkspaceCounts map[string]CountFunc
	// Sizers measure, by kind (KindDatabases, KindStorage), once a day.
	Sizers map[string]Sizer
	// Workspaces lists every workspace, for the measuring job.
	Workspaces func(ctx context.Context) ([]string, error)
	// Sources feed the attention list, by name; the service's own plan
	// limits source is always included.
	Sources map[string]Source
	// Logger receives sources that failed.
	Logger *slog.Logger
}

// Service builds usage reports and the attention list.
type Service struct {
	d Deps
}

// Config is the area's configuration; the zero value works.
type Config struct {
	// MeasureEvery is how often JobMeasure runs (MeasureEvery when 0).
	MeasureEvery time.Duration `json:"measureEvery"`
}

// check names what is missing.
func (d *Deps) check() error {
	var missing []string
	for name, ok := range map[string]bool{"DB": d.DB != nil, "Meter": d.Meter != nil, "Projects": d.Projects != nil, "Plans": d.Plans != nil,
		"Jobs": d.Jobs != nil} {
		if !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return fmt.Errorf("%w: %s", ErrNotConfigured, strings.Join(missing, ", "))
	}
	return nil
}

// ErrNotConfigured is returned by New when a dependency is missing.
var ErrNotConfigured = errors.New("usage: missing dependencies")

// New returns the service and registers the daily measuring on d.Jobs. It
// starts nothing: the job runner measures.
func New(cfg Config, d Deps) (*Service, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	if cfg.MeasureEvery <= 0 {
		cfg.MeasureEvery = MeasureEvery
	}
	if d.Clock == nil {
		d.Clock = clock.System{}
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	s := &Service{d: d}
	s.registerJobs(d.Jobs, cfg.MeasureEvery)
	return s, nil
}

// AddSource adds an attention source (areas built after the service).
func (s *Service) AddSource(name string, src Source) {
	if s.d.Sources == nil {
		s.d.Sources = map[string]Source{}
	}
	s.d.Sources[name] = src
}

// AddCounter adds a project resource counter.
func (s *Service) AddCounter(c Counter) { s.d.Counters = append(s.d.Counters, c) }
