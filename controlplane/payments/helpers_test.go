package payments

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/accounts"
	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/jobs"
	"github.com/svcplatform/platform/controlplane/metering"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/controlplane/seal"
	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/internal/passhash"
)

const ownerKey = "test-owner-key-0123456789abcdef"

// fakeJobs stands in for the jobs runner: it keeps what was registered
// and the delivery ids enqueued; tests run deliveries with Deliver.
type fakeJobs struct {
	mu          sync.Mutex
	kind        string
	handler     jobs.Handler
	maxAttempts int
	backoff     []time.Duration
	enqueued    []string
	// others are the handlers of the other kinds (the processor sync).
	others map[string]jobs.Handler
	// every is the interval of each periodic kind.
	every map[string]time.Duration
}

var _ jobs.Queue = (*fakeJobs)(nil)

func (f *fakeJobs) Register(kind string, h jobs.Handler, o jobs.KindOptions) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if kind != JobWebhook {
		if f.others == nil {
			f.others = map[string]jobs.Handler{}
		}
		f.others[kind] = h
		return
	}
	f.kind, f.handler, f.maxAttempts, f.backoff = kind, h, o.MaxAttempts, o.Backoff
}

func (f *fakeJobs) Every(kind string, interval time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.every == nil {
		f.every = map[string]time.Duration{}
	}
	f.every[kind] = interval
}

func (f *fakeJobs) Enqueue(_ context.Context, q store.Querier, kind string, payload any, o jobs.EnqueueOptions) (string, error) {
	if q == nil {
		return "", errors.New("fake jobs: expected the caller's transaction")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.enqueued = append(f.enqueued, o.Key)
	return "job_" + o.Key, nil
}

func (f *fakeJobs) Wake() {}

type fakeEmail struct{ verified bool }

func (f *fakeEmail) OwnerEmailVerified(context.Context, string) (bool, error) { return f.verified, nil }

// testCheckURL allows loopback (tests run receivers on 127.0.0.1) and
// refuses the private and link-local ranges, as netguard does.
func testCheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	host := u.Hostname()
	if a, err := netip.ParseAddr(host); err == nil {
		if a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsUnspecified() || a.IsMulticast() {
			return errors.New("address " + host + " is on a private network")
		}
	}
	return nil
}

type env struct {
	t     *testing.T
	db    *store.DB
	clk   *clock.Fake
	acc   *accounts.Service
	prj   *projects.Service
	svc   *Service
	jobs  *fakeJobs
	email *fakeEmail
	srv   *httptest.Server
	ws    string
	boot  accounts.Bootstrap
	owner *client
	// hookClient trusts the webhook receivers' certificates.
	hookClient *http.Client
}

type envOptions struct {
	plan   plans.Name
	config func(*Config)
	deps   func(*Deps)
	dir    string
}

