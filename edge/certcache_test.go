package edge

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"golang.org/x/crypto/acme/autocert"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/certs"
	"github.com/svcplatform/platform/controlplane/certs/certwire"
	"github.com/svcplatform/platform/controlplane/cptest"
	"github.com/svcplatform/platform/edge/internal/certcache"
	"github.com/svcplatform/platform/edge/localca"
)

// certsEnv is a real control plane (cptest) fronted by a server that also
// mounts the certificate endpoints (controlplane/certs on the control
// plane's own store, sealer and edge snapshot), as the assembled control
// plane does. down makes the front answer 503 to the certificate endpoints
// (an outage); calls counts the host-certificate requests.
type certsEnv struct {
	env   *cptest.Env
	svc   *certs.Service
	front *httptest.Server
	calls atomic.Int64
	down  atomic.Bool
}

func newCertsEnv(t *testing.T) *certsEnv {
	t.Helper()
	env := cptest.New(t)
	svc, err := certs.New(context.Background(), certs.Config{}, certs.Deps{DB: env.CP.DB, Sealer: env.CP.Sealer, Logger: quiet, Sites: env.CP.EdgeSync()})
	if err != nil {
		t.Fatal(err)
	}
	ce := &certsEnv{env: env, svc: svc}
	mux := http.NewServeMux()
	api.Mount(mux, certs.Routes(certs.Handlers{S: svc}), api.MountOptions{Log: quiet})
	cp := env.CP.Handler()
	front := http.NewServeMux()
	front.Handle("/api/edge/certs/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == certwire.LocalPath {
			ce.calls.Add(1)
		}
		if ce.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		mux.ServeHTTP(w, r)
	}))
	front.Handle("/", cp)
	ce.front = httptest.NewServer(front)
	t.Cleanup(ce.front.Close)
	return ce
}

// edge starts an edge pulling from the front server, with its own data
// directory and token.
func (ce *certsEnv) edge(t *testing.T, name string, opts ...harnessOpt) *harness {
	t.Helper()
	tok, _, err := ce.env.CP.EdgeSync().MintToken(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{
		HTTPAddr: "127.0.0.1:0", HTTPSAddr: "127.0.0.1:0", AppsDomain: "apps.test", DataDir: t.TempDir(),
		ControlPlane: ce.front.URL, Token: tok, Logger: quiet, FlushInterval: 100 * time.Millisecond, SyncWait: 10 * time.Second,
		Locator: fixedLocator{'U', 'S'}, AllowPrivateNetworks: true,
	}
	for _, o := range opts {
		o(&cfg)
	}
	h := &harness{t: t, env: ce.env, cfg: cfg}
	if cfg.ACME == nil {
		h.start()
		t.Cleanup(h.stop)
		return h
	}
	// Under ACME the harness's HTTPS clients (which trust e.CA()) do not
	// apply: run the edge bare.
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Listen(); err != nil {
		t.Fatal(err)
	}
	h.edge, h.https, h.http = e, e.HTTPSAddr().String(), e.HTTPAddr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("edge run: %v", err)
		}
	})
	h.waitReady()
	return h
}

func (ce *certsEnv) roots(t *testing.T) *x509.CertPool {
	t.Helper()
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(ce.svc.CACertPEM()) {
		t.Fatal("CA certificate is not PEM")
	}
	return p
}

// leafOf completes a real TLS handshake with the edge for host and returns
// the SHA-256 of the leaf certificate served.
func leafOf(t *testing.T, h *harness, host string, roots *x509.CertPool) ([32]byte, error) {
	t.Helper()
	c, err := tls.Dial("tcp", h.https, &tls.Config{RootCAs: roots, ServerName: host})
	if err != nil {
		return [32]byte{}, err
	}
	defer c.Close()
	return sha256.Sum256(c.ConnectionState().PeerCertificates[0].Raw), nil
}

