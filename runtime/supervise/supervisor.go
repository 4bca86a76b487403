package supervise

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"sort"
	"sync"
	"time"

	"github.com/svcplatform/platform/runtime/sandbox"
)

// Kind is what a deployment runs.
type Kind string

// The kinds the supervisor runs.
const (
	// KindApp is a server app: it listens on PORT and is reached through
	// its front address.
	KindApp Kind = "app"
	// KindWorker is a worker program: long-running, no port, no address,
	// never stopped for idleness.
	KindWorker Kind = "worker"
)

// State is where a deployment's process is.
type State string

// The states a deployment goes through.
const (
	StateStarting State = "starting" // started, not yet healthy
	StateHealthy  State = "healthy"  // serving (a worker: running)
	StateCrashed  State = "crashed"  // died; restarting after a backoff
	StateIdle     State = "idle"     // stopped for idleness; the next connection wakes it
	StateStopped  State = "stopped"  // stopped for good (replaced, removed or closed)
)

// Errors the supervisor returns.
var (
	ErrNotFound    = errors.New("supervise: no such deployment")
	ErrExists      = errors.New("supervise: deployment already running")
	ErrUnhealthy   = errors.New("supervise: deployment did not become healthy")
	ErrWakeTimeout = errors.New("supervise: deployment did not wake in time")
	ErrInvalid     = errors.New("supervise: invalid deployment")
	ErrClosed      = errors.New("supervise: supervisor closed")
)

// Deployment is one app or worker deployment to run.
type Deployment struct {
	// ID is the deployment id.
	ID string
	// Project is the project id, given as SERVICE_PROJECT_ID.
	Project string
	// Kind is app or worker.
	Kind Kind
	// Dir is the materialised commit (the working directory).
	Dir string
	// Run is the command from the manifest, e.g. ["node", "server.js"].
	Run []string
	// Env holds the project's variables as of the deploy.
	Env map[string]string
	// HealthPath is an HTTP path probed with GET (2xx or 3xx is healthy);
	// empty probes by connecting to the port.
	HealthPath string
}

var envKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Validate reports what is wrong with d.
func (d *Deployment) Validate() error {
	switch {
	case d.ID == "":
		return fmt.Errorf("%w: empty id", ErrInvalid)
	case d.Kind != KindApp && d.Kind != KindWorker:
		return fmt.Errorf("%w: kind %q is not app or worker", ErrInvalid, d.Kind)
	case len(d.Run) == 0 || d.Run[0] == "":
		return fmt.Errorf("%w: run names no command", ErrInvalid)
	case d.HealthPath != "" && (d.HealthPath[0] != '/' || len(d.HealthPath) > 1024):
		return fmt.Errorf("%w: health path %q must start with /", ErrInvalid, d.HealthPath)
	}
	for k := range d.Env {
		if !envKey.MatchString(k) {
			return fmt.Errorf("%w: variable name %q", ErrInvalid, k)
		}
	}
	fi, err := os.Stat(d.Dir)
	if err != nil || !fi.IsDir() {
		return fmt.Errorf("%w: directory %q: not a directory", ErrInvalid, d.Dir)
	}
	return nil
}

// env is exactly the deployment's variables plus SERVICE_PROJECT_ID (PORT
// is added by the sandbox, which picks it).
func (d *Deployment) env() []string {
	out := make([]string, 0, len(d.Env)+2)
	for k, v := range d.Env {
		if k == "SERVICE_PROJECT_ID" || k == "PORT" {
			continue
		}
		out = append(out, k+"="+v)
	}
	out = append(out, "SERVICE_PROJECT_ID="+d.Project)
	sort.Strings(out)
	return out
}

// Status is a deployment's observable state.
type Status struct {
	ID       string `json:"id"`
	Project  string `json:"project"`
	Kind     Kind   `json:"kind"`
	State    State  `json:"state"`
	Current  bool   `json:"current"`
	PID      int    `json:"pid,omitempty"`
	Restarts int    `json:"restarts"`
	LastExit string `json:"lastExit,omitempty"`
	Addr     string `json:"addr,omitempty"`
	Active   int    `json:"activeConnections"`
}

// Clock is the time source of idle and drain decisions.
type Clock interface{ Now() time.Time }

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// Supervisor runs deployments. It is safe for concurrent use.
type Supervisor struct {
	cfg Config
	box sandbox.Sandbox
	clk Clock
	log *slog.Logger

	mu      sync.Mutex
	deps    map[string]*instance
	current map[string]string // project -> deployment id
	drains  map[string]time.Time
	// gone are stopped instances whose last running time TakeRunTime has
	// not taken yet.
	gone    map[*instance]struct{}
	changed chan struct{}
	closed  bool
}

