package edge

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/valyala/fasthttp"
	"golang.org/x/crypto/acme/autocert"

	"github.com/svcplatform/platform/cache"
	"github.com/svcplatform/platform/controlplane/blobs"
	"github.com/svcplatform/platform/edge/internal/certcache"
	"github.com/svcplatform/platform/edge/internal/h2"
	"github.com/svcplatform/platform/edge/internal/listener"
	"github.com/svcplatform/platform/edge/localca"
	"github.com/svcplatform/platform/geodata"
	"github.com/svcplatform/platform/rules"
)

// Edge is one edge node: its listeners, the configuration in use, Shield,
// the cache and the sync with the control plane. Create it with New, bind
// its addresses with Listen, and serve with Run.
type Edge struct {
	cfg     Config
	log     *slog.Logger
	now     func() time.Time
	clock   *coarseClock // nil when Config.Now is set
	trusted proxies

	table   atomic.Pointer[table]
	ready   atomic.Bool
	geo     geodata.Locator
	geoDB   *geodata.DB
	cache   *cache.Cache
	counts  *rules.Counters
	metrics *metrics
	origins *originPool
	blobs   *blobStore
	http    *http.Client // to the control plane
	flights flightGroup
	hints   hintStore // 103 Early Hints learnt from origins

	refresher *refresher // background stale-while-revalidate refreshes

	throttle  *throttle
	verifySem chan struct{}

	tlsConfig *tls.Config
	ca        *localca.CA
	acme      *autocert.Manager
	// preload loads custom domains' certificates ahead of their first
	// handshake (domains.go); nil without shared certificates.
	preload   *certcache.Preloader
	altSvc    []byte
	httpsPort int

	httpLn, httpsLn net.Listener
	udp             net.PacketConn
	httpSrv         *fasthttp.Server
	httpsSrv        *fasthttp.Server
	h2              *h2.Server // HTTP/2 over TLS (edge/internal/h2, h2_server.go)
	mux             *listener.TLSMux
	upgraded        upgradeSet // spliced WebSocket connections
	access          *accessLog // nil when off
	h3              *http3.Server
	h3Local         net.Addr
	ctxPool         sync.Pool
	closeOnce       sync.Once
}

// New builds an edge from cfg (provisioned and validated). It opens the
// country database and the certificate authority but binds no address.
func New(cfg Config) (*Edge, error) {
	cfg.Provision()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	e := &Edge{cfg: cfg, log: cfg.Logger, now: cfg.Now, trusted: proxies(cfg.trusted), metrics: newMetrics()}
	if e.now == nil {
		e.clock = newCoarseClock()
		e.now = e.clock.Now
		e.cfg.Now = e.now
	}
	e.counts = rules.NewCounters()
	e.refresher = newRefresher()
	e.throttle = newThrottle(cfg.PasswordAttempts, cfg.PasswordRefill)
	e.verifySem = make(chan struct{}, max(2, runtime.GOMAXPROCS(0)))
	e.origins = newOriginPool(&e.cfg)
	e.http = &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 8, IdleConnTimeout: 90 * time.Second,
		ResponseHeaderTimeout: cfg.SyncWait + 30*time.Second, TLSHandshakeTimeout: 10 * time.Second}}
	local, err := blobs.Open(filepath.Join(cfg.DataDir, "edge", "blobs"))
	if err != nil {
		e.close()
		return nil, fmt.Errorf("edge: %w", err)
	}
	e.blobs = &blobStore{local: local, base: cfg.ControlPlane, token: cfg.Token, client: e.http, m: e.metrics}
	if cfg.BlobDir != "" {
		if e.blobs.shared, err = blobs.Open(cfg.BlobDir); err != nil {
			e.close()
			return nil, fmt.Errorf("edge: %w", err)
		}
	}
	if e.cache, err = cache.New(cfg.Cache, e.now); err != nil {
		e.close()
		return nil, err
	}
	if cfg.Locator != nil {
		e.geo = cfg.Locator
	} else {
		db, err := geodata.Open(geodata.Config{CountryDB: cfg.GeoIP, AllowMissing: true}, cfg.Logger)
		if err != nil {
			e.close()
			return nil, fmt.Errorf("edge: country database: %w", err)
		}
		e.geoDB, e.geo = db, db
	}
	if err := e.setupTLS(); err != nil {
		e.close()
		return nil, err
	}
	if cfg.AccessLog != "" {
		if e.access, err = openAccessLog(cfg.AccessLog, cfg.AccessLogWriter, e.metrics.accessDrops); err != nil {
			e.close()
			return nil, fmt.Errorf("edge: %w", err)
		}
	}
	return e, nil
}