// TestSharedCertificatesAcrossEdges: two edges of one installation serve
// the same certificate for a host, verified by the installation's CA (the
// one users trust, at CACertPath), and keep no CA of their own.
func TestSharedCertificatesAcrossEdges(t *testing.T) {
	ce := newCertsEnv(t)
	a, b := ce.edge(t, "edge a"), ce.edge(t, "edge b")
	site := a.newSite("blog")
	site.deploy(map[string]string{"index.html": "hello from blog"})
	b.synced()
	roots := ce.roots(t)

	for _, h := range []*harness{a, b} {
		pem, err := os.ReadFile(h.edge.CACertPath())
		if err != nil || !bytes.Equal(pem, ce.svc.CACertPEM()) {
			t.Fatalf("CACertPath %s does not hold the installation CA: %v", h.edge.CACertPath(), err)
		}
		if _, err := os.Stat(filepath.Join(h.cfg.DataDir, "ca", "ca.key")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the edge made a CA of its own: %v", err)
		}
	}
	fa, err := leafOf(t, a, site.host, roots)
	if err != nil {
		t.Fatal(err)
	}
	fb, err := leafOf(t, b, site.host, roots)
	if err != nil {
		t.Fatal(err)
	}
	if fa != fb {
		t.Fatal("the two edges serve different certificates")
	}
	// The clients of the harness trust e.CA(): the installation's.
	if r := b.get(site.host, "/"); r.status != 200 || r.body != "hello from blog" {
		t.Fatalf("edge b: %d %q", r.status, r.body)
	}
	// The apps domain itself (and a client sending no server name) get one.
	if _, err := leafOf(t, a, "apps.test", roots); err != nil {
		t.Fatalf("apps domain: %v", err)
	}
	// Names under the apps domain that no site has get the installation's
	// wildcard (fetched at start: the "no site here" page); other hosts get
	// none. Neither costs the control plane a request.
	before := ce.calls.Load()
	wa, err := leafOf(t, a, "nosite.apps.test", roots)
	if err != nil {
		t.Fatalf("unknown name under the apps domain: %v", err)
	}
	if wb, err := leafOf(t, b, "other.apps.test", roots); err != nil || wb != wa {
		t.Fatalf("edge b's wildcard differs: %v", err)
	}
	if r := a.get("nosite.apps.test", "/"); r.status != 404 {
		t.Fatalf("unknown site: %d", r.status)
	}
	for _, host := range []string{"deep.nosite.apps.test", "evil.example.com", "apps.test.evil.com"} {
		if _, err := leafOf(t, a, host, roots); err == nil {
			t.Fatalf("%s: handshake succeeded", host)
		}
	}
	if n := ce.calls.Load() - before; n != 0 {
		t.Fatalf("unknown hosts made %d certificate requests", n)
	}
}

// TestSharedCertsSingleFlight: concurrent first handshakes for a host make
// one request; the certificate is then served from memory; an outage keeps
// the held certificate in service, and renewal fetches again.
func TestSharedCertsSingleFlight(t *testing.T) {
	ce := newCertsEnv(t)
	a := ce.edge(t, "edge a")
	site := a.newSite("shop")
	site.deploy(map[string]string{"index.html": "shop"})
	var now atomic.Pointer[time.Time]
	start := time.Now()
	now.Store(&start)
	sc := certcache.NewShared(&certcache.Client{Base: ce.front.URL, Token: a.cfg.Token, HTTP: http.DefaultClient}, ce.roots(t), "apps.test", t.TempDir(),
		a.edge.servesHost, func() time.Time { return *now.Load() }, quiet)
	base := ce.calls.Load() // the edges' own requests

	const n = 16
	got := make([]*tls.Certificate, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			c, err := sc.GetCertificate(&tls.ClientHelloInfo{ServerName: site.host})
			if err != nil {
				t.Error(err)
			}
			got[i] = c
		})
	}
	wg.Wait()
	if c := ce.calls.Load() - base; c != 1 {
		t.Fatalf("%d handshakes made %d requests, want 1", n, c)
	}
	for _, c := range got[1:] {
		if c != got[0] {
			t.Fatal("handshakes got different certificates")
		}
	}
	// Due for renewal while the control plane is down: the held one is
	// served, and not asked for again within certcache.RecheckEvery.
	due := got[0].Leaf.NotAfter.Add(-certs.RenewBefore + time.Hour)
	now.Store(&due)
	ce.down.Store(true)
	for range 3 {
		c, err := sc.GetCertificate(&tls.ClientHelloInfo{ServerName: site.host})
		if err != nil || c != got[0] {
			t.Fatalf("during an outage: %v", err)
		}
	}
	if c := ce.calls.Load() - base; c != 2 {
		t.Fatalf("requests during the outage: %d, want 1 more", c-1)
	}
	// Back, after certcache.RecheckEvery: asked again (the control plane's clock has
	// not reached renewal, so the same certificate comes back).
	ce.down.Store(false)
	later := due.Add(certcache.RecheckEvery + time.Second)
	now.Store(&later)
	if _, err := sc.GetCertificate(&tls.ClientHelloInfo{ServerName: site.host}); err != nil {
		t.Fatal(err)
	}
	if c := ce.calls.Load() - base; c != 3 {
		t.Fatalf("requests after the outage: %d, want 3", c)
	}
}

