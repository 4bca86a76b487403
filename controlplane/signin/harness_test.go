package signin

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/svcplatform/platform/controlplane/accounts"
	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/metering"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/controlplane/ratelimit"
	"github.com/svcplatform/platform/controlplane/seal"
	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
	"github.com/svcplatform/platform/internal/passhash"
)

// TestMain stops the PostgreSQL server of PLATFORM_TEST_STORE=postgres runs.
func TestMain(m *testing.M) { pgtest.Main(m) }

// storeDSN is the metadata store of a test: the SQLite file path, or under
// PLATFORM_TEST_STORE=postgres a fresh PostgreSQL database.
func storeDSN(t testing.TB, path string) string {
	t.Helper()
	if os.Getenv("PLATFORM_TEST_STORE") == "postgres" {
		return pgtest.MigratedDSN(t)
	}
	return path
}

const (
	ownerKey = "test-owner-key-0123456789abcdef"
	baseURL  = "https://api.test"
	// appOrigin is the test project's own address (apps domain apps.test).
	appOrigin = "https://shop.apps.test"
	password  = "correct horse battery"
)

// fastHash keeps argon2id cheap in tests.
var fastHash = passhash.Params{Memory: 64, Time: 1, Threads: 1, SaltLen: 16, KeyLen: 32}

// fakeMailer keeps what it is asked to send.
type fakeMailer struct {
	mu   sync.Mutex
	sent []Message
}

func (f *fakeMailer) Send(_ context.Context, m Message) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, m)
	return nil
}

func (f *fakeMailer) messages() []Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Message(nil), f.sent...)
}

// token returns the token (svcauth...) in the last message to addr.
func (f *fakeMailer) token(t testing.TB, addr string) string {
	t.Helper()
	ms := f.messages()
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].To != addr {
			continue
		}
		if at := strings.Index(ms[i].Body, "svcauth"); at >= 0 {
			tok := ms[i].Body[at:]
			if end := strings.IndexFunc(tok, func(r rune) bool { return r != '_' && (r < 'a' || r > 'z') && (r < '0' || r > '9') }); end >= 0 {
				tok = tok[:end]
			}
			return tok
		}
		t.Fatalf("the last message to %s holds no token:\n%s", addr, ms[i].Body)
	}
	t.Fatalf("no message to %s", addr)
	return ""
}

// options change the env a test gets.
type options struct {
	plan     plans.Name
	cfg      Config
	noMailer bool
}

// env is the area on a real socket over the core services.
type env struct {
	t        testing.TB
	dir      string
	db       *store.DB
	clock    *clock.Fake
	accounts *accounts.Service
	projects *projects.Service
	meter    *metering.Meter
	sealer   *seal.Sealer
	limiter  ratelimit.Limiter
	mail     *fakeMailer
	svc      *Service
	srv      *httptest.Server
	owner    *auth.Principal
	project  string
}

