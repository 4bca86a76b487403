package databases

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/jobs"
	"github.com/svcplatform/platform/controlplane/metering"
	"github.com/svcplatform/platform/controlplane/placement"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/controlplane/ratelimit"
	"github.com/svcplatform/platform/controlplane/store"
)

// Defaults of the limits the service enforces itself (the specification's
// numbers) and of its own settings.
const (
	// DefaultDatabaseBytes is the size one database may reach (10 GB).
	DefaultDatabaseBytes int64 = 10 * plans.GB
	// DefaultQueryTimeout is how long the statements of one request may run.
	DefaultQueryTimeout = 30 * time.Second
	// DefaultRequestsPerWindow is how many query requests a workspace may
	// send per DefaultWindow.
	DefaultRequestsPerWindow = 600
	// DefaultWindow is the rate limit's window.
	DefaultWindow = 5 * time.Minute
	// MaxBatch is how many statements a batch (or one sql) may hold.
	MaxBatch = 100
	// DefaultExportWait is how long a query waits for a running export
	// before it is refused with 409 export_active.
	DefaultExportWait = 2 * time.Second
	// DefaultExportInline is how long the export call waits for a small
	// export to finish, so that it can answer complete at once.
	DefaultExportInline = time.Second
	// DefaultMaxResultBytes bounds the encoded rows one answer carries, all
	// of its statements together (a batch, or the statements of one sql).
	DefaultMaxResultBytes = 32 << 20
	// DefaultMaxResultRows bounds the rows one answer carries, all of its
	// statements together.
	DefaultMaxResultRows = 250_000
	// DefaultMaxOpen is how many databases stay open at once; the least
	// recently used idle ones are closed beyond it. Each holds a writer and
	// up to four readers (two kept idle), about two file descriptors each.
	DefaultMaxOpen = 64
	// DefaultFlushEvery is how often query and row counts reach the meter.
	DefaultFlushEvery = 10 * time.Second
	// planTTL is how long a workspace's plan is cached for the storage hold.
	planTTL = 10 * time.Second
)

// Limits are the service's adjustable limits. The zero value of a field
// means its default.
type Limits struct {
	// DatabaseBytes is the most one database may hold (SQLite's
	// max_page_count is set from it on every connection opened after).
	DatabaseBytes int64 `json:"databaseBytes"`
	// QueryTimeout bounds the statements of one request.
	QueryTimeout time.Duration `json:"queryTimeout"`
	// RequestsPerWindow is how many query requests a workspace may send per Window.
	RequestsPerWindow int `json:"requestsPerWindow"`
	// Window is the rate limit's window.
	Window time.Duration `json:"window"`
	// StorageBytes replaces the plan's database storage allowance when
	// positive (operators; tests).
	StorageBytes int64 `json:"storageBytes"`
	// ExportWait is how long a query waits for a running export;
	// negative refuses at once.
	ExportWait time.Duration `json:"exportWait"`
	// ExportInline is how long the export call waits for completion;
	// negative answers active at once.
	ExportInline time.Duration `json:"exportInline"`
	// MaxResultBytes bounds the encoded rows of one answer, all of its
	// statements together.
	MaxResultBytes int `json:"maxResultBytes"`
	// MaxResultRows bounds the rows of one answer, all of its statements
	// together.
	MaxResultRows int `json:"maxResultRows"`
}

// Provision fills defaults.
func (l *Limits) Provision() {
	if l.DatabaseBytes == 0 {
		l.DatabaseBytes = DefaultDatabaseBytes
	}
	if l.QueryTimeout == 0 {
		l.QueryTimeout = DefaultQueryTimeout
	}
	if l.RequestsPerWindow == 0 {
		l.RequestsPerWindow = DefaultRequestsPerWindow
	}
	if l.Window == 0 {
		l.Window = DefaultWindow
	}
	if l.ExportWait == 0 {
		l.ExportWait = DefaultExportWait
	}
	if l.ExportInline == 0 {
		l.ExportInline = DefaultExportInline
	}
	if l.MaxResultBytes == 0 {
		l.MaxResultBytes = DefaultMaxResultBytes
	}
	if l.MaxResultRows == 0 {
		l.MaxResultRows = DefaultMaxResultRows
	}
}

// Validate reports limits that cannot work.
func (l Limits) Validate() error {
	if l.DatabaseBytes < 64<<10 || l.QueryTimeout < 0 || l.RequestsPerWindow < 0 || l.Window < 0 || l.MaxResultBytes < 0 || l.MaxResultRows < 0 {
		return fmt.Errorf("databases: limits out of range: %+v", l)
	}
	return nil
}

// Config is the databases area's configuration.
type Config struct {
	// Dir holds one SQLite file per database (<id>.db) and exports/.
	Dir string `json:"dir"`
	// Limits are the adjustable limits.
	Limits Limits `json:"limits"`
	// MaxOpen is how many databases stay open at once.
	MaxOpen int `json:"maxOpen"`
	// FlushEvery is how often counts reach the meter.
	FlushEvery time.Duration `json:"flushEvery"`
	// PublicBaseURL is the address people reach the API at (--public-url):
	// endpoints and export downloads in answers start with it. Empty: the
	// scheme and host each request came in on.
	PublicBaseURL string `json:"publicBaseUrl,omitempty"`
}

