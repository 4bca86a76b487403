package supervise

import (
	"context"
	"errors"
	"testing"

	"github.com/svcplatform/platform/runtime/sandbox"
)

// TestRestore: after a restart an app is registered asleep on its front
// address (no process until the first connection), becomes the project's
// current deployment and drains the one it replaces; a worker starts.
func TestRestore(t *testing.T) {
	s, clk := newSupervisor(t, testConfig(), sandbox.None{})
	ctx := context.Background()
	d := appDeployment(t, "dpl_r", nil)
	if err := s.Restore(d); err != nil {
		t.Fatal(err)
	}
	st := waitStatus(t, s, "dpl_r", "asleep", func(st Status) bool { return st.State == StateIdle })
	if st.PID != 0 || !st.Current || st.Addr == "" {
		t.Fatalf("restored app: %+v", st)
	}
	if code, body := get(t, s, "dpl_r", "/env?k=SERVICE_PROJECT_ID"); code != 200 || body != d.Project {
		t.Fatalf("first request: %d %q", code, body)
	}
	if !hasLine(mustLog(t, s, "dpl_r"), "platform", "restored after a restart of the platform: asleep until the next request") {
		t.Fatal("no restore note in the log")
	}
	t.Run("refusals", func(t *testing.T) {
		if err := s.Restore(d); !errors.Is(err, ErrExists) {
			t.Fatalf("second restore: %v", err)
		}
		bad := d
		bad.ID, bad.Run = "dpl_bad", nil
		if err := s.Restore(bad); !errors.Is(err, ErrInvalid) {
			t.Fatalf("invalid: %v", err)
		}
	})
	t.Run("a newer restore drains the older", func(t *testing.T) {
		d2 := appDeployment(t, "dpl_r2", nil)
		if err := s.Restore(d2); err != nil {
			t.Fatal(err)
		}
		if cur, _ := s.Current(d.Project); cur != "dpl_r2" {
			t.Fatalf("current %s", cur)
		}
		waitStatus(t, s, "dpl_r", "the connection closed", func(st Status) bool { return st.Active == 0 })
		clk.Advance(testConfig().DrainTimeout + 1)
		s.Reap(ctx)
		if _, err := s.Status("dpl_r"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("the replaced deployment still runs: %v", err)
		}
	})
	t.Run("worker starts", func(t *testing.T) {
		w := appDeployment(t, "dpl_w", nil)
		w.Project, w.Kind, w.Run = "prj_w", KindWorker, []string{"./app", "worker"}
		if err := s.Restore(w); err != nil {
			t.Fatal(err)
		}
		waitStatus(t, s, "dpl_w", "running", func(st Status) bool { return st.State == StateHealthy && st.PID != 0 })
	})
	t.Run("closed", func(t *testing.T) {
		s2, _ := newSupervisor(t, testConfig(), sandbox.None{})
		if err := s2.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if err := s2.Restore(appDeployment(t, "dpl_c", nil)); !errors.Is(err, ErrClosed) {
			t.Fatalf("restore after close: %v", err)
		}
	})
}

func mustLog(t *testing.T, s *Supervisor, id string) []LogLine {
	t.Helper()
	l, err := s.Log(id)
	if err != nil {
		t.Fatal(err)
	}
	return l
}
