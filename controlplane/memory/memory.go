// Package memory is the memory stores area: key-value stores of a project,
// in the manner of Cloudflare Workers KV and Upstash. A store holds keys of
// up to MaxKeyBytes with values of up to MaxValueBytes, each with optional
// JSON metadata and a time to live; keys are got, put, deleted and listed by
// prefix with a cursor, one at a time or in bulk. Keys and values are rows
// of the metadata database (SQLite or PostgreSQL), so any replica serves any
// store. Expired keys are invisible at once and removed by a periodic job.
// Every key operation is metered as memory_operations.
package memory

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/jobs"
	"github.com/svcplatform/platform/controlplane/metering"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/controlplane/store"
)

// The limits of one key, value and request. They are the same on every
// plan; what differs by plan is in Limits.
const (
	// MaxKeyBytes bounds a key, in bytes of UTF-8 (Cloudflare KV's limit).
	MaxKeyBytes = 512
	// MaxValueBytes bounds a value (1 MiB): values are rows of the
	// metadata database, and one get or put stays a bounded read or write.
	MaxValueBytes = 1 << 20
	// MaxMetadataBytes bounds a key's metadata, as compact JSON (Cloudflare
	// KV's limit).
	MaxMetadataBytes = 1024
	// MaxTTLSeconds bounds a time to live (ten years).
	MaxTTLSeconds = 10 * 365 * 24 * 3600
	// MaxBulkKeys bounds the keys of one bulk get, put or delete.
	MaxBulkKeys = 100
	// MaxBulkBody bounds the body of a bulk put (values as JSON strings,
	// base64 for bytes).
	MaxBulkBody = 8 << 20
	// MaxBulkGetBytes bounds the values one bulk get answers, together.
	MaxBulkGetBytes = 8 << 20
	// DefaultListLimit and MaxListLimit bound a page of keys.
	DefaultListLimit = 100
	MaxListLimit     = 1000
	// MaxNameLen bounds a store's name, in characters.
	MaxNameLen = 64
)

// Defaults of Config.
const (
	// DefaultFlushEvery is how often operation counts reach the meter.
	DefaultFlushEvery = 10 * time.Second
	// DefaultSweepEvery is how often expired keys are removed.
	DefaultSweepEvery = time.Minute
	// DefaultSweepBatch is how many keys one transaction of the sweep or
	// of a store's removal deletes.
	DefaultSweepBatch = 500
)

// MB is 10^6 bytes, the unit of the stores' byte caps.
const MB int64 = 1_000_000

// Limits are a plan's caps on memory stores (ours: the specification
// names none).
type Limits struct {
	// StoresPerProject is how many stores one project may hold.
	StoresPerProject int `json:"storesPerProject"`
	// KeysPerStore is how many keys one store may hold.
	KeysPerStore int64 `json:"keysPerStore"`
	// BytesPerStore is how many bytes of keys, values and metadata one
	// store may hold.
	BytesPerStore int64 `json:"bytesPerStore"`
}

// DefaultLimits are the caps of each plan. Upstash's free database holds
// 256 MB and Cloudflare's free KV 1 GB; a hobby store holds 100 MB and
// 10,000 keys (a side project's sessions, flags and caches), and paid
// plans hold more of each.
var DefaultLimits = map[plans.Name]Limits{
	plans.Hobby:      {StoresPerProject: 3, KeysPerStore: 10_000, BytesPerStore: 100 * MB},
	plans.Pro:        {StoresPerProject: 20, KeysPerStore: 1_000_000, BytesPerStore: 1000 * MB},
	plans.Team:       {StoresPerProject: 50, KeysPerStore: 5_000_000, BytesPerStore: 5000 * MB},
	plans.Scale:      {StoresPerProject: 100, KeysPerStore: 10_000_000, BytesPerStore: 10_000 * MB},
	plans.Enterprise: {StoresPerProject: 100, KeysPerStore: 10_000_000, BytesPerStore: 10_000 * MB},
}

// Config is the area's configuration; the zero value works.
type Config struct {
	// Limits are the caps of each plan (DefaultLimits for plans it does
	// not name).
	Limits map[plans.Name]Limits `json:"limits,omitempty"`
	// FlushEvery is how often Run sends operation counts to the meter
	// (DefaultFlushEvery).
	FlushEvery time.Duration `json:"flushEvery,omitempty"`
	// SweepEvery is how often the job removing expired keys runs
	// (DefaultSweepEvery).
	SweepEvery time.Duration `json:"sweepEvery,omitempty"`
	// SweepBatch is how many keys one transaction of the sweep deletes
	// (DefaultSweepBatch).
	SweepBatch int `json:"sweepBatch,omitempty"`
}

