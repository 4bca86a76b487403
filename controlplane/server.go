// Package controlplane assembles the control plane: the REST API of every
// area behind one route table, authentication and the permission table.
package controlplane

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"

	"github.com/svcplatform/platform/controlplane/accounts"
	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/metering"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/controlplane/seal"
	"github.com/svcplatform/platform/controlplane/store"
)

// Config is the control plane's configuration.
type Config struct {
	// DataDir holds the metadata database, keys and everything stored.
	DataDir string `json:"dataDir"`
	// AppsDomain is the domain projects answer under.
	AppsDomain string `json:"appsDomain"`
	// AppsPort is the edge's HTTPS port, shown in addresses when not 443.
	AppsPort int `json:"appsPort"`
	// Bootstrap describes the first workspace, created on an empty data dir.
	Bootstrap accounts.BootstrapConfig `json:"bootstrap"`
	// Clock is the time source (the system clock when nil).
	Clock clock.Clock `json:"-"`
	// Logger receives structured logs (slog.Default when nil).
	Logger *slog.Logger `json:"-"`
}

// Provision fills defaults.
func (c *Config) Provision() {
	if c.DataDir == "" {
		c.DataDir = "data"
	}
	if c.AppsDomain == "" {
		c.AppsDomain = "localhost"
	}
	if c.Clock == nil {
		c.Clock = clock.System{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Bootstrap.WorkspaceName == "" {
		c.Bootstrap.WorkspaceName = "My workspace"
	}
	if c.Bootstrap.OwnerEmail == "" {
		c.Bootstrap.OwnerEmail = "owner@example.com"
	}
	if c.Bootstrap.Plan == "" {
		c.Bootstrap.Plan = plans.Hobby
	}
}

// ControlPlane is the assembled control plane.
type ControlPlane struct {
	cfg       Config
	DB        *store.DB
	Audit     *audit.Log
	Meter     *metering.Meter
	Accounts  *accounts.Service
	Projects  *projects.Service
	Bootstrap accounts.Bootstrap
	Sealer    *seal.Sealer
	handler   http.Handler
	routes    []api.Route
	// areaRoutes are the routes the wired areas add.
	areaRoutes []api.Route
	closers    []func() error
}

// wiring builds one area on the core services: it registers the area's
// routes with AddRoutes, its teardown with Projects.AddDependent, and
// anything to release on Close with OnClose. Each area's wire_<area>.go
// appends its wiring in init, so areas are added without editing this file.
type wiring struct {
	name string
	wire func(ctx context.Context, cp *ControlPlane) error
}

var wirings []wiring

// AddRoutes adds an area's routes to the table.
func (cp *ControlPlane) AddRoutes(rs ...api.Route) { cp.areaRoutes = append(cp.areaRoutes, rs...) }

// OnClose registers fn to run at Close, in reverse order.
func (cp *ControlPlane) OnClose(fn func() error) { cp.closers = append(cp.closers, fn) }

// Config returns the provisioned configuration.
func (cp *ControlPlane) Config() Config { return cp.cfg }

// New opens the data directory, migrates the database, creates the first
// workspace when there is none, and builds the API.
func New(ctx context.Context, cfg Config) (*ControlPlane, error) {
	cfg.Provision()
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return nil, fmt.Errorf("controlplane: data directory %s: %w", cfg.DataDir, err)
	}
	db, err := store.Open(ctx, filepath.Join(cfg.DataDir, "platform.db"))
	if err != nil {
		return nil, err
	}
	sealer, err := seal.LoadOrCreate(filepath.Join(cfg.DataDir, "keys", "seal.key"))
	if err != nil {
		db.Close()
		return nil, err
	}
	now := cfg.Clock.Now
	cp := &ControlPlane{cfg: cfg, DB: db, Sealer: sealer}
	cp.Audit = audit.New(db, now)
	cp.Meter = metering.New(db, now)
	if cp.Accounts, err = accounts.New(ctx, db, cfg.Clock, cp.Audit, cfg.Logger); err != nil {
		db.Close()
		return nil, err
	}
	cp.OnClose(cp.Accounts.Close)
	cp.Projects = projects.New(projects.Config{AppsDomain: cfg.AppsDomain, AppsPort: cfg.AppsPort}, db, cfg.Clock, cp.Audit, cp.Meter, sealer)
	if cp.Bootstrap, err = cp.Accounts.EnsureBootstrap(ctx, cfg.Bootstrap); err != nil {
		db.Close()
		return nil, err
	}
	for _, w := range wirings {
		if err := w.wire(ctx, cp); err != nil {
			cp.Close()
			return nil, fmt.Errorf("controlplane: %s: %w", w.name, err)
		}
	}
	cp.routes = append(cp.routeTable(), cp.areaRoutes...)
	mux := http.NewServeMux()
	api.Mount(mux, cp.routes, cp.Accounts, cfg.Logger)
	cp.handler = mux
	return cp, nil
}

// Handler is the API's HTTP handler.
func (cp *ControlPlane) Handler() http.Handler { return cp.handler }

// Routes returns the route table.
func (cp *ControlPlane) Routes() []api.Route { return cp.routes }

// Close releases what the areas hold, then the database.
func (cp *ControlPlane) Close() error {
	for i := len(cp.closers) - 1; i >= 0; i-- {
		cp.closers[i]()
	}
	cp.closers = nil
	return cp.DB.Close()
}
