package wasm

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"
)

// Deployment is one function deployment to load: its module and the
// variables pinned when it was deployed.
type Deployment struct {
	// ID is the deployment id the edge calls it by.
	ID string
	// Project is the project id, given to the function as SERVICE_PROJECT_ID.
	Project string
	// Module is the WASI command module (a .wasm file).
	Module []byte
	// Env holds the project's variables as of the deploy.
	Env map[string]string
}

// Result is a call's outcome: the response (nil on error) and what the
// function wrote to stderr, for the deployment's log.
type Result struct {
	// Response is the parsed answer; nil when the call failed.
	Response *Response
	// Log is the function's stderr, cut at Config.MaxLogBytes.
	Log []byte
	// Duration is the time the call ran, counted from the start of its time
	// limit (instantiation and the run).
	Duration time.Duration
}

type function struct {
	compiled wazero.CompiledModule
	project  string
	env      map[string]string
}

// Host holds the wazero runtime, the compilation cache and the loaded
// functions. It is safe for concurrent use.
type Host struct {
	cfg   Config
	rt    wazero.Runtime
	cache wazero.CompilationCache
	slots *slots
	mem   *memPool

	// stopping is cancelled by Close: the calls in flight stop (as at
	// their time limit, on their own goroutines), and calls counts them so
	// that Close closes the runtime only once they have returned (wazero
	// would otherwise release an instance's resources under its running
	// code).
	stopping context.Context
	stop     context.CancelFunc
	calls    sync.WaitGroup

	mu     sync.RWMutex
	fns    map[string]*function
	closed bool
}

// New builds a Host; cfg is provisioned (defaults filled) first.
func New(ctx context.Context, cfg Config) (*Host, error) {
	if err := cfg.Provision(); err != nil {
		return nil, err
	}
	var cache wazero.CompilationCache
	if cfg.CacheDir != "" {
		c, err := wazero.NewCompilationCacheWithDir(cfg.CacheDir)
		if err != nil {
			return nil, fmt.Errorf("wasm: compilation cache %s: %w", cfg.CacheDir, err)
		}
		cache = c
	} else {
		cache = wazero.NewCompilationCache()
	}
	rc := wazero.NewRuntimeConfig().
		WithCompilationCache(cache).
		WithCloseOnContextDone(true).
		WithMemoryLimitPages(cfg.memoryPages())
	rt := wazero.NewRuntimeWithConfig(ctx, rc)
	if err := instantiateWASI(ctx, rt); err != nil {
		_ = rt.Close(ctx)
		_ = cache.Close(ctx)
		return nil, fmt.Errorf("wasm: instantiate wasi: %w", err)
	}
	stopping, stop := context.WithCancel(context.Background())
	return &Host{cfg: cfg, rt: rt, cache: cache, stopping: stopping, stop: stop, slots: newSlots(cfg.MaxConcurrent, cfg.MaxConcurrentPerProject),
		mem: newMemPool(uint64(cfg.memoryPages())*pageSize, cfg.MaxConcurrent), fns: map[string]*function{}}, nil
}

// Config returns the provisioned configuration.
func (h *Host) Config() Config { return h.cfg }

// Load compiles d's module and makes it callable as d.ID, replacing an
// earlier load of the same id. Compiling the same bytes again (a redeploy
// of an unchanged module) is served from the compilation cache.
func (h *Host) Load(ctx context.Context, d Deployment) error {
	if d.ID == "" {
		return fmt.Errorf("wasm: load: %w: empty deployment id", ErrInvalidModule)
	}
	h.mu.RLock()
	closed := h.closed
	h.mu.RUnlock()
	if closed {
		return ErrClosed
	}
	compiled, err := h.rt.CompileModule(ctx, compactData(d.Module))
	if err != nil {
		return fmt.Errorf("wasm: load %s: %w: %v", d.ID, ErrInvalidModule, err)
	}
	if _, ok := compiled.ExportedFunctions()["_start"]; !ok {
		_ = compiled.Close(ctx)
		return fmt.Errorf("wasm: load %s: %w: no _start export (build a WASI command, e.g. GOOS=wasip1 GOARCH=wasm)", d.ID, ErrInvalidModule)
	}
	env := make(map[string]string, len(d.Env))
	for k, v := range d.Env {
		env[k] = v
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		_ = compiled.Close(ctx)
		return ErrClosed
	}
	old := h.fns[d.ID]
	h.fns[d.ID] = &function{compiled: compiled, project: d.Project, env: env}
	h.mu.Unlock()
	if old != nil {
		_ = old.compiled.Close(ctx)
	}
	return nil
}

// Unload forgets a deployment's function (calls in flight finish).
func (h *Host) Unload(ctx context.Context, id string) error {
	h.mu.Lock()
	fn := h.fns[id]
	delete(h.fns, id)
	h.mu.Unlock()
	if fn == nil {
		return fmt.Errorf("wasm: unload %s: %w", id, ErrNotLoaded)
	}
	return fn.compiled.Close(ctx)
}

// Loaded reports whether id is loaded.
func (h *Host) Loaded(id string) bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.fns[id] != nil
}

