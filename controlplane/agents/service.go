package agents

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/svcplatform/platform/controlplane/ai"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/jobs"
	"github.com/svcplatform/platform/controlplane/metering"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/controlplane/ratelimit"
	"github.com/svcplatform/platform/controlplane/seal"
	"github.com/svcplatform/platform/controlplane/store"
)

// AI is what runs need of the AI gateway: one model call billed to the
// workspace (reservation, exact charge, the gateway's 402 codes).
// *ai.Service implements it.
type AI interface {
	ChatAs(ctx context.Context, workspace string, in ai.ChatInput, sink ai.Sink) (*ai.Answer, error)
}

// Keys makes and revokes the key a run executes with. CreateRunKey makes an
// ephemeral key (never listed, not counted against key limits) of member,
// limited to project, read-only when readOnly, expiring at expires; it must
// refuse (an api error) when the member is no longer active, or when
// starterKey is not empty and that key is revoked, expired or limited to
// another project, and must make the key read-only when starterKey is
// read-only. The key's role is its member's role as it stands, like every
// key's. RevokeRunKey revokes it (revoking twice is not an error).
type Keys interface {
	CreateRunKey(ctx context.Context, workspace, member, starterKey, project string, readOnly bool, expires time.Time) (id, secret string, err error)
	RevokeRunKey(ctx context.Context, id string) error
}

// Projects is what the area needs of projects.
type Projects interface {
	Get(ctx context.Context, workspace, id string) (projects.Project, error)
	Writable(ctx context.Context, workspace, id string) (projects.Project, error)
}

// Deps are the services the area is built on.
type Deps struct {
	DB    *store.DB
	Clock clock.Clock
	// Limiter holds the runs, events and chat limits, shared by the
	// replicas on PostgreSQL (ratelimit.For(DB, Clock) when nil).
	Limiter  ratelimit.Limiter
	Audit    *audit.Log
	Meter    metering.Recorder
	Sealer   *seal.Sealer
	Projects Projects
	Plans    plans.Source
	AI       AI
	// Models tells whether id names a chat model of the catalogue (nil:
	// any non-empty name is accepted and the gateway judges at run time).
	Models func(id string) bool
	Keys   Keys
	// API serves the tools' REST calls (the control plane's own handler).
	API http.Handler
	// Jobs runs the queue, schedule slots and the tick.
	Jobs jobs.Queue
	// Logger receives what goes wrong in the background.
	Logger *slog.Logger
}

// Defaults of the area's own settings.
const (
	DefaultTickEvery  = 10 * time.Minute
	DefaultRunTimeout = 5 * time.Minute
	// DefaultMaxToolAnswer is the most characters of a tool's answer fed
	// back to the model (the step record keeps MaxStepResult).
	DefaultMaxToolAnswer = 16_000
	// DefaultMaxTokens is each model call's max_tokens.
	DefaultMaxTokens = 1024
)

// Config is the area's configuration; the zero value works.
type Config struct {
	// TickEvery is how often queued runs, due schedules and stale runs are
	// looked after (DefaultTickEvery); work is also started at once when it
	// arrives.
	TickEvery time.Duration `json:"tickEvery"`
	// RunTimeout is the time an on-demand run has (ours: DefaultRunTimeout).
	RunTimeout time.Duration `json:"runTimeout"`
	// BackgroundRunTime is the time of scheduled, event and background
	// runs (BackgroundRunTime).
	BackgroundRunTime time.Duration `json:"backgroundRunTime"`
	// ChatRunTime is the time of a visitor chat run (ChatRunTime).
	ChatRunTime time.Duration `json:"chatRunTime"`
	// MaxToolAnswer bounds a tool answer fed back to the model.
	MaxToolAnswer int `json:"maxToolAnswer"`
	// MaxTokens is each model call's max_tokens.
	MaxTokens int `json:"maxTokens"`
	// PublicBaseURL is the address people reach the API at (--public-url):
	// the events and chat URLs in answers start with it. Empty: the scheme
	// and host each request came in on.
	PublicBaseURL string `json:"publicBaseUrl,omitempty"`
}

// Provision fills defaults.
func (c *Config) Provision() {
	if c.TickEvery <= 0 {
		c.TickEvery = DefaultTickEvery
	}
	if c.RunTimeout <= 0 {
		c.RunTimeout = DefaultRunTimeout
	}
	if c.BackgroundRunTime <= 0 {
		c.BackgroundRunTime = BackgroundRunTime
	}
	if c.ChatRunTime <= 0 {
		c.ChatRunTime = ChatRunTime
	}
	if c.MaxToolAnswer <= 0 {
		c.MaxToolAnswer = DefaultMaxToolAnswer
	}
	if c.MaxTokens <= 0 {
		c.MaxTokens = DefaultMaxTokens
	}
}

// Service is the agents area.
type Service struct {
	cfg Config
	d   Deps
	st  sqlStore

	admitMu sync.Mutex // run admission: the rate and concurrency checks and the insert
	runs    *window    // runs started per workspace
	events  *window    // events per agent
	chats   *window    // chat messages per agent and visitor address
}

// Job kinds of the area.
const (
	jobRun      = "agents.run"
	jobSchedule = "agents.schedule"
	jobTick     = "agents.tick"
)

// check names what is missing.
func (d *Deps) check() error {
	var missing []string
	for name, ok := range map[string]bool{"DB": d.DB != nil, "AI": d.AI != nil, "Keys": d.Keys != nil, "API": d.API != nil,
		"Projects": d.Projects != nil, "Plans": d.Plans != nil, "Jobs": d.Jobs != nil, "Sealer": d.Sealer != nil} {
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
var ErrNotConfigured = errors.New("agents: missing dependencies")

// New builds the area and registers its jobs (the queue runner, schedule
// slots and the tick) on d.Jobs. It starts nothing: the job runner runs
// them.
func New(cfg Config, d Deps) (*Service, error) {
	cfg.Provision()
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
	if d.Limiter == nil {
		d.Limiter = ratelimit.For(d.DB, d.Clock)
	}
	s := &Service{cfg: cfg, d: d, st: sqlStore{db: d.DB}, runs: newWindow(d.Limiter, "agents.runs", time.Minute),
		events: newWindow(d.Limiter, "agents.events", time.Minute), chats: newWindow(d.Limiter, "agents.chat", time.Minute)}
	runTime := max(cfg.BackgroundRunTime, cfg.ChatRunTime) + time.Minute
	d.Jobs.Register(jobRun, s.runJob, jobs.KindOptions{MaxAttempts: 1, Timeout: runTime})
	d.Jobs.Register(jobSchedule, s.scheduleJob, jobs.KindOptions{MaxAttempts: 3, Backoff: []time.Duration{time.Minute}, Timeout: runTime})
	d.Jobs.Register(jobTick, s.tickJob, jobs.KindOptions{MaxAttempts: 1, Timeout: time.Minute})
	d.Jobs.Every(jobTick, cfg.TickEvery)
	return s, nil
}

// Close releases nothing today: runs belong to the request or the job that
// started them, and the job runner's Close cancels those. It is here so the
// assembly closes every area the same way.
func (s *Service) Close() error { return nil }

func (s *Service) now() time.Time { return s.d.Clock.Now().UTC() }
