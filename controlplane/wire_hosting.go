package controlplane

import (
	"context"
	"path/filepath"
	"sync"

	"github.com/svcplatform/platform/controlplane/blobs"
	"github.com/svcplatform/platform/controlplane/cdn"
	"github.com/svcplatform/platform/controlplane/deploys"
	"github.com/svcplatform/platform/controlplane/edgesync"
	"github.com/svcplatform/platform/controlplane/repos"
	"github.com/svcplatform/platform/controlplane/shield"
	"github.com/svcplatform/platform/rules"
)

// hosting holds the areas that make what the edge serves: the blob store,
// repos, deploys, Shield, CDN and edgesync. They depend on one another, so
// they are built together once per control plane, by whichever of their
// wirings runs first; each area's wire_<area>.go registers its own routes.
type hosting struct {
	blobs   *blobs.Store
	sync    *edgesync.Service
	repos   *repos.Service
	cdn     *cdn.Service
	shield  *shield.Service
	deploys *deploys.Service
}

var hostings sync.Map // *ControlPlane -> *hosting

// hostingOf returns the hosting areas of cp, building them on first use.
func hostingOf(ctx context.Context, cp *ControlPlane) (*hosting, error) {
	if h, ok := hostings.Load(cp); ok {
		return h.(*hosting), nil
	}
	cfg := cp.Config()
	h := &hosting{}
	var err error
	if h.blobs, err = blobs.Open(filepath.Join(cfg.DataDir, "blobs")); err != nil {
		return nil, err
	}
	if h.sync, err = edgesync.New(ctx, cp.DB, h.blobs, cp.Sealer, cfg.Clock, cfg.Logger, cfg.AppsDomain); err != nil {
		return nil, err
	}
	h.repos = repos.New(cp.DB, h.blobs, cfg.Clock, cp.Audit)
	h.cdn = cdn.New(cp.DB, cfg.Clock, cp.Audit, h.sync)
	h.deploys, err = deploys.New(ctx, deploys.Config{DB: cp.DB, Blobs: h.blobs, Clock: cfg.Clock, Audit: cp.Audit, Meter: cp.Meter,
		Sealer: cp.Sealer, Logger: cfg.Logger, Projects: cp.Projects, Repos: h.repos, Settings: hostingSettings{h}, Pub: h.sync})
	if err != nil {
		return nil, err
	}
	h.shield = shield.New(cp.DB, cfg.Clock, cp.Audit, h.sync, h.deploys, h.sync, cp.Accounts.Plan)
	h.sync.SetSources(edgesync.Sources{Sites: deploys.EdgeSites, Shield: shield.AllSettings, Passwords: shield.AllPasswords, CDN: cdn.All})
	hostings.Store(cp, h)
	cp.OnClose(func() error {
		hostings.Delete(cp)
		return h.deploys.Close()
	})
	return h, nil
}

// hostingSettings gives deploys the CDN and Shield settings in force.
type hostingSettings struct{ h *hosting }

func (s hostingSettings) CDN(ctx context.Context, workspace string) (cdn.Settings, error) {
	return s.h.cdn.Get(ctx, workspace)
}

func (s hostingSettings) Shield(ctx context.Context, workspace string) (rules.Settings, error) {
	return s.h.shield.Current(ctx, workspace)
}

// EdgeSync returns the edge configuration service (nil before New wired
// it): `platform serve` takes its in-process edge's token from
// EdgeSync().EnsureLocalToken.
func (cp *ControlPlane) EdgeSync() *edgesync.Service {
	if h, ok := hostings.Load(cp); ok {
		return h.(*hosting).sync
	}
	return nil
}

// Deploys returns the deploys service (nil before New wired it).
func (cp *ControlPlane) Deploys() *deploys.Service {
	if h, ok := hostings.Load(cp); ok {
		return h.(*hosting).deploys
	}
	return nil
}

// Blobs returns the content-addressed blob store under DATA/blobs, which an
// in-process edge may read deployed files from directly.
func (cp *ControlPlane) Blobs() *blobs.Store {
	if h, ok := hostings.Load(cp); ok {
		return h.(*hosting).blobs
	}
	return nil
}
