package supervise

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/svcplatform/platform/runtime/sandbox"
)

type want uint8

const (
	wantUp want = iota
	wantIdle
	wantGone
)

// instance is one deployment and the goroutine (loop) that keeps its
// process in the wanted state.
type instance struct {
	s      *Supervisor
	d      Deployment
	logs   *ring
	stdout *lineWriter
	stderr *lineWriter
	front  net.Listener // nil for a worker
	kick   chan struct{}
	done   chan struct{}

	mu         sync.Mutex
	want       want
	state      State
	pid        int
	restarts   int
	lastExit   string
	dial       func(ctx context.Context) (net.Conn, error)
	active     int
	lastActive time.Time
	// runStart is when the running process started (zero when none
	// runs) and ran the running time not yet taken by TakeRunTime, both
	// on the supervisor's clock.
	runStart time.Time
	ran      time.Duration
}

// proc is one run of the program.
type proc struct {
	cmd    *exec.Cmd
	prep   *sandbox.Prepared
	exited chan struct{}
	why    string // set before exited is closed
	client *http.Client
}

func newInstance(s *Supervisor, d Deployment) (*instance, error) {
	logs := &ring{limit: s.cfg.LogBytes, now: s.clk.Now, added: s.notify}
	if sink := s.cfg.Sink; sink != nil {
		logs.sink = func(l LogLine) { sink(d.ID, d.Project, l) }
	}
	i := &instance{s: s, d: d, logs: logs, kick: make(chan struct{}, 1), done: make(chan struct{}),
		stdout: &lineWriter{r: logs, stream: "stdout"}, stderr: &lineWriter{r: logs, stream: "stderr"},
		state: StateStarting, lastActive: s.clk.Now()}
	if d.Kind == KindApp {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("supervise: %s: front listener: %w", d.ID, err)
		}
		i.front = ln
		go i.accept()
	}
	return i, nil
}

func (i *instance) logf(format string, args ...any) {
	i.logs.add("platform", fmt.Sprintf(format, args...))
}

func (i *instance) signal() {
	select {
	case i.kick <- struct{}{}:
	default:
	}
}

func (i *instance) setState(st State) {
	i.mu.Lock()
	i.state = st
	if st == StateHealthy {
		i.lastActive = i.s.clk.Now()
	}
	i.mu.Unlock()
	i.s.notify()
}

func (i *instance) getWant() want {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.want
}

func (i *instance) status() Status {
	i.mu.Lock()
	defer i.mu.Unlock()
	st := Status{ID: i.d.ID, Project: i.d.Project, Kind: i.d.Kind, State: i.state, PID: i.pid,
		Restarts: i.restarts, LastExit: i.lastExit, Active: i.active}
	if i.front != nil {
		st.Addr = i.front.Addr().String()
	}
	return st
}

// loop drives the process until the deployment is stopped for good.
func (i *instance) loop() {
	defer close(i.done)
	cfg := &i.s.cfg
	backoff := cfg.BackoffMin
	for {
		switch i.getWant() {
		case wantGone:
			i.setState(StateStopped)
			return
		case wantIdle:
			i.setState(StateIdle)
			<-i.kick
			continue
		}
		i.setState(StateStarting)
		p, err := i.start()
		if err != nil {
			i.crashed(err.Error())
			i.pause(&backoff)
			continue
		}
		started := time.Now()
		why, healthy := i.awaitHealthy(p)
		if healthy {
			i.setState(StateHealthy)
			why = i.watch(p)
		}
		i.terminate(p)
		if why == "" {
			why = p.why
		}
		if i.getWant() != wantUp {
			i.logf("stopped")
			continue
		}
		if time.Since(started) >= cfg.StableAfter {
			backoff = cfg.BackoffMin
		}
		i.crashed(why)
		i.pause(&backoff)
	}
}

func (i *instance) crashed(why string) {
	i.mu.Lock()
	i.restarts++
	i.lastExit = why
	i.pid = 0
	i.mu.Unlock()
	i.logf("%s", why)
	i.setState(StateCrashed)
}

