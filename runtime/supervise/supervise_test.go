package supervise

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/runtime/sandbox"
)

func appDeployment(t *testing.T, id string, env map[string]string) Deployment {
	return Deployment{ID: id, Project: "prj_1", Kind: KindApp, Dir: deployDir(t), Run: []string{"./app"}, Env: env, HealthPath: "/health"}
}

func TestAppEnvironmentAndLog(t *testing.T) {
	s, _ := newSupervisor(t, testConfig(), sandbox.None{})
	d := appDeployment(t, "dpl_1", map[string]string{"API_TOKEN": "s3cret", "SERVICE_PROJECT_ID": "forged", "PORT": "1"})
	if err := s.Activate(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path       string
		wantStatus int
		wantBody   string
	}{
		{"/env?k=SERVICE_PROJECT_ID", 200, "prj_1"},
		{"/env?k=API_TOKEN", 200, "s3cret"},
		{"/env?k=HOME", 404, "unset\n"}, // exactly the project's variables: nothing of the platform's
		{"/env?k=PATH", 404, "unset\n"},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			code, body := get(t, s, "dpl_1", tc.path)
			if code != tc.wantStatus || body != tc.wantBody {
				t.Fatalf("got %d %q, want %d %q", code, body, tc.wantStatus, tc.wantBody)
			}
		})
	}
	t.Run("PORT is the one the platform picked", func(t *testing.T) {
		_, port := get(t, s, "dpl_1", "/env?k=PORT")
		if port == "1" || port == "" {
			t.Fatalf("PORT = %q", port)
		}
		logs, _ := s.Log("dpl_1")
		if !hasLine(logs, "stdout", "listening on "+port) {
			t.Fatalf("log lacks the app's stdout line: %+v", logs)
		}
	})
	st, _ := s.Status("dpl_1")
	if st.State != StateHealthy || !st.Current || st.PID == 0 {
		t.Fatalf("status %+v", st)
	}
}

func TestCrashRestartsWithBackoff(t *testing.T) {
	s, _ := newSupervisor(t, testConfig(), sandbox.None{})
	if err := s.Activate(context.Background(), appDeployment(t, "dpl_c", nil)); err != nil {
		t.Fatal(err)
	}
	before, _ := s.Status("dpl_c")
	for n := 1; n <= 2; n++ {
		addr, _ := s.Addr("dpl_c")
		_, _ = http.Get("http://" + addr + "/crash") // the connection dies with the app
		st := waitStatus(t, s, "dpl_c", "restart", func(st Status) bool { return st.Restarts == n && st.State == StateHealthy })
		if st.PID == before.PID || st.LastExit != "exited with status 3" {
			t.Fatalf("after crash %d: %+v", n, st)
		}
	}
	if code, _ := get(t, s, "dpl_c", "/health"); code != 200 {
		t.Fatalf("health after restarts: %d", code)
	}
	logs, _ := s.Log("dpl_c")
	if !hasLine(logs, "stderr", "crashing on request") || !hasLine(logs, "platform", "restarting in 20ms") || !hasLine(logs, "platform", "restarting in 40ms") {
		t.Fatalf("log lacks the crash and the doubling backoff: %+v", logs)
	}
}

