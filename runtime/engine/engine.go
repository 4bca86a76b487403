// Package engine runs deployments for the control plane: server apps and
// worker programs through package supervise, each materialised into its
// own directory under a runtime root kept outside the data directory, and
// functions through package wasm, each behind a loopback HTTP front of its
// own. It knows no area: the deploys area hands it files, commands,
// variables and modules and gets back the origin address the edge forwards
// to (an app's supervisor front, which wakes a sleeping app on connection;
// a function's front, which runs it once per request).
package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/svcplatform/platform/runtime/sandbox"
	"github.com/svcplatform/platform/runtime/supervise"
	"github.com/svcplatform/platform/runtime/wasm"
)

// Errors of the engine (those of supervise and wasm pass through wrapped).
var (
	// ErrInvalid: a file path, id or command the engine refuses.
	ErrInvalid = errors.New("engine: invalid deployment")
	// ErrNotFound: no such deployment runs.
	ErrNotFound = errors.New("engine: no such deployment")
)

// DefaultFunctionLogBytes bounds each function deployment's kept log.
const DefaultFunctionLogBytes = 64 << 10

// Config configures an Engine.
type Config struct {
	// Dir is the runtime root: one directory per app or worker deployment.
	// Keep it outside the data directory; it is created 0711 (a sandboxed
	// app's uid must pass through it).
	Dir string
	// Supervise tunes the supervisor (idle timeout, drain, backoff ...).
	Supervise supervise.Config
	// Wasm sets the functions' limits (time, memory, request size ...).
	Wasm wasm.Config
	// FunctionLogBytes bounds each function's kept log (default 64 KiB).
	FunctionLogBytes int
	// APIPort is the port inside a sandboxed program's network namespace
	// where the platform's API answers (DefaultAPIPort when 0; see
	// SetAPI).
	APIPort int
}

// File is one file of a deployment to materialise.
type File struct {
	// Path is '/'-separated and relative to the deployment directory.
	Path string
	// Open returns the content.
	Open func() (io.ReadCloser, error)
	// Exec makes the file executable (0755 instead of 0644).
	Exec bool
}

// App is a server app or a worker program to run.
type App struct {
	ID, Project string
	// Worker marks a worker program: no port, no address, never idled.
	Worker bool
	// Run is the command, e.g. ["./server"] or ["node", "server.js"].
	Run []string
	// Health is the HTTP path probed (apps only; "" probes the port).
	Health string
	// Env is the project's variables pinned at deploy.
	Env map[string]string
	// Files is the commit to materialise as the working directory.
	Files []File
}

// Function is a WASI function to load.
type Function struct {
	ID, Project string
	// Module is the .wasm module.
	Module []byte
	// Env is the project's variables pinned at deploy.
	Env map[string]string
}

// function is a loaded function deployment.
type function struct {
	project  string
	front    *wasm.Front
	logs     *logRing
	retireAt time.Time // zero while current
}

// Engine runs apps, workers and functions. It is safe for concurrent use.
type Engine struct {
	cfg  Config
	sup  *supervise.Supervisor
	box  sandbox.Sandbox
	host *wasm.Host
	clk  supervise.Clock
	log  *slog.Logger

	mu      sync.Mutex
	apps    map[string]string // app or worker deployment id -> project
	pending map[string]bool   // directories being materialised
	fns     map[string]*function
	current map[string]string // project -> current function deployment
	closed  bool

	sink atomic.Pointer[Sink]
	api  *apiBridge
}

// Sink receives every output line of every deployment as it is kept: an
// app's or worker's stdout and stderr, a function's stderr and failed
// calls, and the runtime's notes (stream "platform"). kind is "app" for
// apps and worker programs, "function" for functions. It must not block.
type Sink func(deployment, project, kind string, l supervise.LogLine)

// SetSink installs fn as the engine's output sink (nil removes it); lines
// kept before the call are not replayed (read them with Output).
func (e *Engine) SetSink(fn Sink) {
	if fn == nil {
		e.sink.Store(nil)
		return
	}
	e.sink.Store(&fn)
}

func (e *Engine) emit(deployment, project, kind string, l supervise.LogLine) {
	if fn := e.sink.Load(); fn != nil {
		(*fn)(deployment, project, kind, l)
	}
}