// Provision fills defaults.
func (c *Config) Provision() {
	c.Limits.Provision()
	if c.MaxOpen == 0 {
		c.MaxOpen = DefaultMaxOpen
	}
	if c.FlushEvery == 0 {
		c.FlushEvery = DefaultFlushEvery
	}
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	if c.Dir == "" {
		return errors.New("databases: no directory")
	}
	if c.MaxOpen < 1 {
		return errors.New("databases: MaxOpen must be at least 1")
	}
	return c.Limits.Validate()
}

// Projects is what the area needs of the projects area.
type Projects interface {
	// Writable returns the project when it accepts new resources.
	Writable(ctx context.Context, workspace, id string) (projects.Project, error)
}

// activeGuard is what the projects area offers to refuse changes to a
// project whose deletion failed half-way (409 project_teardown_failed:
// only reads and deletes are accepted until the delete is retried).
type activeGuard interface {
	RequireActive(ctx context.Context, projectID string) error
}

// StorageFunder pays for database storage past a paid plan's allowance
// (the billing ledger: included usage credit first, then the Balance).
// Without one no workspace can pay, and writes that add data are held with
// usage_paused once the allowance is used up.
type StorageFunder interface {
	// CanFundStorage tells whether the workspace can pay for overBytes past
	// its allowance: it has included credit or Balance left.
	CanFundStorage(ctx context.Context, workspace string, overBytes int64) (bool, error)
	// ChargeStorage charges amount micro-dollars for one day of storage past
	// the allowance and returns what it could charge (less than amount
	// when credit and Balance ran out). ref names the workspace's day: a
	// second charge with the same ref charges nothing more and returns
	// what the first charged.
	ChargeStorage(ctx context.Context, workspace, ref string, amount int64) (int64, error)
}

// Deps are the core services the area is built on.
type Deps struct {
	// DB is the metadata database.
	DB *store.DB
	// Clock tells the time of records, the rate limit and the plan cache.
	Clock clock.Clock
	// Limiter is the workspace query rate limit, shared by the replicas on
	// PostgreSQL (ratelimit.For(DB, Clock) when nil).
	Limiter ratelimit.Limiter
	// Audit records creates, retries, deletes and exports.
	Audit *audit.Log
	// Meter receives query and row counts, one batch per flush.
	Meter metering.BatchRecorder
	// Projects says whether a project takes new databases.
	Projects Projects
	// Plans tells each workspace's plan.
	Plans plans.Source
	// Jobs runs the daily storage charge (JobChargeStorage).
	Jobs jobs.Queue
	// Logger receives what goes wrong in the background.
	Logger *slog.Logger
	// Cluster, set when several control-plane replicas share the metadata
	// database, records which node owns each database and forwards
	// requests to it (controlplane/placement); nil on a single node.
	Cluster *placement.Forwarder
}

// Service is the databases area: it creates, opens, queries, exports and
// removes customer databases.
type Service struct {
	cfg    Config
	limits atomic.Pointer[Limits]
	d      Deps
	funder atomic.Pointer[StorageFunder]

	records *records
	open    *handles
	limiter ratelimit.Limiter
	usage   *metering.Aggregator
	storage *storage
	exports sync.WaitGroup
	pause   atomic.Pointer[exportPause]
	// fwd is the forwarder among replicas (nil on a single node).
	fwd atomic.Pointer[placement.Forwarder]
	// removed, when set, is called after the files of a database deleted
	// on another replica were removed here (tests synchronise on it).
	removed atomic.Pointer[func(id string)]
	// exportWaiting, when set, is called as a query starts waiting for an
	// export (tests synchronise on it instead of sleeping).
	exportWaiting atomic.Pointer[func()]
	// clustered is closed once the service is one of several replicas:
	// Run then follows removals on other nodes.
	clustered chan struct{}
	closeOnce sync.Once
}