func newEnv(t testing.TB, opts ...options) *env {
	t.Helper()
	var o options
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.plan == "" {
		o.plan = plans.Pro
	}
	ctx := context.Background()
	e := &env{t: t, dir: t.TempDir(), clock: clock.NewFake(time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)), mail: &fakeMailer{}}
	var err error
	if e.db, err = store.Open(ctx, storeDSN(t, filepath.Join(e.dir, "platform.db"))); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.db.Close() })
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	lg := audit.New(e.db, e.clock)
	e.meter = metering.New(e.db, e.clock)
	if e.accounts, err = accounts.New(ctx, accounts.Config{}, accounts.Deps{DB: e.db, Clock: e.clock, Audit: lg, Logger: logger}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.accounts.Close() })
	e.accounts.SetHashParams(fastHash)
	if e.sealer, err = seal.LoadOrCreate(filepath.Join(e.dir, "seal.key")); err != nil {
		t.Fatal(err)
	}
	if e.projects, err = projects.New(projects.Config{AppsDomain: "apps.test"}, projects.Deps{DB: e.db, Clock: e.clock, Audit: lg, Meter: e.meter, Sealer: e.sealer}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.accounts.EnsureBootstrap(ctx, accounts.BootstrapConfig{WorkspaceName: "Test", OwnerEmail: "owner@example.com", Plan: o.plan, Key: ownerKey}); err != nil {
		t.Fatal(err)
	}
	e.owner = e.principal(ownerKey)
	e.project = e.newProject("shop")
	e.limiter = ratelimit.For(e.db, e.clock)
	cfg := o.cfg
	cfg.BaseURL = baseURL
	if cfg.Hash == (passhash.Params{}) {
		cfg.Hash = fastHash
	}
	d := Deps{DB: e.db, Clock: e.clock, Audit: lg, Meter: e.meter, Sealer: e.sealer, Projects: e.projects, Plans: e.accounts,
		Limiter: e.limiter, Mailer: e.mail, Logger: logger}
	if o.noMailer {
		d.Mailer = nil
	}
	if e.svc, err = New(cfg, d); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	api.Mount(mux, Routes(Handlers{S: e.svc}), api.MountOptions{Authn: e.accounts, Log: logger})
	e.srv = httptest.NewServer(mux)
	t.Cleanup(e.srv.Close)
	return e
}

func (e *env) principal(key string) *auth.Principal {
	e.t.Helper()
	r, _ := http.NewRequest("GET", "/", nil)
	r.Header.Set("Authorization", "Bearer "+key)
	p, err := e.accounts.Authenticate(r)
	if err != nil || p == nil {
		e.t.Fatalf("authenticate: %v", err)
	}
	return p
}

func (e *env) newProject(name string) string {
	e.t.Helper()
	p, err := e.projects.Create(context.Background(), e.owner, projects.CreateRequest{Name: name})
	if err != nil {
		e.t.Fatal(err)
	}
	return p.ID
}

// memberKey makes a member of role and a key of theirs (access full or
// read_only, limited to project when set) and returns the key.
func (e *env) memberKey(email string, role auth.Role, access, project string) string {
	e.t.Helper()
	ctx := context.Background()
	inv, err := e.accounts.Invite(ctx, e.owner, accounts.InviteRequest{Email: email, Role: role})
	if err != nil {
		e.t.Fatal(err)
	}
	m, err := e.accounts.Accept(ctx, accounts.AcceptRequest{Token: inv.Token, Password: "a long member password"})
	if err != nil {
		e.t.Fatal(err)
	}
	p := &auth.Principal{WorkspaceID: e.owner.WorkspaceID, MemberID: m.ID, Role: m.Role, Session: true}
	k, err := e.accounts.CreateKey(ctx, p, accounts.CreateKeyRequest{Name: "test", Access: access, ProjectID: project}, e.projects.Exists)
	if err != nil {
		e.t.Fatal(err)
	}
	return k.Secret
}

// response is an answer.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

// code is the error code of an error answer.
func (r response) code() string {
	var b struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	json.Unmarshal(r.body, &b)
	return b.Error.Code
}

// req describes one call: headers beyond the body.
type req struct {
	key    string // management API key
	bearer string // end-user access token
	origin string
	header map[string]string
}

func (e *env) call(method, path string, body any, rq req) response {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	r, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if rq.key != "" {
		r.Header.Set("Authorization", "Bearer "+rq.key)
	}
	if rq.bearer != "" {
		r.Header.Set("Authorization", "Bearer "+rq.bearer)
	}
	if rq.origin != "" {
		r.Header.Set("Origin", rq.origin)
	}
	for k, v := range rq.header {
		r.Header.Set(k, v)
	}
	resp, err := e.srv.Client().Do(r)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return response{resp.StatusCode, resp.Header, data}
}

// must calls as the owner and fails unless the status is want.
func (e *env) must(want int, method, path string, body any) response {
	e.t.Helper()
	r := e.call(method, path, body, req{key: ownerKey})
	if r.status != want {
		e.t.Fatalf("%s %s: %d, want %d: %s", method, path, r.status, want, r.body)
	}
	return r
}

