package vectors_test

// The tests here only call the API: they run against the whole control
// plane as the platform assembles it (controlplane/cptest), so the route
// table, authentication and permissions are the real ones.

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"

	"github.com/svcplatform/platform/controlplane/cptest"
)

const ownerKey = cptest.OwnerKey

// env wraps a cptest control plane with the few helpers these tests use.
type env struct {
	t       *testing.T
	cp      *cptest.Env
	project string
}

func newEnv(t *testing.T) *env {
	cp := cptest.New(t)
	return &env{t: t, cp: cp, project: cp.CreateProject("app")}
}

type response struct {
	Status int
	Body   []byte
	errc   string
}

func (r response) Code() string { return r.errc }

func (e *env) do(key, method, path string, body any) response {
	e.t.Helper()
	r := e.cp.Client(key).Do(method, path, body)
	return response{r.Status, r.Body, r.ErrorCode()}
}

func (e *env) must(want int, method, path string, body any) *cptest.Response {
	e.t.Helper()
	return e.cp.Owner.Must(want, method, path, body)
}

func (e *env) newProject(name string) string { return e.cp.CreateProject(name) }

func (e *env) key(access, project string) string { return e.cp.NewKey(access, project).Key }

// create makes a collection and returns its id.
func (e *env) create(body map[string]any) string {
	e.t.Helper()
	var a struct {
		Collection struct {
			ID string `json:"id"`
		} `json:"collection"`
	}
	e.must(http.StatusCreated, "POST", "/api/projects/"+e.project+"/vectors", body).JSON(e.t, &a)
	return a.Collection.ID
}

// count reads a collection's vector count.
func (e *env) count(id string) int {
	e.t.Helper()
	var a struct {
		VectorCount int `json:"vectorCount"`
	}
	e.must(http.StatusOK, "GET", "/api/vectors/"+id, nil).JSON(e.t, &a)
	return a.VectorCount
}

// vec is a deterministic vector of dims values.
func vec(dims int, seed uint64) []float32 {
	rng := rand.New(rand.NewPCG(seed, 99))
	v := make([]float32, dims)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

func upsertBody(n, dims int) map[string]any {
	var vs []map[string]any
	for i := 0; i < n; i++ {
		vs = append(vs, map[string]any{"id": fmt.Sprint("b", i), "values": vec(dims, uint64(i))})
	}
	return map[string]any{"vectors": vs}
}

func TestUpsertBadInput(t *testing.T) {
	e := newEnv(t)
	id := e.create(map[string]any{"name": "c", "dimensions": 384})
	good := func(extra map[string]any) map[string]any {
		v := map[string]any{"id": "x", "values": vec(384, 1)}
		for k, x := range extra {
			v[k] = x
		}
		return map[string]any{"vectors": []any{map[string]any{"id": "ok", "values": vec(384, 2)}, v}}
	}
	nums := func(prefix string) string {
		var b strings.Builder
		b.WriteString(prefix)
		for i := 1; i < 384; i++ {
			b.WriteString(",0.5")
		}
		return b.String()
	}
	texts := map[string]any{"vectors": func() []any {
		var vs []any
		for i := 0; i < 101; i++ {
			vs = append(vs, map[string]any{"id": fmt.Sprint("t", i), "text": "hello"})
		}
		return vs
	}()}
	tests := []struct {
		name   string
		body   any
		status int
		code   string
		msg    string
	}{
		{"wrong dimension count", good(map[string]any{"values": vec(383, 1)}), 400, "dimension_mismatch", "has 383 values"},
		{"NaN", `{"vectors":[{"id":"x","values":[NaN]}]}`, 400, "invalid_request", "malformed JSON"},
		{"infinite", `{"vectors":[{"id":"x","values":[` + nums("1e39") + `]}]}`, 400, "invalid_values", "not a finite number"},
		{"infinite literal", `{"vectors":[{"id":"x","values":[` + nums("1e999") + `]}]}`, 400, "invalid_values", "not a finite number"},
		{"string value", `{"vectors":[{"id":"x","values":["a"]}]}`, 400, "", ""},
		{"oversized metadata", good(map[string]any{"metadata": map[string]any{"s": strings.Repeat("x", 10*1024)}}), 400, "metadata_too_large", "at most 10240"},
		{"metadata not an object", good(map[string]any{"metadata": []int{1}}), 400, "invalid_request", "JSON object"},
		{"id too long", good(map[string]any{"id": strings.Repeat("i", 65)}), 400, "id_too_long", "at most 64"},
		{"no id", good(map[string]any{"id": ""}), 400, "invalid_request", "id is required"},
		{"duplicate id", good(map[string]any{"id": "ok"}), 400, "duplicate_id", "both have id"},
		{"namespace too long", good(map[string]any{"namespace": strings.Repeat("n", 65)}), 400, "namespace_too_long", ""},
		{"values and text", good(map[string]any{"text": "hi"}), 400, "invalid_request", "both values and text"},
		{"neither", map[string]any{"vectors": []any{map[string]any{"id": "x"}}}, 400, "invalid_request", "needs values"},
		{"empty", map[string]any{"vectors": []any{}}, 400, "invalid_request", "empty"},
		{"1001 vectors", upsertBody(1001, 384), 400, "too_many_vectors", "at most 1000"},
		{"101 texts", texts, 400, "too_many_vectors", "at most 100"},
		{"zero vector under cosine", good(map[string]any{"values": make([]float32, 384)}), 400, "zero_vector", ""},
		{"unknown field", good(map[string]any{"sparse": true}), 400, "unknown_field", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(ownerKey, "POST", "/api/vectors/"+id+"/upsert", tc.body)
			if r.Status != tc.status || (tc.code != "" && r.Code() != tc.code) || !strings.Contains(string(r.Body), tc.msg) {
				t.Fatalf("%d %.300s, want %d %s %q", r.Status, r.Body, tc.status, tc.code, tc.msg)
			}
			if n := e.count(id); n != 0 {
				t.Fatalf("%d vectors stored after a refused upsert", n)
			}
		})
	}
	// 1,000 is accepted.
	e.must(http.StatusAccepted, "POST", "/api/vectors/"+id+"/upsert", upsertBody(1000, 384))
	if n := e.count(id); n != 1000 {
		t.Fatalf("count %d", n)
	}
}

