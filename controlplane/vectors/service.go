package vectors

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/metering"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/controlplane/vectors/index"
)

// Defaults of Config.
const (
	// DefaultGraphThreshold is the live vector count from which a
	// collection gets an HNSW graph for unfiltered queries. Below it the
	// exact scan is as fast (measured: README.md).
	DefaultGraphThreshold = 20_000
	// DefaultFlushEvery is how often operation counts reach the meter.
	DefaultFlushEvery = 30 * time.Second
	// graphBatch is how many vectors the indexer adds to a graph per core
	// and hold of the collection's write lock (the batch is inserted in
	// parallel across GOMAXPROCS), so queries wait little.
	graphBatch = 64
)

// Config is the vectors area's configuration.
type Config struct {
	// Dir holds one SQLite file per collection (<id>.db).
	Dir string `json:"dir"`
	// GraphThreshold is the live vector count from which unfiltered
	// queries use the HNSW graph; negative never builds one.
	GraphThreshold int `json:"graphThreshold"`
	// FlushEvery is how often counts reach the meter.
	FlushEvery time.Duration `json:"flushEvery"`
	// HNSW shapes the graphs.
	HNSW index.HNSWConfig `json:"hnsw"`
}

// Provision fills defaults.
func (c *Config) Provision() {
	if c.GraphThreshold == 0 {
		c.GraphThreshold = DefaultGraphThreshold
	}
	if c.FlushEvery == 0 {
		c.FlushEvery = DefaultFlushEvery
	}
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	if c.Dir == "" {
		return errors.New("vectors: no directory")
	}
	if c.FlushEvery < 0 {
		return errors.New("vectors: FlushEvery must be positive")
	}
	return nil
}

// Projects is what the area needs of the projects area.
type Projects interface {
	// Get returns a project of the workspace (a 404 error for another
	// workspace's or none).
	Get(ctx context.Context, workspace, id string) (projects.Project, error)
	// RequireActive refuses changes to a project whose deletion failed.
	RequireActive(ctx context.Context, projectID string) error
}

// Embedder turns texts into vectors with an embedding model (the AI
// gateway, which meters them on AI credits).
type Embedder interface {
	Embed(ctx context.Context, workspace, project, model string, inputs []string) ([][]float32, error)
}

// Deps are the core services the area is built on.
type Deps struct {
	// DB is the metadata database.
	DB *store.DB
	// Clock tells the time of records and usage.
	Clock clock.Clock
	// Audit records creates, index changes and deletes.
	Audit *audit.Log
	// Meter receives operation counts and stored vectors.
	Meter metering.Sink
	// Projects says which projects exist and accept changes.
	Projects Projects
	// Plans tells each workspace's plan.
	Plans plans.Source
	// Embedder embeds text upserts and queries; nil answers them 503
	// ai_unavailable.
	Embedder Embedder
	// Logger receives what goes wrong in the background.
	Logger *slog.Logger
}

// Service is the vector collections area.
type Service struct {
	cfg     Config
	d       Deps
	records records
	usage   *metering.Aggregator

	mu    sync.Mutex
	colls map[string]*collSlot

	kick      chan struct{}
	closeOnce sync.Once
}

// collSlot loads a collection once.
type collSlot struct {
	once sync.Once
	c    *coll
	err  error
}

var (
	_ projects.Dependent = (*Service)(nil)
	_ projects.Counter   = (*Service)(nil)
)

// check names what is missing.
func (d *Deps) check() error {
	var missing []string
	for name, ok := range map[string]bool{"DB": d.DB != nil, "Projects": d.Projects != nil, "Plans": d.Plans != nil} {
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
var ErrNotConfigured = errors.New("vectors: missing dependencies")

// New builds the service and removes the files of deleted collections. It
// reads the store (hence ctx) because that sweep must finish before any
// request arrives: a create makes its file before its record. It starts
// nothing: Run loads the collections, grows their graphs and flushes the
// counts (a request for a collection not loaded yet loads it at once).
func New(ctx context.Context, cfg Config, d Deps) (*Service, error) {
	cfg.Provision()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := d.check(); err != nil {
		return nil, err
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.Clock == nil {
		d.Clock = clock.System{}
	}
	if d.Audit == nil {
		d.Audit = audit.New(d.DB, d.Clock)
	}
	if err := os.MkdirAll(cfg.Dir, 0o750); err != nil {
		return nil, fmt.Errorf("vectors: directory %s: %w", cfg.Dir, err)
	}
	s := &Service{cfg: cfg, d: d, records: records{d.DB}, usage: newUsage(d.Meter, d.Clock), colls: map[string]*collSlot{},
		kick: make(chan struct{}, 1)}
	if err := s.sweep(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Run loads every collection, grows the HNSW graphs of those past the
// threshold and sends counts to the meter every Config.FlushEvery, until
// ctx ends. Close flushes the rest.
func (s *Service) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); s.indexer(ctx) }()
	go func() { defer wg.Done(); s.flushLoop(ctx) }()
	s.loadAll(ctx)
	wg.Wait()
	return nil
}

// loadAll loads every ready collection, then wakes the indexer.
func (s *Service) loadAll(ctx context.Context) {
	recs, err := s.records.ready(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.d.Logger.Warn("vectors: list collections to load", "err", err)
		}
		return
	}
	for _, r := range recs {
		if ctx.Err() != nil {
			return
		}
		if _, err := s.open(ctx, r); err != nil && ctx.Err() == nil {
			s.d.Logger.Warn("vectors: load at start", "collection", r.ID, "err", err)
		}
	}
	s.poke()
}

// path is where collection id lives.
func (s *Service) path(id string) string { return filepath.Join(s.cfg.Dir, id+".db") }

// sweep removes files without a live record: deleted collections, and
// creates a crash cut short before the record was written.
func (s *Service) sweep(ctx context.Context) error {
	entries, err := os.ReadDir(s.cfg.Dir)
	if err != nil {
		return fmt.Errorf("vectors: sweep: %w", err)
	}
	seen := map[string]bool{}
	for _, e := range entries {
		id, _, _ := strings.Cut(e.Name(), ".")
		if !strings.HasPrefix(id, "vec_") || seen[id] {
			continue
		}
		seen[id] = true
		rec, err := s.records.byID(ctx, id)
		if err == nil && rec.Status == statusReady {
			continue
		}
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if err := removeFiles(s.path(id)); err != nil {
			s.d.Logger.Warn("vectors: leftover files", "collection", id, "err", err)
		}
	}
	return nil
}

// open returns the loaded collection of rec, loading it once.
func (s *Service) open(ctx context.Context, rec record) (*coll, error) {
	s.mu.Lock()
	sl := s.colls[rec.ID]
	if sl == nil {
		sl = &collSlot{}
		s.colls[rec.ID] = sl
	}
	s.mu.Unlock()
	sl.once.Do(func() {
		f, err := openFile(ctx, s.path(rec.ID), false)
		if err != nil {
			sl.err = err
			return
		}
		c, err := newColl(rec, s.path(rec.ID), f)
		if err == nil {
			err = c.load(ctx)
		}
		if err != nil {
			f.close()
			sl.err = err
			return
		}
		sl.c = c
		s.poke()
	})
	if sl.err != nil {
		// Let a later request try again (a transient error).
		s.mu.Lock()
		if s.colls[rec.ID] == sl {
			delete(s.colls, rec.ID)
		}
		s.mu.Unlock()
	}
	return sl.c, sl.err
}

// loaded returns the collections in memory.
func (s *Service) loaded() []*coll {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*coll, 0, len(s.colls))
	for _, sl := range s.colls {
		if sl.c != nil {
			out = append(out, sl.c)
		}
	}
	return out
}

