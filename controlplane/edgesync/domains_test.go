package edgesync_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"

	"github.com/svcplatform/platform/controlplane/edgesync"
	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
	"github.com/svcplatform/platform/controlplane/seal"
	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

// TestSnapshotDomains: the custom domains source's hosts are published
// for projects with a site only, lower case and sorted; a domain naming a
// site's own address is left out; without the source there are none.
func TestSnapshotDomains(t *testing.T) {
	sealer, err := seal.New(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		domains func(context.Context, store.Querier) ([]snapshot.Domain, error)
		want    []string
	}{
		{"without the source", nil, nil},
		{"with it", func(context.Context, store.Querier) ([]snapshot.Domain, error) {
			return []snapshot.Domain{
				{Host: "WWW.Shop.Example.", ProjectID: "prj_shop", RedirectTo: "Shop.Example"},
				{Host: "shop.example", ProjectID: "prj_shop"},
				{Host: "idle.example", ProjectID: "prj_idle"},
				{Host: "blog.apps.test", ProjectID: "prj_shop"},
			}, nil
		}, []string{"shop.example", "www.shop.example>shop.example"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := emptySources()
			src.Sites = func(context.Context, store.Querier) ([]snapshot.Site, error) {
				return []snapshot.Site{{ProjectID: "prj_shop"}, {ProjectID: "prj_blog"}}, nil
			}
			src.Projects = func(context.Context, store.Querier) (map[string]edgesync.ProjectRef, error) {
				return map[string]edgesync.ProjectRef{"prj_shop": {Workspace: "ws", Slug: "shop"}, "prj_blog": {Workspace: "ws", Slug: "blog"},
					"prj_idle": {Workspace: "ws", Slug: "idle"}}, nil
			}
			src.Domains = tc.domains
			svc, err := edgesync.New(context.Background(), edgesync.Config{AppsDomain: "apps.test"}, edgesync.Deps{DB: pgtest.OpenSQLite(t),
				Sealer: sealer, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Sources: src})
			if err != nil {
				t.Fatal(err)
			}
			snap, err := svc.Snapshot(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range snap.Domains {
				h := d.Host
				if d.RedirectTo != "" {
					h += ">" + d.RedirectTo
				}
				got = append(got, h)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("domains %q, want %q", got, tc.want)
			}
		})
	}
}
