package agents

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/accounts"
	"github.com/svcplatform/platform/controlplane/ai"
	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/billing"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/databases"
	"github.com/svcplatform/platform/controlplane/internal/areatest"
	"github.com/svcplatform/platform/controlplane/jobs"
	"github.com/svcplatform/platform/controlplane/mail"
	"github.com/svcplatform/platform/controlplane/memory"
	"github.com/svcplatform/platform/controlplane/metering"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/controlplane/seal"
	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

const ownerKey = areatest.OwnerKey

// mockReply scripts one answer of the mock model.
type mockReply struct {
	Text  string
	Calls []mockCall
	// Status answers with an upstream error of this status.
	Status int
	// Hang waits until the caller gives up.
	Hang bool
	// Refuse makes the model refuse (message.refusal).
	Refuse bool
	// Before runs before answering (to change the world mid-run).
	Before func()
}

type mockCall struct{ Name, Args string }

// mockModel is an OpenAI-protocol model on a real socket answering from a
// script, one reply per call (the last repeats), behind the real gateway.
type mockModel struct {
	*httptest.Server
	mu      sync.Mutex
	script  []mockReply
	calls   int
	bodies  []map[string]any
	release chan struct{}
}

func newMockModel() *mockModel {
	m := &mockModel{release: make(chan struct{})}
	m.Server = httptest.NewServer(http.HandlerFunc(m.serve))
	return m
}

func (m *mockModel) set(replies ...mockReply) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.script, m.calls, m.bodies = replies, 0, nil
}

func (m *mockModel) requests() []map[string]any {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]map[string]any(nil), m.bodies...)
}

