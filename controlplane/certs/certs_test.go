package certs

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/certs/certwire"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/edgesync"
	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
	"github.com/svcplatform/platform/controlplane/seal"
	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
	"github.com/svcplatform/platform/edge/localca"
)

// TestMain stops the PostgreSQL server of the postgres subtests.
func TestMain(m *testing.M) { pgtest.Main(m) }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// fixedSites serves a fixed set of hosts under apps.test and of verified
// custom domains, as the edge snapshot would.
type fixedSites struct{ hosts, domains []string }

func (f fixedSites) Snapshot(context.Context) (snapshot.Snapshot, error) {
	s := snapshot.Snapshot{AppsDomain: "apps.test"}
	for _, h := range f.hosts {
		s.Sites = append(s.Sites, snapshot.Site{Host: h})
	}
	for _, h := range f.domains {
		s.Domains = append(s.Domains, snapshot.Domain{Host: h})
	}
	return s, nil
}

func testSealer(t testing.TB, b byte) *seal.Sealer {
	t.Helper()
	s, err := seal.New(bytes.Repeat([]byte{b}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// t0 is the fake clock's start: now, since the CA is valid from its creation.
var t0 = time.Now().UTC().Truncate(time.Second)

func newService(t testing.TB, db *store.DB, clk clock.Clock) *Service {
	t.Helper()
	s, err := New(context.Background(), Config{}, Deps{DB: db, Sealer: testSealer(t, 7), Clock: clk, CertClock: clk, Logger: quiet,
		Sites: fixedSites{hosts: []string{"blog.apps.test", "shop.apps.test"}, domains: []string{"shop.example", "www.shop.example"}}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// env is a certificate service on a real socket with a valid edge token.
type env struct {
	db    *store.DB
	s     *Service
	clk   *clock.Fake
	srv   *httptest.Server
	token string
}

func newEnv(t *testing.T, db *store.DB) *env {
	t.Helper()
	clk := clock.NewFake(t0)
	s := newService(t, db, clk)
	mux := http.NewServeMux()
	api.Mount(mux, Routes(Handlers{S: s}), api.MountOptions{Log: quiet})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	tok, _, err := edgesync.MintToken(context.Background(), db, "edge a", t0)
	if err != nil {
		t.Fatal(err)
	}
	return &env{db: db, s: s, clk: clk, srv: srv, token: tok}
}

func (e *env) do(t *testing.T, method, path, token string, body []byte) (int, []byte, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b, res.Header
}

func errCode(b []byte) string {
	var e struct {
		Error struct{ Code string } `json:"error"`
	}
	json.Unmarshal(b, &e)
	return e.Error.Code
}

// TestOneCAPerInstallation starts replicas together on one store: they
// agree on one CA, which a restart keeps; another seal key cannot read it.
func TestOneCAPerInstallation(t *testing.T) {
	for _, eng := range pgtest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			dsn := eng.DSN(t)
			const replicas = 4
			pems := make([][]byte, replicas)
			var wg sync.WaitGroup
			errs := make(chan error, replicas)
			for i := range replicas {
				db, err := store.Open(context.Background(), dsn)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { db.Close() })
				wg.Go(func() {
					s, err := New(context.Background(), Config{}, Deps{DB: db, Sealer: testSealer(t, 7), Logger: quiet, Sites: fixedSites{}})
					if err != nil {
						errs <- err
						return
					}
					pems[i] = s.CACertPEM()
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			for i := 1; i < replicas; i++ {
				if !bytes.Equal(pems[i], pems[0]) {
					t.Fatalf("replica %d has another CA", i)
				}
			}
			db, err := store.Open(context.Background(), dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			again := newService(t, db, clock.System{})
			if !bytes.Equal(again.CACertPEM(), pems[0]) {
				t.Fatal("restart made another CA")
			}
			_, err = New(context.Background(), Config{}, Deps{DB: db, Sealer: testSealer(t, 9), Logger: quiet, Sites: fixedSites{}})
			if !errors.Is(err, ErrNoCA) || !errors.Is(err, seal.ErrOpen) {
				t.Fatalf("other seal key: err = %v, want ErrNoCA wrapping seal.ErrOpen", err)
			}
		})
	}
}

// TestImportCA adopts the CA `platform serve`'s edge made before, so users
// keep trusting the same certificate.
func TestImportCA(t *testing.T) {
	dir := t.TempDir()
	old, err := localca.Open(dir, "apps.test")
	if err != nil {
		t.Fatal(err)
	}
	db := pgtest.OpenSQLite(t)
	s, err := New(context.Background(), Config{ImportCADir: dir}, Deps{DB: db, Sealer: testSealer(t, 7), Logger: quiet, Sites: fixedSites{}})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(s.CACertPEM(), old.CertPEM()) {
		t.Fatal("the existing CA was not adopted")
	}
	// A directory without a CA: a new one is made.
	s2, err := New(context.Background(), Config{ImportCADir: t.TempDir()}, Deps{DB: pgtest.OpenSQLite(t), Sealer: testSealer(t, 7), Logger: quiet, Sites: fixedSites{}})
	if err != nil || bytes.Equal(s2.CACertPEM(), old.CertPEM()) || len(s2.CACertPEM()) == 0 {
		t.Fatalf("empty import dir: %v", err)
	}
}

// TestCacheEndpoints runs autocert's Cache semantics over the endpoints on
// both engines, and checks values are sealed at rest.
func TestCacheEndpoints(t *testing.T) {
	pgtest.Run(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		key := "blog.apps.test+rsa"
		value := []byte("-----BEGIN EC PRIVATE KEY-----\nsecret-bytes\n")
		if code, b, _ := e.do(t, "GET", certwire.CachePath+key, e.token, nil); code != 404 || errCode(b) != "cache_miss" {
			t.Fatalf("get missing: %d %s", code, b)
		}
		if code, b, _ := e.do(t, "PUT", certwire.CachePath+key, e.token, value); code != 204 {
			t.Fatalf("put: %d %s", code, b)
		}
		code, b, h := e.do(t, "GET", certwire.CachePath+key, e.token, nil)
		if code != 200 || !bytes.Equal(b, value) || h.Get("Cache-Control") != "no-store" {
			t.Fatalf("get: %d %q", code, b)
		}
		var raw []byte
		if err := db.QueryRowContext(context.Background(), `SELECT value_sealed FROM cert_cache WHERE cache_key = ?`, key).Scan(&raw); err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(raw, []byte("secret-bytes")) {
			t.Fatal("cache value stored in the clear")
		}
		// Replace, at the limit.
		big := bytes.Repeat([]byte{'x'}, certwire.MaxValueBytes)
		if code, b, _ := e.do(t, "PUT", certwire.CachePath+key, e.token, big); code != 204 {
			t.Fatalf("put at the limit: %d %s", code, b)
		}
		if code, b, _ := e.do(t, "GET", certwire.CachePath+key, e.token, nil); code != 200 || !bytes.Equal(b, big) {
			t.Fatalf("get replaced: %d %d bytes", code, len(b))
		}
		if code, b, _ := e.do(t, "DELETE", certwire.CachePath+key, e.token, nil); code != 200 {
			t.Fatalf("delete: %d %s", code, b)
		}
		if code, _, _ := e.do(t, "DELETE", certwire.CachePath+key, e.token, nil); code != 200 {
			t.Fatalf("delete again: %d", code)
		}
		if code, _, _ := e.do(t, "GET", certwire.CachePath+key, e.token, nil); code != 404 {
			t.Fatalf("get deleted: %d", code)
		}
	})
}

// TestRefusals: every refusal of the endpoints, with its status and code,
// and nothing stored by a refused write.
func TestRefusals(t *testing.T) {
	e := newEnv(t, pgtest.OpenSQLite(t))
	revoked, tok, err := edgesync.MintToken(context.Background(), e.db, "old edge", t0)
	if err != nil {
		t.Fatal(err)
	}
	if err := edgesync.RevokeToken(context.Background(), e.db, tok.ID, t0); err != nil {
		t.Fatal(err)
	}
	longKey := strings.Repeat("a", certwire.MaxKeyLen+1)
	hostJSON := func(h string) []byte { b, _ := json.Marshal(certwire.LocalRequest{Host: h}); return b }
	for _, tc := range []struct {
		name, method, path, token string
		body                      []byte
		status                    int
		code                      string
	}{
		{"get without token", "GET", certwire.CachePath + "k", "", nil, 401, "edge_token_invalid"},
		{"put without token", "PUT", certwire.CachePath + "k", "", []byte("v"), 401, "edge_token_invalid"},
		{"delete without token", "DELETE", certwire.CachePath + "k", "", nil, 401, "edge_token_invalid"},
		{"local without token", "POST", certwire.LocalPath, "", hostJSON("blog.apps.test"), 401, "edge_token_invalid"},
		{"revoked token", "PUT", certwire.CachePath + "k", revoked, []byte("v"), 401, "edge_token_invalid"},
		{"unknown token", "GET", certwire.CachePath + "k", "svc_edge_nothere", nil, 401, "edge_token_invalid"},
		{"api key shape", "GET", certwire.CachePath + "k", "svc_live_abc", nil, 401, "edge_token_invalid"},
		{"key too long", "PUT", certwire.CachePath + longKey, "", []byte("v"), 400, "invalid_key"},
		{"key with a bad character", "PUT", certwire.CachePath + "a%2Fb", "", []byte("v"), 400, "invalid_key"},
		{"key starting with a dot", "GET", certwire.CachePath + ".hidden", "", nil, 400, "invalid_key"},
		{"value too large", "PUT", certwire.CachePath + "k", "", bytes.Repeat([]byte{1}, certwire.MaxValueBytes+1), 413, "value_too_large"},
		{"value far too large", "PUT", certwire.CachePath + "k", "", bytes.Repeat([]byte{1}, 4*certwire.MaxValueBytes), 413, "value_too_large"},
		{"host not served", "POST", certwire.LocalPath, "", hostJSON("evil.example.com"), 404, "host_not_served"},
		{"host under the apps domain not served", "POST", certwire.LocalPath, "", hostJSON("nosite.apps.test"), 404, "host_not_served"},
		{"custom domain not verified", "POST", certwire.LocalPath, "", hostJSON("blog.example"), 404, "host_not_served"},
		{"name under a verified custom domain", "POST", certwire.LocalPath, "", hostJSON("x.shop.example"), 404, "host_not_served"},
		{"wildcard of a verified custom domain", "POST", certwire.LocalPath, "", hostJSON("*.shop.example"), 404, "host_not_served"},
		{"wildcard of another domain", "POST", certwire.LocalPath, "", hostJSON("*.example.com"), 404, "host_not_served"},
		{"wildcard under a site", "POST", certwire.LocalPath, "", hostJSON("*.blog.apps.test"), 404, "host_not_served"},
		{"double wildcard", "POST", certwire.LocalPath, "", hostJSON("*.*.apps.test"), 400, "invalid_host"},
		{"ip address", "POST", certwire.LocalPath, "", hostJSON("127.0.0.1"), 400, "invalid_host"},
		{"host with a port", "POST", certwire.LocalPath, "", hostJSON("blog.apps.test:443"), 400, "invalid_host"},
		{"empty host", "POST", certwire.LocalPath, "", hostJSON(""), 400, "invalid_host"},
		{"malformed body", "POST", certwire.LocalPath, "", []byte(`{"host":`), 400, "invalid_request"},
		{"unknown field", "POST", certwire.LocalPath, "", []byte(`{"host":"blog.apps.test","x":1}`), 400, "unknown_field"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := tc.token
			if tok == "" && !strings.Contains(tc.name, "without token") {
				tok = e.token
			}
			code, b, h := e.do(t, tc.method, tc.path, tok, tc.body)
			if code != tc.status || errCode(b) != tc.code {
				t.Fatalf("%d %s, want %d %s", code, b, tc.status, tc.code)
			}
			if code == 401 && h.Get("WWW-Authenticate") == "" {
				t.Fatal("401 without WWW-Authenticate")
			}
		})
	}
	var n int
	if err := e.db.QueryRowContext(context.Background(), `SELECT count(*) FROM cert_cache`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("refused writes stored %d rows (%v)", n, err)
	}
	if err := e.db.QueryRowContext(context.Background(), `SELECT count(*) FROM cert_leaves`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("refused hosts got %d certificates (%v)", n, err)
	}
}

// TestLocalCertificates: every call (every edge) gets the same certificate
// for a host until it nears expiry; it verifies against the public CA.
func TestLocalCertificates(t *testing.T) {
	pgtest.Run(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		code, caPEM, h := e.do(t, "GET", certwire.CAPath, "", nil)
		if code != 200 || !bytes.Equal(caPEM, e.s.CACertPEM()) || h.Get("Content-Type") != "application/x-pem-file" {
			t.Fatalf("ca: %d %s", code, caPEM)
		}
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(caPEM) {
			t.Fatal("ca: not PEM")
		}
		issue := func(host string) certwire.LocalCert {
			t.Helper()
			body, _ := json.Marshal(certwire.LocalRequest{Host: host})
			code, b, _ := e.do(t, "POST", certwire.LocalPath, e.token, body)
			if code != 200 {
				t.Fatalf("local %s: %d %s", host, code, b)
			}
			var c certwire.LocalCert
			if err := json.Unmarshal(b, &c); err != nil {
				t.Fatal(err)
			}
			return c
		}
		fingerprint := func(c certwire.LocalCert) [32]byte {
			t.Helper()
			tc, err := localca.Decode([]byte(c.ChainPEM), []byte(c.KeyPEM))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tc.Leaf.Verify(x509.VerifyOptions{DNSName: c.Host, Roots: roots, CurrentTime: e.clk.Now()}); err != nil {
				t.Fatalf("verify %s: %v", c.Host, err)
			}
			return sha256.Sum256(tc.Leaf.Raw)
		}
		a := issue("Blog.Apps.Test.")
		if a.Host != "blog.apps.test" || !a.NotAfter.Equal(t0.Add(localca.LeafLifetime)) {
			t.Fatalf("host %q notAfter %v", a.Host, a.NotAfter)
		}
		fa := fingerprint(a)
		if fb := fingerprint(issue("blog.apps.test")); fb != fa {
			t.Fatal("a second edge got another certificate")
		}
		fingerprint(issue("apps.test")) // the apps domain itself
		// Verified custom domains (snapshot.Domains), apex and www.
		fingerprint(issue("shop.example"))
		fingerprint(issue("WWW.shop.example."))
		// The wildcard names every label under the apps domain, and the
		// apps domain itself.
		w := issue("*.apps.test")
		wc, err := localca.Decode([]byte(w.ChainPEM), []byte(w.KeyPEM))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"nosite.apps.test", "apps.test"} {
			if _, err := wc.Leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: roots, CurrentTime: e.clk.Now()}); err != nil {
				t.Fatalf("wildcard for %s: %v", name, err)
			}
		}
		e.clk.Advance(localca.LeafLifetime - RenewBefore - time.Hour)
		if fingerprint(issue("blog.apps.test")) != fa {
			t.Fatal("renewed too early")
		}
		e.clk.Advance(2 * time.Hour)
		renewed := issue("blog.apps.test")
		if fingerprint(renewed) == fa || !renewed.NotAfter.After(a.NotAfter) {
			t.Fatal("not renewed near expiry")
		}
		var raw []byte
		if err := db.QueryRowContext(context.Background(), `SELECT key_sealed FROM cert_leaves WHERE host = ?`, "blog.apps.test").Scan(&raw); err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(raw, []byte("PRIVATE KEY")) {
			t.Fatal("leaf key stored in the clear")
		}
	})
}

