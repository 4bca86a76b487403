package supervise

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/platform/runtime/sandbox"
)

var (
	binDir   string
	appOnce  sync.Once
	appBin   string
	appErr   error
	testBase = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "supervise-test-")
	if err != nil {
		panic(err)
	}
	binDir = dir
	// Deployment directories live under binDir; sandboxed apps' uids must
	// pass through it.
	if err := os.Chmod(dir, 0o711); err != nil {
		panic(err)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// appBinary builds runtime/testdata/app once (static, so it runs in any
// sandbox).
func appBinary(t *testing.T) string {
	t.Helper()
	appOnce.Do(func() {
		appBin = filepath.Join(binDir, "app")
		cmd := exec.Command("go", "build", "-o", appBin, "../testdata/app")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			appErr = err
			t.Logf("go build: %s", out)
		}
	})
	if appErr != nil {
		t.Fatalf("build the example app: %v", appErr)
	}
	return appBin
}

// deployDir is a materialised "commit" holding the app binary as ./app.
func deployDir(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile(appBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(binDir, "dpl-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.WriteFile(filepath.Join(dir, "app"), src, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func testConfig() Config {
	return Config{
		StartTimeout: 15 * time.Second, HealthInterval: 20 * time.Millisecond, CheckInterval: time.Second,
		BackoffMin: 20 * time.Millisecond, BackoffMax: 200 * time.Millisecond, StopGrace: 3 * time.Second,
		WakeTimeout: 15 * time.Second, IdleTimeout: time.Minute, DrainTimeout: 30 * time.Second,
	}
}

func newSupervisor(t *testing.T, cfg Config, box sandbox.Sandbox) (*Supervisor, *fakeClock) {
	t.Helper()
	clk := &fakeClock{now: testBase}
	s, err := New(cfg, box, clk, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s, clk
}

// waitStatus waits on state changes (not on time) until cond holds.
func waitStatus(t *testing.T, s *Supervisor, id string, what string, cond func(Status) bool) Status {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		ch := s.Changed()
		st, err := s.Status(id)
		if err == nil && cond(st) {
			return st
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("%s: waiting for %s; last status %+v, err %v", id, what, st, err)
		}
	}
}

// get fetches path from the deployment's front address.
func get(t *testing.T, s *Supervisor, id, path string) (int, string) {
	t.Helper()
	addr, err := s.Addr(id)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + addr + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func hasLine(lines []LogLine, stream, text string) bool {
	for _, l := range lines {
		if l.Stream == stream && l.Text == text {
			return true
		}
	}
	return false
}