func (m *mockModel) serve(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	json.NewDecoder(r.Body).Decode(&body)
	m.mu.Lock()
	rep := mockReply{Text: "done"}
	if len(m.script) > 0 {
		rep = m.script[min(m.calls, len(m.script)-1)]
	}
	m.calls++
	m.bodies = append(m.bodies, body)
	m.mu.Unlock()
	if rep.Before != nil {
		rep.Before()
	}
	if rep.Hang {
		select {
		case <-r.Context().Done():
		case <-m.release:
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if rep.Status != 0 {
		w.WriteHeader(rep.Status)
		json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": "mock failure", "type": "server_error"}})
		return
	}
	msg := map[string]any{"role": "assistant", "content": rep.Text}
	if rep.Refuse {
		msg["content"], msg["refusal"] = nil, "I can't help with that."
	}
	finish := "stop"
	if len(rep.Calls) > 0 {
		calls := make([]any, len(rep.Calls))
		for i, c := range rep.Calls {
			calls[i] = map[string]any{"id": "call_" + string(rune('a'+i)), "type": "function", "function": map[string]any{"name": c.Name, "arguments": c.Args}}
		}
		msg["tool_calls"], finish = calls, "tool_calls"
	}
	json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "model": body["model"],
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   map[string]any{"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}})
}

// fakeKeys makes run keys in memory; the test API authenticates them
// before accounts' own keys.
type fakeKeys struct {
	mu      sync.Mutex
	keys    map[string]*auth.Principal // secret -> principal
	revoked map[string]bool            // key id -> revoked
	made    []string
	refuse  error
}

func (k *fakeKeys) CreateRunKey(_ context.Context, ws, member, starterKey, project string, readOnly bool, _ time.Time) (string, string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.refuse != nil {
		return "", "", k.refuse
	}
	id, secret := store.NewID("key"), "svc_run_"+store.NewID("s")
	k.keys[secret] = &auth.Principal{WorkspaceID: ws, MemberID: member, Role: auth.Owner, KeyID: id, KeyPrefix: "run", ReadOnly: readOnly, ProjectID: project}
	k.made = append(k.made, id)
	return id, secret, nil
}

func (k *fakeKeys) RevokeRunKey(_ context.Context, id string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.revoked[id] = true
	return nil
}

func (k *fakeKeys) allRevoked() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, id := range k.made {
		if !k.revoked[id] {
			return false
		}
	}
	return true
}

type chainAuthn struct {
	keys *fakeKeys
	acc  *accounts.Service
}

func (c chainAuthn) Authenticate(r *http.Request) (*auth.Principal, error) {
	tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	c.keys.mu.Lock()
	p, ok := c.keys.keys[tok]
	revoked := ok && c.keys.revoked[p.KeyID]
	c.keys.mu.Unlock()
	if ok {
		if revoked {
			return nil, api.E(api.KindUnauthenticated, "invalid_credentials", "revoked")
		}
		cp := *p
		return &cp, nil
	}
	return c.acc.Authenticate(r)
}

type verified struct{}

func (verified) OwnerEmailVerified(context.Context, string) (bool, error) { return true, nil }

// env is the agents area over a real store, accounts, projects, databases,
// billing, jobs and AI gateway, with a mock model, on a real socket.
type env struct {
	t       *testing.T
	dir     string
	dsn     string // the metadata store: a SQLite path, or PostgreSQL under PLATFORM_TEST_STORE=postgres
	db      *store.DB
	clk     *clock.Fake
	acc     *accounts.Service
	prj     *projects.Service
	bill    *billing.Ledger
	jobs    *jobs.Runner
	model   *mockModel
	keys    *fakeKeys
	plans   *areatest.Plans
	svc     *Service
	srv     *httptest.Server
	ws      string
	owner   *auth.Principal
	project string
	other   string
	cfg     Config
	sealer  *seal.Sealer
	aiSvc   *ai.Service
	dbs     *databases.Service
	mem     *memory.Service
	mail    *mail.Service
	// mailCfg configures the mail area (messages to a folder when its
	// SMTPURL is empty).
	mailCfg mail.Config
	log     *slog.Logger
	mux     *http.ServeMux
	closed  bool
	meter   *metering.Meter
}

// TestMain stops the PostgreSQL server of PLATFORM_TEST_STORE=postgres runs.
func TestMain(m *testing.M) { pgtest.Main(m) }

func newEnv(t *testing.T, plan plans.Name, cfgs ...Config) *env {
	t.Helper()
	return newEnvWith(t, plan, func(e *env) {
		if len(cfgs) > 0 {
			e.cfg = cfgs[0]
		}
	})
}

// newEnvWith is newEnv with set changing the environment before the
// services are built.
func newEnvWith(t *testing.T, plan plans.Name, set func(*env)) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), clk: clock.NewFake(areatest.T0), model: newMockModel(),
		keys: &fakeKeys{keys: map[string]*auth.Principal{}, revoked: map[string]bool{}}, plans: areatest.NewPlans(nil)}
	set(e)
	t.Cleanup(e.model.Close)
	e.open(t, plan)
	return e
}