// TestIssueConcurrent: replicas asked together for a new host hand out one
// certificate.
func TestIssueConcurrent(t *testing.T) {
	for _, eng := range pgtest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			dsn := eng.DSN(t)
			var svcs []*Service
			for range 3 {
				db, err := store.Open(context.Background(), dsn)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { db.Close() })
				svcs = append(svcs, newService(t, db, clock.System{}))
			}
			// Replicas made at once may still race on the first leaf: the
			// stored one wins for every later call.
			var wg sync.WaitGroup
			for _, s := range svcs {
				wg.Go(func() {
					if _, err := s.Issue(context.Background(), "shop.apps.test"); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			var chains []string
			for _, s := range svcs {
				c, err := s.Issue(context.Background(), "shop.apps.test")
				if err != nil {
					t.Fatal(err)
				}
				chains = append(chains, c.ChainPEM)
			}
			for _, c := range chains[1:] {
				if c != chains[0] {
					t.Fatal("replicas hand out different certificates")
				}
			}
		})
	}
}

// TestServesMediaHost: the media playback host gets a certificate of its
// own (OpenSSL clients such as curl refuse *.localhost for it), and only
// the host the snapshot names.
func TestServesMediaHost(t *testing.T) {
	snap := snapshot.Snapshot{AppsDomain: "apps.test", Media: &snapshot.Media{Host: "media.apps.test", Origin: "http://127.0.0.1:7070"}}
	for _, tc := range []struct {
		host string
		want bool
	}{
		{"media.apps.test", true},
		{"MEDIA.apps.test", true},
		{"video.apps.test", false},
		{"apps.test", true},
	} {
		if got := serves(snap, tc.host); got != tc.want {
			t.Errorf("serves(%q) = %v, want %v", tc.host, got, tc.want)
		}
	}
	if serves(snapshot.Snapshot{AppsDomain: "apps.test"}, "media.apps.test") {
		t.Error("a media host served without one in the snapshot")
	}
}