// pool creates a pool in the env's project with settings and returns it.
func (e *env) pool(name string, settings map[string]any) Pool {
	e.t.Helper()
	body := map[string]any{"name": name}
	if settings != nil {
		body["settings"] = settings
	}
	var a PoolAnswer
	e.must(http.StatusCreated, "POST", "/api/projects/"+e.project+"/auth-pools", body).decode(e.t, &a)
	return a.Pool
}

// endUser calls an end-user endpoint of pool from the project's origin.
func (e *env) endUser(pool, method, path string, body any, bearer string) response {
	e.t.Helper()
	return e.call(method, "/api/auth/"+pool+path, body, req{origin: appOrigin, bearer: bearer})
}

// signUp signs up email and returns the session.
func (e *env) signUp(pool, email string) Session {
	e.t.Helper()
	r := e.endUser(pool, "POST", "/signup", Credentials{Email: email, Password: password}, "")
	if r.status != http.StatusCreated {
		e.t.Fatalf("sign up %s: %d %s", email, r.status, r.body)
	}
	var a SignUpAnswer
	r.decode(e.t, &a)
	if a.Session == nil {
		e.t.Fatalf("sign up %s: no session: %s", email, r.body)
	}
	return *a.Session
}

// signIn signs email in and returns the session.
func (e *env) signIn(pool, email, pw string) Session {
	e.t.Helper()
	r := e.endUser(pool, "POST", "/signin", Credentials{Email: email, Password: pw}, "")
	if r.status != http.StatusOK {
		e.t.Fatalf("sign in %s: %d %s", email, r.status, r.body)
	}
	var s Session
	r.decode(e.t, &s)
	return s
}

// jwks fetches a pool's JWKS over HTTP.
func (e *env) jwks(pool string) JWKS {
	e.t.Helper()
	r := e.call("GET", "/api/auth/"+pool+"/.well-known/jwks.json", nil, req{})
	if r.status != http.StatusOK {
		e.t.Fatalf("jwks: %d %s", r.status, r.body)
	}
	var k JWKS
	r.decode(e.t, &k)
	return k
}

// kids lists the key ids of a JWKS.
func kids(k JWKS) []string {
	var out []string
	for _, j := range k.Keys {
		out = append(out, j.Kid)
	}
	return out
}

// verifyOffline verifies an access token as an app would, with golang-jwt
// against the JWKS the pool publishes, at the env's clock.
func (e *env) verifyOffline(pool, token string) (jwt.MapClaims, error) {
	set := e.jwks(pool)
	claims := jwt.MapClaims{}
	_, err := jwt.ParseWithClaims(token, claims, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		for _, k := range set.Keys {
			if k.Kid != kid {
				continue
			}
			x, err1 := base64.RawURLEncoding.DecodeString(k.X)
			y, err2 := base64.RawURLEncoding.DecodeString(k.Y)
			if err1 != nil || err2 != nil || k.Kty != "EC" || k.Crv != "P-256" {
				return nil, fmt.Errorf("bad jwk %s", kid)
			}
			return ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
		}
		return nil, fmt.Errorf("kid %q is not in the JWKS", kid)
	}, jwt.WithValidMethods([]string{"ES256"}), jwt.WithIssuer(baseURL+"/api/auth/"+pool), jwt.WithAudience(pool),
		jwt.WithExpirationRequired(), jwt.WithIssuedAt(), jwt.WithTimeFunc(e.clock.Now))
	return claims, err
}

// logins is the workspace's end_user_logins today.
func (e *env) logins() float64 {
	e.t.Helper()
	day := e.clock.Now().Truncate(24 * time.Hour)
	n, err := e.meter.Total(context.Background(), e.owner.WorkspaceID, "", metering.EndUserLogins, day, day.Add(24*time.Hour))
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}