// open builds every service over e.dir (again after close, as a restart).
func (e *env) open(t *testing.T, plan plans.Name) {
	ctx := context.Background()
	var err error
	if e.dsn == "" {
		e.dsn = areatest.StoreDSN(t, filepath.Join(e.dir, "platform.db"))
	}
	if e.db, err = store.Open(ctx, e.dsn); err != nil {
		t.Fatal(err)
	}
	e.log = areatest.Discard()
	al := audit.New(e.db, e.clk)
	meter := metering.New(e.db, e.clk)
	e.meter = meter
	if e.acc, err = accounts.New(ctx, accounts.Config{}, accounts.Deps{DB: e.db, Clock: e.clk, Audit: al, Logger: e.log}); err != nil {
		t.Fatal(err)
	}
	e.acc.SetHashParams(areatest.FastHash)
	b, err := e.acc.EnsureBootstrap(ctx, accounts.BootstrapConfig{WorkspaceName: "Test", OwnerEmail: "owner@example.com", Plan: plan, Key: ownerKey})
	if err != nil {
		t.Fatal(err)
	}
	if b.Workspace.ID != "" {
		e.ws = b.Workspace.ID
		e.plans.Set(e.ws, plan)
	}
	if e.sealer, err = seal.LoadOrCreate(filepath.Join(e.dir, "seal.key")); err != nil {
		t.Fatal(err)
	}
	if e.prj, err = projects.New(projects.Config{AppsDomain: "apps.test"}, projects.Deps{DB: e.db, Clock: e.clk, Audit: al, Meter: meter, Sealer: e.sealer}); err != nil {
		t.Fatal(err)
	}
	if e.bill, err = billing.New(billing.Config{}, billing.Deps{DB: e.db, Clock: e.clk, Audit: al,
		Plans: e.plans}); err != nil {
		t.Fatal(err)
	}
	if e.jobs, err = jobs.New(jobs.Config{}, jobs.Deps{DB: e.db, Clock: e.clk, Logger: e.log}); err != nil {
		t.Fatal(err)
	}
	if e.dbs, err = databases.New(ctx, databases.Config{Dir: filepath.Join(e.dir, "databases")}, databases.Deps{DB: e.db, Clock: e.clk, Audit: al,
		Meter: meter, Projects: e.prj, Plans: e.acc, Jobs: e.jobs, Logger: e.log}); err != nil {
		t.Fatal(err)
	}
	if e.aiSvc, err = ai.New(ai.Config{FlushEvery: time.Hour, FirstByteTimeout: 10 * time.Second, IdleTimeout: 10 * time.Second,
		Providers: map[string]ai.ProviderConfig{"openai": {Protocol: "openai", BaseURL: e.model.URL + "/v1", APIKey: "sk-test"}}},
		ai.Deps{DB: e.db, Clock: e.clk, Audit: al, Meter: meter, Ledger: ai.BillingLedger(e.bill), Plans: e.plans, Email: verified{},
			Projects: e.prj, Logger: e.log, HTTPClient: &http.Client{}}); err != nil {
		t.Fatal(err)
	}
	var handler http.Handler
	if e.svc, err = New(e.cfg, Deps{DB: e.db, Clock: e.clk, Audit: al, Meter: meter, Sealer: e.sealer, Projects: e.prj, Plans: e.plans,
		AI: e.aiSvc, Models: func(id string) bool { m, ok := e.aiSvc.Catalogue().Get(id); return ok && m.Kind == ai.KindChat },
		Keys: e.keys, API: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }), Jobs: e.jobs, Logger: e.log}); err != nil {
		t.Fatal(err)
	}
	if e.mem, err = memory.New(memory.Config{}, memory.Deps{DB: e.db, Clock: e.clk, Audit: al, Meter: meter, Jobs: e.jobs,
		Projects: e.prj, Plans: e.plans, Logger: e.log}); err != nil {
		t.Fatal(err)
	}
	mcfg := e.mailCfg
	if mcfg.SMTPURL == "" {
		mcfg.Dir = filepath.Join(e.dir, "mail")
	}
	if mcfg.From == "" {
		mcfg.From = "Platform <noreply@platform.test>"
	}
	if e.mail, err = mail.New(mcfg, mail.Deps{DB: e.db, Clock: e.clk, Sealer: e.sealer, Meter: meter, Jobs: e.jobs,
		Projects: e.prj, Plans: e.plans, Audit: al, Logger: e.log}); err != nil {
		t.Fatal(err)
	}
	prj, dbh := projects.Handlers{S: e.prj}, databases.Handlers{S: e.dbs}
	const G, P = http.MethodGet, http.MethodPost
	routes := append([]api.Route{
		{Method: P, Path: "/api/projects", Op: auth.OpProjectCreate, Handler: prj.Create},
		{Method: G, Path: "/api/projects/{id}", Op: auth.OpProjectRead, ProjectParam: "id", Handler: prj.Read},
		{Method: P, Path: "/api/projects/{id}/env", Op: auth.OpEnvWrite, ProjectParam: "id", Handler: prj.SetEnv},
		{Method: G, Path: "/api/projects/{id}/env", Op: auth.OpEnvRead, ProjectParam: "id", Handler: prj.ListEnv},
		{Method: P, Path: "/api/projects/{id}/databases", Op: auth.OpDatabaseWrite, ProjectParam: "id", Handler: dbh.Create},
		{Method: P, Path: "/api/databases/{id}", Op: auth.OpDatabaseQuery, Handler: dbh.Query, MaxBody: databases.MaxQueryBody},
	}, slices.Concat(Routes(Handlers{S: e.svc}), memory.Routes(memory.Handlers{S: e.mem}), mail.Routes(mail.Handlers{S: e.mail}))...)
	e.mux = http.NewServeMux()
	api.Mount(e.mux, routes, api.MountOptions{Authn: chainAuthn{keys: e.keys, acc: e.acc}, Log: e.log})
	handler = e.mux
	e.srv = httptest.NewServer(e.mux)
	e.owner = areatest.Principal(t, e.acc, ownerKey)
	e.closed = false
	t.Cleanup(func() {
		if !e.closed {
			e.close()
		}
	})
	if e.project == "" {
		e.project = e.createProject("shop")
		e.other = e.createProject("other")
	}
}

