package supervise

import (
	"context"
	"testing"
	"time"

	"github.com/svcplatform/platform/runtime/sandbox"
)

// TestTakeRunTime: running time is measured on the supervisor's clock,
// reported once (what is taken is not reported again), stops counting
// while an app sleeps, and a stopped deployment gets one final report.
func TestTakeRunTime(t *testing.T) {
	s, clk := newSupervisor(t, testConfig(), sandbox.None{})
	ctx := context.Background()
	if err := s.Activate(ctx, appDeployment(t, "dpl_run", nil)); err != nil {
		t.Fatal(err)
	}
	take := func(t *testing.T, want time.Duration, final bool) {
		t.Helper()
		got := s.TakeRunTime()
		if want == 0 && !final {
			if len(got) != 0 {
				t.Fatalf("reported %+v, want nothing", got)
			}
			return
		}
		if len(got) != 1 || got[0].ID != "dpl_run" || got[0].Project != "prj_1" || got[0].Kind != KindApp ||
			got[0].Duration != want || got[0].Final != final {
			t.Fatalf("reported %+v, want %v final %v", got, want, final)
		}
	}
	steps := []struct {
		name string
		do   func(t *testing.T)
		want time.Duration
		fin  bool
	}{
		{"running", func(*testing.T) { clk.Advance(30 * time.Second) }, 30 * time.Second, false},
		{"taken once", func(*testing.T) {}, 0, false},
		{"up to the idle stop", func(t *testing.T) {
			clk.Advance(40 * time.Second) // 70 s without a connection: past IdleTimeout
			if n := s.Reap(ctx); n != 1 {
				t.Fatalf("reaped %d", n)
			}
			waitStatus(t, s, "dpl_run", "asleep", func(st Status) bool { return st.State == StateIdle && st.PID == 0 })
			clk.Advance(10 * time.Minute) // asleep: not running time
		}, 40 * time.Second, false},
		{"woken, then stopped for good", func(t *testing.T) {
			if code, _ := get(t, s, "dpl_run", "/health"); code != 200 {
				t.Fatalf("wake: %d", code)
			}
			clk.Advance(5 * time.Second)
			if err := s.Stop(ctx, "dpl_run"); err != nil {
				t.Fatal(err)
			}
			clk.Advance(time.Hour) // stopped: nothing more
		}, 5 * time.Second, true},
		{"nothing after the final report", func(*testing.T) {}, 0, false},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			st.do(t)
			take(t, st.want, st.fin)
		})
	}
}

// TestTakeRunTimeWorker: a worker program's running time counts too.
func TestTakeRunTimeWorker(t *testing.T) {
	s, clk := newSupervisor(t, testConfig(), sandbox.None{})
	d := Deployment{ID: "dpl_w", Project: "prj_w", Kind: KindWorker, Dir: deployDir(t), Run: []string{"./app", "worker"}}
	if err := s.Activate(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Minute)
	got := s.TakeRunTime()
	if len(got) != 1 || got[0].Kind != KindWorker || got[0].Duration != 2*time.Minute {
		t.Fatalf("%+v", got)
	}
}
