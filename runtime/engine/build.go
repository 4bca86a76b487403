package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/svcplatform/platform/runtime/sandbox"
	"github.com/svcplatform/platform/runtime/supervise"
)

// Defaults of a Build's zero limits.
const (
	// DefaultBuildTimeout bounds a whole build (every step).
	DefaultBuildTimeout = 10 * time.Minute
	// DefaultBuildLogBytes bounds the build output passed on; past it the
	// output is dropped (the build goes on) with one note saying so.
	DefaultBuildLogBytes = 4 << 20
	// buildCacheDir holds each project's build cache, under the runtime
	// root (a dot directory: never swept).
	buildCacheDir = ".build-cache"
	// cacheInBuild is the cache's place inside the build directory while
	// a build runs (HOME, npm's cache, Go's build cache).
	cacheInBuild = ".platform-cache"
)

// ErrBuildFailed: a build step exited non-zero, or the build ran out of
// time; the error says which step and ends with its last output lines.
var ErrBuildFailed = errors.New("build failed")

// BuildStep is one command of a build, run with /bin/sh -c in the build
// directory.
type BuildStep struct {
	// Name is what the log calls it ("install", "build").
	Name string
	// Command is a shell command line, e.g. "npm ci".
	Command string
}

// Build is a build to run before a deployment goes live.
type Build struct {
	ID, Project string
	// Files are the commit to build (the working directory).
	Files []File
	// Steps run in order; the first that fails ends the build.
	Steps []BuildStep
	// Env is the project's variables; PATH defaults to the system's,
	// HOME and the tools' caches point into the project's build cache.
	Env map[string]string
	// Timeout bounds every step together (DefaultBuildTimeout when 0).
	Timeout time.Duration
	// LogBytes bounds the output passed to Output (DefaultBuildLogBytes
	// when 0).
	LogBytes int
	// Network lets the steps reach the network when the sandbox gives
	// programs outbound network (the operator's choice); false keeps
	// them offline.
	Network bool
	// Output receives each output line (stream stdout or stderr, or
	// platform for the engine's notes). It must not block for long.
	Output func(stream, line string)
}

// BuildResult is a finished build's directory: read the output from Dir,
// then call Release (which deletes it).
type BuildResult struct {
	Dir     string
	Release func()
}

