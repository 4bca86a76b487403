package signin

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/svcplatform/platform/controlplane/accounts"
	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/internal/areatest"
	"github.com/svcplatform/platform/controlplane/metering"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/ratelimit"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
	"github.com/svcplatform/platform/internal/passhash"
)

// TestMain stops the PostgreSQL server of PLATFORM_TEST_STORE=postgres runs.
func TestMain(m *testing.M) { pgtest.Main(m) }

const (
	ownerKey = areatest.OwnerKey
	baseURL  = "https://api.test"
	// appOrigin is the test project's own address (apps domain apps.test).
	appOrigin = "https://shop.apps.test"
	password  = "correct horse battery"
)

// fastHash keeps argon2id cheap in tests.
var fastHash = areatest.FastHash

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
	*areatest.Core
	t       testing.TB
	limiter ratelimit.Limiter
	mail    *fakeMailer
	svc     *Service
	srv     *httptest.Server
	project string
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
	e := &env{Core: areatest.NewCore(t, o.plan), t: t, mail: &fakeMailer{}}
	e.project = e.NewProject("shop")
	e.limiter = ratelimit.For(e.DB, e.Clock)
	cfg := o.cfg
	cfg.BaseURL = baseURL
	if cfg.Hash == (passhash.Params{}) {
		cfg.Hash = fastHash
	}
	logger := areatest.Discard()
	d := Deps{DB: e.DB, Clock: e.Clock, Audit: e.Audit, Meter: e.Meter, Sealer: e.Sealer, Projects: e.Projects, Plans: e.Accounts,
		Limiter: e.limiter, Mailer: e.mail, Logger: logger}
	if o.noMailer {
		d.Mailer = nil
	}
	var err error
	if e.svc, err = New(cfg, d); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	api.Mount(mux, Routes(Handlers{S: e.svc}), api.MountOptions{Authn: e.Accounts, Log: logger})
	e.srv = httptest.NewServer(mux)
	t.Cleanup(e.srv.Close)
	return e
}

// memberKey makes a member of role and a key of theirs (access full or
// read_only, limited to project when set) and returns the key.
func (e *env) memberKey(email string, role auth.Role, access, project string) string {
	e.t.Helper()
	ctx := context.Background()
	inv, err := e.Accounts.Invite(ctx, e.Owner, accounts.InviteRequest{Email: email, Role: role})
	if err != nil {
		e.t.Fatal(err)
	}
	m, err := e.Accounts.Accept(ctx, accounts.AcceptRequest{Token: inv.Token, Password: "a long member password"})
	if err != nil {
		e.t.Fatal(err)
	}
	p := &auth.Principal{WorkspaceID: e.Owner.WorkspaceID, MemberID: m.ID, Role: m.Role, Session: true}
	k, err := e.Accounts.CreateKey(ctx, p, accounts.CreateKeyRequest{Name: "test", Access: access, ProjectID: project}, e.Projects.Exists)
	if err != nil {
		e.t.Fatal(err)
	}
	return k.Secret
}

// response is an answer of the test server.
type response = areatest.Response

// req describes one call: headers beyond the body.
type req struct {
	key    string // management API key
	bearer string // end-user access token
	origin string
	header map[string]string
}

func (e *env) call(method, path string, body any, rq req) response {
	e.t.Helper()
	key := rq.key
	if rq.bearer != "" {
		key = rq.bearer
	}
	var header []string
	if rq.origin != "" {
		header = append(header, "Origin", rq.origin)
	}
	for k, v := range rq.header {
		header = append(header, k, v)
	}
	return areatest.Call(e.t, e.srv, key, method, path, body, header...)
}

// must calls as the owner and fails unless the status is want.
func (e *env) must(want int, method, path string, body any) response {
	e.t.Helper()
	return areatest.Must(e.t, want, e.srv, ownerKey, method, path, body)
}

// pool creates a pool in the env's project with settings and returns it.
func (e *env) pool(name string, settings map[string]any) Pool {
	e.t.Helper()
	body := map[string]any{"name": name}
	if settings != nil {
		body["settings"] = settings
	}
	var a PoolAnswer
	e.must(http.StatusCreated, "POST", "/api/projects/"+e.project+"/auth-pools", body).Decode(e.t, &a)
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
	if r.Status != http.StatusCreated {
		e.t.Fatalf("sign up %s: %d %s", email, r.Status, r.Body)
	}
	var a SignUpAnswer
	r.Decode(e.t, &a)
	if a.Session == nil {
		e.t.Fatalf("sign up %s: no session: %s", email, r.Body)
	}
	return *a.Session
}

// signIn signs email in and returns the session.
func (e *env) signIn(pool, email, pw string) Session {
	e.t.Helper()
	r := e.endUser(pool, "POST", "/signin", Credentials{Email: email, Password: pw}, "")
	if r.Status != http.StatusOK {
		e.t.Fatalf("sign in %s: %d %s", email, r.Status, r.Body)
	}
	var s Session
	r.Decode(e.t, &s)
	return s
}

// jwks fetches a pool's JWKS over HTTP.
func (e *env) jwks(pool string) JWKS {
	e.t.Helper()
	r := e.call("GET", "/api/auth/"+pool+"/.well-known/jwks.json", nil, req{})
	if r.Status != http.StatusOK {
		e.t.Fatalf("jwks: %d %s", r.Status, r.Body)
	}
	var k JWKS
	r.Decode(e.t, &k)
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
		jwt.WithExpirationRequired(), jwt.WithIssuedAt(), jwt.WithTimeFunc(e.Clock.Now))
	return claims, err
}

// logins is the workspace's end_user_logins today.
func (e *env) logins() float64 {
	e.t.Helper()
	day := e.Clock.Now().Truncate(24 * time.Hour)
	n, err := e.Meter.Total(context.Background(), e.Owner.WorkspaceID, "", metering.EndUserLogins, day, day.Add(24*time.Hour))
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}
