package media

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/plans"
)

// waitStatus polls an asset (processing runs in ffmpeg, outside the test's
// control) until it leaves processing or the deadline passes.
func (e *env) waitStatus(id string, d time.Duration) Asset {
	e.t.Helper()
	deadline := time.Now().Add(d)
	for {
		a := e.asset(id)
		if a.Status != StatusProcessing || time.Now().After(deadline) {
			return a
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestPoolProcessesAndRestartResumes(t *testing.T) {
	needTools(t, "ffmpeg", "ffprobe")
	e := newEnv(t, plans.Pro, Config{Workers: 1})
	src := clip(t, t.TempDir())
	id, up := e.createVideo("pooled")
	if r := e.upload(up, "file", src); r.Status != 201 {
		t.Fatalf("upload %d %s", r.Status, r.Body)
	}
	if a := e.waitStatus(id, time.Minute); a.Status != StatusReady {
		t.Fatalf("pool: %+v", a)
	}

	// Stop the service with a video left processing (as a crash would):
	// the next start resumes it.
	e.stop()
	e.svc.Close()
	e.srv.Close()
	e.cfg.NoWorkers = true
	e.start()
	id2, up2 := e.createVideo("interrupted")
	if r := e.upload(up2, "file", src); r.Status != 201 {
		t.Fatal(r.Status)
	}
	e.stop()
	e.svc.Close()
	e.srv.Close()
	e.cfg.NoWorkers = false
	e.start()
	if a := e.waitStatus(id2, time.Minute); a.Status != StatusReady {
		t.Fatalf("resumed: %+v", a)
	}
}

func TestProcessFailsClearly(t *testing.T) {
	needTools(t, "ffmpeg", "ffprobe")
	e := newEnv(t, plans.Pro, Config{NoWorkers: true})
	src := clip(t, t.TempDir())
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		setup func(id string)
	}{
		{"interrupted too often", func(id string) {
			update(ctx, e.DB, id, map[string]any{"attempts": MaxAttempts}, "")
		}},
		{"source lost", func(id string) {
			os.Remove(filepath.Join(e.svc.assetDir(id), "source"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, up := e.createVideo(tc.name)
			e.upload(up, "file", src)
			tc.setup(id)
			if err := e.svc.Process(ctx, id); err != nil {
				t.Fatal(err)
			}
			if a := e.asset(id); a.Status != StatusFailed || a.Failure == nil || a.Failure.Code != FailInterrupted {
				t.Fatalf("%+v", a)
			}
		})
	}
	// Anything not waiting in processing is left alone.
	id, _ := e.createVideo("waiting")
	if err := e.svc.Process(ctx, id); err != nil || e.asset(id).Status != StatusPendingUpload {
		t.Fatalf("pending: %v", err)
	}
	if err := e.svc.Process(ctx, "med_unknown"); err != nil {
		t.Fatal(err)
	}
}
