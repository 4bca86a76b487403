package edgesync_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"testing"

	"github.com/svcplatform/platform/controlplane/buckets"
	"github.com/svcplatform/platform/controlplane/edgesync"
	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
	"github.com/svcplatform/platform/controlplane/seal"
	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

// storageService is an edgesync service on a fresh store whose public
// bucket source is src (nil: none).
func storageService(t *testing.T, src func(context.Context, store.Querier) ([]string, error)) *edgesync.Service {
	t.Helper()
	sealer, err := seal.New(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	sources := emptySources()
	sources.PublicBuckets = src
	svc, err := edgesync.New(context.Background(), edgesync.Config{AppsDomain: "apps.test"}, edgesync.Deps{DB: pgtest.OpenSQLite(t),
		Sealer: sealer, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Sources: sources})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// TestSnapshotStorage: the storage host is published once SetStorage
// names it, lower case and without a trailing dot or slash, with the
// public bucket source's ids sorted and deduplicated (none without the
// source, nor while the host is unset); a failing source fails the build.
func TestSnapshotStorage(t *testing.T) {
	ids := []string{"bkt_b", "bkt_a", "bkt_b"}
	for _, tc := range []struct {
		name string
		host string
		src  func(context.Context, store.Querier) ([]string, error)
		want *snapshot.Storage
		err  bool
	}{
		{"no host", "", func(context.Context, store.Querier) ([]string, error) { return ids, nil }, nil, false},
		{"host without the source", "Storage.Apps.Test.", nil,
			&snapshot.Storage{Host: "storage.apps.test", Origin: "http://127.0.0.1:7070", PublicBuckets: []string{}}, false},
		{"host with the source", "storage.apps.test", func(context.Context, store.Querier) ([]string, error) { return ids, nil },
			&snapshot.Storage{Host: "storage.apps.test", Origin: "http://127.0.0.1:7070", PublicBuckets: []string{"bkt_a", "bkt_b"}}, false},
		{"buckets area source", "storage.apps.test", buckets.PublicBucketIDs,
			&snapshot.Storage{Host: "storage.apps.test", Origin: "http://127.0.0.1:7070", PublicBuckets: []string{}}, false},
		{"source failing", "storage.apps.test", func(context.Context, store.Querier) ([]string, error) { return nil, errors.New("down") }, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := storageService(t, tc.src)
			if tc.host != "" {
				if err := svc.SetStorage(context.Background(), tc.host, "http://127.0.0.1:7070/"); err != nil {
					t.Fatal(err)
				}
			}
			snap, err := svc.Snapshot(context.Background())
			if tc.err {
				if err == nil {
					t.Fatal("a failing public bucket source built a snapshot")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.want == nil && snap.Storage != nil:
				t.Fatalf("storage %+v, want none", *snap.Storage)
			case tc.want != nil && (snap.Storage == nil || snap.Storage.Host != tc.want.Host || snap.Storage.Origin != tc.want.Origin ||
				!slices.Equal(snap.Storage.PublicBuckets, tc.want.PublicBuckets) || snap.Storage.PublicBuckets == nil):
				t.Fatalf("storage %+v, want %+v", snap.Storage, *tc.want)
			}
			if ids[0] != "bkt_b" {
				t.Fatalf("the source's slice was changed: %q", ids)
			}
		})
	}
}

// TestSetStorage: setting the storage host bumps the version (so edges
// holding a snapshot of another configuration see it), setting it again
// unchanged does not, withdrawing it bumps again; a host with a port,
// path or space, or an origin that is not an http(s) base URL, is refused
// with ErrInvalidStorage and changes nothing.
func TestSetStorage(t *testing.T) {
	ctx := context.Background()
	svc := storageService(t, func(context.Context, store.Querier) ([]string, error) { return []string{"bkt_1"}, nil })
	const origin = "http://127.0.0.1:7070"
	v := svc.Version()
	if err := svc.SetStorage(ctx, "storage.apps.test", origin); err != nil || svc.Version() <= v {
		t.Fatalf("set: %v, version %d -> %d", err, v, svc.Version())
	}
	v = svc.Version()
	if err := svc.SetStorage(ctx, "storage.apps.test.", origin+"/"); err != nil || svc.Version() != v {
		t.Fatalf("same again: %v, version %d -> %d", err, v, svc.Version())
	}
	for _, tc := range []struct{ name, host, origin string }{
		{"no host", "", origin},
		{"no origin", "storage.apps.test", ""},
		{"host with a port", "storage.apps.test:8443", origin},
		{"host with a path", "storage.apps.test/x", origin},
		{"host with a space", "storage apps.test", origin},
		{"origin not http", "storage.apps.test", "ftp://127.0.0.1"},
		{"origin with a path", "storage.apps.test", origin + "/api"},
		{"origin with a query", "storage.apps.test", origin + "?a=1"},
		{"origin with a user", "storage.apps.test", "http://u:p@127.0.0.1:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := svc.SetStorage(ctx, tc.host, tc.origin); !errors.Is(err, edgesync.ErrInvalidStorage) {
				t.Fatalf("SetStorage(%q, %q): %v, want ErrInvalidStorage", tc.host, tc.origin, err)
			}
			if svc.Version() != v {
				t.Fatalf("a refused host bumped the version %d -> %d", v, svc.Version())
			}
		})
	}
	snap, err := svc.Snapshot(ctx)
	if err != nil || snap.Storage == nil || snap.Storage.Host != "storage.apps.test" || !slices.Equal(snap.Storage.PublicBuckets, []string{"bkt_1"}) {
		t.Fatalf("after refusals: %v %+v", err, snap.Storage)
	}
	if err := svc.SetStorage(ctx, "", ""); err != nil || svc.Version() <= v {
		t.Fatalf("withdraw: %v, version %d -> %d", err, v, svc.Version())
	}
	if snap, err := svc.Snapshot(ctx); err != nil || snap.Storage != nil {
		t.Fatalf("withdrawn: %v %+v", err, snap.Storage)
	}
	v = svc.Version()
	if err := svc.SetStorage(ctx, "", ""); err != nil || svc.Version() != v {
		t.Fatalf("withdraw again: %v, version %d -> %d", err, v, svc.Version())
	}
}
