package edgesync_test

import (
	"bytes"
	"context"
	"database/sql"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/edgesync"
	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
	"github.com/svcplatform/platform/controlplane/seal"
	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
	"github.com/svcplatform/platform/rules"
)

// emptySources is a platform with no workspaces and no sites: what the
// replicas test needs is the version, not the content.
func emptySources() edgesync.Sources {
	return edgesync.Sources{
		Sites: func(context.Context, store.Querier) ([]snapshot.Site, error) { return nil, nil },
		Projects: func(context.Context, store.Querier) (map[string]edgesync.ProjectRef, error) {
			return nil, nil
		},
		Project: func(context.Context, store.Querier, string) (edgesync.ProjectRef, bool, error) {
			return edgesync.ProjectRef{}, false, nil
		},
		ServingKind: func(context.Context, store.Querier, string) (string, error) { return "", nil },
		Served:      func(context.Context, store.Querier, string) (bool, error) { return false, nil },
		Workspaces:  func(context.Context, store.Querier) ([]string, error) { return nil, nil },
		Shield:      func(context.Context, store.Querier) (map[string]rules.Settings, error) { return nil, nil },
		Passwords:   func(context.Context, store.Querier) (map[string]string, error) { return nil, nil },
		CDN:         func(context.Context, store.Querier) (map[string]snapshot.CDN, error) { return nil, nil },
	}
}

// replica is an edgesync service on its own store handle (its own pool
// and, on PostgreSQL, its own listening connection), as in another
// control-plane process, running until the test ends.
func replica(t *testing.T, dsn string, sealer *seal.Sealer) *edgesync.Service {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	svc, err := edgesync.New(ctx, edgesync.Config{AppsDomain: "apps.test"}, edgesync.Deps{DB: db, Sealer: sealer,
		Clock: clock.NewFake(time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Sources: emptySources()})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- svc.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-ran; err != nil {
			t.Error(err)
		}
	})
	return svc
}

// TestReplicasWakeEachOther: a long-poll waiting on replica B wakes when a
// change commits through replica A (PostgreSQL LISTEN/NOTIFY; on SQLite,
// two handles of one file in one process), and a rolled-back change wakes
// nobody. Both replicas share the session key.
func TestReplicasWakeEachOther(t *testing.T) {
	const bound = 10 * time.Second // a failure bound, never waited out on success
	sealer, err := seal.New(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, eng := range pgtest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			dsn := eng.DSN(t)
			a, b := replica(t, dsn, sealer), replica(t, dsn, sealer)
			sa, err := a.Snapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			sb, err := b.Snapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(sa.SessionKey, sb.SessionKey) || sa.Version != sb.Version {
				t.Fatalf("replicas disagree: version %d/%d, same key %v", sa.Version, sb.Version, bytes.Equal(sa.SessionKey, sb.SessionKey))
			}
			for i, change := range []struct {
				name string
				do   func() error
			}{
				{"Bump on A", func() error { _, err := a.Bump(ctx); return err }},
				{"Change on A", func() error { return a.Change(ctx, func(*sql.Tx) error { return nil }) }},
			} {
				before := b.Version()
				type result struct {
					v   int64
					ok  bool
					err error
				}
				done := make(chan result, 1)
				waiting := b.Waiting()
				go func() {
					_, ok, err := b.Await(ctx, before, 60*time.Second)
					var r result
					r.ok, r.err = ok, err
					if ok {
						s, _ := b.Snapshot(ctx)
						r.v = s.Version
					}
					done <- r
				}()
				<-waiting
				// A change rolled back on A first: it must not wake B.
				if err := a.Change(ctx, func(*sql.Tx) error { return context.Canceled }); err == nil {
					t.Fatal("rolled-back change reported success")
				}
				start := time.Now()
				if err := change.do(); err != nil {
					t.Fatal(err)
				}
				select {
				case r := <-done:
					if r.err != nil || !r.ok || r.v != before+1 {
						t.Fatalf("%d %s: woke with %+v, want version %d", i, change.name, r, before+1)
					}
					t.Logf("%s: B woke %v after A's commit", change.name, time.Since(start))
				case <-time.After(bound):
					t.Fatalf("%s: a change committed on A did not wake B's long-poll within %v", change.name, bound)
				}
			}
		})
	}
}