func (e *env) close() {
	e.closed = true
	e.srv.Close()
	e.svc.Close()
	e.jobs.Close()
	e.aiSvc.Close()
	e.dbs.Close()
	e.mem.Close()
	e.acc.Close()
	e.db.Close()
}

func (e *env) createProject(name string) string {
	var out struct {
		Project struct {
			ID string `json:"id"`
		} `json:"project"`
	}
	e.do(ownerKey, "POST", "/api/projects", map[string]any{"name": name}).OK(e.t, &out)
	return out.Project.ID
}

func (e *env) createDB(project string) string {
	var out struct {
		Database struct {
			ID string `json:"id"`
		} `json:"database"`
	}
	e.do(ownerKey, "POST", "/api/projects/"+project+"/databases", map[string]any{"name": "main"}).OK(e.t, &out)
	return out.Database.ID
}

// key makes an accounts key of the owner.
func (e *env) key(access, project string) string {
	e.t.Helper()
	return areatest.NewKey(e.t, e.acc, e.owner, access, project)
}

// fund puts money on the workspace's Balance.
func (e *env) fund(dollars int64) {
	if err := e.bill.AddBalance(context.Background(), e.ws, billing.Micros(dollars*1_000_000), "test", "test funds"); err != nil {
		e.t.Fatal(err)
	}
}

// resp is an answer of the test server.
type resp = areatest.Response

func (e *env) do(key, method, path string, body any, header ...string) resp {
	e.t.Helper()
	return areatest.Call(e.t, e.srv, key, method, path, body, header...)
}

// agent creates an agent in the project and returns its id.
func (e *env) agent(body map[string]any) string {
	e.t.Helper()
	if body["name"] == nil {
		body["name"] = "helper"
	}
	if body["model"] == nil {
		body["model"] = "gpt-4o-mini"
	}
	var out AgentAnswer
	e.do(ownerKey, "POST", "/api/projects/"+e.project+"/agents", body).OK(e.t, &out)
	return out.Agent.ID
}

func (e *env) run(id, input string) (Run, resp) {
	e.t.Helper()
	r := e.do(ownerKey, "POST", "/api/agents/"+id, map[string]any{"input": input})
	var out RunAnswer
	if r.Status == http.StatusAccepted {
		r.OK(e.t, &out)
	}
	return out.Run, r
}

func (e *env) detail(id string) AgentDetail {
	e.t.Helper()
	var d AgentDetail
	e.do(ownerKey, "GET", "/api/agents/"+id, nil).OK(e.t, &d)
	return d
}

// metered is the agent_runs usage recorded today.
func (e *env) metered() float64 {
	e.t.Helper()
	n, err := e.meter.Total(context.Background(), e.ws, "", metering.AgentRuns, e.clk.Now().Add(-48*time.Hour), e.clk.Now().Add(48*time.Hour))
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

// runDue runs every job due now.
func (e *env) runDue() int {
	e.t.Helper()
	n, err := e.jobs.RunDue(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}
