// Package deploys builds deployments from repo commits and tracks what each
// project serves.
//
// POST /api/repos/{id}/deploy records a deployment in state deploying and
// builds it in the background: the commit's manifest (platform.json) decides
// the kind (static site, server app or function); the file guard of package
// rules omits private files, each with a log line; environment variables are
// copied in (SERVICE_PROJECT_ID forced); the CDN setting in force is pinned,
// and functions pin the Shield rules in force. The deployment then goes live
// and becomes the project's serving deployment in the same transaction that
// publishes a new edge configuration. A deploy interrupted by a restart is
// marked failed on the next start; an older commit than the one serving is a
// rollback.
package deploys

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/blobs"
	"github.com/svcplatform/platform/controlplane/cdn"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/metering"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/controlplane/repos"
	"github.com/svcplatform/platform/controlplane/seal"
	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/internal/netguard"
	"github.com/svcplatform/platform/rules"
)

// Projects is what deploys need of the projects area (projects.Service);
// deploys never reads the projects table.
type Projects interface {
	Get(ctx context.Context, workspace, id string) (projects.Project, error)
	// RequireActive refuses changes to a project in teardown_failed.
	RequireActive(ctx context.Context, projectID string) error
	DeployEnv(ctx context.Context, projectID string) (map[string]string, error)
	Slug(ctx context.Context, projectID string) (string, error)
	Slugs(ctx context.Context, workspace string) (map[string]string, error)
}

// Repos is what deploys need of the repos area.
type Repos interface {
	Get(ctx context.Context, workspace, id string) (repos.Repo, error)
	Snapshot(ctx context.Context, workspace, repoID string, commit int) (repos.Snapshot, error)
	Blob(sum string) ([]byte, error)
}

// Settings give the CDN and Shield settings in force for a workspace.
type Settings interface {
	CDN(ctx context.Context, workspace string) (cdn.Settings, error)
	Shield(ctx context.Context, workspace string) (rules.Settings, error)
}

// Publisher publishes changes to the edges (edgesync.Service.Change).
type Publisher interface {
	Change(ctx context.Context, fn func(tx *sql.Tx) error) error
}

// Config is the area's configuration; the zero value works.
type Config struct {
	// ProbeTimeout bounds the origin reachability check of apps and
	// functions (DefaultProbeTimeout when 0).
	ProbeTimeout time.Duration `json:"probeTimeout"`
	// ProbeEvery is how often Run checks the origins of serving apps and
	// functions (DefaultProbeEvery when 0; negative: never, for tests that
	// probe with ProbeOrigins).
	ProbeEvery time.Duration `json:"probeEvery"`
	// AllowPrivateNetworks lets app and function origins be on loopback,
	// private or link-local addresses (--allow-private-networks).
	AllowPrivateNetworks bool `json:"allowPrivateNetworks"`
	// OwnAddrs are the platform's own listeners: never an origin.
	OwnAddrs []netip.AddrPort `json:"-"`
	// RunMeterEvery is how often Run meters the running time of the apps
	// and worker programs the runtime runs as app_run_seconds
	// (DefaultRunMeterEvery when 0; negative: only at FlushRunTime calls).
	// The last flush happens at Close.
	RunMeterEvery time.Duration `json:"runMeterEvery"`
	// LogBytes bounds each project's kept log lines (DefaultLogBytes
	// when 0): build, deploy, app and function output together.
	LogBytes int `json:"logBytes"`
	// LogRetention is how long a project log line is kept
	// (DefaultLogRetention when 0).
	LogRetention time.Duration `json:"logRetention"`
	// BuildTimeout bounds a build's steps together (DefaultBuildTimeout
	// when 0).
	BuildTimeout time.Duration `json:"buildTimeout"`
	// BuildLogBytes bounds the build output logged (engine's
	// DefaultBuildLogBytes when 0); past it the build goes on unlogged.
	BuildLogBytes int `json:"buildLogBytes"`
	// BuildMaxFiles and BuildMaxBytes bound a build's output
	// (DefaultBuildMaxFiles, DefaultBuildMaxBytes when 0).
	BuildMaxFiles int   `json:"buildMaxFiles"`
	BuildMaxBytes int64 `json:"buildMaxBytes"`
	// DeployKeyTTL is the backstop expiry of the key each app and worker
	// program deployment gets (DefaultDeployKeyTTL when 0); it is revoked
	// when the deployment is replaced.
	DeployKeyTTL time.Duration `json:"deployKeyTTL"`
	// BuildOffline keeps builds off the network even when the sandbox
	// gives programs outbound network (install steps then need the
	// dependencies in the commit or the project's build cache).
	BuildOffline bool `json:"buildOffline"`
}

