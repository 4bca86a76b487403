package vectors

import (
	"context"
	"hash/fnv"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/internal/areatest"
	"github.com/svcplatform/platform/controlplane/plans"
)

const ownerKey = areatest.OwnerKey

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
	*areatest.Core
	t        testing.TB
	svc      *Service
	stop     func() // ends the service's Run and waits for it
	srv      *httptest.Server
	embedder *fakeEmbedder
	project  string
	cfg      Config
}

func newEnv(t testing.TB, plan plans.Name, cfgs ...Config) *env {
	t.Helper()
	e := &env{Core: areatest.NewCore(t, plan), t: t, embedder: &fakeEmbedder{}}
	e.project = e.NewProject("app")
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
	cfg.Dir = filepath.Join(e.Dir, "vectors")
	svc, err := New(context.Background(), cfg, Deps{DB: e.DB, Clock: e.Clock, Audit: e.Audit, Meter: e.Meter,
		Projects: e.Projects, Plans: e.Accounts, Embedder: e.embedder,
		Logger: areatest.Discard()})
	if err != nil {
		e.t.Fatal(err)
	}
	stop := areatest.Start(e.t, svc.Run)
	mux := http.NewServeMux()
	api.Mount(mux, Routes(Handlers{S: svc}), api.MountOptions{Authn: e.Accounts, Log: areatest.Discard()})
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

// response is an answer of the test server.
type response = areatest.Response

// do sends a request as key.
func (e *env) do(key, method, path string, body any) response {
	e.t.Helper()
	return areatest.Call(e.t, e.srv, key, method, path, body)
}

// must sends as the owner and fails unless the status is want.
func (e *env) must(want int, method, path string, body any) response {
	e.t.Helper()
	return areatest.Must(e.t, want, e.srv, ownerKey, method, path, body)
}

// create makes a collection and returns its id.
func (e *env) create(body map[string]any) string {
	e.t.Helper()
	var a CollectionAnswer
	e.must(http.StatusCreated, "POST", "/api/projects/"+e.project+"/vectors", body).Decode(e.t, &a)
	return a.Collection.ID
}

// count reads a collection's vector count.
func (e *env) count(id string) int {
	e.t.Helper()
	var a CollectionAnswer
	e.must(http.StatusOK, "GET", "/api/vectors/"+id, nil).Decode(e.t, &a)
	return a.Collection.VectorCount
}

// query runs a query as the owner and returns the ids in order.
func (e *env) query(id string, body map[string]any) QueryAnswer {
	e.t.Helper()
	var a QueryAnswer
	e.must(http.StatusOK, "POST", "/api/vectors/"+id+"/query", body).Decode(e.t, &a)
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
