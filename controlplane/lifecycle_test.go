package controlplane

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/accounts"
	"github.com/svcplatform/platform/controlplane/agents"
	"github.com/svcplatform/platform/controlplane/ai"
	"github.com/svcplatform/platform/controlplane/billing"
	"github.com/svcplatform/platform/controlplane/cdn"
	"github.com/svcplatform/platform/controlplane/certs"
	"github.com/svcplatform/platform/controlplane/databases"
	"github.com/svcplatform/platform/controlplane/deploys"
	"github.com/svcplatform/platform/controlplane/edgesync"
	"github.com/svcplatform/platform/controlplane/jobs"
	"github.com/svcplatform/platform/controlplane/mcp"
	"github.com/svcplatform/platform/controlplane/media"
	"github.com/svcplatform/platform/controlplane/memory"
	"github.com/svcplatform/platform/controlplane/payments"
	"github.com/svcplatform/platform/controlplane/placement"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/controlplane/repos"
	"github.com/svcplatform/platform/controlplane/security"
	"github.com/svcplatform/platform/controlplane/shield"
	"github.com/svcplatform/platform/controlplane/usage"
	"github.com/svcplatform/platform/controlplane/vectors"
)

// goroutines returns the stacks of every goroutine but the caller's, by id.
func goroutines() map[string]string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := map[string]string{}
	for i, g := range bytes.Split(buf, []byte("\n\n")) {
		if i == 0 {
			continue // this goroutine
		}
		header, _, _ := strings.Cut(string(g), "\n")
		id, _, _ := strings.Cut(strings.TrimPrefix(header, "goroutine "), " ")
		out[id] = string(g)
	}
	return out
}

// started returns the goroutines not in before; with ours, only those
// running (or started by) this module's code.
func started(before map[string]string, ours bool) []string {
	var out []string
	for id, stack := range goroutines() {
		if _, ok := before[id]; ok {
			continue
		}
		if ours && !strings.Contains(stack, "github.com/svcplatform/platform/") {
			continue
		}
		out = append(out, stack)
	}
	return out
}

// noneLeft waits (as goleak does) for the goroutines started since
// before to end, and fails the test with the stacks of those that do not.
func noneLeft(t *testing.T, before map[string]string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := started(before, false)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines left:\n\n%s", len(left), strings.Join(left, "\n\n"))
		}
		runtime.Gosched()
		time.Sleep(10 * time.Millisecond) // polling the goroutine list, as goleak does: nothing to wait on
	}
}

// testConfig is a control plane in a temporary directory that reaches
// nothing outside the process.
func testConfig(t *testing.T) Config {
	return Config{DataDir: t.TempDir(), AppsDomain: "apps.test", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

// New only builds: no loop of the control plane runs until Run, and after
// Close nothing it started is left. Run starts the loops and stops every
// one of them when its context ends.
func TestLifecycleGoroutines(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  bool
	}{
		{"New and Close", false},
		{"New, Run until cancelled, Close", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := goroutines()
			cp, err := New(context.Background(), testConfig(t))
			if err != nil {
				t.Fatal(err)
			}
			if ours := started(before, true); len(ours) > 0 {
				cp.Close()
				t.Fatalf("New started %d goroutines running the platform's code:\n\n%s", len(ours), strings.Join(ours, "\n\n"))
			}
			if tc.run {
				ctx, stop := context.WithCancel(context.Background())
				ran := make(chan error, 1)
				go func() { ran <- cp.Run(ctx) }()
				// A job enqueued is run by Run's workers: the loops run.
				done := make(chan struct{})
				cp.Jobs.Register("test.ping", func(context.Context, jobs.Job) error { close(done); return nil }, jobs.KindOptions{})
				if _, err := cp.Jobs.Enqueue(ctx, nil, "test.ping", nil, jobs.EnqueueOptions{}); err != nil {
					t.Fatal(err)
				}
				<-done
				stop()
				if err := <-ran; err != nil {
					t.Fatal(err)
				}
			}
			if err := cp.Close(); err != nil {
				t.Fatal(err)
			}
			noneLeft(t, before)
		})
	}
}