// Register registers the edge's metrics (platform_edge_*) and the cache's
// (platform_cache_*) on r.
func (e *Edge) Register(r prometheus.Registerer) error {
	for _, c := range e.metrics.collectors {
		if err := r.Register(c); err != nil {
			return err
		}
	}
	return e.cache.Register(r)
}

// Ready reports whether a configuration is loaded (from the control plane
// or from the copy saved on disk).
func (e *Edge) Ready() bool { return e.ready.Load() }

// Version returns the version of the configuration in use, 0 before one is
// loaded.
func (e *Edge) Version() int64 {
	if t := e.table.Load(); t != nil {
		return t.version
	}
	return 0
}

// Listen binds the plain-HTTP and HTTPS addresses over TCP and the HTTPS
// port over UDP for HTTP/3. An address in use is an error naming it. With
// Config.ReusePort the sockets are bound with SO_REUSEPORT, so a new edge
// process can bind the same addresses while this one drains.
func (e *Edge) Listen() error {
	if e.httpsLn != nil {
		return nil
	}
	var err error
	var lc net.ListenConfig
	if e.cfg.ReusePort {
		lc.Control = reusePort
	}
	if e.cfg.HTTPAddr != "-" {
		if e.httpLn, err = lc.Listen(context.Background(), "tcp", e.cfg.HTTPAddr); err != nil {
			return fmt.Errorf("http address %s: %w", e.cfg.HTTPAddr, err)
		}
	}
	host, port, _ := net.SplitHostPort(e.cfg.HTTPSAddr)
	for attempt := 0; ; attempt++ {
		if e.httpsLn, err = lc.Listen(context.Background(), "tcp", e.cfg.HTTPSAddr); err != nil {
			e.closeListeners()
			return fmt.Errorf("https address %s: %w", e.cfg.HTTPSAddr, err)
		}
		udpAddr := net.JoinHostPort(host, strconv.Itoa(e.httpsLn.Addr().(*net.TCPAddr).Port))
		if e.udp, err = lc.ListenPacket(context.Background(), "udp", udpAddr); err == nil {
			break
		}
		e.httpsLn.Close()
		e.httpsLn = nil
		if port != "0" || attempt >= 10 {
			e.closeListeners()
			return fmt.Errorf("https address %s (udp, for HTTP/3): %w", udpAddr, err)
		}
	}
	e.httpsPort = e.httpsLn.Addr().(*net.TCPAddr).Port
	// An origin pointing back at the edge itself is refused like the
	// platform's other listeners (unless private networks are allowed).
	for _, ln := range []net.Listener{e.httpLn, e.httpsLn} {
		if ln != nil {
			if ap, err := netip.ParseAddrPort(ln.Addr().String()); err == nil {
				e.cfg.own = append(e.cfg.own, netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()))
			}
		}
	}
	e.altSvc = []byte(`h3=":` + strconv.Itoa(e.httpsPort) + `"; ma=86400`)
	e.h3Local = e.udp.LocalAddr()
	return nil
}

func (e *Edge) closeListeners() {
	for _, c := range []interface{ Close() error }{e.httpLn, e.httpsLn, e.udp} {
		if c != nil {
			c.Close()
		}
	}
}

// HTTPAddr returns the bound plain-HTTP address (nil before Listen).
func (e *Edge) HTTPAddr() net.Addr {
	if e.httpLn == nil {
		return nil
	}
	return e.httpLn.Addr()
}

// HTTPSAddr returns the bound HTTPS address (TCP; HTTP/3 is on the same
// port over UDP).
func (e *Edge) HTTPSAddr() net.Addr {
	if e.httpsLn == nil {
		return nil
	}
	return e.httpsLn.Addr()
}

