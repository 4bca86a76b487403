// Package controlplane assembles the control plane: the REST API of every
// area behind one route table, authentication and the permission table.
//
// New builds everything explicitly, in dependency order, passing each area
// what it needs (no init() registries, no package-level maps): the store,
// the sealer, audit and metering, accounts and projects, the blob store,
// edge sync, repos, CDN, deploys, Shield, the security overview,
// databases and the other areas. Every area is built the same way,
// New(Config, Deps), and starts nothing; Run runs every area's loops and
// the job workers until its context ends; Close releases what New built.
// routes.go is the one route table.
package controlplane

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/svcplatform/platform/controlplane/accounts"
	"github.com/svcplatform/platform/controlplane/agents"
	"github.com/svcplatform/platform/controlplane/ai"
	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/billing"
	"github.com/svcplatform/platform/controlplane/blobs"
	"github.com/svcplatform/platform/controlplane/buckets"
	"github.com/svcplatform/platform/controlplane/cdn"
	"github.com/svcplatform/platform/controlplane/certs"
	"github.com/svcplatform/platform/controlplane/dashboard"
	"github.com/svcplatform/platform/controlplane/databases"
	"github.com/svcplatform/platform/controlplane/deploys"
	"github.com/svcplatform/platform/controlplane/devicelogin"
	"github.com/svcplatform/platform/controlplane/domains"
	"github.com/svcplatform/platform/controlplane/edgesync"
	"github.com/svcplatform/platform/controlplane/jobs"
	"github.com/svcplatform/platform/controlplane/mail"
	"github.com/svcplatform/platform/controlplane/mcp"
	"github.com/svcplatform/platform/controlplane/media"
	"github.com/svcplatform/platform/controlplane/memory"
	"github.com/svcplatform/platform/controlplane/metering"
	"github.com/svcplatform/platform/controlplane/payments"
	"github.com/svcplatform/platform/controlplane/placement"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/controlplane/ratelimit"
	"github.com/svcplatform/platform/controlplane/repos"
	"github.com/svcplatform/platform/controlplane/seal"
	"github.com/svcplatform/platform/controlplane/security"
	"github.com/svcplatform/platform/controlplane/shield"
	"github.com/svcplatform/platform/controlplane/signin"
	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/controlplane/usage"
	"github.com/svcplatform/platform/controlplane/vectors"
	"github.com/svcplatform/platform/internal/netguard"
)

// ControlPlane is the assembled control plane. Every field is set by New;
// the accessors never return nil.
type ControlPlane struct {
	cfg Config

	// Foundation.
	DB       *store.DB
	Jobs     *jobs.Runner
	Billing  *billing.Ledger
	Sealer   *seal.Sealer
	Audit    *audit.Log
	Meter    *metering.Meter
	keyCalls *metering.KeyCalls
	metrics  *Metrics

	// Areas, in dependency order.
	Accounts  *accounts.Service
	Projects  *projects.Service
	Bootstrap accounts.Bootstrap
	blobs     blobs.Backend
	edgeSync  *edgesync.Service
	certs     *certs.Service
	repos     *repos.Service
	cdn       *cdn.Service
	deploys   *deploys.Service
	shield    *shield.Service
	security  *security.Service
	databases *databases.Service
	payments  *payments.Service
	mcp       *mcp.Server
	ai        *ai.Service
	media     *media.Service
	vectors   *vectors.Service
	usage     *usage.Service
	agents    *agents.Service
	mail      *mail.Service
	domains   *domains.Service
	signin    *signin.Service
	memory    *memory.Service
	buckets   *buckets.Service
	// deviceLogin signs command lines in with a code a member approves.
	deviceLogin *devicelogin.Service

	handler http.Handler
	routes  []api.Route
	// closers release what New built, in reverse order (Close); loops are
	// what Run runs.
	closers []func() error
	loops   []loop
}

// jobBlobsGC deletes blobs no commit or deployment names, older than a
// day, once a day.
const jobBlobsGC = "blobs.gc"

// jobSigninSweep sweeps sign-in pools' expired tokens and rotates their
// keys.
const jobSigninSweep = "signin.sweep"