// check names what is missing.
func (d *Deps) check() error {
	var missing []string
	for name, ok := range map[string]bool{"DB": d.DB != nil, "Projects": d.Projects != nil, "Plans": d.Plans != nil, "Jobs": d.Jobs != nil} {
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
var ErrNotConfigured = errors.New("databases: missing dependencies")

// JobChargeStorage measures database sizes and charges paid plans' storage
// past the allowance (ChargeStorage), once a day.
const JobChargeStorage = "databases.storage"

// New builds the service, marks creates and exports cut short by a restart
// as failed, removes files left by deleted databases and registers the
// daily storage charge on d.Jobs. That recovery reads and writes the store
// (hence ctx) and must finish before any request arrives: it fails every
// create still marked in progress. It starts nothing: Run flushes counts
// and, among replicas, removes the files of databases deleted elsewhere.
func New(ctx context.Context, cfg Config, d Deps) (*Service, error) {
	cfg.Provision()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := d.check(); err != nil {
		return nil, err
	}
	if d.Clock == nil {
		d.Clock = clock.System{}
	}
	if d.Audit == nil {
		d.Audit = audit.New(d.DB, d.Clock)
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	s := &Service{cfg: cfg, d: d, clustered: make(chan struct{})}
	lim := cfg.Limits
	s.limits.Store(&lim)
	s.records = newRecords(d.DB)
	s.open = newHandles(cfg.MaxOpen)
	s.limiter = d.Limiter
	if s.limiter == nil {
		s.limiter = ratelimit.For(d.DB, d.Clock)
	}
	s.usage = metering.NewAggregator(d.Meter, d.Clock)
	s.storage = newStorage()
	if d.Cluster != nil {
		s.fwd.Store(d.Cluster)
		s.records.shared.Store(true)
		close(s.clustered)
	}
	if err := s.recover(ctx); err != nil {
		return nil, err
	}
	d.Jobs.Register(JobChargeStorage, func(ctx context.Context, _ jobs.Job) error {
		_, err := s.ChargeStorage(ctx)
		return err
	}, jobs.KindOptions{MaxAttempts: 5, Backoff: []time.Duration{time.Minute, 10 * time.Minute, time.Hour}})
	d.Jobs.Every(JobChargeStorage, 24*time.Hour)
	return s, nil
}

// Run sends counts to the meter and sizes to the store every
// Config.FlushEvery and, among replicas, removes the files of databases
// deleted on other nodes, until ctx ends. Close flushes the rest.
func (s *Service) Run(ctx context.Context) error {
	done := make(chan struct{})
	go func() { defer close(done); s.flushLoop(ctx) }()
	var err error
	select {
	case <-ctx.Done():
	case <-s.clustered:
		err = s.followRemovals(ctx)
	}
	<-done
	return err
}

// Limits returns the limits in force.
func (s *Service) Limits() Limits { return *s.limits.Load() }

// SetLimits replaces the adjustable limits (zero fields take defaults).
// DatabaseBytes applies to databases opened afterwards.
func (s *Service) SetLimits(l Limits) error {
	l.Provision()
	if err := l.Validate(); err != nil {
		return err
	}
	s.limits.Store(&l)
	return nil
}

// SetStorageFunder installs what tells whether a paid workspace can pay
// for storage past its allowance.
func (s *Service) SetStorageFunder(f StorageFunder) { s.funder.Store(&f) }

// path is where database id lives.
func (s *Service) path(id string) string { return filepath.Join(s.cfg.Dir, id+".db") }

// exportDir holds finished exports.
func (s *Service) exportDir() string { return filepath.Join(s.cfg.Dir, "exports") }

// recover settles what a stopped process left behind.
func (s *Service) recover(ctx context.Context) error {
	var mine func(context.Context, string) (bool, error)
	if s.cluster() != nil {
		mine = s.mine
	}
	if err := s.records.failInterrupted(ctx, s.d.Clock.Now(), mine); err != nil {
		return err
	}
	return s.sweep(ctx)
}

// sweep removes the files and exports a deletion could not remove.
func (s *Service) sweep(ctx context.Context) error {
	seen := map[string]bool{}
	for _, dir := range []string{s.cfg.Dir, s.exportDir()} {
		entries, err := os.ReadDir(dir)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("databases: sweep: %w", err)
		}
		for _, e := range entries {
			id, _, _ := strings.Cut(e.Name(), ".")
			if !strings.HasPrefix(id, "db_") || seen[id] {
				continue
			}
			seen[id] = true
			rec, err := s.records.byID(ctx, id)
			if err != nil {
				continue
			}
			if rec.Status != StatusDeleted {
				if dir == s.cfg.Dir {
					s.adopt(ctx, id)
				}
				continue
			}
			if err := errors.Join(removeFiles(s.path(id)), os.RemoveAll(filepath.Join(s.exportDir(), id))); err != nil {
				s.d.Logger.Warn("databases: leftover files of a deleted database", "database", id, "err", err)
			}
		}
	}
	return nil
}

// flushLoop sends counts to the meter and sizes to the metadata database
// until ctx ends.
func (s *Service) flushLoop(ctx context.Context) {
	t := time.NewTicker(s.cfg.FlushEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := s.Flush(ctx); err != nil && ctx.Err() == nil {
				s.d.Logger.Warn("databases: flush", "err", err)
			}
		}
	}
}

// Flush records the query and row counts gathered since the last flush as
// usage events, and stores each database's last measured size.
func (s *Service) Flush(ctx context.Context) error {
	err := s.usage.Flush(ctx)
	sizes := s.storage.dirty()
	if len(sizes) > 0 {
		err = errors.Join(err, s.records.saveSizes(ctx, sizes, s.d.Clock.Now()))
	}
	return err
}

// Close waits for running exports, closes every open database and flushes
// the counts. Call it after Run has returned.
func (s *Service) Close() error {
	var err error
	s.closeOnce.Do(func() {
		err = s.open.closeAll()
		s.exports.Wait()
		err = errors.Join(err, s.Flush(context.Background()))
	})
	return err
}

// ensureDir makes the databases directory.
func (s *Service) ensureDir() error { return os.MkdirAll(s.cfg.Dir, 0o750) }