// Deps are what the area is built on.
type Deps struct {
	DB    *store.DB
	Blobs blobs.Backend
	// Clock dates deployments and logs (clock.System when nil).
	Clock clock.Clock
	// Audit records deploys (audit.New over DB when nil).
	Audit *audit.Log
	// Meter receives deploys, build seconds and app running time.
	Meter  metering.Recorder
	Sealer *seal.Sealer
	// Logger receives what goes wrong in the background (slog.Default
	// when nil).
	Logger   *slog.Logger
	Projects Projects
	Repos    Repos
	Settings Settings
	Pub      Publisher
	// Runtime runs the apps, worker programs and functions whose manifest
	// has run or module (engine.Engine); nil refuses them with 503
	// runtime_unavailable. New resumes the serving ones (see Resume).
	Runtime Runtime
	// Keys mints the key each app and worker program deployment gets as
	// PLATFORM_TOKEN (accounts.Service); nil gives none.
	Keys Keys
	// Plans tells a workspace's plan (accounts.Service), whose limits
	// bound each project's log (plans.Limits.LogRetentionHours and
	// LogBytes); nil: Config.LogRetention and LogBytes for every project.
	Plans plans.Source
}

// check names what is missing.
func (d *Deps) check() error {
	var missing []string
	for name, ok := range map[string]bool{"DB": d.DB != nil, "Blobs": d.Blobs != nil, "Meter": d.Meter != nil, "Projects": d.Projects != nil,
		"Repos": d.Repos != nil, "Settings": d.Settings != nil, "Pub": d.Pub != nil} {
		if !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return fmt.Errorf("%w: %s", ErrNotConfigured, strings.Join(missing, ", "))
	}
	return nil
}

// ErrNotConfigured is returned by New when a dependency is missing.
var ErrNotConfigured = errors.New("deploys: missing dependencies")

// DefaultProbeEvery is how often the origins of serving apps and functions
// are checked (a project whose origin does not answer is down).
const DefaultProbeEvery = 30 * time.Second

// DefaultProbeTimeout bounds one origin reachability check.
const DefaultProbeTimeout = 2 * time.Second

// Service is the deploys area.
type Service struct {
	cfg    settings
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // background goroutines, builds included
	builds sync.WaitGroup // running builds

	mu     sync.Mutex
	hook   func(deploymentID string)
	health map[string]bool // deployment id -> origin answered at the last probe
	// dialer probes origins under the same network rule as the edge.
	dialer *net.Dialer
	rt     Runtime

	meter   runMeter // under mu, but for agg (under meterMu)
	meterMu sync.Mutex

	logs *logHub
}

// settings are the service's Config and Deps together.
type settings struct {
	Config
	Deps
}