// Every area refuses to be built without what it needs, naming it, with
// its ErrNotConfigured: one idiom (Deps.check) everywhere.
func TestAreasNameMissingDeps(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, tc := range []struct {
		area     string
		build    func() error
		sentinel error
		names    string
	}{
		{"jobs", func() error { _, err := jobs.New(jobs.Config{}, jobs.Deps{}); return err }, jobs.ErrNotConfigured, "DB"},
		{"billing", func() error { _, err := billing.New(billing.Config{}, billing.Deps{}); return err }, billing.ErrNotConfigured, "DB, Plans"},
		{"accounts", func() error { _, err := accounts.New(ctx, accounts.Config{}, accounts.Deps{}); return err }, accounts.ErrNotConfigured, "DB"},
		{"projects", func() error { _, err := projects.New(projects.Config{}, projects.Deps{}); return err }, projects.ErrNotConfigured, "DB, Meter, Sealer"},
		{"edgesync", func() error { _, err := edgesync.New(ctx, edgesync.Config{}, edgesync.Deps{}); return err }, edgesync.ErrNotConfigured, "DB, Sealer"},
		{"certs", func() error { _, err := certs.New(ctx, certs.Config{}, certs.Deps{}); return err }, certs.ErrNotConfigured, "DB, Sealer, Sites"},
		{"repos", func() error { _, err := repos.New(repos.Config{}, repos.Deps{}); return err }, repos.ErrNotConfigured, "Blobs, DB"},
		{"cdn", func() error { _, err := cdn.New(cdn.Config{}, cdn.Deps{}); return err }, cdn.ErrNotConfigured, "DB, Pub"},
		{"deploys", func() error { _, err := deploys.New(ctx, deploys.Config{}, deploys.Deps{}); return err }, deploys.ErrNotConfigured,
			"Blobs, DB, Meter, Projects, Pub, Repos, Settings"},
		{"shield", func() error { _, err := shield.New(shield.Config{}, shield.Deps{}); return err }, shield.ErrNotConfigured,
			"Counts, DB, Plans, Projects, Pub, Sites"},
		{"security", func() error { _, err := security.New(security.Config{}, security.Deps{}); return err }, security.ErrNotConfigured,
			"Accounts, Audit, Usage, Variables"},
		{"databases", func() error {
			_, err := databases.New(ctx, databases.Config{Dir: dir}, databases.Deps{})
			return err
		}, databases.ErrNotConfigured, "DB, Jobs, Plans, Projects"},
		{"payments", func() error { _, err := payments.New(payments.Config{}, payments.Deps{}); return err }, payments.ErrNotConfigured,
			"CheckURL, DB, Email, HTTPClient, Jobs, Meter, Plans, Projects, Sealer"},
		{"ai", func() error { _, err := ai.New(ai.Config{}, ai.Deps{}); return err }, ai.ErrNotConfigured, "DB, Ledger, Plans"},
		{"vectors", func() error {
			_, err := vectors.New(ctx, vectors.Config{Dir: dir}, vectors.Deps{})
			return err
		}, vectors.ErrNotConfigured, "DB, Plans, Projects"},
		{"media", func() error {
			_, err := media.New(media.Config{Dir: dir, PublicBaseURL: "http://127.0.0.1"}, media.Deps{})
			return err
		}, media.ErrNotConfigured, "DB, Jobs, Plans, Projects"},
		{"agents", func() error { _, err := agents.New(agents.Config{}, agents.Deps{}); return err }, agents.ErrNotConfigured,
			"AI, API, DB, Jobs, Keys, Plans, Projects, Sealer"},
		{"usage", func() error { _, err := usage.New(usage.Config{}, usage.Deps{}); return err }, usage.ErrNotConfigured,
			"DB, Jobs, Meter, Plans, Projects"},
		{"memory", func() error { _, err := memory.New(memory.Config{}, memory.Deps{}); return err }, memory.ErrNotConfigured,
			"DB, Jobs, Meter, Plans, Projects"},
		{"mcp", func() error { _, err := mcp.New(mcp.Config{}, mcp.Deps{}); return err }, mcp.ErrNotConfigured, "API"},
		{"placement", func() error {
			_, err := placement.New(ctx, placement.Config{NodeID: "n", URL: "http://127.0.0.1:1"}, placement.Deps{})
			return err
		}, placement.ErrNotConfigured, "DB"},
	} {
		t.Run(tc.area, func(t *testing.T) {
			err := tc.build()
			if !errors.Is(err, tc.sentinel) || !strings.HasSuffix(err.Error(), ": "+tc.names) {
				t.Fatalf("New without deps: %v, want %v naming %s", err, tc.sentinel, tc.names)
			}
		})
	}
}