// Build materialises b's files into a build directory of its own and runs
// its steps there in the engine's sandbox (the apps' isolation and CPU and
// memory limits), one after the other, with b's time limit for all of
// them. The project's build cache (HOME, npm's and Go's caches) is moved
// in before and kept after, failed builds included. On success the caller
// owns the directory until Release.
func (e *Engine) Build(ctx context.Context, b Build) (*BuildResult, error) {
	if err := validID(b.ID); err != nil {
		return nil, err
	}
	if err := validID(b.Project); err != nil {
		return nil, err
	}
	if b.Timeout <= 0 {
		b.Timeout = DefaultBuildTimeout
	}
	if b.LogBytes <= 0 {
		b.LogBytes = DefaultBuildLogBytes
	}
	if b.Output == nil {
		b.Output = func(string, string) {}
	}
	name := "build-" + b.ID
	dir := filepath.Join(e.cfg.Dir, name)
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil, supervise.ErrClosed
	}
	if e.pending[name] {
		e.mu.Unlock()
		return nil, fmt.Errorf("%w: build %s", supervise.ErrExists, b.ID)
	}
	e.pending[name] = true
	e.mu.Unlock()
	release := func() {
		_ = os.RemoveAll(dir)
		e.mu.Lock()
		delete(e.pending, name)
		e.mu.Unlock()
	}
	if err := materialise(dir, b.Files); err != nil {
		release()
		return nil, err
	}
	cache := filepath.Join(e.cfg.Dir, buildCacheDir, b.Project)
	inBuild := filepath.Join(dir, cacheInBuild)
	_ = os.RemoveAll(inBuild) // a commit's own folder of that name is not the cache
	if err := os.MkdirAll(filepath.Dir(cache), 0o711); err != nil {
		release()
		return nil, fmt.Errorf("engine: build cache: %w", err)
	}
	if err := os.Rename(cache, inBuild); err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			e.log.Warn("engine: restore build cache", "project", b.Project, "err", err)
		}
		if err := os.MkdirAll(inBuild, 0o755); err != nil {
			release()
			return nil, fmt.Errorf("engine: build cache: %w", err)
		}
	}
	keepCache := func() {
		_ = os.RemoveAll(cache)
		if err := os.Rename(inBuild, cache); err != nil {
			e.log.Warn("engine: keep build cache", "project", b.Project, "err", err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, b.Timeout)
	defer cancel()
	out := &buildOutput{limit: b.LogBytes, emit: b.Output}
	for _, st := range b.Steps {
		out.emit("platform", fmt.Sprintf("%s: %s", st.Name, st.Command))
		began := time.Now()
		err := e.runStep(ctx, b, dir, st, out)
		if err != nil {
			keepCache()
			release()
			if ctx.Err() == context.DeadlineExceeded {
				return nil, fmt.Errorf("%w: the %s step (%s) ran past the build time limit of %s and was stopped; make the build faster or ask the operator for a longer limit%s",
					ErrBuildFailed, st.Name, st.Command, b.Timeout, out.tail())
			}
			return nil, fmt.Errorf("%w: the %s step (%s) %v%s", ErrBuildFailed, st.Name, st.Command, err, out.tail())
		}
		out.emit("platform", fmt.Sprintf("%s: done in %s", st.Name, time.Since(began).Round(100*time.Millisecond)))
	}
	keepCache()
	return &BuildResult{Dir: dir, Release: release}, nil
}

// runStep runs one step and waits for it; the process group is killed
// when ctx ends.
func (e *Engine) runStep(ctx context.Context, b Build, dir string, st BuildStep, out *buildOutput) error {
	env := map[string]string{"PATH": "/usr/local/bin:/usr/bin:/bin", "CI": "1"}
	for k, v := range b.Env {
		env[k] = v
	}
	env["SERVICE_PROJECT_ID"] = b.Project
	list := make([]string, 0, len(env))
	for k, v := range env {
		if k == "PORT" {
			continue
		}
		list = append(list, k+"="+v)
	}
	slices.Sort(list)
	// HOME and the caches are relative to the working directory, which is
	// the build directory in every sandbox (Bwrap mounts it at /app).
	// npm takes what the project's cache holds without asking the registry
	// again (a lockfile pins every tarball by its integrity sum), and a
	// build without network asks the registry not at all: npm's retries
	// against an unreachable registry would cost minutes per package
	// before failing.
	npm := `npm_config_prefer_offline=true`
	if !b.Network {
		npm = `npm_config_offline=true`
	}
	script := `c="$PWD/` + cacheInBuild + `"; export HOME="$c/home" npm_config_cache="$c/npm" GOCACHE="$c/go-build" GOMODCACHE="$c/go-mod" ` +
		npm + ` npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false; mkdir -p "$HOME"; ` + st.Command
	prep, err := e.box.Prepare(sandbox.App{ID: "build-" + b.ID, Dir: dir, Argv: []string{"/bin/sh", "-c", script}, Env: list, Offline: !b.Network})
	if err != nil {
		return fmt.Errorf("could not start: %v", err)
	}
	defer prep.Release()
	cmd := prep.Cmd
	stdout, stderr := out.writer("stdout"), out.writer("stderr")
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = 5 * time.Second
	start := cmd.Start
	if prep.Start != nil {
		start = prep.Start
	}
	if err := start(); err != nil {
		return fmt.Errorf("could not start: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	if prep.Started != nil {
		if err := prep.Started(); err != nil {
			killGroup(cmd.Process.Pid)
			<-exited
			return fmt.Errorf("could not start: %v", err)
		}
	}
	select {
	case err = <-exited:
	case <-ctx.Done():
		killGroup(cmd.Process.Pid)
		err = <-exited
	}
	stdout.flush()
	stderr.flush()
	if err == nil {
		return nil
	}
	why := describe(err)
	if prep.ExitNote != nil {
		if note := prep.ExitNote(); note != "" {
			why += " (" + note + ")"
		}
	}
	return errors.New(why)
}

// killGroup kills a step's process group (every program it started).
func killGroup(pid int) {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}

// describe says how a step ended.
func describe(err error) string {
	var ee interface{ ExitCode() int }
	if errors.As(err, &ee) {
		if c := ee.ExitCode(); c >= 0 {
			return fmt.Sprintf("failed with exit status %d", c)
		}
		return "was killed (" + err.Error() + ")"
	}
	return "failed: " + err.Error()
}

// buildOutput passes a build's output lines on within a byte budget and
// keeps the last lines for the error of a failed step.
type buildOutput struct {
	mu      sync.Mutex
	limit   int
	used    int
	dropped bool
	last    []string
	emit    func(stream, line string)
}

const tailLines = 5

func (o *buildOutput) line(stream, text string) {
	o.mu.Lock()
	o.last = append(o.last, text)
	if len(o.last) > tailLines {
		o.last = o.last[1:]
	}
	o.used += len(text)
	over := o.used > o.limit
	note := over && !o.dropped
	if over {
		o.dropped = true
	}
	o.mu.Unlock()
	switch {
	case note:
		o.emit("platform", fmt.Sprintf("build output past %d KiB is not logged (the build goes on)", o.limit>>10))
	case !over:
		o.emit(stream, text)
	}
}

func (o *buildOutput) tail() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.last) == 0 {
		return ""
	}
	return "; last output: " + strings.Join(o.last, " | ")
}

func (o *buildOutput) writer(stream string) *stepWriter {
	return &stepWriter{o: o, stream: stream}
}

// stepWriter splits one stream of a step into lines (cut at
// maxFunctionLine bytes).
type stepWriter struct {
	o      *buildOutput
	stream string
	mu     sync.Mutex
	buf    []byte
}

func (w *stepWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.o.line(w.stream, strings.TrimRight(string(w.buf[:i]), "\r"))
		w.buf = w.buf[i+1:]
	}
	for len(w.buf) >= maxFunctionLine {
		w.o.line(w.stream, string(w.buf[:maxFunctionLine]))
		w.buf = w.buf[maxFunctionLine:]
	}
	return n, nil
}

func (w *stepWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.o.line(w.stream, string(w.buf))
		w.buf = nil
	}
}