// New builds an Engine running programs in box; clk nil is the system
// clock (idle, drain and retire decisions), log nil discards.
func New(ctx context.Context, cfg Config, box sandbox.Sandbox, clk supervise.Clock, log *slog.Logger) (*Engine, error) {
	if cfg.Dir == "" {
		return nil, fmt.Errorf("%w: no runtime directory", ErrInvalid)
	}
	if cfg.FunctionLogBytes <= 0 {
		cfg.FunctionLogBytes = DefaultFunctionLogBytes
	}
	if clk == nil {
		clk = systemClock{}
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(cfg.Dir, 0o711); err != nil {
		return nil, fmt.Errorf("engine: runtime directory: %w", err)
	}
	if err := os.Chmod(cfg.Dir, 0o711); err != nil {
		return nil, fmt.Errorf("engine: runtime directory: %w", err)
	}
	if err := cfg.Supervise.Provision(); err != nil {
		return nil, err
	}
	if cfg.APIPort == 0 {
		cfg.APIPort = DefaultAPIPort
	}
	e := &Engine{cfg: cfg, box: box, clk: clk, log: log, api: newAPIBridge(), apps: map[string]string{}, pending: map[string]bool{},
		fns: map[string]*function{}, current: map[string]string{}}
	if cfg.Supervise.Sink != nil {
		fn := cfg.Supervise.Sink
		e.SetSink(func(deployment, project, _ string, l supervise.LogLine) { fn(deployment, project, l) })
	}
	cfg.Supervise.Sink = func(deployment, project string, l supervise.LogLine) { e.emit(deployment, project, "app", l) }
	cfg.Supervise.Bridges = append(cfg.Supervise.Bridges, e.api.bridge(cfg.APIPort))
	sup, err := supervise.New(cfg.Supervise, box, clk, log)
	if err != nil {
		return nil, err
	}
	host, err := wasm.New(ctx, cfg.Wasm)
	if err != nil {
		return nil, err
	}
	e.sup, e.host = sup, host
	// Directories left by a previous run belong to no running deployment.
	e.sweep()
	return e, nil
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// Supervisor returns the supervisor (status, wake; tests).
func (e *Engine) Supervisor() *supervise.Supervisor { return e.sup }

// Host returns the wasm host.
func (e *Engine) Host() *wasm.Host { return e.host }

// StartApp materialises a's files, starts it and returns once it is
// healthy and its project's current deployment (the one it replaces
// drains, see supervise.Activate). It returns the app's front address
// (host:port; "" for a worker). On error nothing changes for the project
// and the error names the program's last output lines.
func (e *Engine) StartApp(ctx context.Context, a App) (string, error) {
	return e.runApp(ctx, a, false)
}

// RestoreApp is StartApp after a restart of the platform: the app is
// registered asleep (the first connection to its address wakes it) and a
// worker is started without waiting (supervise.Restore).
func (e *Engine) RestoreApp(ctx context.Context, a App) (string, error) {
	return e.runApp(ctx, a, true)
}

func (e *Engine) runApp(ctx context.Context, a App, restore bool) (string, error) {
	if err := validID(a.ID); err != nil {
		return "", err
	}
	dir := filepath.Join(e.cfg.Dir, a.ID)
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return "", supervise.ErrClosed
	}
	if e.pending[a.ID] || e.apps[a.ID] != "" {
		e.mu.Unlock()
		return "", fmt.Errorf("%w: %s", supervise.ErrExists, a.ID)
	}
	e.pending[a.ID] = true
	e.mu.Unlock()
	ok := false
	defer func() {
		e.mu.Lock()
		delete(e.pending, a.ID)
		if ok {
			e.apps[a.ID] = a.Project
		}
		e.mu.Unlock()
		if !ok {
			_ = os.RemoveAll(dir)
		}
	}()
	if err := materialise(dir, a.Files); err != nil {
		return "", err
	}
	kind := supervise.KindApp
	if a.Worker {
		kind = supervise.KindWorker
	}
	d := supervise.Deployment{ID: a.ID, Project: a.Project, Kind: kind, Dir: dir, Run: a.Run, Env: a.Env, HealthPath: a.Health}
	var err error
	if restore {
		err = e.sup.Restore(d)
	} else {
		err = e.sup.Activate(ctx, d)
	}
	if err != nil {
		return "", err
	}
	ok = true
	if a.Worker {
		return "", nil
	}
	return e.sup.Addr(a.ID)
}

// materialise writes files into a fresh dir; paths are confined to it.
func materialise(dir string, files []File) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("engine: clear %s: %w", dir, err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("engine: directory: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("engine: directory: %w", err)
	}
	defer root.Close()
	for _, f := range files {
		p := path.Clean(f.Path)
		if p != f.Path || p == "." || strings.HasPrefix(p, "/") || p == ".." || strings.HasPrefix(p, "../") || strings.ContainsRune(p, 0) {
			return fmt.Errorf("%w: file path %q", ErrInvalid, f.Path)
		}
		if d := path.Dir(p); d != "." {
			if err := root.MkdirAll(d, 0o755); err != nil {
				return fmt.Errorf("engine: materialise %s: %w", p, err)
			}
		}
		mode := fs.FileMode(0o644)
		if f.Exec {
			mode = 0o755
		}
		if err := writeFile(root, p, mode, f.Open); err != nil {
			return fmt.Errorf("engine: materialise %s: %w", p, err)
		}
	}
	return nil
}

func writeFile(root *os.Root, p string, mode fs.FileMode, open func() (io.ReadCloser, error)) error {
	src, err := open()
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := root.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	if err := dst.Close(); err != nil {
		return err
	}
	return root.Chmod(p, mode) // not narrowed by the umask
}

// LoadFunction compiles f's module with its pinned variables, serves it on
// a loopback front of its own and makes it its project's current function;
// the one it replaces keeps serving for the supervisor's DrainTimeout (the
// edge may still route to it) and is then unloaded by Reap. It returns the
// front address.
func (e *Engine) LoadFunction(ctx context.Context, f Function) (string, error) {
	if err := validID(f.ID); err != nil {
		return "", err
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return "", wasm.ErrClosed
	}
	if e.fns[f.ID] != nil {
		e.mu.Unlock()
		return "", fmt.Errorf("%w: %s", supervise.ErrExists, f.ID)
	}
	e.mu.Unlock()
	if err := e.host.Load(ctx, wasm.Deployment{ID: f.ID, Project: f.Project, Module: f.Module, Env: f.Env}); err != nil {
		return "", err
	}
	logs := &logRing{limit: e.cfg.FunctionLogBytes, now: e.clk.Now,
		sink: func(l supervise.LogLine) { e.emit(f.ID, f.Project, "function", l) }}
	front, err := e.host.ListenFront(f.ID, logs.add)
	if err != nil {
		_ = e.host.Unload(context.WithoutCancel(ctx), f.ID)
		return "", err
	}
	logs.add("platform", "loaded: serving on its front")
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		_ = front.Close(ctx)
		return "", wasm.ErrClosed
	}
	e.fns[f.ID] = &function{project: f.Project, front: front, logs: logs}
	if prev := e.current[f.Project]; prev != "" && e.fns[prev] != nil {
		e.fns[prev].retireAt = e.clk.Now().Add(e.cfg.Supervise.DrainTimeout)
	}
	e.current[f.Project] = f.ID
	e.mu.Unlock()
	return front.Addr(), nil
}