// TestExpiry: the expiry of a host's certificate, from the ACME cache
// (autocert's value: the key, then the chain) before the installation
// CA's host certificate; none issued is not found.
func TestExpiry(t *testing.T) {
	s := newService(t, pgtest.OpenSQLite(t), clock.NewFake(t0))
	ctx := context.Background()
	if _, found, err := s.Expiry(ctx, "shop.example"); err != nil || found {
		t.Fatalf("nothing issued: found %v, %v", found, err)
	}
	local, err := s.Issue(ctx, "shop.example")
	if err != nil {
		t.Fatal(err)
	}
	if na, found, err := s.Expiry(ctx, "SHOP.example"); err != nil || !found || !na.Equal(local.NotAfter) {
		t.Fatalf("local: %v %v %v, want %v", na, found, err, local.NotAfter)
	}
	// An ACME certificate in the shared cache takes precedence.
	c, err := s.ca.Sign("shop.example", t0.Add(-24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	chain, key, err := localca.EncodePEM(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "shop.example", append(key, chain...)); err != nil {
		t.Fatal(err)
	}
	if na, found, err := s.Expiry(ctx, "shop.example"); err != nil || !found || !na.Equal(c.Leaf.NotAfter.UTC()) {
		t.Fatalf("acme: %v %v %v, want %v", na, found, err, c.Leaf.NotAfter)
	}
	if _, _, err := s.Expiry(ctx, "bad host"); err == nil {
		t.Fatal("an invalid host was looked up")
	}
}