// New returns the service, marks deployments a restart interrupted as
// failed and, with a runtime, resumes the serving deployments it runs.
// Both read and write the store (hence ctx) and must finish before any
// request arrives: a deployment still marked deploying is failed. It
// starts nothing: Run probes origins and meters the apps' running time.
func New(ctx context.Context, cfg Config, d Deps) (*Service, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	if cfg.ProbeTimeout == 0 {
		cfg.ProbeTimeout = DefaultProbeTimeout
	}
	if cfg.ProbeEvery == 0 {
		cfg.ProbeEvery = DefaultProbeEvery
	}
	if cfg.RunMeterEvery == 0 {
		cfg.RunMeterEvery = DefaultRunMeterEvery
	}
	if cfg.LogBytes <= 0 {
		cfg.LogBytes = DefaultLogBytes
	}
	if cfg.LogRetention <= 0 {
		cfg.LogRetention = DefaultLogRetention
	}
	if cfg.BuildTimeout <= 0 {
		cfg.BuildTimeout = DefaultBuildTimeout
	}
	if cfg.DeployKeyTTL <= 0 {
		cfg.DeployKeyTTL = DefaultDeployKeyTTL
	}
	if cfg.BuildMaxFiles <= 0 {
		cfg.BuildMaxFiles = DefaultBuildMaxFiles
	}
	if cfg.BuildMaxBytes <= 0 {
		cfg.BuildMaxBytes = DefaultBuildMaxBytes
	}
	if d.Clock == nil {
		d.Clock = clock.System{}
	}
	if d.Audit == nil {
		d.Audit = audit.New(d.DB, d.Clock)
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	s := &Service{cfg: settings{cfg, d}, health: map[string]bool{}, dialer: netguard.Dialer(cfg.AllowPrivateNetworks, cfg.OwnAddrs...),
		rt: d.Runtime, meter: runMeter{ws: map[string]string{}}}
	if br, ok := d.Meter.(metering.BatchRecorder); ok {
		s.meter.agg = metering.NewAggregator(br, d.Clock)
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.logs = newLogHub(cfg.LogBytes, cfg.LogRetention, d.Clock.Now)
	s.logs.hydrate = s.hydrateFromStore
	if d.Plans != nil {
		s.logs.limits = s.logLimits
	}
	s.sinkRuntime(d.Runtime)
	if err := s.failInterrupted(ctx); err != nil {
		return nil, err
	}
	if err := s.Resume(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Run probes the origins of serving apps and functions every
// Config.ProbeEvery and meters the running time of what the runtime runs
// every Config.RunMeterEvery, until ctx ends.
func (s *Service) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	every := func(d time.Duration, fn func(context.Context) error, what string) {
		if d < 0 {
			return
		}
		wg.Go(func() {
			t := time.NewTicker(d)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					if err := fn(ctx); err != nil && ctx.Err() == nil {
						s.cfg.Logger.Warn("deploys: "+what, "err", err)
					}
				}
			}
		})
	}
	every(s.cfg.ProbeEvery, s.ProbeOrigins, "probe origins")
	every(s.cfg.RunMeterEvery, s.FlushRunTime, "meter app running time")
	wg.Wait()
	return nil
}

// failInterrupted fails the deployments left deploying by a stopped process.
func (s *Service) failInterrupted(ctx context.Context) error {
	ds, err := queryDeployments(ctx, s.cfg.DB, 0, `d.state = ?`, stateDeploying)
	if err != nil {
		return err
	}
	for _, d := range ds {
		if err := s.fail(ctx, d, "interrupted by a restart of the platform: deploy again"); err != nil {
			return err
		}
	}
	return nil
}

// Close stops the background builds and waits for them (each one stopped
// is marked failed) and meters the apps' running time a last time. Call it
// after Run has returned.
func (s *Service) Close() error {
	s.cancel()
	s.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.FlushRunTime(ctx); err != nil {
		s.cfg.Logger.Warn("deploys: meter app running time at close", "err", err)
	}
	return nil
}

// SetBuildHook installs fn, called at the start of every background build
// with the deployment id (tests hold a build there to observe deploying).
func (s *Service) SetBuildHook(fn func(deploymentID string)) {
	s.mu.Lock()
	s.hook = fn
	s.mu.Unlock()
}

// Wait blocks until no build runs (tests).
func (s *Service) Wait() { s.builds.Wait() }

func envAAD(deploymentID string) []byte { return []byte("deployment env\x00" + deploymentID) }

// envDigest identifies a set of variables, to tell functions running older
// values.
func envDigest(env map[string]string) string {
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	h := sha256.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%d:%s%d:%s", len(k), k, len(env[k]), env[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Env returns the environment variables copied into a deployment (for the
// runtime of apps and functions; never shown by the API).
func (s *Service) Env(ctx context.Context, deploymentID string) (map[string]string, error) {
	var sealed []byte
	if err := s.cfg.DB.QueryRowContext(ctx, `SELECT env_sealed FROM deployments WHERE id = ?`, deploymentID).Scan(&sealed); err != nil {
		return nil, fmt.Errorf("deploys: env: %w", err)
	}
	env := map[string]string{}
	if sealed == nil {
		return env, nil
	}
	raw, err := s.cfg.Sealer.Open(sealed, envAAD(deploymentID))
	if err != nil {
		return nil, fmt.Errorf("deploys: env: %w", err)
	}
	return env, json.Unmarshal(raw, &env)
}

// writable returns a project of the workspace that accepts changes: 404 for
// another workspace's, 409 project_teardown_failed in teardown_failed.
func (s *Service) writable(ctx context.Context, workspace, id string) (projects.Project, error) {
	p, err := s.cfg.Projects.Get(ctx, workspace, id)
	if err != nil {
		return p, err
	}
	return p, s.cfg.Projects.RequireActive(ctx, id)
}