// Stop stops a deployment for good (app, worker or function) and removes
// its directory.
func (e *Engine) Stop(ctx context.Context, id string) error {
	e.mu.Lock()
	fn := e.fns[id]
	if fn != nil {
		delete(e.fns, id)
		if e.current[fn.project] == id {
			delete(e.current, fn.project)
		}
	}
	_, app := e.apps[id]
	delete(e.apps, id)
	e.mu.Unlock()
	if fn != nil {
		return e.stopFunction(ctx, id, fn)
	}
	if !app {
		return fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	err := e.sup.Stop(ctx, id)
	if errors.Is(err, supervise.ErrNotFound) {
		err = nil // drained already
	}
	if rerr := os.RemoveAll(filepath.Join(e.cfg.Dir, id)); rerr != nil && err == nil {
		err = fmt.Errorf("engine: remove %s: %w", id, rerr)
	}
	return err
}

func (e *Engine) stopFunction(ctx context.Context, id string, fn *function) error {
	err := fn.front.Close(ctx)
	if uerr := e.host.Unload(context.WithoutCancel(ctx), id); uerr != nil && !errors.Is(uerr, wasm.ErrNotLoaded) && err == nil {
		err = uerr
	}
	return err
}

// StopProject stops every deployment of a project (the project is deleted).
func (e *Engine) StopProject(ctx context.Context, project string) error {
	e.mu.Lock()
	var ids []string
	for id, p := range e.apps {
		if p == project {
			ids = append(ids, id)
		}
	}
	for id, fn := range e.fns {
		if fn.project == project {
			ids = append(ids, id)
		}
	}
	e.mu.Unlock()
	var errs []error
	for _, id := range ids {
		if err := e.Stop(ctx, id); err != nil && !errors.Is(err, ErrNotFound) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Output returns what a deployment printed and the platform's notes about
// it, oldest first (nil for a deployment that does not run here).
func (e *Engine) Output(id string) []supervise.LogLine {
	e.mu.Lock()
	fn := e.fns[id]
	e.mu.Unlock()
	if fn != nil {
		return fn.logs.snapshot()
	}
	lines, err := e.sup.Log(id)
	if err != nil {
		return nil
	}
	return lines
}

// State reports a deployment's state: a supervise.State for apps and
// workers, "healthy" for a loaded function; false when it does not run.
func (e *Engine) State(id string) (string, bool) {
	e.mu.Lock()
	fn := e.fns[id]
	e.mu.Unlock()
	if fn != nil {
		return string(supervise.StateHealthy), true
	}
	st, err := e.sup.Status(id)
	if err != nil {
		return "", false
	}
	return string(st.State), true
}

// TakeRunTime reports the running time of apps and worker programs since
// the previous call (supervise.TakeRunTime): what app_run_seconds meters.
// Functions are not included (they run per request).
func (e *Engine) TakeRunTime() []supervise.RunTime { return e.sup.TakeRunTime() }

// Reap stops idle apps and drained deployments at the clock's now (see
// supervise.Reap), unloads functions past their drain time and removes
// the directories of deployments that no longer run. It returns how many
// deployments it acted on.
func (e *Engine) Reap(ctx context.Context) int {
	n := e.sup.Reap(ctx)
	now := e.clk.Now()
	e.mu.Lock()
	retired := map[string]*function{}
	for id, fn := range e.fns {
		if !fn.retireAt.IsZero() && !now.Before(fn.retireAt) {
			retired[id] = fn
			delete(e.fns, id)
		}
	}
	e.mu.Unlock()
	for id, fn := range retired {
		if err := e.stopFunction(ctx, id, fn); err != nil {
			e.log.Warn("engine: unload drained function", "deployment", id, "err", err)
		}
		n++
	}
	e.sweep()
	return n
}

// sweep forgets apps the supervisor no longer runs (drained) and removes
// every directory that belongs to no running or starting deployment.
func (e *Engine) sweep() {
	e.mu.Lock()
	for id := range e.apps {
		if _, err := e.sup.Status(id); errors.Is(err, supervise.ErrNotFound) {
			delete(e.apps, id)
		}
	}
	keep := make(map[string]bool, len(e.apps)+len(e.pending))
	for id := range e.apps {
		keep[id] = true
	}
	for id := range e.pending {
		keep[id] = true
	}
	e.mu.Unlock()
	entries, err := os.ReadDir(e.cfg.Dir)
	if err != nil {
		e.log.Warn("engine: sweep", "err", err)
		return
	}
	for _, ent := range entries {
		// Dot entries are not deployments (e.g. a compilation cache).
		if !keep[ent.Name()] && !strings.HasPrefix(ent.Name(), ".") {
			if err := os.RemoveAll(filepath.Join(e.cfg.Dir, ent.Name())); err != nil {
				e.log.Warn("engine: sweep", "dir", ent.Name(), "err", err)
			}
		}
	}
}

// Run calls Reap every interval (the supervisor's ReapInterval when 0)
// until ctx ends.
func (e *Engine) Run(ctx context.Context, every time.Duration) {
	if every <= 0 {
		every = e.cfg.Supervise.ReapInterval
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			e.Reap(ctx)
		}
	}
}

// Close stops every deployment and the wasm host.
func (e *Engine) Close(ctx context.Context) error {
	e.mu.Lock()
	e.closed = true
	fns := e.fns
	e.fns = map[string]*function{}
	e.mu.Unlock()
	var errs []error
	for id, fn := range fns {
		errs = append(errs, e.stopFunction(ctx, id, fn))
	}
	errs = append(errs, e.sup.Close(ctx), e.host.Close(ctx))
	return errors.Join(errs...)
}

// validID accepts deployment ids usable as a directory name.
func validID(id string) error {
	if id == "" || len(id) > 128 || id == "." || id == ".." {
		return fmt.Errorf("%w: id %q", ErrInvalid, id)
	}
	for _, r := range id {
		if !(r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return fmt.Errorf("%w: id %q", ErrInvalid, id)
		}
	}
	return nil
}