func TestQueryBadInput(t *testing.T) {
	e := newEnv(t)
	id := e.create(map[string]any{"name": "c", "dimensions": 384, "metadataIndexes": []map[string]any{{"propertyName": "genre", "indexType": "string"}}})
	q := vec(384, 1)
	tests := []struct {
		name string
		body map[string]any
		code string
		msg  string
	}{
		{"no vector", map[string]any{}, "invalid_request", "vector or text is required"},
		{"both", map[string]any{"vector": q, "text": "x"}, "invalid_request", "not both"},
		{"wrong dimensions", map[string]any{"vector": vec(768, 1)}, "dimension_mismatch", ""},
		{"topK zero", map[string]any{"vector": q, "topK": 0}, "invalid_top_k", ""},
		{"topK 101", map[string]any{"vector": q, "topK": 101}, "invalid_top_k", "1 to 100"},
		{"topK 51 with values", map[string]any{"vector": q, "topK": 51, "returnValues": true}, "invalid_top_k", "at most 50"},
		{"topK 51 with all metadata", map[string]any{"vector": q, "topK": 51, "returnMetadata": "all"}, "invalid_top_k", "at most 50"},
		{"bad returnMetadata", map[string]any{"vector": q, "returnMetadata": "some"}, "invalid_request", ""},
		{"unindexed field", map[string]any{"vector": q, "filter": map[string]any{"year": 1999}}, "filter_field_not_indexed", `\"year\" is not indexed`},
		{"unknown operator", map[string]any{"vector": q, "filter": map[string]any{"genre": map[string]any{"$regex": "x"}}}, "invalid_filter", "unknown operator"},
		{"nested too deep", map[string]any{"vector": q, "filter": map[string]any{"genre": map[string]any{"a": map[string]any{"b": 1}}}}, "invalid_filter", "nested too deep"},
		{"type mismatch", map[string]any{"vector": q, "filter": map[string]any{"genre": 3}}, "filter_type_mismatch", "indexed as string"},
		{"zero query", map[string]any{"vector": make([]float32, 384)}, "zero_vector", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(ownerKey, "POST", "/api/vectors/"+id+"/query", tc.body)
			if r.Status != 400 || r.Code() != tc.code || !strings.Contains(string(r.Body), tc.msg) {
				t.Fatalf("%d %.300s, want 400 %s %q", r.Status, r.Body, tc.code, tc.msg)
			}
		})
	}
	if r := e.do(ownerKey, "POST", "/api/vectors/"+id+"/query", map[string]any{"vector": q, "filter": map[string]any{"year": 1}}); !strings.Contains(string(r.Body), `"field":"year"`) {
		t.Fatalf("the error does not name the field: %s", r.Body)
	}
}

func TestPermissions(t *testing.T) {
	e := newEnv(t)
	id := e.create(map[string]any{"name": "c", "dimensions": 384})
	other := e.newProject("other")
	readOnly, ownProject, otherProject := e.key("read_only", ""), e.key("full", e.project), e.key("full", other)
	q := map[string]any{"vector": vec(384, 1)}
	up := map[string]any{"vectors": []any{map[string]any{"id": "a", "values": vec(384, 1)}}}
	tests := []struct {
		name, key, method, path string
		body                    any
		status                  int
	}{
		{"read-only queries", readOnly, "POST", "/api/vectors/" + id + "/query", q, 200},
		{"read-only reads", readOnly, "GET", "/api/vectors/" + id, nil, 200},
		{"read-only cannot upsert", readOnly, "POST", "/api/vectors/" + id + "/upsert", up, 403},
		{"read-only cannot delete", readOnly, "DELETE", "/api/vectors/" + id, nil, 403},
		{"read-only cannot create", readOnly, "POST", "/api/projects/" + e.project + "/vectors", map[string]any{"name": "x"}, 403},
		{"project key upserts", ownProject, "POST", "/api/vectors/" + id + "/upsert", up, 202},
		{"project key queries", ownProject, "POST", "/api/vectors/" + id + "/query", q, 200},
		{"other project key cannot query", otherProject, "POST", "/api/vectors/" + id + "/query", q, 403},
		{"other project key cannot create here", otherProject, "POST", "/api/projects/" + e.project + "/vectors", map[string]any{"name": "x"}, 403},
		{"no key", "", "GET", "/api/vectors/" + id, nil, 401},
		{"unknown collection", ownerKey, "GET", "/api/vectors/vec_nope", nil, 404},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if r := e.do(tc.key, tc.method, tc.path, tc.body); r.Status != tc.status {
				t.Fatalf("%d %s, want %d", r.Status, r.Body, tc.status)
			}
		})
	}
}