// New builds a Supervisor; clk nil is the system clock, log nil discards.
func New(cfg Config, box sandbox.Sandbox, clk Clock, log *slog.Logger) (*Supervisor, error) {
	if err := cfg.Provision(); err != nil {
		return nil, err
	}
	if box == nil {
		return nil, errors.New("supervise: no sandbox")
	}
	if clk == nil {
		clk = systemClock{}
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Supervisor{cfg: cfg, box: box, clk: clk, log: log, deps: map[string]*instance{},
		current: map[string]string{}, drains: map[string]time.Time{}, gone: map[*instance]struct{}{}, changed: make(chan struct{})}, nil
}

// Changed returns a channel closed at the next state change of any
// deployment: wait on it instead of polling.
func (s *Supervisor) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

func (s *Supervisor) notify() {
	s.mu.Lock()
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

// Activate starts d and, once it is healthy, makes it its project's
// current deployment; the one it replaces keeps serving for DrainTimeout
// and is then stopped. A worker replaces its predecessor the other way
// round: the old one stops first, so that two versions never consume the
// same work. On error nothing changes for the project.
func (s *Supervisor) Activate(ctx context.Context, d Deployment) error {
	if err := d.Validate(); err != nil {
		return err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	if _, ok := s.deps[d.ID]; ok {
		s.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrExists, d.ID)
	}
	prev := s.current[d.Project]
	s.mu.Unlock()

	if d.Kind == KindWorker && prev != "" {
		if err := s.Stop(ctx, prev); err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
	}
	inst, err := newInstance(s, d)
	if err != nil {
		return err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		inst.shutdown()
		return ErrClosed
	}
	s.deps[d.ID] = inst
	s.mu.Unlock()
	go inst.loop()

	if err := inst.waitFirstHealthy(ctx); err != nil {
		_ = s.Stop(context.WithoutCancel(ctx), d.ID)
		return err
	}
	s.mu.Lock()
	prev = s.current[d.Project]
	s.current[d.Project] = d.ID
	if prev != "" && prev != d.ID {
		s.drains[prev] = s.clk.Now().Add(s.cfg.DrainTimeout)
	}
	s.mu.Unlock()
	inst.logf("live: now the current deployment of %s", d.Project)
	s.notify()
	return nil
}

// Restore registers d as its project's current deployment without waiting
// for it: after a restart of the platform, the deployments that served
// before are restored this way so that the edge can reach them at once. An
// app is registered asleep (its front address accepts connections and the
// first one wakes it, like an app stopped for idleness); a worker program
// is started (it has no address to wake it by) and Restore does not wait
// for it. A deployment the project had as current is drained as by Activate.
func (s *Supervisor) Restore(d Deployment) error {
	if err := d.Validate(); err != nil {
		return err
	}
	inst, err := newInstance(s, d)
	if err != nil {
		return err
	}
	if d.Kind == KindApp {
		inst.want, inst.state = wantIdle, StateIdle
	}
	s.mu.Lock()
	if s.closed || s.deps[d.ID] != nil {
		closed := s.closed
		s.mu.Unlock()
		inst.shutdown()
		if closed {
			return ErrClosed
		}
		return fmt.Errorf("%w: %s", ErrExists, d.ID)
	}
	s.deps[d.ID] = inst
	prev := s.current[d.Project]
	s.current[d.Project] = d.ID
	if prev != "" && prev != d.ID {
		s.drains[prev] = s.clk.Now().Add(s.cfg.DrainTimeout)
	}
	s.mu.Unlock()
	go inst.loop()
	if d.Kind == KindApp {
		inst.logf("restored after a restart of the platform: asleep until the next request")
	} else {
		inst.logf("restored after a restart of the platform")
	}
	s.notify()
	return nil
}

// Current returns the project's current deployment id.
func (s *Supervisor) Current(project string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.current[project]
	return id, ok
}

func (s *Supervisor) get(id string) (*instance, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	inst := s.deps[id]
	if inst == nil {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return inst, nil
}

// Addr returns the app's front address (host:port on the loopback), stable
// for the deployment's life whether the process sleeps, restarts or runs.
func (s *Supervisor) Addr(id string) (string, error) {
	inst, err := s.get(id)
	if err != nil {
		return "", err
	}
	if inst.front == nil {
		return "", fmt.Errorf("supervise: %s is a worker program and has no address: %w", id, ErrInvalid)
	}
	return inst.front.Addr().String(), nil
}

// Wake makes sure the app is running and healthy, starting it if it was
// stopped for idleness, and holds the caller until then (bounded by ctx and
// WakeTimeout). It returns the front address.
func (s *Supervisor) Wake(ctx context.Context, id string) (string, error) {
	inst, err := s.get(id)
	if err != nil {
		return "", err
	}
	if inst.front == nil {
		return "", fmt.Errorf("supervise: %s is a worker program and has no address: %w", id, ErrInvalid)
	}
	if err := inst.wake(ctx); err != nil {
		return "", err
	}
	return inst.front.Addr().String(), nil
}

// Status reports a deployment's state.
func (s *Supervisor) Status(id string) (Status, error) {
	inst, err := s.get(id)
	if err != nil {
		return Status{}, err
	}
	st := inst.status()
	cur, _ := s.Current(st.Project)
	st.Current = cur == id
	return st, nil
}

// Log returns the deployment's kept output, oldest first.
func (s *Supervisor) Log(id string) ([]LogLine, error) {
	inst, err := s.get(id)
	if err != nil {
		return nil, err
	}
	return inst.logs.snapshot(), nil
}

// Stop stops a deployment for good and forgets it.
func (s *Supervisor) Stop(ctx context.Context, id string) error {
	s.mu.Lock()
	inst := s.deps[id]
	if inst == nil {
		s.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	delete(s.deps, id)
	delete(s.drains, id)
	if s.current[inst.d.Project] == id {
		delete(s.current, inst.d.Project)
	}
	s.gone[inst] = struct{}{}
	s.mu.Unlock()
	inst.shutdown()
	select {
	case <-inst.done:
	case <-ctx.Done():
		return fmt.Errorf("supervise: stop %s: %w", id, ctx.Err())
	}
	s.notify()
	return nil
}

// RunTime is how long a deployment's process ran (on the supervisor's
// clock) since the previous TakeRunTime: asleep, crashed and backing off
// do not count.
type RunTime struct {
	ID       string
	Project  string
	Kind     Kind
	Duration time.Duration
	// Final is set on the last report of a stopped deployment: no more
	// time will be reported for it.
	Final bool
}

// TakeRunTime reports, once, the running time of every deployment since
// the previous call: a running process counts up to now, a stopped one
// up to its stop. What is taken is not reported again, so summing every
// report gives each deployment's total running time; a deployment with
// nothing to report is left out. Call it periodically (the deploys area
// meters app_run_seconds with it): stopped deployments are kept until
// their final report.
func (s *Supervisor) TakeRunTime() []RunTime {
	now := s.clk.Now()
	s.mu.Lock()
	insts := make([]*instance, 0, len(s.deps)+len(s.gone))
	for _, inst := range s.deps {
		insts = append(insts, inst)
	}
	for inst := range s.gone {
		insts = append(insts, inst)
	}
	s.mu.Unlock()
	var out []RunTime
	for _, inst := range insts {
		final := false
		s.mu.Lock()
		if _, ok := s.gone[inst]; ok {
			select {
			case <-inst.done: // its process is gone: this report is its last
				final = true
				delete(s.gone, inst)
			default:
			}
		}
		s.mu.Unlock()
		d := inst.takeRun(now)
		if d > 0 || final {
			out = append(out, RunTime{ID: inst.d.ID, Project: inst.d.Project, Kind: inst.d.Kind, Duration: d, Final: final})
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].ID < out[b].ID })
	return out
}

// Reap stops, at the clock's now, apps idle past IdleTimeout (they wake
// on the next connection) and replaced deployments past their drain time
// (they are removed). It returns how many it acted on.
func (s *Supervisor) Reap(ctx context.Context) int {
	now := s.clk.Now()
	s.mu.Lock()
	var drained []string
	for id, at := range s.drains {
		if !now.Before(at) {
			drained = append(drained, id)
		}
	}
	var idle []*instance
	if s.cfg.IdleTimeout > 0 {
		for _, inst := range s.deps {
			if inst.idleSince(now) >= s.cfg.IdleTimeout {
				idle = append(idle, inst)
			}
		}
	}
	s.mu.Unlock()
	n := 0
	for _, id := range drained {
		if s.Stop(ctx, id) == nil {
			n++
		}
	}
	for _, inst := range idle {
		if inst.sleep() {
			n++
		}
	}
	return n
}

// Run calls Reap every ReapInterval until ctx ends.
func (s *Supervisor) Run(ctx context.Context) {
	t := time.NewTicker(s.cfg.ReapInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.Reap(ctx)
		}
	}
}

// Close stops every deployment.
func (s *Supervisor) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	ids := make([]string, 0, len(s.deps))
	for id := range s.deps {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	var errs []error
	for _, id := range ids {
		if err := s.Stop(ctx, id); err != nil && !errors.Is(err, ErrNotFound) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