// pause waits the backoff (doubling it) or until the wanted state changes.
func (i *instance) pause(backoff *time.Duration) {
	i.logf("restarting in %v", *backoff)
	t := time.NewTimer(*backoff)
	defer t.Stop()
	*backoff = min(*backoff*2, i.s.cfg.BackoffMax)
	select {
	case <-t.C:
	case <-i.kick:
		if i.getWant() == wantUp {
			i.signal() // a wake during the backoff: the loop starts at once
		}
	}
}

func (i *instance) start() (*proc, error) {
	prep, err := i.s.box.Prepare(sandbox.App{ID: i.d.ID, Dir: i.d.Dir, Argv: i.d.Run, Env: i.d.env(), Listen: i.d.Kind == KindApp,
		Bridges: i.s.cfg.Bridges})
	if err != nil {
		return nil, fmt.Errorf("start failed: %v", err)
	}
	cmd := prep.Cmd
	cmd.Stdout, cmd.Stderr = i.stdout, i.stderr
	cmd.WaitDelay = i.s.cfg.StopGrace
	start := cmd.Start
	if prep.Start != nil {
		start = prep.Start
	}
	if err := start(); err != nil {
		prep.Release()
		return nil, fmt.Errorf("start failed: %v", err)
	}
	p := &proc{cmd: cmd, prep: prep, exited: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		i.stdout.flush()
		i.stderr.flush()
		p.why = describeExit(err)
		if prep.ExitNote != nil {
			if note := prep.ExitNote(); note != "" {
				p.why += " (" + note + ")"
			}
		}
		close(p.exited)
	}()
	if prep.Started != nil {
		if err := prep.Started(); err != nil {
			i.terminate(p)
			return nil, fmt.Errorf("start failed: %v", err)
		}
	}
	if prep.Dial != nil {
		p.client = &http.Client{
			Timeout: 2 * time.Second,
			Transport: &http.Transport{
				DialContext:       func(ctx context.Context, _, _ string) (net.Conn, error) { return prep.Dial(ctx) },
				DisableKeepAlives: true,
			},
		}
	}
	i.mu.Lock()
	i.pid = cmd.Process.Pid
	i.dial = prep.Dial
	i.runStart = i.s.clk.Now()
	i.mu.Unlock()
	i.logf("started %s (pid %d, sandbox %s)", strings.Join(i.d.Run, " "), cmd.Process.Pid, i.s.box.Name())
	return p, nil
}

func describeExit(err error) string {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return "exited with status 0"
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "killed by signal " + ws.Signal().String()
		}
		return fmt.Sprintf("exited with status %d", ee.ExitCode())
	default:
		return "exited: " + err.Error()
	}
}

// probe checks the app once: GET HealthPath, or a connection to its port.
func (i *instance) probe(p *proc) error {
	if p.client == nil {
		return nil
	}
	if i.d.HealthPath == "" {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		c, err := p.prep.Dial(ctx)
		if err != nil {
			return err
		}
		return c.Close()
	}
	resp, err := p.client.Get("http://app" + i.d.HealthPath)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode >= 400 {
		return fmt.Errorf("health check %s answered %d", i.d.HealthPath, resp.StatusCode)
	}
	return nil
}