func TestSwitchWithoutDowntimeAndRollback(t *testing.T) {
	s, clk := newSupervisor(t, testConfig(), sandbox.None{})
	ctx := context.Background()
	if err := s.Activate(ctx, appDeployment(t, "dpl_v1", map[string]string{"LEVEL": "1"})); err != nil {
		t.Fatal(err)
	}
	// A failing deploy changes nothing.
	bad := appDeployment(t, "dpl_bad", nil)
	bad.Run = []string{"/bin/false"}
	if err := s.Activate(ctx, bad); !errors.Is(err, ErrUnhealthy) {
		t.Fatalf("activate a crashing app: %v, want ErrUnhealthy", err)
	}
	if cur, _ := s.Current("prj_1"); cur != "dpl_v1" {
		t.Fatalf("current after a failed deploy = %q", cur)
	}
	if _, err := s.Status("dpl_bad"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("failed deployment kept: %v", err)
	}

	if err := s.Activate(ctx, appDeployment(t, "dpl_v2", map[string]string{"LEVEL": "2"})); err != nil {
		t.Fatal(err)
	}
	if cur, _ := s.Current("prj_1"); cur != "dpl_v2" {
		t.Fatalf("current = %q", cur)
	}
	// The old one still serves during the drain (the edge may still route to it).
	if _, body := get(t, s, "dpl_v1", "/env?k=LEVEL"); body != "1" {
		t.Fatalf("old during drain: %q", body)
	}
	if _, body := get(t, s, "dpl_v2", "/env?k=LEVEL"); body != "2" {
		t.Fatalf("new: %q", body)
	}
	if n := s.Reap(ctx); n != 0 {
		t.Fatalf("reaped %d before the drain time", n)
	}
	clk.Advance(31 * time.Second)
	s.Reap(ctx)
	if _, err := s.Status("dpl_v1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("old deployment after the drain: %v", err)
	}
	// Rollback is a deploy of the older commit.
	if err := s.Activate(ctx, appDeployment(t, "dpl_v3", map[string]string{"LEVEL": "1"})); err != nil {
		t.Fatal(err)
	}
	if _, body := get(t, s, "dpl_v3", "/env?k=LEVEL"); body != "1" {
		t.Fatalf("rolled back: %q", body)
	}
}

func TestScaleToZeroAndWake(t *testing.T) {
	s, clk := newSupervisor(t, testConfig(), sandbox.None{})
	ctx := context.Background()
	if err := s.Activate(ctx, appDeployment(t, "dpl_z", nil)); err != nil {
		t.Fatal(err)
	}
	if n := s.Reap(ctx); n != 0 {
		t.Fatalf("reaped a fresh app: %d", n)
	}
	clk.Advance(61 * time.Second)
	if n := s.Reap(ctx); n != 1 {
		t.Fatalf("reaped %d, want the idle app", n)
	}
	waitStatus(t, s, "dpl_z", "idle", func(st Status) bool { return st.State == StateIdle && st.PID == 0 })

	t.Run("a connection wakes it", func(t *testing.T) {
		if code, _ := get(t, s, "dpl_z", "/health"); code != 200 {
			t.Fatalf("woken app answered %d", code)
		}
		if st, _ := s.Status("dpl_z"); st.State != StateHealthy || st.Restarts != 0 {
			t.Fatalf("after wake: %+v", st)
		}
	})
	t.Run("Wake holds the caller until healthy", func(t *testing.T) {
		waitStatus(t, s, "dpl_z", "the connection closed", func(st Status) bool { return st.Active == 0 })
		clk.Advance(61 * time.Second)
		if n := s.Reap(ctx); n != 1 {
			t.Fatalf("reaped %d", n)
		}
		waitStatus(t, s, "dpl_z", "idle", func(st Status) bool { return st.State == StateIdle })
		addr, err := s.Wake(ctx, "dpl_z")
		if err != nil {
			t.Fatal(err)
		}
		if st, _ := s.Status("dpl_z"); st.State != StateHealthy || st.Addr != addr {
			t.Fatalf("after Wake: %+v (addr %s)", st, addr)
		}
	})
	t.Run("an open connection keeps it awake", func(t *testing.T) {
		addr, _ := s.Addr("dpl_z")
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		waitStatus(t, s, "dpl_z", "the connection counted", func(st Status) bool { return st.Active == 1 })
		clk.Advance(10 * time.Minute)
		if n := s.Reap(ctx); n != 0 {
			t.Fatalf("reaped an app with an open connection")
		}
	})
}

func TestWakeBounded(t *testing.T) {
	cfg := testConfig()
	cfg.WakeTimeout = time.Millisecond
	s, clk := newSupervisor(t, cfg, sandbox.None{})
	ctx := context.Background()
	if err := s.Activate(ctx, appDeployment(t, "dpl_w", nil)); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour)
	s.Reap(ctx)
	waitStatus(t, s, "dpl_w", "idle", func(st Status) bool { return st.State == StateIdle })
	if _, err := s.Wake(ctx, "dpl_w"); !errors.Is(err, ErrWakeTimeout) {
		t.Fatalf("Wake = %v, want ErrWakeTimeout", err)
	}
	if _, err := s.Wake(ctx, "dpl_none"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Wake of an unknown deployment = %v", err)
	}
}