// Run loads the saved configuration, starts the sync with the control
// plane and the count flusher, and serves on the listeners until ctx ends;
// then it shuts down gracefully and flushes the last counts.
func (e *Edge) Run(ctx context.Context) error {
	if err := e.Listen(); err != nil {
		return err
	}
	defer e.close()
	if err := e.loadPersisted(ctx); err != nil {
		e.log.Warn("edge: saved configuration unusable; waiting for the control plane", "err", err)
	}
	e.httpsSrv = e.newServer(e.serveHTTPS)
	if e.httpLn != nil {
		e.httpSrv = e.newServer(e.serveHTTP)
	}
	e.h3 = &http3.Server{
		Handler:        http.HandlerFunc(e.serveH3),
		TLSConfig:      http3.ConfigureTLSConfig(e.tlsConfig.Clone()),
		MaxHeaderBytes: e.cfg.MaxHeaderBytes,
		IdleTimeout:    e.cfg.IdleTimeout,
		QUICConfig: &quic.Config{MaxIdleTimeout: e.cfg.IdleTimeout, HandshakeIdleTimeout: e.cfg.ReadTimeout,
			MaxIncomingStreams: 256, MaxIncomingUniStreams: 16},
		Logger: e.log,
	}

	// tail_gc.go: collections spaced out on a small heap, up to the
	// memory a full cache would take.
	gcHeadroom := e.cfg.Cache.MaxBytes
	if gcHeadroom <= 0 {
		gcHeadroom = cache.DefaultMaxBytes
	}
	startGCTuner(gcHeadroom)

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { e.syncLoop(runCtx) })
	wg.Go(func() { e.flushLoop(runCtx) })

	if netpollOrderName() != netpollOrderEpoll {
		e.log.Info("edge: built without the runtime patch of make build: Go's poller serves each batch of ready connections newest first, a longer tail under load (edge/netpoll.go)")
	}

	e.h2 = e.newH2()
	e.mux = listener.NewTLSMux(listener.PerIP(e.httpsLn, e.cfg.MaxConnsPerIP, e.trusted.trusted, e.cfg.MaxProxyConns, e.metrics.connRefused),
		e.tlsConfig, e.cfg.ReadTimeout)
	// HTTP/2 is served on the mux's TLS connections, on each handshake's
	// goroutine; HTTP/1.1 by fasthttp from the mux's queue.
	e.mux.ServeH2 = func(c *tls.Conn) { e.h2.ServeConn(c) }
	errc := make(chan error, 3)
	go e.mux.Run()
	go func() { errc <- serveErr("https", e.httpsSrv.Serve(e.mux.H1())) }()
	if e.httpSrv != nil {
		go func() {
			errc <- serveErr("http", e.httpSrv.Serve(listener.DeadlineListener{Listener: listener.PerIP(e.httpLn, e.cfg.MaxConnsPerIP, e.trusted.trusted, e.cfg.MaxProxyConns, e.metrics.connRefused)}))
		}()
	}
	go func() { errc <- serveErr("http3", e.h3.Serve(e.udp)) }()
	attrs := []any{"https", e.httpsLn.Addr().String(), "http3", e.udp.LocalAddr().String(), "controlplane", e.cfg.ControlPlane}
	if e.httpLn != nil {
		attrs = append(attrs, "http", e.httpLn.Addr().String())
	}
	if e.ca != nil {
		attrs = append(attrs, "ca", e.ca.CertPath)
	}
	e.log.Info("edge: serving", attrs...)

	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	cancel()
	// Graceful stop: no new connections; requests in flight on every
	// protocol finish (within ShutdownTimeout), idle connections close,
	// HTTP/2 and HTTP/3 clients get GOAWAY; spliced WebSockets are closed.
	shutdown, stop := context.WithTimeout(context.Background(), e.cfg.ShutdownTimeout)
	defer stop()
	e.mux.Close()
	var sw sync.WaitGroup
	sw.Go(func() { e.h3.Shutdown(shutdown); e.h3.Close() })
	sw.Go(func() { e.h2.StartShutdown(); e.mux.WaitH2(shutdown) })
	if e.httpSrv != nil {
		sw.Go(func() { e.httpSrv.ShutdownWithContext(shutdown) })
	}
	sw.Go(func() { e.httpsSrv.ShutdownWithContext(shutdown) })
	sw.Wait()
	e.upgraded.closeAll()
	wg.Wait()
	e.refresher.wait() // each bounded by OriginTimeout
	if e.access != nil {
		if err := e.access.Close(); err != nil {
			e.log.Warn("edge: access log", "err", err)
		}
	}
	e.log.Info("edge: stopped")
	return err
}