// newCluster registers this node among the replicas and returns the
// forwarder to the owners of databases (controlplane/placement).
func (cp *ControlPlane) newCluster(ctx context.Context, cfg Config) (*placement.Forwarder, error) {
	reg, err := placement.New(ctx, placement.Config{NodeID: cfg.NodeID, URL: cfg.NodeURL, Dir: cfg.DataDir}, placement.Deps{DB: cp.DB, Clock: cfg.Clock, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	cp.onRun("placement", reg.Run)
	keyFile := cfg.SealKeyFile
	if keyFile == "" {
		keyFile = filepath.Join(cfg.DataDir, "keys", "seal.key")
	}
	secret, err := placement.SecretFromKeyFile(keyFile)
	if err != nil {
		return nil, err
	}
	f, err := placement.NewForwarder(reg, secret, cfg.Logger)
	if err != nil {
		return nil, err
	}
	for _, c := range f.Collectors() {
		if err := cfg.Registerer.Register(c); err != nil {
			return nil, fmt.Errorf("controlplane: metrics: %w", err)
		}
	}
	return f, nil
}

// onClose registers fn to run at Close, in reverse order.
func (cp *ControlPlane) onClose(fn func() error) { cp.closers = append(cp.closers, fn) }

// New opens the data directory, migrates the database, builds every area
// in dependency order, mounts the route table and, last, creates the first
// workspace when there is none (unless Config.DeferBootstrap). It starts
// no goroutine: Run does. On error everything built so far is released.
func New(ctx context.Context, cfg Config) (_ *ControlPlane, err error) {
	cfg.Provision()
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return nil, fmt.Errorf("controlplane: data directory %s: %w", cfg.DataDir, err)
	}
	cp := &ControlPlane{cfg: cfg}
	defer func() {
		if err != nil {
			cp.Close()
		}
	}()
	clk, log := cfg.Clock, cfg.Logger

	// Foundation: metrics, store, sealer, audit, metering.
	cp.metrics = NewMetrics()
	if err := cp.metrics.Register(cfg.Registerer); err != nil {
		return nil, fmt.Errorf("controlplane: metrics: %w", err)
	}
	dsn := cfg.Store
	if dsn == "" {
		dsn = filepath.Join(cfg.DataDir, "platform.db")
	}
	if cp.DB, err = store.Open(ctx, dsn); err != nil {
		return nil, err
	}
	cp.DB.OnTx = cp.metrics.ObserveTx
	cp.onClose(cp.DB.Close)
	if cfg.SealKeyFile != "" {
		cp.Sealer, err = seal.Load(cfg.SealKeyFile)
	} else {
		cp.Sealer, err = seal.LoadOrCreate(filepath.Join(cfg.DataDir, "keys", "seal.key"))
	}
	if err != nil {
		return nil, err
	}
	cp.Audit = audit.New(cp.DB, clk)
	cp.Meter = metering.New(cp.DB, clk)
	cp.keyCalls = metering.NewKeyCalls(cp.Meter, cfg.KeyCallsFlush, log)
	cp.onRun("api key calls", cp.keyCalls.Run)
	cp.onClose(cp.keyCalls.Close)
	// Durable background work, and the billing ledger that AI, agents and
	// storage past the allowance charge through.
	if cp.Jobs, err = jobs.New(cfg.Jobs, jobs.Deps{DB: cp.DB, Clock: clk, Logger: log}); err != nil {
		return nil, err
	}
	cp.onRun("jobs", cp.Jobs.Run)
	cp.onClose(cp.Jobs.Close)
	if cp.Billing, err = billing.New(billing.Config{}, billing.Deps{DB: cp.DB, Clock: clk, Audit: cp.Audit, Plans: billing.PlanFunc(cp.planOf),
		Jobs: cp.Jobs, Logger: log}); err != nil {
		return nil, err
	}
	cp.onRun("billing", cp.Billing.Run)
	cp.onClose(cp.Billing.Close) // commits the hot path's pending movements before the store closes
	// One rate limiter for the areas with per-workspace limits: in memory
	// on SQLite, in the store on PostgreSQL so replicas share the budget.
	limiter := ratelimit.For(cp.DB, clk)
	for _, c := range append(append(cp.Jobs.Collectors(), cp.Billing.Collectors()...), limiter.Collectors()...) {
		if err := cfg.Registerer.Register(c); err != nil {
			return nil, fmt.Errorf("controlplane: metrics: %w", err)
		}
	}

	// Accounts and projects.
	if cp.Accounts, err = accounts.New(ctx, cfg.Accounts, accounts.Deps{DB: cp.DB, Clock: clk, Audit: cp.Audit, Logger: log}); err != nil {
		return nil, err
	}
	cp.onRun("accounts", cp.Accounts.Run)
	cp.onClose(cp.Accounts.Close)
	// Paid plans renew from the Balance each month; one that cannot pay
	// goes to hobby.
	cp.Billing.RegisterRenewal(cp.Jobs, cp.Accounts, plans.Hobby)
	if cp.Projects, err = projects.New(projects.Config{AppsDomain: cfg.AppsDomain, AppsPort: cfg.AppsPort}, projects.Deps{DB: cp.DB, Clock: clk,
		Audit: cp.Audit, Meter: cp.Meter, Sealer: cp.Sealer, Logger: log}); err != nil {
		return nil, err
	}
	cp.Projects.SetKeyRevoker(cp.Accounts)
	if cp.deviceLogin, err = devicelogin.New(devicelogin.Config{}, devicelogin.Deps{DB: cp.DB, Sealer: cp.Sealer, Keys: cp.Accounts,
		ProjectExists: cp.Projects.Exists, Clock: clk, Logger: log}); err != nil {
		return nil, err
	}
	if err := cfg.Bootstrap.Validate(); err != nil {
		return nil, err
	}

	// What the edge serves: blobs, edge sync, repos, CDN, deploys, Shield.
	// Blobs live under DATA/blobs, or on S3-compatible storage.
	at := cfg.Blobs
	if at == "" {
		at = filepath.Join(cfg.DataDir, "blobs")
	}
	if cp.blobs, err = blobs.OpenBackend(ctx, at); err != nil {
		return nil, fmt.Errorf("controlplane: blobs: %w", err)
	}
	if s3, ok := cp.blobs.(*blobs.S3); ok {
		log.Info("controlplane: blobs on S3", "location", s3.String())
		for _, c := range s3.Collectors() {
			if err := cfg.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("controlplane: metrics: %w", err)
			}
		}
	}
	if cp.edgeSync, err = edgesync.New(ctx, edgesync.Config{AppsDomain: cfg.AppsDomain}, edgesync.Deps{DB: cp.DB, Blobs: cp.blobs,
		Sealer: cp.Sealer, Clock: clk, Logger: log, Sources: edgeSources()}); err != nil {
		return nil, err
	}
	cp.onRun("edge sync", cp.edgeSync.Run)
	cp.Projects.AddDependent(cp.edgeSync.Dependent())
	// Certificates every edge serves alike: the installation's CA (an
	// existing DATA/ca adopted), the hosts' certificates it signs, and
	// ACME's account, certificates and challenges, sealed.
	if cp.certs, err = certs.New(ctx, certs.Config{ImportCADir: filepath.Join(cfg.DataDir, "ca"), ACME: cfg.CertsACME}, certs.Deps{DB: cp.DB, Sealer: cp.Sealer,
		Clock: clk, Logger: log, Sites: cp.edgeSync}); err != nil {
		return nil, err
	}
	if cp.repos, err = repos.New(repos.Config{}, repos.Deps{DB: cp.DB, Blobs: cp.blobs, Clock: clk, Audit: cp.Audit}); err != nil {
		return nil, err
	}
	if cp.cdn, err = cdn.New(cdn.Config{}, cdn.Deps{DB: cp.DB, Clock: clk, Audit: cp.Audit, Pub: cp.edgeSync}); err != nil {
		return nil, err
	}
	// The runtime is closed after deploys (closers run in reverse order).
	rt, box, err := cp.newRuntime(ctx, cfg.Runtime, cfg.DataDir, clk, log)
	if err != nil {
		return nil, err
	}
	if cp.deploys, err = deploys.New(ctx, deploys.Config{ProbeEvery: cfg.OriginProbeEvery, AllowPrivateNetworks: cfg.AllowPrivateNetworks,
		OwnAddrs: cfg.OwnAddrs}, deploys.Deps{Runtime: rt, DB: cp.DB, Blobs: cp.blobs, Clock: clk, Audit: cp.Audit, Meter: cp.Meter,
		Sealer: cp.Sealer, Logger: log, Projects: cp.Projects, Repos: cp.repos, Settings: hostingSettings{cp}, Pub: cp.edgeSync,
		Keys: cp.Accounts, Plans: cp.Accounts}); err != nil {
		return nil, err
	}
	cp.onRun("deploys", cp.deploys.Run)
	cp.onClose(cp.deploys.Close)
	cp.Projects.SetDeployments(cp.deploys)
	cp.Projects.AddDependent(cp.deploys.Dependent())
	// Storage buckets: projects' objects in the blob store, signed URLs and
	// an S3-compatible surface (controlplane/buckets/README.md).
	if cp.buckets, err = buckets.New(cfg.Buckets, buckets.Deps{DB: cp.DB, Blobs: cp.blobs,
		Sealer: cp.Sealer, Projects: cp.Projects, Plans: cp.Accounts, Jobs: cp.Jobs, Clock: clk, Audit: cp.Audit, Logger: log,
		Edge: cp.edgeSync}); err != nil {
		return nil, err
	}
	cp.Projects.AddDependent(cp.buckets)
	for _, c := range cp.buckets.Collectors() {
		if err := cfg.Registerer.Register(c); err != nil {
			return nil, fmt.Errorf("controlplane: metrics: %w", err)
		}
	}
	// Blob cleanup: blobs no repo commit, deployment or storage object names
	// any more, once a day, on one replica at a time
	// (controlplane/blobs/README.md).
	cp.Jobs.Register(jobBlobsGC, func(ctx context.Context, _ jobs.Job) error {
		st, err := blobs.Collect(ctx, cp.blobs, []blobs.RefSource{cp.repos, cp.deploys, cp.buckets}, clk.Now(), blobs.DefaultGrace)
		if err != nil {
			return err
		}
		log.Info("controlplane: blob cleanup", "listed", st.Listed, "referenced", st.Referenced, "kept_young", st.KeptYoung,
			"deleted", st.Deleted, "bytes_freed", st.BytesFreed, "missing", st.Missing)
		return nil
	}, jobs.KindOptions{MaxAttempts: 5, Backoff: []time.Duration{time.Minute, 10 * time.Minute, time.Hour}, Timeout: time.Hour})
	cp.Jobs.Every(jobBlobsGC, 24*time.Hour)
	if cp.shield, err = shield.New(shield.Config{}, shield.Deps{DB: cp.DB, Clock: clk, Audit: cp.Audit, Pub: cp.edgeSync, Sites: cp.deploys,
		Counts: cp.edgeSync, Projects: cp.Projects, Plans: cp.Accounts}); err != nil {
		return nil, err
	}

	// Databases, each a file on the node that created it; with several
	// replicas (NodeURL) the others forward its requests there.
	var cluster *placement.Forwarder
	if cfg.NodeURL != "" {
		if cluster, err = cp.newCluster(ctx, cfg); err != nil {
			return nil, err
		}
	}
	if cp.databases, err = databases.New(ctx, databases.Config{Dir: filepath.Join(cfg.DataDir, "databases"), PublicBaseURL: cfg.PublicURL}, databases.Deps{
		DB: cp.DB, Clock: clk, Audit: cp.Audit, Meter: cp.Meter, Projects: cp.Projects, Plans: cp.Accounts, Jobs: cp.Jobs, Logger: log,
		Cluster: cluster, Limiter: limiter,
	}); err != nil {
		return nil, err
	}
	cp.onRun("databases", cp.databases.Run)
	cp.onClose(cp.databases.Close)
	cp.Projects.AddDependent(cp.databases)
	cp.databases.SetStorageFunder(storageFunder{cp.Billing})

	// Payments: checkout, earnings, payouts, signed webhooks.
	if cp.payments, err = payments.New(cfg.Payments, payments.Deps{DB: cp.DB, Clock: clk, Audit: cp.Audit, Meter: cp.Meter,
		Sealer: cp.Sealer, Projects: cp.Projects, Plans: cp.Accounts, Email: cp.Accounts, Jobs: cp.Jobs,
		Mailer:     paymentsMailer{cp},
		HTTPClient: outboundClient(cfg.AllowPrivateNetworks, cfg.OwnAddrs),
		CheckURL:   func(raw string) error { return netguard.CheckURL(raw, cfg.AllowPrivateNetworks) }, Logger: log}); err != nil {
		return nil, err
	}
	cp.Projects.AddDependent(cp.payments)
	cp.Projects.AddCounter(cp.payments)

	// The AI gateway: chat, the compatible surface, embeddings; billed
	// through the ledger. Providers are the operator's own configuration
	// (--ai-config), so their addresses are not guarded like users' URLs.
	if cp.ai, err = ai.New(cfg.AI, ai.Deps{DB: cp.DB, Clock: clk, Audit: cp.Audit, Meter: cp.Meter,
		Ledger: ai.BillingLedger(cp.Billing), Plans: cp.Accounts, Email: cp.Accounts, Projects: cp.Projects,
		Logger: log, HTTPClient: &http.Client{}, Limiter: limiter}); err != nil {
		return nil, err
	}
	cp.onRun("ai", cp.ai.Run)
	cp.onClose(cp.ai.Close)

	// Vector collections: text is embedded through the AI gateway.
	if cp.vectors, err = vectors.New(ctx, vectors.Config{Dir: filepath.Join(cfg.DataDir, "vectors")}, vectors.Deps{
		DB: cp.DB, Clock: clk, Audit: cp.Audit, Meter: cp.Meter, Projects: cp.Projects, Plans: cp.Accounts,
		Embedder: vectorEmbedder{cp.ai}, Logger: log}); err != nil {
		return nil, err
	}
	cp.onRun("vectors", cp.vectors.Run)
	cp.onClose(cp.vectors.Close)
	cp.Projects.AddDependent(cp.vectors)
	cp.Projects.AddCounter(cp.vectors)

	// Memory stores: key-value stores of a project's apps, rows of the
	// metadata database; a job sweeps expired keys.
	if cp.memory, err = memory.New(cfg.Memory, memory.Deps{DB: cp.DB, Clock: clk, Meter: cp.Meter, Jobs: cp.Jobs,
		Projects: cp.Projects, Plans: cp.Accounts, Audit: cp.Audit, Logger: log}); err != nil {
		return nil, err
	}
	cp.onRun("memory", cp.memory.Run)
	cp.onClose(cp.memory.Close)
	cp.Projects.AddDependent(cp.memory)
	cp.Projects.AddCounter(cp.memory)
	for _, c := range cp.memory.Collectors() {
		if err := cfg.Registerer.Register(c); err != nil {
			return nil, fmt.Errorf("controlplane: metrics: %w", err)
		}
	}

	// Media: video upload to HLS with ffmpeg, live channels through nginx-rtmp.
	// With the bwrap sandbox, ffprobe and ffmpeg run in one of their own (no
	// network, only the job's directory), in a work directory beside the data
	// directory, which bwrap cannot reach into.
	jobBox, err := media.JobSandbox(box)
	if err != nil {
		return nil, err
	}
	mcfg := cfg.Media
	if jobBox != nil && mcfg.WorkDir == "" {
		data, err := filepath.Abs(cfg.DataDir)
		if err != nil {
			return nil, fmt.Errorf("controlplane: data directory: %w", err)
		}
		mcfg.WorkDir = data + ".media"
	}
	if cp.media, err = media.New(mcfg, media.Deps{DB: cp.DB, Clock: clk, Audit: cp.Audit, Meter: cp.Meter,
		Projects: cp.Projects, Plans: cp.Accounts, Sealer: cp.Sealer, Jobs: cp.Jobs, Logger: log, Sandbox: jobBox}); err != nil {
		return nil, err
	}
	cp.onRun("media", cp.media.Run)
	cp.onClose(cp.media.Close)
	cp.Projects.AddDependent(cp.media)
	cp.Projects.AddCounter(cp.media)

	// Agents: tool loops through the AI gateway whose tools call this
	// API's own routes with a key made for each run.
	if cp.agents, err = agents.New(agents.Config{PublicBaseURL: cfg.PublicURL}, agents.Deps{DB: cp.DB, Clock: clk, Audit: cp.Audit, Meter: cp.Meter,
		Sealer: cp.Sealer, Projects: cp.Projects, Plans: cp.Accounts, AI: cp.ai, Keys: cp.Accounts, Jobs: cp.Jobs, Limiter: limiter,
		Models: func(id string) bool { m, ok := cp.ai.Catalogue().Get(id); return ok && m.Kind == ai.KindChat },
		API:    http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { cp.handler.ServeHTTP(w, r) }),
		Logger: log}); err != nil {
		return nil, err
	}
	cp.onClose(cp.agents.Close)
	cp.Projects.AddDependent(cp.agents.Dependent())
	cp.Projects.AddCounter(cp.agents)

	// E-mail: the platform's own mail (verification tokens) and projects',
	// one queue on the jobs facility, through the SMTP relay or to
	// DATA/mail.
	if cp.mail, err = mail.New(cfg.Mail, mail.Deps{DB: cp.DB, Clock: clk, Sealer: cp.Sealer, Meter: cp.Meter, Jobs: cp.Jobs,
		Projects: cp.Projects, Plans: cp.Accounts, Audit: cp.Audit, Logger: log}); err != nil {
		return nil, err
	}
	cp.Accounts.SetMailer(cp.mail)
	cp.Accounts.SetTeardown(cp.workspaceTeardown())
	cp.Projects.AddDependent(cp.mail)
	for _, c := range cp.mail.Collectors() {
		if err := cfg.Registerer.Register(c); err != nil {
			return nil, fmt.Errorf("controlplane: metrics: %w", err)
		}
	}
	log.Info(cp.mail.Describe())
	// A misconfigured relay shows in the log at start, not at the first
	// message.
	cp.onRun("mail relay check", func(ctx context.Context) error {
		if err := cp.mail.CheckRelay(ctx); err != nil && ctx.Err() == nil {
			log.Warn("mail: the SMTP relay cannot be used; messages stay queued until it can", "err", err)
		}
		return nil
	})
	// Bounces and complaints come back over SMTP to the VERP addresses of
	// the messages sent (--mail-bounce-addr; off when empty).
	cp.onRun("mail bounce listener", cp.mail.RunBounces)

	// Custom domains: names projects answer at besides <slug>.<apps
	// domain>, verified by DNS (a periodic job re-checks them), served by
	// the edges once claimed, with certificates through their ACME or
	// local-CA path.
	// With an ACME CA, verified domains' certificates are ordered ahead
	// of their first visitor and renewed 30 days before expiry.
	var obtainer domains.CertObtainer
	if cfg.CertsACME != nil {
		obtainer = cp.certs
	}
	if cp.domains, err = domains.New(cfg.Domains, domains.Deps{DB: cp.DB, Clock: clk, Jobs: cp.Jobs, Projects: cp.Projects,
		Pub: cp.edgeSync, Certs: cp.certs, Obtainer: obtainer, Audit: cp.Audit, Logger: log}); err != nil {
		return nil, err
	}
	cp.Projects.AddDependent(cp.domains)
	for _, c := range cp.domains.Collectors() {
		if err := cfg.Registerer.Register(c); err != nil {
			return nil, fmt.Errorf("controlplane: metrics: %w", err)
		}
	}

	// Sign-in pools: end-user authentication for the projects' apps; their
	// messages go out as the project through the mail area.
	if cp.signin, err = signin.New(signin.Config{BaseURL: cfg.APIBaseURL}, signin.Deps{DB: cp.DB, Clock: clk, Audit: cp.Audit,
		Meter: cp.Meter, Sealer: cp.Sealer, Projects: cp.Projects, Plans: cp.Accounts, Limiter: limiter,
		Mailer: signinMailer{cp.mail}, Logger: log}); err != nil {
		return nil, err
	}
	cp.Projects.AddDependent(cp.signin)
	cp.Projects.AddCounter(cp.signin)
	for _, c := range cp.signin.Collectors() {
		if err := cfg.Registerer.Register(c); err != nil {
			return nil, fmt.Errorf("controlplane: metrics: %w", err)
		}
	}
	cp.Jobs.Register(jobSigninSweep, func(ctx context.Context, _ jobs.Job) error { return cp.signin.Sweep(ctx) },
		jobs.KindOptions{MaxAttempts: 3, Backoff: []time.Duration{time.Minute}})
	cp.Jobs.Every(jobSigninSweep, signin.DefaultSweepEvery)

	// The security overview asks each area for its facts (sign-in pools'
	// lockouts among them); checks of areas not built yet are unavailable.
	if cp.security, err = security.New(security.Config{}, security.Deps{Accounts: cp.Accounts, Variables: cp.Projects, Audit: cp.Audit,
		Usage: cp.Meter, Clock: clk, LockedOutUsers: cp.signin.LockedOutUsers, UnverifiedDomains: cp.domains.Unverified}); err != nil {
		return nil, err
	}

	// Usage report and attention list: every area's counts, sizes and
	// to-dos, asked through small interfaces.
	if cp.usage, err = usage.New(usage.Config{}, usage.Deps{DB: cp.DB, Clock: clk, Meter: cp.Meter, Projects: cp.Projects, Plans: cp.Accounts,
		Jobs:     cp.Jobs,
		Credits:  cp.Billing,
		Counters: []usage.Counter{cp.databases, cp.vectors, cp.memory, cp.media, cp.payments, cp.agents, cp.signin, cp.buckets},
		WorkspaceCounts: map[string]usage.CountFunc{"repos": func(ctx context.Context, ws string) (int, error) {
			rs, err := cp.repos.List(ctx, ws)
			return len(rs), err
		}},
		Sizers: map[string]usage.Sizer{usage.KindDatabases: usage.SizerFunc(cp.databaseSizes),
			usage.KindStorage: usage.SizerFunc(cp.storageSizes)},
		Workspaces: func(ctx context.Context) ([]string, error) { return accounts.WorkspaceIDs(ctx, cp.DB) },
		Sources: map[string]usage.Source{
			"projects": usage.ProjectsSource{Projects: cp.Projects},
			"deploys":  usage.DeploysSource{Projects: cp.Projects, Deployments: cp.deploys, Clock: clk},
			"email":    usage.EmailSource{Verifier: cp.Accounts},
			"credit":   usage.CreditSource{Credits: cp.Billing, Meter: cp.Meter, Clock: clk},
			"shield":   usage.ShieldSource{Shield: cp.shield, Changes: cp.Audit, Clock: clk},
			"refunds":  usage.RefundsSource{Projects: cp.Projects, Payments: cp.payments},
			"webhooks": usage.WebhooksSource{Webhooks: failingWebhooks{cp}},
			"mail":     cp.mail,
			"domains":  cp.domains,
			"signin":   cp.signin,
			"buckets":  cp.buckets,
			"memory":   cp.memory,
		},
		Logger: log}); err != nil {
		return nil, err
	}

	// The assistant connector: each tool call is served by this API itself
	// (cp.handler, set just below), with the caller's own key.
	if cp.mcp, err = mcp.New(mcp.Config{}, mcp.Deps{API: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { cp.handler.ServeHTTP(w, r) }),
		Authn: cp.Accounts, Logger: log}); err != nil {
		return nil, err
	}
	for _, c := range cp.mcp.Collectors() {
		if err := cfg.Registerer.Register(c); err != nil {
			return nil, fmt.Errorf("controlplane: metrics: %w", err)
		}
	}

	cp.routes = cp.routeTable()
	mux := http.NewServeMux()
	api.Mount(mux, cp.routes, api.MountOptions{Authn: cp.Accounts, Log: log, Observer: cp.metrics, Calls: cp.keyCalls})
	mux.Handle("/", dashboard.New()) // the web dashboard: every path the API does not answer
	cp.handler = s3Front(mux, cp.buckets, cfg.S3Host)
	// The first workspace comes last, once everything else is built, so
	// a start that fails on the way creates no owner key.
	if !cfg.DeferBootstrap {
		if _, err := cp.EnsureBootstrap(ctx); err != nil {
			return nil, err
		}
	}
	return cp, nil
}

// EnsureBootstrap creates the first workspace, its owner and the owner's
// key when the database holds no workspace (New does it unless
// Config.DeferBootstrap), and keeps what it made in cp.Bootstrap.
func (cp *ControlPlane) EnsureBootstrap(ctx context.Context) (accounts.Bootstrap, error) {
	b, err := cp.Accounts.EnsureBootstrap(ctx, cp.cfg.Bootstrap)
	if err != nil {
		return b, err
	}
	cp.Bootstrap = b
	return b, nil
}

// Close flushes counted calls and releases what the areas hold, in reverse
// order of construction, the database last. It may be called once.
func (cp *ControlPlane) Close() error {
	var errs []error
	for i := len(cp.closers) - 1; i >= 0; i-- {
		errs = append(errs, cp.closers[i]())
	}
	cp.closers = nil
	return errors.Join(errs...)
}
