package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/svcplatform/platform/cache"
	"github.com/svcplatform/platform/controlplane"
	"github.com/svcplatform/platform/controlplane/accounts"
	"github.com/svcplatform/platform/controlplane/ai"
	"github.com/svcplatform/platform/controlplane/blobs"
	"github.com/svcplatform/platform/controlplane/buckets"
	"github.com/svcplatform/platform/controlplane/certs"
	"github.com/svcplatform/platform/controlplane/domains"
	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
	"github.com/svcplatform/platform/controlplane/mail"
	"github.com/svcplatform/platform/controlplane/media"
	"github.com/svcplatform/platform/controlplane/payments"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/edge"
	"github.com/svcplatform/platform/edge/localca"
)

// run starts the processes of cmd and blocks until ctx ends; what users
// are told (keys, addresses) goes to out.
//
// A start checks its flags, then binds every address it listens on, and
// only then creates anything in the data directory; the first workspace
// and its owner key come last, once every listener is up, and are printed
// at once. So a start that fails (a port in use, say) leaves no key that
// was never shown, and the next start prints it.
func run(ctx context.Context, cmd string, o options, log *slog.Logger, out io.Writer) error {
	if cmd == "edge" {
		return runEdge(ctx, o, log, out)
	}
	plan, err := plans.Parse(o.plan)
	if err != nil {
		return err
	}
	signUp, err := accounts.ParseSignUpPolicy(o.signup)
	if err != nil {
		return err
	}
	defaultPlan, err := plans.Parse(o.defaultPlan)
	if err != nil {
		return fmt.Errorf("--default-plan: %w", err)
	}
	boot := accounts.BootstrapConfig{WorkspaceName: "My workspace", OwnerEmail: o.ownerEmail, Plan: plan, Key: o.bootstrapKey}
	if err := boot.Validate(); err != nil {
		return err
	}
	rtCfg, err := runtimeConfig(o)
	if err != nil {
		return err
	}
	if cmd == "serve" {
		if err := checkEdgeFlags(o); err != nil {
			return err
		}
	}
	public, err := publicURL(o)
	if err != nil {
		return err
	}
	var aiCfg ai.Config
	if o.aiConfig != "" {
		if aiCfg, err = ai.LoadConfig(o.aiConfig); err != nil {
			return err
		}
	}
	// Listen first so a port in use fails before anything is created.
	res, err := reserve(cmd, o)
	if err != nil {
		return err
	}
	defer res.close()
	apiLn, adminLn := res.api, res.admin
	// Live ingest left off because its default port is busy.
	if res.isSkipped("rtmp-addr") {
		o.rtmpAddr = ""
	}
	if res.isSkipped("rtmps-addr") {
		o.rtmpsAddr = ""
	}
	apiURL := "http://" + apiLn.Addr().String()
	if public == "" {
		public = apiURL
	}
	if err := checkDataDir(o.data); err != nil {
		return err
	}
	_, httpsPort, _ := net.SplitHostPort(o.httpsAddr)
	port, _ := strconv.Atoi(httpsPort)
	// The admin listener's registry carries the control plane's metrics
	// (platform_api_*, platform_store_*) next to the process and edge ones.
	reg := newRegistry()
	mediaCfg, err := mediaConfig(o)
	if err != nil {
		return err
	}
	if mediaCfg.Live != nil {
		// nginx on this machine calls back to the API's own address.
		mediaCfg.Live.NotifyBaseURL = apiURL
	}
	playbackHost := mediaHostOf(cmd, o)
	if playbackHost != "" {
		// Playback goes through the edges' cache on its own host.
		mediaCfg.PlaybackBaseURL = "https://" + playbackHost + portSuffix(httpsPort)
	}
	storageHost := storageHostOf(cmd, o)
	bucketsCfg := buckets.Config{}
	if storageHost != "" {
		// Public objects and signed URLs go through the edges' cache on
		// their own host.
		bucketsCfg.PublicBaseURL = "https://" + storageHost + portSuffix(httpsPort)
	}
	// Live ingest and the bounce listener bind their own addresses when
	// the control plane runs.
	res.release(groupLive)
	res.release(groupMail)
	cp, err := controlplane.New(ctx, controlplane.Config{
		DataDir: o.data, AppsDomain: o.appsDomain, AppsPort: port, Logger: log, Registerer: reg,
		Bootstrap:            boot,
		Accounts:             accounts.Config{SignUp: signUp, DefaultPlan: defaultPlan},
		DeferBootstrap:       true,
		AllowPrivateNetworks: o.allowPrivate,
		AI:                   aiCfg,
		OwnAddrs:             ownAddrs(apiLn.Addr(), adminLn.Addr()),
		APIBaseURL:           public, // every link handed out starts with it
		PublicURL:            strings.TrimRight(o.publicURL, "/"),
		Payments:             payments.Config{Processor: o.payProcessor, StripeKey: o.stripeKey, StripeBaseURL: o.stripeBaseURL},
		Mail:                 mail.Config{SMTPURL: o.smtpURL, From: o.mailFrom, DNSResolver: o.dnsResolver, BounceDomain: o.mailBounceDom, BounceListen: o.mailBounceAddr},
		Domains:              domains.Config{DNSResolver: o.dnsResolver, EdgeAddresses: splitList(o.edgeAddrs), ACME: o.acmeEmail != ""},
		CertsACME:            certsACME(o),
		S3Host:               o.s3Host,
		Media:                mediaCfg,
		Buckets:              bucketsCfg,
		Runtime:              rtCfg,
		Blobs:                o.blobs,
		Store:                o.store,
		SealKeyFile:          o.sealKeyFile,
		NodeID:               o.nodeID,
		NodeURL:              o.nodeURL,
	})
	if err != nil {
		return err
	}
	defer cp.Close()
	// The control plane's loops (job workers, flushers, the origin prober,
	// the runtime's reaper) run until the servers have shut down, then stop
	// before Close; one that fails stops the platform.
	errc := make(chan error, 3)
	loopsCtx, stopLoops := context.WithCancel(context.WithoutCancel(ctx))
	loopsDone := make(chan struct{})
	go func() {
		defer close(loopsDone)
		if err := cp.Run(loopsCtx); err != nil {
			errc <- err
		}
	}()
	defer func() { stopLoops(); <-loopsDone }()
	if playbackHost != "" {
		// Edges answer the playback host from their cache, forwarding
		// misses to this API's playback route.
		if err := cp.EdgeSync().SetMedia(ctx, snapshot.Media{Host: playbackHost, Origin: "http://" + apiLn.Addr().String()}); err != nil {
			return err
		}
	}
	if storageHost != "" {
		// Edges answer the storage host: public buckets' objects from
		// their cache, signed URLs from this API's /storage route.
		if err := cp.EdgeSync().SetStorage(ctx, storageHost, "http://"+apiLn.Addr().String()); err != nil {
			return err
		}
	}

	// The API serves first: the in-process edge asks it for the
	// installation's certificates and configuration as it starts. Other
	// requests wait for the first workspace.
	watch := newEdgeWatch(cp.Handler())
	gate := newStartGate(watch)
	apiSrv := &http.Server{Handler: gate, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 5 * time.Minute,
		IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	go func() { errc <- serveOn(apiSrv, apiLn) }()

	ready := func() bool { return true }
	var ed *edge.Edge
	if cmd == "serve" {
		// The in-process edge syncs exactly as a remote one: long-poll
		// against this process's API listener with its own edge token.
		ed, err = serveEdge(ctx, cp, o, log, "http://"+apiLn.Addr().String(), func() { res.release(groupEdge) })
		if err == nil {
			if err = ed.Register(reg); err != nil {
				ed.Close()
			}
		}
		if err != nil {
			apiSrv.Close()
			return err
		}
		ready = ed.Ready
	}
	// Every listener is up: now the first workspace, printed at once.
	b, err := cp.EnsureBootstrap(ctx)
	if err != nil {
		apiSrv.Close()
		if ed != nil {
			ed.Close()
		}
		return err
	}
	gate.open()
	printBootstrap(out, b, apiLn.Addr().String(), o.publicURL != "", public)
	firstStartNotes(out, log, o, b)
	ingest, unavailable := cp.Media().LiveIngest()
	liveNotes(out, log, cmd, o, res.skipped, ingest, unavailable)
	if ed != nil {
		printEdge(out, ed, o)
	}

	src := &statusSource{cmd: cmd, started: time.Now(), publicURL: public, dataDir: o.data, db: cp.DB, watch: watch,
		version: cp.EdgeSync().Version, parts: serveParts(cmd, o, apiLn.Addr(), adminLn.Addr(), ed, ingest, unavailable, res.skipped)}
	adminSrv := newAdminServer(reg, ready, src.status)
	go func() { errc <- serveOn(adminSrv, adminLn) }()
	log.Info("platform started", "command", cmd, "api", apiLn.Addr().String(), "admin", adminLn.Addr().String(), "data", o.data)
	err = serveUntil(ctx, ed, errc, apiSrv, adminSrv)
	log.Info("platform stopped")
	return err
}

// checkEdgeFlags checks the edge's flags before anything is bound or
// created (edge.New checks them again).
func checkEdgeFlags(o options) error {
	if _, err := cacheBytes(o); err != nil {
		return err
	}
	if o.trustedProxies != "" {
		if _, err := edge.ParseTrustedProxies([]string{o.trustedProxies}); err != nil {
			return err
		}
	}
	return nil
}

// serveUntil runs ed (when not nil) until ctx ends, a server fails (errc)
// or the edge fails. The edge stops first, so its last Shield counts reach
// the API while it is still up; then the servers shut down gracefully.
func serveUntil(ctx context.Context, ed *edge.Edge, errc <-chan error, servers ...*http.Server) error {
	edgeCtx, stopEdge := context.WithCancel(context.Background())
	defer stopEdge()
	edgeDone := make(chan error, 1)
	if ed != nil {
		go func() { edgeDone <- ed.Run(edgeCtx) }()
	}
	var err error
	stopped := false
	select {
	case <-ctx.Done():
	case err = <-errc:
	case err = <-edgeDone:
		stopped = true
	}
	stopEdge()
	if ed != nil && !stopped {
		if eerr := <-edgeDone; err == nil {
			err = eerr
		}
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, s := range servers {
		s.Shutdown(shutdown)
	}
	return err
}

// serveEdge builds the edge of `platform serve`: a fresh local edge token
// (the previous start's is revoked), the control plane's blob directory
// read directly, and the edge's listeners bound, right after release lets
// go of the addresses reserved for them.
func serveEdge(ctx context.Context, cp *controlplane.ControlPlane, o options, log *slog.Logger, apiURL string, release func()) (*edge.Edge, error) {
	token, err := cp.EdgeSync().EnsureLocalToken(ctx)
	if err != nil {
		return nil, err
	}
	cfg, err := edgeConfig(o, log, apiURL, token)
	if err != nil {
		return nil, err
	}
	// The in-process edge reads deployed files straight from the blob
	// directory; on S3 it fetches and keeps its own copies, as remote edges do.
	if st, ok := cp.Blobs().(*blobs.Store); ok {
		cfg.BlobDir = st.Dir()
	}
	ed, err := edge.New(cfg)
	if err != nil {
		return nil, err
	}
	release()
	if err := ed.Listen(); err != nil {
		ed.Close()
		return nil, err
	}
	return ed, nil
}

// runEdge runs `platform edge`: one edge node configured from the control
// plane at --controlplane with --edge-token.
func runEdge(ctx context.Context, o options, log *slog.Logger, out io.Writer) error {
	switch {
	case o.controlplane == "":
		return fmt.Errorf("--controlplane is required: the control plane's URL, e.g. http://10.0.0.1:7070")
	case o.edgeToken == "":
		return fmt.Errorf("--edge-token is required: an edge token (svc_edge_...) minted on the control plane")
	}
	if err := checkEdgeFlags(o); err != nil {
		return err
	}
	res, err := reserve("edge", o)
	if err != nil {
		return err
	}
	defer res.close()
	if err := checkDataDir(o.data); err != nil {
		return err
	}
	cfg, err := edgeConfig(o, log, o.controlplane, o.edgeToken)
	if err != nil {
		return err
	}
	ed, err := edge.New(cfg)
	if err != nil {
		return err
	}
	res.release(groupEdge)
	if err := ed.Listen(); err != nil {
		ed.Close()
		return err
	}
	reg := newRegistry()
	if err := ed.Register(reg); err != nil {
		ed.Close()
		return err
	}
	printEdge(out, ed, o)
	src := &statusSource{cmd: "edge", started: time.Now(), dataDir: o.data, version: ed.Version,
		parts: []statusPart{{Name: "edge", Addr: ed.HTTPSAddr().String(), Note: "configured from " + o.controlplane}, {Name: "admin", Addr: res.admin.Addr().String()}}}
	adminSrv := newAdminServer(reg, ed.Ready, src.status)
	errc := make(chan error, 1)
	go func() { errc <- serveOn(adminSrv, res.admin) }()
	log.Info("platform started", "command", "edge", "admin", res.admin.Addr().String(), "controlplane", o.controlplane, "data", o.data)
	err = serveUntil(ctx, ed, errc, adminSrv)
	log.Info("platform stopped")
	return err
}

// cacheBytes reads --cache-bytes.
func cacheBytes(o options) (int64, error) {
	n, err := strconv.ParseInt(o.cacheBytes, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("--cache-bytes %q must be a positive number of bytes", o.cacheBytes)
	}
	return n, nil
}

// edgeConfig maps the command line to the edge's configuration.
func edgeConfig(o options, log *slog.Logger, controlPlane, token string) (edge.Config, error) {
	cacheBytes, err := cacheBytes(o)
	if err != nil {
		return edge.Config{}, err
	}
	cfg := edge.Config{
		HTTPAddr: o.httpAddr, HTTPSAddr: o.httpsAddr, AppsDomain: o.appsDomain, DataDir: o.data,
		ControlPlane: controlPlane, Token: token, GeoIP: o.geoip, Logger: log.With("component", "edge"),
		Cache:                cache.Config{MaxBytes: cacheBytes},
		AllowPrivateNetworks: o.allowPrivate,
		AccessLog:            o.accessLog,
		ReusePort:            o.reusePort,
		OwnListeners:         []string{o.apiAddr, o.adminAddr},
	}
	if o.trustedProxies != "" {
		cfg.TrustedProxies = []string{o.trustedProxies}
	}
	if o.acmeEmail != "" {
		cfg.ACME = &edge.ACMEConfig{Email: o.acmeEmail, DirectoryURL: o.acmeDirectory}
	}
	return cfg, nil
}

// printEdge tells the user where the edge answers and which CA to trust.
func printEdge(out io.Writer, ed *edge.Edge, o options) {
	_, port, _ := net.SplitHostPort(ed.HTTPSAddr().String())
	suffix := ""
	if port != "443" {
		suffix = ":" + port
	}
	fmt.Fprintf(out, "platform: edge at https://<slug>.%s%s (HTTP/3 on the same port over UDP)\n", o.appsDomain, suffix)
	if p := ed.CACertPath(); p != "" {
		fmt.Fprintf(out, "platform: local CA certificate: %s\n", p)
		fmt.Fprintf(out, "          trust it to open the sites without warnings, e.g. curl --cacert %s https://<slug>.%s%s/\n", p, o.appsDomain, suffix)
	}
}

func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

func newAdminServer(reg *prometheus.Registry, ready func() bool, status func(context.Context) (status, error)) *http.Server {
	return &http.Server{Handler: adminMux(reg, ready, status), ReadHeaderTimeout: 5 * time.Second}
}

func serveOn(s *http.Server, ln net.Listener) error {
	if err := s.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// checkDataDir creates the data directory and proves it is writable.
func checkDataDir(dir string) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("data directory %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, ".probe-*")
	if err != nil {
		return fmt.Errorf("data directory %s is not writable: %w", dir, err)
	}
	f.Close()
	return os.Remove(f.Name())
}

// adminMux serves /healthz (alive), /readyz (configuration loaded),
// /status (what `platform status` prints, as JSON), /metrics, and Go's profiles under /debug/pprof/ (CPU, heap, goroutines,
// and /debug/pprof/trace for a runtime/trace of the running process), as
// Caddy's admin endpoint does. The admin listener is on loopback by default
// (--admin-addr); the profiles are on it and nowhere else.
func adminMux(reg *prometheus.Registry, ready func() bool, status func(context.Context) (status, error)) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /status", statusHandler(status))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if !ready() {
			http.Error(w, "not ready: no configuration loaded yet", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ready\n"))
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("GET /debug/pprof/", pprof.Index) // and the named profiles: heap, goroutine, allocs, block, mutex, ...
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("POST /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	return mux
}

// printBootstrap prints where the dashboard and API answer (the public
// URL when one is set) and, on a first start, the workspace and its key.
func printBootstrap(out io.Writer, b accounts.Bootstrap, apiAddr string, hasPublic bool, public string) {
	base := "http://" + browserAddr(apiAddr)
	if hasPublic {
		base = public
		fmt.Fprintf(out, "platform: public URL %s (--public-url): links in checkouts, uploads and storage start with it; API listening on %s\n", public, apiAddr)
	} else {
		fmt.Fprintf(out, "platform: public URL %s (the API address): links in checkouts, uploads and storage start with it; behind a proxy or the edge set --public-url https://...\n", public)
	}
	if !b.Created {
		fmt.Fprintf(out, "platform: dashboard at %s/ (sign in), API at %s (existing data directory: the owner key was printed on its first start; lost? platform owner-key reset)\n", base, base)
		return
	}
	fmt.Fprintf(out, "platform: created workspace %q (%s) on plan %s, owner %s\n", b.Workspace.Name, b.Workspace.ID, b.Workspace.Plan, b.OwnerEmail)
	if b.Key != "" {
		fmt.Fprintf(out, "platform: owner API key (shown once, store it now): %s\n", b.Key)
	} else {
		fmt.Fprintf(out, "platform: owner API key: the one given with --bootstrap-key\n")
	}
	fmt.Fprintf(out, "platform: set the owner's dashboard password (this link works once, for 7 days):\n")
	fmt.Fprintf(out, "          %s/setup?token=%s\n", base, b.SetupToken)
	fmt.Fprintf(out, "          (or: curl -X POST %s/api/members/accept -d '{\"token\":\"%s\",\"password\":\"<choose one>\"}')\n", base, b.SetupToken)
	fmt.Fprintf(out, "platform: dashboard at %s/   API at %s/api/   try: curl -H 'Authorization: Bearer <key>' %s/api/workspace\n", base, base, base)
}

// browserAddr is apiAddr as a browser should open it: an address listening
// on every interface is opened on loopback, where browsers keep the
// session's Secure cookie over plain HTTP.
func browserAddr(apiAddr string) string {
	host, port, err := net.SplitHostPort(apiAddr)
	if err != nil {
		return apiAddr
	}
	if ip, err := netip.ParseAddr(host); host == "" || (err == nil && ip.IsUnspecified()) {
		return net.JoinHostPort("127.0.0.1", port)
	}
	return apiAddr
}

// ownAddrs are the platform's own listeners as address-port pairs, which
// outgoing requests to user-chosen URLs must never reach.
func ownAddrs(addrs ...net.Addr) []netip.AddrPort {
	var out []netip.AddrPort
	for _, a := range addrs {
		if ap, err := netip.ParseAddrPort(a.String()); err == nil {
			out = append(out, ap)
		}
	}
	return out
}

// mediaConfig turns on live channels when an RTMP address is set (nginx
// with libnginx-mod-rtmp; without them live channels answer 503).
// RTMPS is terminated by the platform with a certificate from the local CA
// (the one the edge serves with) for the apps domain.
func mediaConfig(o options) (media.Config, error) {
	var c media.Config
	if o.rtmpAddr == "" {
		return c, nil
	}
	c.Live = &media.LiveConfig{Listen: o.rtmpAddr}
	if o.rtmpsAddr == "" || o.acmeEmail != "" {
		return c, nil
	}
	ca, err := localca.Open(filepath.Join(o.data, "ca"), o.appsDomain)
	if err != nil {
		return c, err
	}
	_, port, err := net.SplitHostPort(o.rtmpsAddr)
	if err != nil {
		return c, fmt.Errorf("--rtmps-addr %q: %w", o.rtmpsAddr, err)
	}
	c.Live.TLSListen = o.rtmpsAddr
	c.Live.TLS = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: ca.GetCertificate}
	c.Live.IngestURL = "rtmps://" + net.JoinHostPort(o.appsDomain, port) + "/live"
	return c, nil
}

// runtimeConfig reads the flags of the runtime that runs deployed code.
func runtimeConfig(o options) (controlplane.RuntimeConfig, error) {
	switch o.appSandbox {
	case "", "bwrap", "none":
	default:
		return controlplane.RuntimeConfig{}, fmt.Errorf("--app-sandbox %q: want bwrap, none or empty", o.appSandbox)
	}
	idle, err := time.ParseDuration(o.appIdle)
	if err != nil || idle < 0 {
		return controlplane.RuntimeConfig{}, fmt.Errorf("--app-idle-timeout %q: want a duration such as 15m (0s: never)", o.appIdle)
	}
	if idle == 0 {
		idle = -1 // the runtime's "never"
	}
	cpu, err := strconv.Atoi(o.appCPUMillis)
	if err != nil || cpu < 10 {
		return controlplane.RuntimeConfig{}, fmt.Errorf("--app-cpu-millis %q: want thousandths of a core, at least 10", o.appCPUMillis)
	}
	mem, err := strconv.ParseInt(o.appMemory, 10, 64)
	if err != nil || mem < 16<<20 {
		return controlplane.RuntimeConfig{}, fmt.Errorf("--app-memory-bytes %q: want bytes, at least 16 MiB (16777216)", o.appMemory)
	}
	for _, m := range []struct{ flag, v string }{{"--app-cgroups", o.appCgroups}, {"--app-outbound", o.appOutbound}} {
		switch m.v {
		case "", "auto", "on", "off":
		default:
			return controlplane.RuntimeConfig{}, fmt.Errorf("%s %q: want auto, on or off", m.flag, m.v)
		}
	}
	return controlplane.RuntimeConfig{Sandbox: o.appSandbox, Dir: o.runtimeDir, APIURL: "http://" + browserAddr(o.apiAddr), IdleTimeout: idle, CPUMillis: cpu, MemoryBytes: mem,
		Cgroups: o.appCgroups, Outbound: o.appOutbound, AllowPrivateNetworks: o.allowPrivate}, nil
}

// mediaHostOf is the edges' video playback host: --media-host, else for
// serve media.<apps-domain>; empty (playback from the API address) for "-"
// and for a control plane whose edges run elsewhere without --media-host.
func mediaHostOf(cmd string, o options) string {
	switch {
	case o.mediaHost == "-" || cmd == "edge":
		return ""
	case o.mediaHost != "":
		return o.mediaHost
	case cmd == "serve":
		return "media." + o.appsDomain
	}
	return ""
}

// storageHostOf is the edges' storage host: --storage-host, else for
// serve storage.<apps-domain>; empty (objects served from the API address)
// for "-" and for a control plane whose edges run elsewhere without
// --storage-host.
func storageHostOf(cmd string, o options) string {
	switch {
	case o.storageHost == "-" || cmd == "edge":
		return ""
	case o.storageHost != "":
		return o.storageHost
	case cmd == "serve":
		return "storage." + o.appsDomain
	}
	return ""
}

// portSuffix is ":port" for a URL, empty for HTTPS's default port.
func portSuffix(port string) string {
	if port == "443" || port == "" {
		return ""
	}
	return ":" + port
}

// splitList reads a comma-separated flag value: items trimmed, empty ones
// dropped.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// certsACME is the ACME CA the control plane orders custom domains'
// certificates from (the edges' --acme-email and --acme-directory); nil
// without ACME.
func certsACME(o options) *certs.ACMEConfig {
	if o.acmeEmail == "" {
		return nil
	}
	return &certs.ACMEConfig{Email: o.acmeEmail, DirectoryURL: o.acmeDirectory}
}