func newEnv(t *testing.T, opts ...envOptions) *env {
	t.Helper()
	var o envOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.plan == "" {
		o.plan = plans.Pro
	}
	if o.dir == "" {
		o.dir = t.TempDir()
	}
	ctx := context.Background()
	db, err := store.Open(ctx, storeDSN(t, o.dir))
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC))
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	al := audit.New(db, clk)
	acc, err := accounts.New(ctx, accounts.Config{}, accounts.Deps{DB: db, Clock: clk, Audit: al, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	acc.SetHashParams(passhash.Params{Memory: 64, Time: 1, Threads: 1, SaltLen: 16, KeyLen: 32})
	boot, err := acc.EnsureBootstrap(ctx, accounts.BootstrapConfig{WorkspaceName: "Test", OwnerEmail: "owner@example.com", Plan: o.plan, Key: ownerKey})
	if err != nil {
		t.Fatal(err)
	}
	sealer, err := seal.LoadOrCreate(filepath.Join(o.dir, "seal.key"))
	if err != nil {
		t.Fatal(err)
	}
	meter := metering.New(db, clk)
	prj, err := projects.New(projects.Config{AppsDomain: "apps.test"}, projects.Deps{DB: db, Clock: clk, Audit: al, Meter: meter, Sealer: sealer})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, db: db, clk: clk, acc: acc, prj: prj, jobs: &fakeJobs{}, email: &fakeEmail{}, boot: boot}
	mux := http.NewServeMux()
	e.srv = httptest.NewServer(mux)
	e.hookClient = &http.Client{Transport: &http.Transport{}}
	cfg := Config{PublicBaseURL: e.srv.URL}
	if o.config != nil {
		o.config(&cfg)
	}
	deps := Deps{DB: db, Clock: clk, Audit: al, Meter: meter, Sealer: sealer, Projects: prj, Plans: acc, Email: e.email, Jobs: e.jobs,
		HTTPClient: e.hookClient, CheckURL: testCheckURL, Logger: log}
	if o.deps != nil {
		o.deps(&deps)
	}
	e.svc, err = New(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	prj.AddDependent(e.svc)
	prj.AddCounter(e.svc)
	ah := accounts.Handlers{S: acc, ProjectExists: prj.Exists}
	ph := projects.Handlers{S: prj}
	routes := append([]api.Route{
		{Method: "POST", Path: "/api/members/accept", Public: true, Handler: ah.Accept},
		{Method: "POST", Path: "/api/session", Public: true, Handler: ah.SignIn},
		{Method: "POST", Path: "/api/keys", Op: auth.OpKeyCreate, Handler: ah.CreateKey},
		{Method: "POST", Path: "/api/members", Op: auth.OpMemberManage, Handler: ah.Invite},
		{Method: "POST", Path: "/api/projects", Op: auth.OpProjectCreate, Handler: ph.Create},
		{Method: "GET", Path: "/api/projects/{id}", Op: auth.OpProjectRead, ProjectParam: "id", Handler: ph.Read},
		{Method: "DELETE", Path: "/api/projects/{id}", Op: auth.OpProjectDelete, ProjectParam: "id", Handler: ph.Delete},
	}, Routes(Handlers{S: e.svc})...)
	api.Mount(mux, routes, api.MountOptions{Authn: acc, Log: log})
	t.Cleanup(func() {
		e.srv.Close()
		acc.Close()
		db.Close()
	})
	if err := db.QueryRow(`SELECT id FROM workspaces`).Scan(&e.ws); err != nil {
		t.Fatal(err)
	}
	e.owner = e.client(ownerKey)
	return e
}

// client calls the API with a key, or as a signed-in session.
type client struct {
	e      *env
	key    string
	header http.Header
	http   *http.Client
}

func (e *env) client(key string) *client {
	return &client{e: e, key: key, header: http.Header{}, http: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type resp struct {
	status int
	header http.Header
	body   []byte
}

func (r *resp) code() string {
	var b struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	json.Unmarshal(r.body, &b)
	return b.Error.Code
}

func (r *resp) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

func (c *client) do(method, path string, body any) *resp {
	c.e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		data, _ := json.Marshal(b)
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, c.e.srv.URL+path, rd)
	if err != nil {
		c.e.t.Fatal(err)
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	for k, v := range c.header {
		req.Header[k] = v
	}
	res, err := c.http.Do(req)
	if err != nil {
		c.e.t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return &resp{status: res.StatusCode, header: res.Header, body: data}
}

func (c *client) must(want int, method, path string, body any) *resp {
	c.e.t.Helper()
	r := c.do(method, path, body)
	if r.status != want {
		c.e.t.Fatalf("%s %s: status %d, want %d: %s", method, path, r.status, want, r.body)
	}
	return r
}

// ownerSession signs the owner in to the dashboard.
func (e *env) ownerSession() *client {
	e.t.Helper()
	c := e.client("")
	c.must(http.StatusOK, "POST", "/api/members/accept", map[string]any{"token": e.boot.SetupToken, "password": "a long password 1"})
	return e.signIn(c, "owner@example.com")
}

// signInOwner signs the owner in again (sessions end as the clock moves).
func (e *env) signInOwner() *client {
	e.t.Helper()
	return e.signIn(e.client(""), "owner@example.com")
}

func (e *env) signIn(c *client, email string) *client {
	e.t.Helper()
	c.http.Jar = &plainJar{cookies: map[string]*http.Cookie{}}
	var out struct {
		CSRF string `json:"csrfToken"`
	}
	c.must(http.StatusOK, "POST", "/api/session", map[string]any{"email": email, "password": "a long password 1"}).decode(e.t, &out)
	c.header.Set("X-CSRF-Token", out.CSRF)
	return c
}

// member invites a member with role and returns a signed-in session of theirs.
func (e *env) member(email, role string) *client {
	e.t.Helper()
	var inv struct {
		Token string `json:"token"`
	}
	e.owner.must(http.StatusCreated, "POST", "/api/members", map[string]any{"email": email, "role": role}).decode(e.t, &inv)
	c := e.client("")
	c.must(http.StatusOK, "POST", "/api/members/accept", map[string]any{"token": inv.Token, "password": "a long password 1"})
	return e.signIn(c, email)
}

func (e *env) key(access, project string) *client {
	e.t.Helper()
	var out struct {
		Secret string `json:"secret"`
	}
	e.owner.must(http.StatusCreated, "POST", "/api/keys", map[string]any{"name": "k", "access": access, "projectId": project}).decode(e.t, &out)
	return e.client(out.Secret)
}

func (e *env) project(name string) string {
	e.t.Helper()
	var out struct {
		Project struct {
			ID string `json:"id"`
		} `json:"project"`
	}
	e.owner.must(http.StatusCreated, "POST", "/api/projects", map[string]any{"name": name}).decode(e.t, &out)
	return out.Project.ID
}

// enable enables payments on a new project and returns the account id.
func (e *env) enable(name string) (project, account string) {
	e.t.Helper()
	project = e.project(name)
	var out AccountAnswer
	e.owner.must(http.StatusOK, "POST", "/api/projects/"+project+"/payments", nil).decode(e.t, &out)
	return project, out.Account.ID
}

func (e *env) checkout(account string, cents int64, extra map[string]any) Created {
	e.t.Helper()
	body := map[string]any{"amountCents": cents}
	for k, v := range extra {
		body[k] = v
	}
	var out Created
	e.owner.must(http.StatusCreated, "POST", "/api/payments/"+account, body).decode(e.t, &out)
	return out
}

// pay submits the hosted page's form and returns the answer.
func (e *env) pay(session, card string) *resp {
	e.t.Helper()
	c := e.client("")
	form := url.Values{"cardnumber": {card}, "exp": {"12/34"}, "cvc": {"123"}, "email": {"buyer@example.com"}, "country": {"us"}}
	req, _ := http.NewRequest("POST", e.srv.URL+"/pay/"+session, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err := c.http.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return &resp{status: res.StatusCode, header: res.Header, body: data}
}

// sale creates a link of cents and pays it with card, returning the payment.
func (e *env) sale(account string, cents int64, card string) Payment {
	e.t.Helper()
	c := e.checkout(account, cents, nil)
	if r := e.pay(c.Session.ID, card); r.status != http.StatusSeeOther {
		e.t.Fatalf("pay: %d %s", r.status, r.body)
	}
	var l Lookup
	e.owner.must(http.StatusOK, "GET", "/api/payments/"+account+"/sessions/"+c.Session.ID, nil).decode(e.t, &l)
	if !l.Paid || l.Payment == nil {
		e.t.Fatalf("not paid: %+v", l)
	}
	return *l.Payment
}

func (e *env) detail(project string) Detail {
	e.t.Helper()
	var d Detail
	e.owner.must(http.StatusOK, "GET", "/api/projects/"+project+"/payments", nil).decode(e.t, &d)
	return d
}

// checkLedger asserts the account's buckets sum to zero, no bucket that
// cannot be negative is, and the earnings figures are the bucket sums.
func (e *env) checkLedger(account string) Balances {
	e.t.Helper()
	b, err := accountBalances(context.Background(), e.db, account)
	if err != nil {
		e.t.Fatal(err)
	}
	var sum int64
	for _, v := range b {
		sum += v
	}
	if sum != 0 {
		e.t.Fatalf("buckets sum to %d, want 0: %v", sum, b)
	}
	for _, k := range []Bucket{Held, Disputed, Pending, Withdrawn, Refunded, Lost, Fees} {
		if b[k] < 0 {
			e.t.Fatalf("bucket %s is %d: %v", k, b[k], b)
		}
	}
	return b
}

// plainJar keeps cookies whatever their Secure flag: the test server
// speaks plain HTTP.
type plainJar struct {
	mu      sync.Mutex
	cookies map[string]*http.Cookie
}

func (j *plainJar) SetCookies(_ *url.URL, cs []*http.Cookie) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, c := range cs {
		j.cookies[c.Name] = c
	}
}

func (j *plainJar) Cookies(*url.URL) []*http.Cookie {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := []*http.Cookie{}
	for _, c := range j.cookies {
		out = append(out, &http.Cookie{Name: c.Name, Value: c.Value})
	}
	return out
}