// Provision fills defaults.
func (c *Config) Provision() {
	if c.FlushEvery <= 0 {
		c.FlushEvery = DefaultFlushEvery
	}
	if c.SweepEvery <= 0 {
		c.SweepEvery = DefaultSweepEvery
	}
	if c.SweepBatch <= 0 {
		c.SweepBatch = DefaultSweepBatch
	}
}

// Validate checks a provisioned Config; it changes nothing.
func (c *Config) Validate() error {
	for p, l := range c.Limits {
		if _, err := plans.Parse(string(p)); err != nil {
			return fmt.Errorf("memory: limits: %w", err)
		}
		if l.StoresPerProject < plans.Unlimited || l.KeysPerStore < plans.Unlimited || l.BytesPerStore < plans.Unlimited {
			return fmt.Errorf("memory: limits of %s: each cap is a count, or -1 for none", p)
		}
	}
	return nil
}

// limits returns the caps of plan p.
func (c *Config) limits(p plans.Name) Limits {
	return plans.Lookup(c.Limits, DefaultLimits, p)
}

// Projects is what the area needs of projects (*projects.Service).
type Projects interface {
	Get(ctx context.Context, workspace, id string) (projects.Project, error)
	// Writable returns the project when it accepts new resources (409
	// project_teardown_failed otherwise).
	Writable(ctx context.Context, workspace, id string) (projects.Project, error)
}

// Deps are the services the area is built on.
type Deps struct {
	DB *store.DB
	// Clock is the time source of expiries (clock.System when nil).
	Clock clock.Clock
	// Meter records memory_operations, in batches.
	Meter    metering.BatchRecorder
	Jobs     jobs.Queue
	Projects Projects
	Plans    plans.Source
	// Audit records stores created and deleted (audit.New over DB when
	// nil).
	Audit *audit.Log
	// Logger receives failures of the sweep and of removals, never keys or
	// values (slog.Default when nil).
	Logger *slog.Logger
}

// check names what is missing.
func (d *Deps) check() error {
	var missing []string
	for name, ok := range map[string]bool{"DB": d.DB != nil, "Meter": d.Meter != nil, "Jobs": d.Jobs != nil,
		"Projects": d.Projects != nil, "Plans": d.Plans != nil} {
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
var ErrNotConfigured = errors.New("memory: missing dependencies")

// JobSweep is the job kind that removes expired keys and finishes the
// removal of deleted stores.
const JobSweep = "memory.sweep"

// Service is the memory stores area.
type Service struct {
	cfg Config
	d   Deps
	ops *metering.Aggregator
	m   *metrics
	get getStmts

	closeOnce sync.Once
}

// New builds the area and registers its sweep on d.Jobs. It starts
// nothing: Run sends operation counts to the meter, the jobs runner sweeps.
func New(cfg Config, d Deps) (*Service, error) {
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
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.Audit == nil {
		d.Audit = audit.New(d.DB, d.Clock)
	}
	s := &Service{cfg: cfg, d: d, m: newMetrics(), ops: metering.NewAggregator(d.Meter, d.Clock)}
	var err error
	if s.get, err = prepareGet(d.DB); err != nil {
		return nil, fmt.Errorf("memory: prepare: %w", err)
	}
	d.Jobs.Register(JobSweep, func(ctx context.Context, _ jobs.Job) error {
		_, err := s.Sweep(ctx)
		return err
	}, jobs.KindOptions{MaxAttempts: 3, Backoff: []time.Duration{time.Minute}, Timeout: 10 * time.Minute})
	d.Jobs.Every(JobSweep, cfg.SweepEvery)
	return s, nil
}

// Run sends operation counts to the meter every Config.FlushEvery until
// ctx ends; a failed flush is logged and retried by the next. Close writes
// the rest.
func (s *Service) Run(ctx context.Context) error {
	t := time.NewTicker(s.cfg.FlushEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err := s.Flush(ctx); err != nil && ctx.Err() == nil {
				s.d.Logger.Warn("memory: flush operation counts", "err", err)
			}
		}
	}
}

// Flush records the operations counted since the last flush as
// memory_operations events (one per workspace, project and day). A flush
// that fails is retried by the next one and never counts twice.
func (s *Service) Flush(ctx context.Context) error { return s.ops.Flush(ctx) }

// Close writes the operations still counted and releases the prepared
// statements. Call it after Run has returned.
func (s *Service) Close() error {
	var err error
	s.closeOnce.Do(func() {
		err = errors.Join(s.Flush(context.Background()), s.get.close())
	})
	return err
}

// count meters n operations on a store of workspace and project.
func (s *Service) count(workspace, project, op string, n int) {
	if n <= 0 {
		return
	}
	s.ops.Add(workspace, project, metering.MemoryOperations, float64(n), time.Time{})
	s.m.ops.WithLabelValues(op).Add(float64(n))
}

// now is the clock's time.
func (s *Service) now() time.Time { return s.d.Clock.Now().UTC() }