// forget closes and drops a collection from memory.
func (s *Service) forget(id string) {
	s.mu.Lock()
	sl := s.colls[id]
	delete(s.colls, id)
	s.mu.Unlock()
	if sl == nil || sl.c == nil {
		return
	}
	c := sl.c
	c.wmu.Lock()
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.f.close()
	c.wmu.Unlock()
}

// poke wakes the indexer.
func (s *Service) poke() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// indexer grows the HNSW graphs of collections past the threshold, a
// batch at a time, so that unfiltered queries on large collections stop
// scanning everything. Vectors not in a graph yet are still found: queries
// scan them exactly.
func (s *Service) indexer(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.kick:
		}
		for busy := true; busy; {
			busy = false
			for _, c := range s.loaded() {
				if ctx.Err() != nil {
					return
				}
				if s.grow(c) {
					busy = true
				}
			}
		}
	}
}

// grow adds one batch of slots to c's graph and reports whether more
// remain.
func (s *Service) grow(c *coll) bool {
	if s.cfg.GraphThreshold < 0 {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	if c.g == nil {
		if c.st.Live() < s.cfg.GraphThreshold {
			return false
		}
		c.g = index.NewHNSW(c.st, s.cfg.HNSW)
	}
	workers := runtime.GOMAXPROCS(0)
	c.g.InsertBatch(min(graphBatch*workers, c.st.Slots()-c.g.Covered()), workers)
	return c.g.Covered() < c.st.Slots()
}

// WaitIndexed blocks until every loaded collection's graph covers all its
// vectors (tests and the benchmark; queries never need it).
func (s *Service) WaitIndexed(ctx context.Context) error {
	for {
		pending := false
		for _, c := range s.loaded() {
			c.mu.RLock()
			if c.g != nil && c.g.Covered() < c.st.Slots() || c.g == nil && s.cfg.GraphThreshold >= 0 && c.st.Live() >= s.cfg.GraphThreshold {
				pending = true
			}
			c.mu.RUnlock()
		}
		if !pending {
			return nil
		}
		s.poke()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// flushLoop sends counts to the meter until ctx ends.
func (s *Service) flushLoop(ctx context.Context) {
	t := time.NewTicker(s.cfg.FlushEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := s.Flush(ctx); err != nil && ctx.Err() == nil {
				s.d.Logger.Warn("vectors: flush", "err", err)
			}
		}
	}
}

// Flush records the operations counted since the last flush, and once per
// UTC day each collection's stored vectors.
func (s *Service) Flush(ctx context.Context) error {
	err := s.usage.Flush(ctx)
	if s.d.Meter == nil {
		return err
	}
	now := s.d.Clock.Now()
	day := now.UTC().Format("2006-01-02")
	for _, c := range s.loaded() {
		rec, rerr := s.records.byID(ctx, c.rec.ID)
		if rerr != nil || rec.Status != statusReady || rec.StoredDay == day {
			continue
		}
		if e := s.d.Meter.Record(ctx, metering.Event{Workspace: rec.Workspace, Project: rec.Project, Metric: MetricStored,
			Quantity: float64(c.count()), At: now}); e != nil {
			err = errors.Join(err, e)
			continue
		}
		err = errors.Join(err, s.records.setStoredDay(ctx, rec.ID, day))
	}
	return err
}

// Close closes every collection and flushes the counts. Call it after Run
// has returned.
func (s *Service) Close() error {
	var err error
	s.closeOnce.Do(func() {
		for _, c := range s.loaded() {
			s.forget(c.rec.ID)
		}
		err = s.usage.Flush(context.Background())
	})
	return err
}