func TestWorkerProgram(t *testing.T) {
	s, _ := newSupervisor(t, testConfig(), sandbox.None{})
	ctx := context.Background()
	w := func(id string) Deployment {
		return Deployment{ID: id, Project: "prj_w", Kind: KindWorker, Dir: deployDir(t), Run: []string{"./app", "worker"}}
	}
	if err := s.Activate(ctx, w("dpl_w1")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Addr("dpl_w1"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a worker has an address: %v", err)
	}
	waitStatus(t, s, "dpl_w1", "its first line", func(Status) bool {
		logs, _ := s.Log("dpl_w1")
		return hasLine(logs, "stdout", "worker started for prj_w")
	})
	if err := s.Activate(ctx, w("dpl_w2")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Status("dpl_w1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the old worker still runs: %v", err)
	}
	if cur, _ := s.Current("prj_w"); cur != "dpl_w2" {
		t.Fatalf("current worker %q", cur)
	}
}

func TestActivateRefuses(t *testing.T) {
	s, _ := newSupervisor(t, testConfig(), sandbox.None{})
	ctx := context.Background()
	dir := deployDir(t)
	ok := Deployment{ID: "d", Project: "p", Kind: KindApp, Dir: dir, Run: []string{"./app"}, HealthPath: "/health"}
	tests := []struct {
		name    string
		mutate  func(*Deployment)
		wantErr error
	}{
		{"empty id", func(d *Deployment) { d.ID = "" }, ErrInvalid},
		{"unknown kind", func(d *Deployment) { d.Kind = "static" }, ErrInvalid},
		{"no command", func(d *Deployment) { d.Run = nil }, ErrInvalid},
		{"bad variable name", func(d *Deployment) { d.Env = map[string]string{"A=B": "x"} }, ErrInvalid},
		{"health path without slash", func(d *Deployment) { d.HealthPath = "health" }, ErrInvalid},
		{"missing directory", func(d *Deployment) { d.Dir = filepath.Join(dir, "nope") }, ErrInvalid},
		{"command outside the directory", func(d *Deployment) { d.Run = []string{"../app"} }, ErrUnhealthy},
		{"missing program", func(d *Deployment) { d.Run = []string{"./nope"} }, ErrUnhealthy},
		{"health path that fails", func(d *Deployment) { d.HealthPath = "/nope" }, ErrUnhealthy},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := ok
			d.ID = "dpl_" + strings.ReplaceAll(tc.name, " ", "_")
			tc.mutate(&d)
			cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			if err := s.Activate(cctx, d); !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if _, ok := s.Current("p"); ok {
				t.Fatal("a refused deployment became current")
			}
		})
	}
	t.Run("same id twice", func(t *testing.T) {
		d := ok
		if err := s.Activate(ctx, d); err != nil {
			t.Fatal(err)
		}
		if err := s.Activate(ctx, d); !errors.Is(err, ErrExists) {
			t.Fatalf("err = %v, want ErrExists", err)
		}
	})
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"zero value", Config{}, true},
		{"negative backoff", Config{BackoffMin: -1}, false},
		{"max below min", Config{BackoffMin: time.Second, BackoffMax: time.Millisecond}, false},
		{"tiny log", Config{LogBytes: 10}, false},
		{"never idle", Config{IdleTimeout: -1}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.cfg.Provision(); (err == nil) != tc.ok {
				t.Fatalf("Provision = %v", err)
			}
		})
	}
}

func TestLogRing(t *testing.T) {
	r := &ring{limit: 10, now: func() time.Time { return testBase }}
	w := &lineWriter{r: r, stream: "stdout"}
	fmt.Fprint(w, "aaaa\nbbbb\ncc")
	fmt.Fprint(w, "cc\n")
	fmt.Fprint(w, "dd")
	w.flush()
	got := r.snapshot()
	var texts []string
	for _, l := range got {
		texts = append(texts, l.Text)
	}
	if strings.Join(texts, ",") != "bbbb,cccc,dd" {
		t.Fatalf("ring holds %q", texts)
	}
	long := &ring{limit: 1 << 20, now: r.now}
	lw := &lineWriter{r: long, stream: "stderr"}
	fmt.Fprint(lw, strings.Repeat("x", maxLineBytes+10)+"\n")
	if l := long.snapshot(); len(l) != 2 || len(l[0].Text) != maxLineBytes {
		t.Fatalf("long line split into %d lines", len(l))
	}
}
