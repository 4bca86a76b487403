package engine

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/platform/runtime/sandbox"
	"github.com/svcplatform/platform/runtime/supervise"
	"github.com/svcplatform/platform/runtime/wasm"
)

var (
	buildOnce sync.Once
	appBin    []byte
	fnWasm    []byte
	buildErr  error
)

func build(t *testing.T) ([]byte, []byte) {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "engine-test-")
		if err != nil {
			buildErr = err
			return
		}
		defer os.RemoveAll(dir)
		for _, b := range []struct {
			out, pkg string
			env      []string
			dst      *[]byte
		}{{"app", "../testdata/app", nil, &appBin}, {"fn.wasm", "../testdata/fn", []string{"GOOS=wasip1", "GOARCH=wasm"}, &fnWasm}} {
			cmd := exec.Command("go", "build", "-o", filepath.Join(dir, b.out), b.pkg)
			cmd.Env = append(append(os.Environ(), "CGO_ENABLED=0"), b.env...)
			if out, err := cmd.CombinedOutput(); err != nil {
				buildErr = errors.New(string(out))
				return
			}
			if *b.dst, buildErr = os.ReadFile(filepath.Join(dir, b.out)); buildErr != nil {
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return appBin, fnWasm
}

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

func newEngine(t *testing.T) (*Engine, *clock) {
	t.Helper()
	clk := &clock{now: time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)}
	e, err := New(context.Background(), Config{Dir: filepath.Join(t.TempDir(), "rt"),
		Supervise: supervise.Config{HealthInterval: 20 * time.Millisecond, DrainTimeout: time.Minute, StopGrace: 2 * time.Second},
		Wasm:      wasm.Config{Timeout: 2 * time.Second}}, sandbox.None{}, clk, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	return e, clk
}

func file(p string, data []byte) File {
	return File{Path: p, Open: func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }}
}

func fetch(t *testing.T, url string) string {
	t.Helper()
	c := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestStartStopApp: files are materialised (the program executable) into
// the deployment's own directory under the runtime root, the app runs
// with its variables, and Stop removes both.
func TestStartStopApp(t *testing.T) {
	bin, _ := build(t)
	e, _ := newEngine(t)
	ctx := context.Background()
	exe := file("bin/server", bin)
	exe.Exec = true
	addr, err := e.StartApp(ctx, App{ID: "dpl_a", Project: "prj_a", Run: []string{"./bin/server"}, Health: "/health",
		Env: map[string]string{"K": "v"}, Files: []File{exe, file("data/notes.txt", []byte("n"))}})
	if err != nil {
		t.Fatal(err)
	}
	if got := fetch(t, "http://"+addr+"/env?k=K"); got != "v" {
		t.Fatalf("K = %q", got)
	}
	dir := filepath.Join(e.cfg.Dir, "dpl_a")
	if fi, err := os.Stat(filepath.Join(dir, "bin/server")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("program: %v %v", fi, err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "data/notes.txt")); err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("data file: %v %v", fi, err)
	}
	if st, ok := e.State("dpl_a"); !ok || st != "healthy" {
		t.Fatalf("state %q %v", st, ok)
	}
	if out := e.Output("dpl_a"); len(out) == 0 {
		t.Fatal("no output")
	}
	if err := e.StopProject(ctx, "prj_a"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("directory left: %v", err)
	}
	if err := e.Stop(ctx, "dpl_a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second stop: %v", err)
	}
}

// TestRefusals: paths that would leave the deployment directory, bad ids
// and a program that does not start are refused and leave nothing.
func TestRefusals(t *testing.T) {
	e, _ := newEngine(t)
	ctx := context.Background()
	for _, p := range []string{"../escape", "/abs", "a/../../b", "./x", "", "a//b"} {
		t.Run("path "+p, func(t *testing.T) {
			_, err := e.StartApp(ctx, App{ID: "dpl_p", Project: "prj", Run: []string{"./x"}, Files: []File{file(p, nil)}})
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("%v, want ErrInvalid", err)
			}
		})
	}
	for _, id := range []string{"", "..", "a/b", "x y"} {
		if _, err := e.StartApp(ctx, App{ID: id, Run: []string{"x"}}); !errors.Is(err, ErrInvalid) {
			t.Fatalf("id %q: %v", id, err)
		}
	}
	script := file("start.sh", []byte("#!/bin/sh\necho no config >&2\nexit 4\n"))
	script.Exec = true
	_, err := e.StartApp(ctx, App{ID: "dpl_bad", Project: "prj", Run: []string{"./start.sh"}, Files: []File{script}})
	if !errors.Is(err, supervise.ErrUnhealthy) || !strings.Contains(err.Error(), "no config") {
		t.Fatalf("%v, want ErrUnhealthy naming the output", err)
	}
	entries, _ := os.ReadDir(e.cfg.Dir)
	if len(entries) != 0 {
		t.Fatalf("left behind: %v", entries)
	}
}

// TestFunctionDrain: a function's front answers; the next function of the
// project replaces it and the old one is unloaded after the drain.
func TestFunctionDrain(t *testing.T) {
	_, mod := build(t)
	e, clk := newEngine(t)
	ctx := context.Background()
	a1, err := e.LoadFunction(ctx, Function{ID: "dpl_f1", Project: "prj", Module: mod, Env: map[string]string{"V": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	a2, err := e.LoadFunction(ctx, Function{ID: "dpl_f2", Project: "prj", Module: mod, Env: map[string]string{"V": "2"}})
	if err != nil {
		t.Fatal(err)
	}
	if fetch(t, "http://"+a1+"/env?k=V") != "1" || fetch(t, "http://"+a2+"/env?k=V") != "2" {
		t.Fatal("variables not pinned per deployment")
	}
	if n := e.Reap(ctx); n != 0 {
		t.Fatalf("reaped %d before the drain", n)
	}
	clk.Add(time.Minute)
	if n := e.Reap(ctx); n != 1 {
		t.Fatalf("reaped %d, want the replaced function", n)
	}
	if _, ok := e.State("dpl_f1"); ok || e.host.Loaded("dpl_f1") {
		t.Fatal("the replaced function is still loaded")
	}
	if _, ok := e.State("dpl_f2"); !ok {
		t.Fatal("the current function was unloaded")
	}
	if _, err := e.LoadFunction(ctx, Function{ID: "dpl_f3", Project: "prj", Module: []byte("nope")}); !errors.Is(err, wasm.ErrInvalidModule) {
		t.Fatalf("bad module: %v", err)
	}
}

// TestSweepLeftovers: directories a previous run left are removed at New;
// dot entries (the compilation cache) are kept.
func TestSweepLeftovers(t *testing.T) {
	root := filepath.Join(t.TempDir(), "rt")
	for _, d := range []string{"dpl_old", ".wasm-cache"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	e, err := New(context.Background(), Config{Dir: root}, sandbox.None{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	if _, err := os.Stat(filepath.Join(root, "dpl_old")); !os.IsNotExist(err) {
		t.Fatal("leftover kept")
	}
	if _, err := os.Stat(filepath.Join(root, ".wasm-cache")); err != nil {
		t.Fatal("cache removed")
	}
	if fi, _ := os.Stat(root); fi.Mode().Perm() != 0o711 {
		t.Fatalf("root mode %v", fi.Mode())
	}
}
