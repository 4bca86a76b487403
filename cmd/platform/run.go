package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/svcplatform/platform/controlplane"
	"github.com/svcplatform/platform/controlplane/accounts"
	"github.com/svcplatform/platform/controlplane/plans"
)

// run starts the processes of cmd and blocks until ctx ends.
func run(ctx context.Context, cmd string, o options, log *slog.Logger) error {
	if err := checkDataDir(o.data); err != nil {
		return err
	}
	plan, err := plans.Parse(o.plan)
	if err != nil {
		return err
	}
	// Listen first so a port in use fails before anything is created.
	apiLn, err := listen("api", o.apiAddr)
	if err != nil {
		return err
	}
	adminLn, err := listen("admin", o.adminAddr)
	if err != nil {
		apiLn.Close()
		return err
	}
	_, httpsPort, _ := net.SplitHostPort(o.httpsAddr)
	port, _ := strconv.Atoi(httpsPort)
	cp, err := controlplane.New(ctx, controlplane.Config{
		DataDir: o.data, AppsDomain: o.appsDomain, AppsPort: port, Logger: log,
		Bootstrap: accounts.BootstrapConfig{WorkspaceName: "My workspace", OwnerEmail: o.ownerEmail, Plan: plan, Key: o.bootstrapKey},
	})
	if err != nil {
		apiLn.Close()
		adminLn.Close()
		return err
	}
	defer cp.Close()
	printBootstrap(cp.Bootstrap, apiLn.Addr().String())

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	var ready atomic.Bool

	apiSrv := &http.Server{Handler: cp.Handler(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 5 * time.Minute,
		IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	adminSrv := &http.Server{Handler: adminMux(reg, &ready), ReadHeaderTimeout: 5 * time.Second}

	errc := make(chan error, 2)
	go func() { errc <- serveOn(apiSrv, apiLn) }()
	go func() { errc <- serveOn(adminSrv, adminLn) }()
	ready.Store(true)
	log.Info("platform started", "command", cmd, "api", apiLn.Addr().String(), "admin", adminLn.Addr().String(), "data", o.data)

	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	ready.Store(false)
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	apiSrv.Shutdown(shutdown)
	adminSrv.Shutdown(shutdown)
	log.Info("platform stopped")
	return err
}

func serveOn(s *http.Server, ln net.Listener) error {
	if err := s.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func listen(what, addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s address %s: %w", what, addr, err)
	}
	return ln, nil
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

func adminMux(reg *prometheus.Registry, ready *atomic.Bool) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if !ready.Load() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ready\n"))
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	return mux
}

func printBootstrap(b accounts.Bootstrap, apiAddr string) {
	base := "http://" + apiAddr
	if !b.Created {
		fmt.Printf("platform: API at %s (existing data directory; keys were printed on first start)\n", base)
		return
	}
	fmt.Printf("platform: created workspace %q (%s) on plan %s, owner %s\n", b.Workspace.Name, b.Workspace.ID, b.Workspace.Plan, b.OwnerEmail)
	if b.Key != "" {
		fmt.Printf("platform: owner API key (shown once, store it now): %s\n", b.Key)
	} else {
		fmt.Printf("platform: owner API key: the one given with --bootstrap-key\n")
	}
	fmt.Printf("platform: dashboard password setup token (once, 7 days): %s\n", b.SetupToken)
	fmt.Printf("          curl -X POST %s/api/members/accept -d '{\"token\":\"%s\",\"password\":\"<choose one>\"}'\n", base, b.SetupToken)
	fmt.Printf("platform: API at %s   try: curl -H 'Authorization: Bearer <key>' %s/api/workspace\n", base, base)
}