// TestSharedCertsRefusalRemembered: a host the control plane refuses is
// refused for refusedFor without asking again.
func TestSharedCertsRefusalRemembered(t *testing.T) {
	ce := newCertsEnv(t)
	a := ce.edge(t, "edge a")
	sc := certcache.NewShared(&certcache.Client{Base: ce.front.URL, Token: a.cfg.Token, HTTP: http.DefaultClient}, ce.roots(t), "apps.test", t.TempDir(),
		func(string) bool { return true }, time.Now, quiet) // as if the edge served every host
	base := ce.calls.Load()
	for range 3 {
		if _, err := sc.GetCertificate(&tls.ClientHelloInfo{ServerName: "ghost.example.com"}); !errors.Is(err, certcache.ErrRefused) {
			t.Fatalf("err = %v, want certcache.ErrRefused", err)
		}
	}
	if c := ce.calls.Load() - base; c != 1 {
		t.Fatalf("%d requests for a refused host, want 1", c)
	}
	// A bad token is not a refusal of the host: it is not remembered.
	bad := certcache.NewShared(&certcache.Client{Base: ce.front.URL, Token: "svc_edge_bad", HTTP: http.DefaultClient}, ce.roots(t), "apps.test", t.TempDir(),
		func(string) bool { return true }, time.Now, quiet)
	if _, err := bad.GetCertificate(&tls.ClientHelloInfo{ServerName: "x.apps.test"}); err == nil || errors.Is(err, certcache.ErrRefused) {
		t.Fatalf("bad token: %v", err)
	}
}

