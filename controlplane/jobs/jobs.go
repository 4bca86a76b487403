// Package jobs is the control plane's one durable background-job facility:
// jobs are rows in the metadata store, claimed under a lease so that a job
// runs once even with several runners on one database, retried with a
// per-kind backoff, kept as dead with their last error after the last
// attempt, resumed after a restart (an expired lease is claimed again), and
// scheduled by the injectable clock. Periodic jobs (Every) are one row per
// due time and never pile up after downtime.
//
// Webhook deliveries, reservation settlement, media processing, agent queues
// and schedules, daily measuring and blob cleanup run on it.
package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/store"
)

// Job is one unit of work as a handler sees it.
type Job struct {
	ID   string
	Kind string
	// Payload is the JSON the job was enqueued with.
	Payload []byte
	// Attempt is the number of this attempt, from 1.
	Attempt int
	// RunAt is when the job was due (for a periodic job, its slot).
	RunAt time.Time
	// Key is the idempotency key ("" when none).
	Key string
}

// Handler runs a job. It returns nil when the job is done; an error makes the
// job retry after its kind's backoff, or die after MaxAttempts (Permanent
// errors die at once). ctx ends at the kind's Timeout or at shutdown.
type Handler func(ctx context.Context, j Job) error

// KindOptions tune one kind of job. The zero value takes the defaults.
type KindOptions struct {
	// MaxAttempts is how many attempts a job gets before it is dead
	// (DefaultMaxAttempts when 0). An attempt cut short by a crashed runner
	// counts.
	MaxAttempts int
	// Backoff[i] is the wait before attempt i+2; the last value repeats
	// (DefaultBackoff when empty).
	Backoff []time.Duration
	// Timeout ends one attempt's context (DefaultTimeout when 0).
	Timeout time.Duration
}

// Defaults of KindOptions and Config.
const (
	DefaultMaxAttempts  = 5
	DefaultTimeout      = time.Minute
	DefaultWorkers      = 2
	DefaultPollInterval = time.Second
	DefaultLeaseGrace   = 30 * time.Second
	DefaultKeepDone     = 7 * 24 * time.Hour
	// MaxKeyLength bounds an idempotency key.
	MaxKeyLength = 200
)

// DefaultBackoff is the retry schedule of kinds that set none.
var DefaultBackoff = []time.Duration{10 * time.Second, time.Minute, 5 * time.Minute, 30 * time.Minute, time.Hour}

func (o KindOptions) provision() KindOptions {
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if len(o.Backoff) == 0 {
		o.Backoff = DefaultBackoff
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	return o
}

// backoff is the wait after failed attempt n (1-based) before the next one.
func (o KindOptions) backoff(n int) time.Duration {
	i := n - 1
	if i >= len(o.Backoff) {
		i = len(o.Backoff) - 1
	}
	if i < 0 {
		i = 0
	}
	return o.Backoff[i]
}

// EnqueueOptions schedule one job.
type EnqueueOptions struct {
	// RunAt is when the job becomes due (now when zero).
	RunAt time.Time
	// Key makes Enqueue idempotent: a second Enqueue of the same kind and
	// Key is a no-op returning the first job's id, for as long as the first
	// job is kept (done jobs are purged after Config.KeepDone).
	Key string
}

// Config tunes a Runner. The zero value takes the defaults.
type Config struct {
	// Workers is how many jobs Run runs at once (DefaultWorkers when 0;
	// negative: Run runs none, for tests that run jobs with RunDue).
	Workers int
	// PollInterval is how often Run looks for due jobs when nothing wakes
	// it (DefaultPollInterval when 0).
	PollInterval time.Duration
	// LeaseGrace is added to a kind's Timeout to make the lease: a job whose
	// runner vanished is claimed again that long after its attempt's
	// timeout (DefaultLeaseGrace when 0).
	LeaseGrace time.Duration
	// KeepDone is how long done jobs are kept (and their idempotency keys
	// honoured) before Run purges them (DefaultKeepDone when 0). Dead
	// jobs are kept.
	KeepDone time.Duration
}

func (c Config) provision() Config {
	if c.Workers == 0 {
		c.Workers = DefaultWorkers
	}
	if c.PollInterval <= 0 {
		c.PollInterval = DefaultPollInterval
	}
	if c.LeaseGrace <= 0 {
		c.LeaseGrace = DefaultLeaseGrace
	}
	if c.KeepDone <= 0 {
		c.KeepDone = DefaultKeepDone
	}
	return c
}

// Errors of Enqueue and Register.
var (
	// ErrUnknownKind is returned by Enqueue for a kind no handler was registered for.
	ErrUnknownKind = errors.New("jobs: unknown kind")
	// ErrBadKey is returned by Enqueue for an idempotency key over MaxKeyLength.
	ErrBadKey = errors.New("jobs: idempotency key too long")
	// ErrNotFound is returned by Get for a job that does not exist.
	ErrNotFound = errors.New("jobs: not found")
	// ErrClosed is returned by Enqueue after Close.
	ErrClosed = errors.New("jobs: runner closed")
)

// permanent marks an error that must not be retried.
type permanent struct{ err error }

func (p *permanent) Error() string { return p.err.Error() }
func (p *permanent) Unwrap() error { return p.err }

// Permanent wraps err so that the job dies at once instead of retrying
// (a refusal that no retry can fix). Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanent{err: err}
}