// Call runs the function of deployment id on r in a fresh instance, under
// the time and memory limits, once its project has a slot (slots.go). The
// Result carries stderr even when the call fails.
//
// The time limit holds wherever the call is: wasm code is stopped by the
// runtime (WithCloseOnContextDone), and no host call outlives the limit:
// stdin is the request body in memory, stdout and stderr are in-memory
// buffers, there are no files or sockets, and the one host call that
// waits, poll_oneoff's sleep (the idle wait of a function's runtime, a
// sleep), ends at the call's deadline.
func (h *Host) Call(ctx context.Context, id string, r *Request) (Result, error) {
	var res Result
	if int64(len(r.Body)) > h.cfg.MaxRequestBytes {
		return res, fmt.Errorf("wasm: call %s: %w (%d bytes, limit %d)", id, ErrRequestTooLarge, len(r.Body), h.cfg.MaxRequestBytes)
	}
	h.mu.RLock()
	fn, closed := h.fns[id], h.closed
	if !closed && fn != nil {
		h.calls.Add(1) // under the lock: Close waits for every call it let in
	}
	h.mu.RUnlock()
	if closed {
		return res, ErrClosed
	}
	if fn == nil {
		return res, fmt.Errorf("wasm: call %s: %w", id, ErrNotLoaded)
	}
	defer h.calls.Done()
	ctx, stopCall := context.WithCancel(ctx)
	defer stopCall()
	defer context.AfterFunc(h.stopping, stopCall)()
	release, err := h.slots.acquire(ctx, fn.project, h.cfg.QueueTimeout)
	if err != nil {
		if h.stopping.Err() != nil {
			return res, ErrClosed
		}
		return res, fmt.Errorf("wasm: call %s: %w", id, err)
	}
	defer release()
	// The time limit and Duration start together, so a call stopped at the
	// limit reports at least the limit.
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, h.cfg.Timeout)
	defer cancel()

	stdout := &capWriter{limit: h.cfg.MaxResponseBytes}
	stderr := &capWriter{limit: h.cfg.MaxLogBytes, truncate: true}
	mc := wazero.NewModuleConfig().
		WithName("").
		WithArgs(id).
		WithStdin(bytes.NewReader(r.Body)).
		WithStdout(stdout).
		WithStderr(stderr).
		WithSysWalltime().
		WithSysNanotime().
		WithNanosleep(sleepUntilDone(ctx)).
		WithRandSource(rand.Reader)
	mem := &callMemory{pool: h.mem}
	defer mem.release()
	callCtx := withCallEnv(experimental.WithMemoryAllocator(ctx, mem), newCallEnv(cgiVars(fn.env, fn.project, r)))
	mod, err := h.rt.InstantiateModule(callCtx, fn.compiled, mc)
	res.Duration = time.Since(start)
	if mod != nil {
		_ = mod.Close(context.WithoutCancel(ctx))
	}
	res.Log = stderr.buf.Bytes()
	if err != nil {
		var exit *sys.ExitError
		switch {
		case errors.As(err, &exit) && exit.ExitCode() == sys.ExitCodeDeadlineExceeded:
			return res, fmt.Errorf("wasm: call %s: %w after %v", id, ErrTimeout, h.cfg.Timeout)
		case errors.As(err, &exit) && exit.ExitCode() == sys.ExitCodeContextCanceled && h.stopping.Err() != nil:
			return res, fmt.Errorf("wasm: call %s: stopped: %w", id, ErrClosed)
		case errors.As(err, &exit) && exit.ExitCode() == sys.ExitCodeContextCanceled:
			return res, fmt.Errorf("wasm: call %s: %w", id, context.Canceled)
		case errors.As(err, &exit):
			return res, fmt.Errorf("wasm: call %s: %w: exit status %d", id, ErrFailed, exit.ExitCode())
		default:
			return res, fmt.Errorf("wasm: call %s: %w: %v", id, ErrFailed, err)
		}
	}
	if stdout.over {
		return res, fmt.Errorf("wasm: call %s: %w (limit %d bytes)", id, ErrResponseTooLarge, h.cfg.MaxResponseBytes)
	}
	resp, err := ParseResponse(stdout.buf.Bytes())
	if err != nil {
		return res, fmt.Errorf("wasm: call %s: %w", id, err)
	}
	res.Response = resp
	return res, nil
}

// Close unloads every function, stops the calls in flight (they return
// ErrClosed, as do calls waiting for a slot) and waits for them to return,
// then closes the runtime and the cache.
func (h *Host) Close(ctx context.Context) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	h.fns = nil
	h.mu.Unlock()
	h.stop()
	h.calls.Wait()
	err := errors.Join(h.rt.Close(ctx), h.cache.Close(ctx))
	h.mem.close()
	return err
}

// sleepUntilDone is a call's sleep (poll_oneoff with a clock
// subscription): it ends after ns nanoseconds or when ctx ends, whichever
// comes first. wazero's own (time.Sleep) does not see the context, so a
// function sleeping for an hour would keep its instance, and its slot,
// past the time limit.
func sleepUntilDone(ctx context.Context) sys.Nanosleep {
	return func(ns int64) {
		if ns <= 0 {
			return
		}
		t := time.NewTimer(time.Duration(ns))
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
}

// capWriter keeps up to limit bytes. Past it, a truncating writer drops the
// rest silently; otherwise it records the overflow and fails the write,
// which stops a function that floods stdout.
type capWriter struct {
	mu       sync.Mutex
	buf      bytes.Buffer
	limit    int64
	truncate bool
	over     bool
}

func (w *capWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	room := w.limit - int64(w.buf.Len())
	if int64(len(p)) <= room {
		return w.buf.Write(p)
	}
	if room > 0 {
		w.buf.Write(p[:room])
	}
	if w.truncate {
		return len(p), nil
	}
	w.over = true
	return 0, errOverflow
}

var errOverflow = errors.New("output limit reached")