// TestSharedACMEState: under ACME, edges keep the autocert cache in the
// control plane: the account key one edge made is the other's, and an
// http-01 challenge token put by edge A's real autocert.Manager cache is
// answered by edge B's Manager.HTTPHandler on plain HTTP.
func TestSharedACMEState(t *testing.T) {
	ce := newCertsEnv(t)
	acmeOn := func(c *Config) {
		c.ACME = &ACMEConfig{Email: "ops@example.com", DirectoryURL: "https://127.0.0.1:1/directory"}
	}
	a, b := ce.edge(t, "edge a", acmeOn), ce.edge(t, "edge b", acmeOn)
	site := a.newSite("manual")
	site.deploy(map[string]string{"index.html": "manual"})
	b.synced()
	if _, ok := a.edge.acme.Cache.(*certcache.RemoteCache); !ok {
		t.Fatalf("edge a's ACME cache is %T, want the shared one", a.edge.acme.Cache)
	}
	if _, err := os.Stat(filepath.Join(a.cfg.DataDir, "acme")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("edge a keeps ACME state in its directory: %v", err)
	}
	ctx := context.Background()
	if err := a.edge.acme.Cache.Put(ctx, "acme_account+key", []byte("account key pem")); err != nil {
		t.Fatal(err)
	}
	if v, err := b.edge.acme.Cache.Get(ctx, "acme_account+key"); err != nil || string(v) != "account key pem" {
		t.Fatalf("edge b's account key: %q %v", v, err)
	}
	// autocert compares with ==: a miss must be ErrCacheMiss itself.
	if _, err := b.edge.acme.Cache.Get(ctx, "nothere+rsa"); err != autocert.ErrCacheMiss {
		t.Fatalf("miss: %v", err)
	}
	const token, keyAuth = "Zm9vYmFyYmF6LXRva2VuXzE", "Zm9vYmFyYmF6LXRva2VuXzE.thumbprint"
	// autocert's own key for an http-01 token (httpTokenCacheKey).
	if err := a.edge.acme.Cache.Put(ctx, token+"+http-01", []byte(keyAuth)); err != nil {
		t.Fatal(err)
	}
	// Through edge b's plain-HTTP handler (serveHTTP, which hands the
	// challenge path to its Manager's HTTPHandler). Called on a request
	// context rather than over the listener: fasthttp races between a
	// context derived from a RequestCtx and Shutdown (see the report).
	challenge := func(h *harness, tok string) (int, string) {
		t.Helper()
		var ctx fasthttp.RequestCtx
		request(&ctx, "GET", site.host, "/.well-known/acme-challenge/"+tok, "192.0.2.1:1", nil)
		h.edge.serveHTTP(&ctx)
		return ctx.Response.StatusCode(), string(ctx.Response.Body())
	}
	if code, body := challenge(b, token); code != 200 || body != keyAuth {
		t.Fatalf("edge b answered the challenge with %d %q", code, body)
	}
	if code, _ := challenge(b, "unknown-token"); code != 404 {
		t.Fatalf("unknown token: %d", code)
	}
	if err := a.edge.acme.Cache.Delete(ctx, token+"+http-01"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.edge.acme.Cache.Get(ctx, token+"+http-01"); err != autocert.ErrCacheMiss {
		t.Fatalf("after delete: %v", err)
	}
}

// TestRemoteCacheOutage: values read are served from memory while the
// control plane is down; a value never read is an error, not a miss.
func TestRemoteCacheOutage(t *testing.T) {
	ce := newCertsEnv(t)
	tok, _, err := ce.env.CP.EdgeSync().MintToken(context.Background(), "edge")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	rc := certcache.NewRemoteCache(&certcache.Client{Base: ce.front.URL, Token: tok, HTTP: http.DefaultClient}, func() time.Time { return now }, quiet)
	ctx := context.Background()
	if err := rc.Put(ctx, "a.apps.test", []byte("chain")); err != nil {
		t.Fatal(err)
	}
	ce.down.Store(true)
	now = now.Add(time.Hour)
	if v, err := rc.Get(ctx, "a.apps.test"); err != nil || string(v) != "chain" {
		t.Fatalf("stale copy: %q %v", v, err)
	}
	if _, err := rc.Get(ctx, "b.apps.test"); err == nil || err == autocert.ErrCacheMiss {
		t.Fatalf("unknown key during an outage: %v", err)
	}
	if err := rc.Put(ctx, "c.apps.test", []byte("x")); err == nil {
		t.Fatal("put during an outage succeeded")
	}
	for _, tc := range []struct {
		name string
		fn   func() error
	}{
		{"bad key", func() error { return rc.Put(ctx, "a/b", []byte("x")) }},
		{"too large", func() error { return rc.Put(ctx, "k", make([]byte, certwire.MaxValueBytes+1)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.fn(); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

// TestCertsFallback: an edge whose control plane has no certificate
// endpoints makes its own CA, as before; one that used the installation CA
// and restarts while the control plane is unreachable keeps it.
func TestCertsFallback(t *testing.T) {
	own := func(t *testing.T, handler http.HandlerFunc, dataDir string) {
		t.Helper()
		srv := httptest.NewServer(handler)
		defer srv.Close()
		cfg := Config{HTTPAddr: "127.0.0.1:0", HTTPSAddr: "127.0.0.1:0", AppsDomain: "apps.test", DataDir: dataDir,
			ControlPlane: srv.URL, Token: "svc_edge_x", Logger: quiet, Locator: fixedLocator{'U', 'S'}}
		e, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		if want := filepath.Join(cfg.DataDir, "ca", "ca.pem"); e.CACertPath() != want {
			t.Fatalf("CACertPath %q, want %q", e.CACertPath(), want)
		}
	}
	t.Run("no endpoints", func(t *testing.T) {
		own(t, http.NotFound, t.TempDir()) // a control plane without controlplane/certs
	})
	t.Run("restart while unreachable", func(t *testing.T) {
		ce := newCertsEnv(t)
		a := ce.edge(t, "edge a")
		site := a.newSite("offline")
		site.deploy(map[string]string{"index.html": "offline"})
		roots := ce.roots(t)
		before, err := leafOf(t, a, site.host, roots)
		if err != nil {
			t.Fatal(err)
		}
		a.stop()
		a.cfg.ControlPlane = "http://127.0.0.1:1"
		a.start() // same data directory, control plane unreachable
		pem, err := os.ReadFile(a.edge.CACertPath())
		if err != nil || !bytes.Equal(pem, ce.svc.CACertPEM()) {
			t.Fatalf("restarted edge trusts another CA (%s): %v", a.edge.CACertPath(), err)
		}
		if after, err := leafOf(t, a, site.host, roots); err != nil || after != before {
			t.Fatalf("restarted edge: the saved certificate is not served (%v)", err)
		}
		if _, err := leafOf(t, a, "nosite.apps.test", roots); err != nil {
			t.Fatalf("restarted edge: the saved wildcard is not served: %v", err)
		}
		if r := a.get(site.host, "/"); r.status != 200 || r.body != "offline" {
			t.Fatalf("restarted edge: %d %q", r.status, r.body)
		}
		if fi, err := os.Stat(filepath.Join(a.cfg.DataDir, "certs", "hosts", site.host+".pem")); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("saved certificate: %v %v", fi, err)
		}
		// Under ACME it keeps to the shared cache as well.
		cfg := a.cfg
		cfg.ACME = &ACMEConfig{Email: "ops@example.com", DirectoryURL: "https://127.0.0.1:1/directory"}
		ea, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer ea.Close()
		if _, ok := ea.acme.Cache.(*certcache.RemoteCache); !ok {
			t.Fatalf("ACME cache after a restart while unreachable: %T", ea.acme.Cache)
		}
	})
	t.Run("own CA before joining", func(t *testing.T) {
		dir := t.TempDir()
		old, err := localca.Open(filepath.Join(dir, "ca"), "apps.test")
		if err != nil {
			t.Fatal(err)
		}
		ce := newCertsEnv(t)
		a := ce.edge(t, "edge a", func(c *Config) { c.DataDir = dir })
		if want := filepath.Join(dir, "certs", "ca.pem"); a.edge.CACertPath() != want {
			t.Fatalf("CACertPath %q, want %q (DATA/ca holds the edge's own CA)", a.edge.CACertPath(), want)
		}
		if kept, _ := os.ReadFile(filepath.Join(dir, "ca", "ca.pem")); !bytes.Equal(kept, old.CertPEM()) {
			t.Fatal("the edge's own CA was overwritten")
		}
	})
	t.Run("endpoints gone", func(t *testing.T) {
		ce := newCertsEnv(t)
		a := ce.edge(t, "edge a")
		a.stop()
		own(t, http.NotFound, a.cfg.DataDir) // DATA/ca/ca.pem was the installation's: replaced
		if k, err := os.Stat(filepath.Join(a.cfg.DataDir, "ca", "ca.key")); err != nil || k.Mode().Perm() != 0o600 {
			t.Fatalf("own CA key: %v", err)
		}
	})
	t.Run("not a CA", func(t *testing.T) {
		own(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("<html>a captive portal</html>")) }, t.TempDir())
	})
}

// TestSharedCertsWithoutName: a handshake with no server name, or with an
// IP address where a name belongs (wrk sends one), gets the apps domain's
// certificate instead of a failed handshake.
func TestSharedCertsWithoutName(t *testing.T) {
	ce := newCertsEnv(t)
	a := ce.edge(t, "edge a")
	sc := certcache.NewShared(&certcache.Client{Base: ce.front.URL, Token: a.cfg.Token, HTTP: http.DefaultClient}, ce.roots(t), "apps.test", t.TempDir(),
		a.edge.servesHost, time.Now, quiet)
	for _, name := range []string{"", "127.0.0.1", "::1", "203.0.113.9"} {
		c, err := sc.GetCertificate(&tls.ClientHelloInfo{ServerName: name})
		if err != nil {
			t.Fatalf("server name %q: %v", name, err)
		}
		if err := c.Leaf.VerifyHostname("apps.test"); err != nil {
			t.Fatalf("server name %q: %v", name, err)
		}
	}
	if _, err := sc.GetCertificate(&tls.ClientHelloInfo{ServerName: "ghost.example.com"}); err == nil {
		t.Fatal("a name no site answers at got a certificate")
	}
}