// IsPermanent reports whether err was wrapped by Permanent.
func IsPermanent(err error) bool {
	var p *permanent
	return errors.As(err, &p)
}

type kind struct {
	h      Handler
	o      KindOptions
	period time.Duration // 0 unless Every
}

// Runner enqueues, claims and runs jobs.
type Runner struct {
	db    *store.DB
	clk   clock.Clock
	log   *slog.Logger
	cfg   Config
	owner string // lease owner id of this runner
	m     *metrics

	mu    sync.RWMutex
	kinds map[string]*kind

	wake    chan struct{}
	closing chan struct{}
	stop    context.CancelFunc
	wg      sync.WaitGroup
	once    sync.Once
	started bool
}

// Queue is what an area needs of the job facility: registering its kinds,
// making some periodic, enqueueing jobs (in the caller's transaction) and
// waking the workers. *Runner implements it; every area's Deps.Jobs is one.
type Queue interface {
	Register(kind string, h Handler, o KindOptions)
	Every(kind string, interval time.Duration)
	Enqueue(ctx context.Context, q store.Querier, kind string, payload any, o EnqueueOptions) (string, error)
	Wake()
}

var _ Queue = (*Runner)(nil)

// Deps are what a Runner is built on.
type Deps struct {
	// DB holds the jobs table.
	DB *store.DB
	// Clock schedules jobs (clock.System when nil).
	Clock clock.Clock
	// Logger receives failed jobs and schedules (discarded when nil).
	Logger *slog.Logger
}

// check names what is missing.
func (d *Deps) check() error {
	if d.DB == nil {
		return fmt.Errorf("%w: DB", ErrNotConfigured)
	}
	return nil
}

// ErrNotConfigured is returned by New when a dependency is missing.
var ErrNotConfigured = errors.New("jobs: missing dependencies")

// New returns a Runner over d.DB. Register kinds, then Run it (or call
// RunDue from tests); it starts nothing.
func New(cfg Config, d Deps) (*Runner, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	if d.Clock == nil {
		d.Clock = clock.System{}
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	return &Runner{
		db: d.DB, clk: d.Clock, log: d.Logger, cfg: cfg.provision(),
		owner:   store.NewID("runner"),
		m:       newMetrics(d.DB),
		kinds:   map[string]*kind{},
		wake:    make(chan struct{}, 1),
		closing: make(chan struct{}),
	}, nil
}

// Register sets the handler and options of kind. Registering a kind again
// replaces them. It panics on an empty kind or a nil handler.
func (r *Runner) Register(kindName string, h Handler, o KindOptions) {
	if kindName == "" || h == nil {
		panic("jobs: Register needs a kind and a handler")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	k := &kind{h: h, o: o.provision()}
	if old, ok := r.kinds[kindName]; ok {
		k.period = old.period
	}
	r.kinds[kindName] = k
}

// Every makes kind periodic: one job is due at every multiple of interval
// (aligned to UTC midnight for intervals that divide a day). The due row is
// in the store, so a restart keeps the schedule; after downtime the missed
// slot runs once and the next one is the first slot after now. It panics
// when kind is not registered or interval is not positive.
func (r *Runner) Every(kindName string, interval time.Duration) {
	if interval <= 0 {
		panic("jobs: Every needs a positive interval")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	k, ok := r.kinds[kindName]
	if !ok {
		panic("jobs: Every of unregistered kind " + kindName)
	}
	k.period = interval
}

func (r *Runner) kind(name string) (*kind, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	k, ok := r.kinds[name]
	return k, ok
}

func (r *Runner) kindNames() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.kinds))
	for n := range r.kinds {
		out = append(out, n)
	}
	return out
}