// awaitHealthy probes a starting app until it answers, dies, the start
// timeout passes or it is no longer wanted. A worker is healthy once it
// runs.
func (i *instance) awaitHealthy(p *proc) (string, bool) {
	if i.d.Kind == KindWorker {
		return "", true
	}
	deadline := time.NewTimer(i.s.cfg.StartTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(i.s.cfg.HealthInterval)
	defer tick.Stop()
	for {
		if i.probe(p) == nil {
			return "", true
		}
		select {
		case <-p.exited:
			return p.why + " before becoming healthy", false
		case <-deadline.C:
			return fmt.Sprintf("not healthy within %v", i.s.cfg.StartTimeout), false
		case <-i.kick:
			if i.getWant() != wantUp {
				return "", false
			}
		case <-tick.C:
		}
	}
}

// watch follows a healthy program until it exits, fails its health checks
// or is no longer wanted.
func (i *instance) watch(p *proc) string {
	tick := time.NewTicker(i.s.cfg.CheckInterval)
	defer tick.Stop()
	fails := 0
	for {
		select {
		case <-p.exited:
			return p.why
		case <-i.kick:
			if i.getWant() != wantUp {
				return ""
			}
		case <-tick.C:
			if err := i.probe(p); err != nil {
				fails++
				if fails >= i.s.cfg.FailureThreshold {
					return fmt.Sprintf("health check failed %d times: %v", fails, err)
				}
				continue
			}
			fails = 0
		}
	}
}

// terminate stops the process group (SIGTERM, then SIGKILL after
// StopGrace) and waits for the exit.
func (i *instance) terminate(p *proc) {
	select {
	case <-p.exited:
	default:
		pid := p.cmd.Process.Pid
		_ = syscall.Kill(-pid, syscall.SIGTERM)
		t := time.NewTimer(i.s.cfg.StopGrace)
		select {
		case <-p.exited:
		case <-t.C:
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			<-p.exited
		}
		t.Stop()
	}
	p.prep.Release()
	now := i.s.clk.Now()
	i.mu.Lock()
	i.pid = 0
	i.dial = nil
	if !i.runStart.IsZero() {
		i.ran += max(now.Sub(i.runStart), 0)
		i.runStart = time.Time{}
	}
	i.mu.Unlock()
}

// takeRun returns the running time not taken yet, up to now for a process
// that still runs, and starts counting afresh.
func (i *instance) takeRun(now time.Time) time.Duration {
	i.mu.Lock()
	defer i.mu.Unlock()
	d := i.ran
	i.ran = 0
	if !i.runStart.IsZero() && now.After(i.runStart) {
		d += now.Sub(i.runStart)
		i.runStart = now
	}
	return d
}

// waitFirstHealthy waits for a new deployment's first healthy state; a
// crash before it fails the activation.
func (i *instance) waitFirstHealthy(ctx context.Context) error {
	for {
		ch := i.s.Changed()
		st := i.status()
		switch {
		case st.State == StateHealthy:
			return nil
		case st.Restarts > 0:
			return fmt.Errorf("%w: %s: %s%s", ErrUnhealthy, i.d.ID, st.LastExit, i.outputTail(5))
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("%w: %s: %v", ErrUnhealthy, i.d.ID, ctx.Err())
		}
	}
}

// idleSince reports how long a healthy app has had no connection.
func (i *instance) idleSince(now time.Time) time.Duration {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.front == nil || i.state != StateHealthy || i.want != wantUp || i.active > 0 {
		return 0
	}
	return now.Sub(i.lastActive)
}

// sleep stops an idle app; the next connection or Wake starts it again.
func (i *instance) sleep() bool {
	i.mu.Lock()
	if i.want != wantUp || i.state != StateHealthy || i.active > 0 {
		i.mu.Unlock()
		return false
	}
	i.want = wantIdle
	i.mu.Unlock()
	i.logf("idle for %v: stopping; the next request wakes it", i.s.cfg.IdleTimeout)
	i.signal()
	return true
}

// wake asks for the app to run and waits until it is healthy.
func (i *instance) wake(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, i.s.cfg.WakeTimeout)
	defer cancel()
	for {
		ch := i.s.Changed()
		i.mu.Lock()
		w, st := i.want, i.state
		if w == wantIdle {
			i.want = wantUp
		}
		i.mu.Unlock()
		switch {
		case w == wantGone:
			return fmt.Errorf("%w: %s", ErrNotFound, i.d.ID)
		case w == wantIdle:
			i.logf("waking for a request")
			i.signal()
		case st == StateHealthy:
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("%w: %s: %v", ErrWakeTimeout, i.d.ID, ctx.Err())
		}
	}
}

// shutdown asks the loop to stop for good and closes the front listener.
func (i *instance) shutdown() {
	i.mu.Lock()
	i.want = wantGone
	i.mu.Unlock()
	i.signal()
	if i.front != nil {
		i.front.Close()
	}
}

// outputTail quotes the program's last n output lines for an error.
func (i *instance) outputTail(n int) string {
	var tail []string
	lines := i.logs.snapshot()
	for k := len(lines) - 1; k >= 0 && len(tail) < n; k-- {
		if lines[k].Stream != "platform" {
			tail = append([]string{lines[k].Text}, tail...)
		}
	}
	if len(tail) == 0 {
		return ""
	}
	return "; last output: " + strings.Join(tail, " | ")
}