func serveErr(what string, err error) error {
	if err == nil || errors.Is(err, http.ErrServerClosed) || errors.Is(err, net.ErrClosed) || errors.Is(err, quic.ErrServerClosed) {
		return nil
	}
	return fmt.Errorf("edge: %s listener: %w", what, err)
}

// Close releases what New and Listen opened, for an edge that will not Run
// (Run releases them itself when it returns).
func (e *Edge) Close() error {
	e.close()
	return nil
}

// close releases what New and Listen opened, once.
func (e *Edge) close() { e.closeOnce.Do(e.release) }

func (e *Edge) release() {
	e.closeListeners()
	if e.refresher != nil {
		e.refresher.wait()
	}
	if e.geoDB != nil {
		e.geoDB.Close()
	}
	if e.cache != nil {
		e.cache.Close()
	}
	if e.clock != nil {
		e.clock.Stop()
		e.clock = nil
	}
}

// maxBufferedBody is how much of a request body is read before the
// handler runs; the rest is streamed.
const maxBufferedBody = 64 << 10

// writeBufferSize holds the headers and a small page in one buffer, so a
// typical answer leaves in one write (one TLS record, one syscall) instead
// of fasthttp's default 4 KiB buffer flushing twice. Measured with
// `make bench` workload 1 (bench/RESULTS.md): 0.81-0.92x nginx before,
// 1.09-1.12x after. It costs up to 12 KiB more per connection while an
// answer is being written.
const writeBufferSize = 16 << 10

// newServer returns a fasthttp server with the edge's timeouts and limits.
func (e *Edge) newServer(h fasthttp.RequestHandler) *fasthttp.Server {
	return &fasthttp.Server{
		Handler:                      h,
		Name:                         "platform",
		ReadTimeout:                  e.cfg.ReadTimeout,
		WriteTimeout:                 e.cfg.WriteTimeout,
		IdleTimeout:                  e.cfg.IdleTimeout,
		ReadBufferSize:               e.cfg.MaxHeaderBytes,
		WriteBufferSize:              writeBufferSize,
		Concurrency:                  e.cfg.Concurrency,
		MaxRequestBodySize:           maxBufferedBody,
		StreamRequestBody:            true,
		DisablePreParseMultipartForm: true,
		HeaderReceived:               e.headerReceived,
		ErrorHandler:                 requestError,
		CloseOnShutdown:              true,
		TCPKeepalive:                 true,
		SecureErrorLogMessage:        true,
		NoDefaultContentType:         true,
		Logger:                       fastLogger{e.log},
	}
}

// headerReceived gives requests with a body the longer body deadline (the
// header itself had ReadTimeout). A declared body past MaxBodyBytes reaches
// the handler after its first byte, to be refused with 413 at once.
func (e *Edge) headerReceived(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
	cl := h.ContentLength()
	switch {
	case cl > 0 && int64(cl) > e.cfg.MaxBodyBytes:
		return fasthttp.RequestConfig{MaxRequestBodySize: 1}
	case cl != 0 && !h.IsGet() && !h.IsHead():
		return fasthttp.RequestConfig{ReadTimeout: e.cfg.BodyTimeout}
	}
	return fasthttp.RequestConfig{}
}

// fastLogger routes fasthttp's messages to slog at debug level: they are
// about misbehaving clients (bad requests, timeouts), not the edge.
type fastLogger struct{ l *slog.Logger }

func (f fastLogger) Printf(format string, args ...any) {
	if f.l.Enabled(context.Background(), slog.LevelDebug) {
		f.l.Debug("edge: fasthttp: " + fmt.Sprintf(format, args...))
	}
}