func (r *Runner) periodic() map[string]time.Duration {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := map[string]time.Duration{}
	for n, k := range r.kinds {
		if k.period > 0 {
			out[n] = k.period
		}
	}
	return out
}

// Enqueue stores a job of kind with payload (marshalled to JSON; []byte and
// json.RawMessage are stored as they are) and returns its id. With q a
// caller's *sql.Tx the job is written in that transaction and vanishes if
// it rolls back; with q nil Enqueue uses its own. A job with o.Key already
// enqueued for kind is not added again: its id is returned.
func (r *Runner) Enqueue(ctx context.Context, q store.Querier, kindName string, payload any, o EnqueueOptions) (string, error) {
	ids, err := r.EnqueueMany(ctx, q, kindName, []Item{{Payload: payload, Options: o}})
	if err != nil {
		return "", err
	}
	return ids[0], nil
}

// Item is one job of EnqueueMany.
type Item struct {
	Payload any
	Options EnqueueOptions
}

// enqueueBatch bounds the rows of one INSERT (7 parameters each, under
// SQLite's and PostgreSQL's limits).
const enqueueBatch = 500

// EnqueueMany adds jobs of one kind as Enqueue adds one, in multi-row
// INSERTs: in q's transaction when q is not nil, else in one of its own.
// It returns each job's id in items' order; an item whose idempotency key
// a kept job (or an earlier item) already has gets that job's id. It is
// not part of Queue: the areas enqueue one job at a time.
func (r *Runner) EnqueueMany(ctx context.Context, q store.Querier, kindName string, items []Item) ([]string, error) {
	select {
	case <-r.closing:
		return nil, ErrClosed
	default:
	}
	if _, ok := r.kind(kindName); !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownKind, kindName)
	}
	rows := make([]jobRow, len(items))
	now := r.clk.Now()
	for i, it := range items {
		if len(it.Options.Key) > MaxKeyLength {
			return nil, fmt.Errorf("%w: %d bytes (at most %d)", ErrBadKey, len(it.Options.Key), MaxKeyLength)
		}
		body, err := payloadJSON(it.Payload)
		if err != nil {
			return nil, fmt.Errorf("jobs: enqueue %s: payload: %w", kindName, err)
		}
		runAt := it.Options.RunAt
		if runAt.IsZero() {
			runAt = now
		}
		rows[i] = jobRow{id: store.NewID("job"), key: it.Options.Key, payload: body, runAt: runAt}
	}
	var ids []string
	insert := func(q store.Querier) error {
		var err error
		ids, err = insertJobs(ctx, q, kindName, rows, now)
		return err
	}
	var err error
	if q == nil {
		err = r.db.Tx(ctx, func(tx *sqlTx) error { return insert(tx) })
	} else {
		err = insert(q)
	}
	if err != nil {
		return nil, fmt.Errorf("jobs: enqueue %s: %w", kindName, err)
	}
	r.Wake()
	return ids, nil
}

// payloadJSON is a job's payload as stored: raw JSON as given, nil as
// null, anything else marshalled.
func payloadJSON(payload any) ([]byte, error) {
	switch p := payload.(type) {
	case nil:
		return []byte("null"), nil
	case []byte:
		return p, nil
	case json.RawMessage:
		return p, nil
	}
	return json.Marshal(payload)
}

// Wake makes Run's workers look for due jobs now. Enqueue calls it; a
// caller that enqueued in its own transaction may call it after commit.
func (r *Runner) Wake() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// State is where a job is in its life.
type State string

// The states of a job.
const (
	Queued  State = "queued"
	Running State = "running"
	Done    State = "done"
	Dead    State = "dead"
)

// Info is a stored job as an operator or a test sees it.
type Info struct {
	Job
	State      State
	LastError  string
	LeaseUntil time.Time
	FinishedAt time.Time
}

// Get returns the job with id.
func (r *Runner) Get(ctx context.Context, id string) (Info, error) {
	return getJob(ctx, r.db, id)
}
