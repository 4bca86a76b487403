package vectors

import (
	"bytes"
	"context"
	"encoding/json"
	"hash/fnv"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/accounts"
	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/metering"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/controlplane/seal"
	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/internal/passhash"
)

const ownerKey = "test-owner-key-0123456789abcdef"

// fakeEmbedder embeds a text as a vector seeded by its hash.
type fakeEmbedder struct{ calls int }

func (f *fakeEmbedder) Embed(_ context.Context, _, _, model string, inputs []string) ([][]float32, error) {
	f.calls++
	dims := map[string]int{"bge-small": 384, "bge-base": 768, "bge-large": 1024}[model]
	out := make([][]float32, len(inputs))
	for i, s := range inputs {
		h := fnv.New64a()
		h.Write([]byte(s))
		rng := rand.New(rand.NewPCG(h.Sum64(), 1))
		v := make([]float32, dims)
		for j := range v {
			v[j] = float32(rng.NormFloat64())
		}
		out[i] = v
	}
	return out, nil
}

// env is a control plane of the core services and the vectors area on a
// real socket.
type env struct {
	t        testing.TB
	dir      string
	db       *store.DB
	clock    *clock.Fake
	accounts *accounts.Service
	projects *projects.Service
	meter    *metering.Meter
	audit    *audit.Log
	svc      *Service
	stop     func() // ends the service's Run and waits for it
	srv      *httptest.Server
	owner    *auth.Principal
	embedder *fakeEmbedder
	project  string
	cfg      Config
}

func newEnv(t testing.TB, plan plans.Name, cfgs ...Config) *env {
	t.Helper()
	ctx := context.Background()
	e := &env{t: t, dir: t.TempDir(), clock: clock.NewFake(time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)), embedder: &fakeEmbedder{}}
	var err error
	if e.db, err = store.Open(ctx, storeDSN(t, filepath.Join(e.dir, "platform.db"))); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.db.Close() })
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	e.audit = audit.New(e.db, e.clock)
	e.meter = metering.New(e.db, e.clock)
	if e.accounts, err = accounts.New(ctx, accounts.Config{}, accounts.Deps{DB: e.db, Clock: e.clock, Audit: e.audit, Logger: logger}); err != nil {
		t.Fatal(err)
	}
	e.accounts.SetHashParams(passhash.Params{Memory: 64, Time: 1, Threads: 1, SaltLen: 16, KeyLen: 32})
	sealer, err := seal.LoadOrCreate(filepath.Join(e.dir, "seal.key"))
	if err != nil {
		t.Fatal(err)
	}
	if e.projects, err = projects.New(projects.Config{AppsDomain: "apps.test"}, projects.Deps{DB: e.db, Clock: e.clock, Audit: e.audit, Meter: e.meter, Sealer: sealer}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.accounts.EnsureBootstrap(ctx, accounts.BootstrapConfig{WorkspaceName: "Test", OwnerEmail: "owner@example.com", Plan: plan, Key: ownerKey}); err != nil {
		t.Fatal(err)
	}
	e.owner = e.principal(ownerKey)
	e.project = e.newProject("app")
	if len(cfgs) > 0 {
		e.cfg = cfgs[0]
	}
	e.start()
	return e
}

// start builds the service, runs it and serves it over the env's database.
func (e *env) start() {
	e.t.Helper()
	cfg := e.cfg
	cfg.Dir = filepath.Join(e.dir, "vectors")
	svc, err := New(context.Background(), cfg, Deps{DB: e.db, Clock: e.clock, Audit: e.audit, Meter: e.meter,
		Projects: e.projects, Plans: e.accounts, Embedder: e.embedder,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- svc.Run(ctx) }()
	stop := sync.OnceFunc(func() {
		cancel()
		if err := <-ran; err != nil {
			e.t.Error(err)
		}
	})
	mux := http.NewServeMux()
	api.Mount(mux, Routes(Handlers{S: svc}), api.MountOptions{Authn: e.accounts, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	srv := httptest.NewServer(mux)
	e.svc, e.stop, e.srv = svc, stop, srv
	e.t.Cleanup(func() {
		srv.Close()
		stop()
		svc.Close()
	})
}

// restart closes the service and builds a new one on the same data.
func (e *env) restart(clean bool) {
	e.t.Helper()
	e.srv.Close()
	if clean {
		e.stop()
		e.svc.Close()
	}
	e.start()
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

type response struct {
	status int
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

func (e *env) do(key, method, path string, body any) response {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = bytes.NewReader([]byte(b))
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return response{resp.StatusCode, data}
}

// must sends as the owner and fails unless the status is want.
func (e *env) must(want int, method, path string, body any) response {
	e.t.Helper()
	r := e.do(ownerKey, method, path, body)
	if r.status != want {
		e.t.Fatalf("%s %s: %d, want %d: %s", method, path, r.status, want, r.body)
	}
	return r
}

// create makes a collection and returns its id.
func (e *env) create(body map[string]any) string {
	e.t.Helper()
	var a CollectionAnswer
	e.must(http.StatusCreated, "POST", "/api/projects/"+e.project+"/vectors", body).decode(e.t, &a)
	return a.Collection.ID
}

// count reads a collection's vector count.
func (e *env) count(id string) int {
	e.t.Helper()
	var a CollectionAnswer
	e.must(http.StatusOK, "GET", "/api/vectors/"+id, nil).decode(e.t, &a)
	return a.Collection.VectorCount
}

// query runs a query as the owner and returns the ids in order.
func (e *env) query(id string, body map[string]any) QueryAnswer {
	e.t.Helper()
	var a QueryAnswer
	e.must(http.StatusOK, "POST", "/api/vectors/"+id+"/query", body).decode(e.t, &a)
	return a
}

func ids(a QueryAnswer) []string {
	out := []string{}
	for _, m := range a.Matches {
		out = append(out, m.ID)
	}
	return out
}

// vec is a deterministic vector of dims values with v[0] = first.
func vec(dims int, seed uint64) []float32 {
	rng := rand.New(rand.NewPCG(seed, 99))
	v := make([]float32, dims)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}
