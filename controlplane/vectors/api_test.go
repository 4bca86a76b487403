package vectors

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/svcplatform/platform/controlplane/metering"
	"github.com/svcplatform/platform/controlplane/plans"
)

func TestCreate(t *testing.T) {
	e := newEnv(t, plans.Pro)
	tests := []struct {
		name   string
		body   map[string]any
		status int
		code   string
	}{
		{"defaults", map[string]any{"name": "docs"}, 201, ""},
		{"every metric", map[string]any{"name": "e", "dimensions": 1536, "metric": "euclidean"}, 201, ""},
		{"dot product", map[string]any{"name": "d", "dimensions": 384, "metric": "dot-product"}, 201, ""},
		{"with indexes", map[string]any{"name": "i", "metadataIndexes": []map[string]any{{"propertyName": "a.b", "indexType": "number"}}}, 201, ""},
		{"name taken", map[string]any{"name": "docs"}, 409, "name_taken"},
		{"no name", map[string]any{}, 400, "invalid_request"},
		{"odd dimensions", map[string]any{"name": "x", "dimensions": 100}, 400, "invalid_dimensions"},
		{"too many dimensions", map[string]any{"name": "x", "dimensions": 3072}, 400, "dimensions_too_large"},
		{"unknown metric", map[string]any{"name": "x", "metric": "manhattan"}, 400, "invalid_metric"},
		{"unknown index type", map[string]any{"name": "x", "metadataIndexes": []map[string]any{{"propertyName": "a", "indexType": "date"}}}, 400, "invalid_index_type"},
		{"index named twice", map[string]any{"name": "x", "metadataIndexes": []map[string]any{{"propertyName": "a", "indexType": "string"}, {"propertyName": "a", "indexType": "number"}}}, 400, "invalid_request"},
		{"dollar index", map[string]any{"name": "x", "metadataIndexes": []map[string]any{{"propertyName": "$a", "indexType": "string"}}}, 400, "invalid_request"},
		{"unknown field", map[string]any{"name": "x", "shards": 3}, 400, "unknown_field"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(ownerKey, "POST", "/api/projects/"+e.project+"/vectors", tc.body)
			if r.Status != tc.status || (tc.code != "" && r.Code() != tc.code) {
				t.Fatalf("%d %s, want %d %s", r.Status, r.Body, tc.status, tc.code)
			}
			if tc.status == 201 {
				var a CollectionAnswer
				r.Decode(t, &a)
				if a.Collection.ID == "" || a.Collection.ProjectID != e.project {
					t.Fatalf("answer %s", r.Body)
				}
				if tc.name == "defaults" && (a.Collection.Dimensions != 768 || a.Collection.Metric != "cosine") {
					t.Fatalf("defaults %+v", a.Collection)
				}
			}
		})
	}
	entries, _ := os.ReadDir(e.svc.cfg.Dir)
	if len(entries) != 4 { // the four created; refused creates leave no file
		t.Fatalf("%d files in the collections directory", len(entries))
	}
}

func TestPlanLimit(t *testing.T) {
	e := newEnv(t, plans.Hobby)
	e.create(map[string]any{"name": "one", "dimensions": 384})
	r := e.do(ownerKey, "POST", "/api/projects/"+e.project+"/vectors", map[string]any{"name": "two", "dimensions": 384})
	if r.Status != http.StatusPaymentRequired || r.Code() != "plan_limit" || !strings.Contains(string(r.Body), `"required_plan":"pro"`) {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if n, _ := e.svc.Count(context.Background(), e.project); n != 1 {
		t.Fatalf("count %d", n)
	}
}

func TestUpsertQueryScores(t *testing.T) {
	for _, m := range []string{"cosine", "euclidean", "dot-product"} {
		t.Run(m, func(t *testing.T) {
			e := newEnv(t, plans.Pro)
			id := e.create(map[string]any{"name": "c", "dimensions": 384, "metric": m})
			var vs []map[string]any
			for i := 0; i < 20; i++ {
				vs = append(vs, map[string]any{"id": fmt.Sprint("v", i), "values": vec(384, uint64(i)), "metadata": map[string]any{"i": i}})
			}
			var a MutationAnswer
			e.must(http.StatusAccepted, "POST", "/api/vectors/"+id+"/upsert", map[string]any{"vectors": vs}).Decode(t, &a)
			if a.Count != 20 || a.MutationID == "" || len(a.IDs) != 20 {
				t.Fatalf("answer %+v", a)
			}
			// Visible as soon as answered.
			q := e.query(id, map[string]any{"vector": vec(384, 7), "topK": 3, "returnValues": true, "returnMetadata": "all"})
			if q.Count != 3 || q.Matches[0].ID != "v7" {
				t.Fatalf("matches %+v", ids(q))
			}
			top := q.Matches[0]
			want := map[string]float64{"cosine": 1, "euclidean": 0}[m]
			if m == "dot-product" {
				v := vec(384, 7)
				want = 0
				for _, x := range v {
					want -= float64(x) * float64(x)
				}
			}
			if math.Abs(top.Score-want) > 1e-3*math.Max(1, math.Abs(want)) {
				t.Fatalf("score %v, want %v", top.Score, want)
			}
			if len(top.Values) != 384 || top.Values[0] != vec(384, 7)[0] || top.Metadata["i"] != float64(7) {
				t.Fatalf("values or metadata missing: %+v", top.Metadata)
			}
			// Order: cosine descending; the others ascending.
			for i := 1; i < len(q.Matches); i++ {
				if (m == "cosine") != (q.Matches[i].Score <= q.Matches[i-1].Score) {
					t.Fatalf("order %+v", q.Matches)
				}
			}
			// Default topK is 5; no metadata unless asked.
			q = e.query(id, map[string]any{"vector": vec(384, 3)})
			if q.Count != 5 || q.Matches[0].Metadata != nil || q.Matches[0].Values != nil {
				t.Fatalf("defaults %+v", q)
			}
			// An upsert replaces.
			e.must(http.StatusAccepted, "POST", "/api/vectors/"+id+"/upsert", map[string]any{"vectors": []any{map[string]any{"id": "v7", "values": vec(384, 1000)}}})
			if n := e.count(id); n != 20 {
				t.Fatalf("count %d after replacing", n)
			}
			if q := e.query(id, map[string]any{"vector": vec(384, 1000), "topK": 1}); q.Matches[0].ID != "v7" {
				t.Fatalf("replaced vector not found: %v", ids(q))
			}
		})
	}
}

// upsertBody is an upsert of n vectors of dims values.
func upsertBody(n, dims int) map[string]any {
	var vs []map[string]any
	for i := 0; i < n; i++ {
		vs = append(vs, map[string]any{"id": fmt.Sprint("b", i), "values": vec(dims, uint64(i))})
	}
	return map[string]any{"vectors": vs}
}

func TestFiltersAreExactAndIndexesCoverLaterWrites(t *testing.T) {
	e := newEnv(t, plans.Pro)
	id := e.create(map[string]any{"name": "c", "dimensions": 384, "metadataIndexes": []map[string]any{
		{"propertyName": "genre", "indexType": "string"}, {"propertyName": "year", "indexType": "number"},
		{"propertyName": "meta.free", "indexType": "boolean"}}})
	genres := []string{"drama", "comedy", "horror"}
	var vs []map[string]any
	for i := 0; i < 60; i++ {
		md := map[string]any{"genre": genres[i%3], "year": 1990 + i, "meta": map[string]any{"free": i%2 == 0}, "director": fmt.Sprint("d", i%4)}
		if i == 59 {
			md = map[string]any{"year": "unknown"} // no genre; year of another type
		}
		vs = append(vs, map[string]any{"id": fmt.Sprint("m", i), "values": vec(384, uint64(i)), "metadata": md})
	}
	e.must(http.StatusAccepted, "POST", "/api/vectors/"+id+"/upsert", map[string]any{"vectors": vs})
	q := vec(384, 5)
	tests := []struct {
		name   string
		filter map[string]any
		want   func(i int) bool
	}{
		{"implicit eq", map[string]any{"genre": "drama"}, func(i int) bool { return i < 59 && i%3 == 0 }},
		{"ne includes missing", map[string]any{"genre": map[string]any{"$ne": "drama"}}, func(i int) bool { return i == 59 || i%3 != 0 }},
		{"in", map[string]any{"genre": map[string]any{"$in": []string{"comedy", "horror"}}}, func(i int) bool { return i < 59 && i%3 != 0 }},
		{"nin", map[string]any{"genre": map[string]any{"$nin": []string{"comedy", "horror"}}}, func(i int) bool { return i == 59 || i%3 == 0 }},
		{"range", map[string]any{"year": map[string]any{"$gte": 2000, "$lt": 2010}}, func(i int) bool { return i >= 10 && i < 20 }},
		{"lte", map[string]any{"year": map[string]any{"$lte": 1992}}, func(i int) bool { return i <= 2 }},
		{"gt", map[string]any{"year": map[string]any{"$gt": 2040}}, func(i int) bool { return i > 50 && i < 59 }},
		{"and across fields", map[string]any{"genre": "comedy", "meta.free": true}, func(i int) bool { return i < 59 && i%3 == 1 && i%2 == 0 }},
		{"eq null matches missing", map[string]any{"genre": nil}, func(i int) bool { return i == 59 }},
		{"nothing", map[string]any{"genre": "western"}, func(int) bool { return false }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := e.query(id, map[string]any{"vector": q, "topK": 100, "filter": tc.filter, "returnMetadata": "indexed"})
			got := map[string]bool{}
			for _, m := range a.Matches {
				got[m.ID] = true
			}
			n := 0
			for i := 0; i < 60; i++ {
				if tc.want(i) {
					n++
					if !got[fmt.Sprint("m", i)] {
						t.Fatalf("m%d missing from %v", i, ids(a))
					}
				}
			}
			if n != len(a.Matches) {
				t.Fatalf("%d matches, want %d: %v", len(a.Matches), n, ids(a))
			}
			for _, m := range a.Matches {
				if _, ok := m.Metadata["director"]; ok {
					t.Fatalf("indexed metadata holds an unindexed field: %v", m.Metadata)
				}
			}
		})
	}
	// The true top k: with a filter, topK 3 is the 3 closest of the
	// filtered set, not a post-filtered top 3.
	all := e.query(id, map[string]any{"vector": q, "topK": 100, "filter": map[string]any{"genre": "horror"}})
	top3 := e.query(id, map[string]any{"vector": q, "topK": 3, "filter": map[string]any{"genre": "horror"}})
	if fmt.Sprint(ids(all)[:3]) != fmt.Sprint(ids(top3)) {
		t.Fatalf("top 3 %v, want %v", ids(top3), ids(all)[:3])
	}
	// An index created now covers only vectors written after it.
	e.must(http.StatusOK, "POST", "/api/vectors/"+id, map[string]any{"action": "index-metadata", "propertyName": "director", "indexType": "string"})
	if a := e.query(id, map[string]any{"vector": q, "filter": map[string]any{"director": "d1"}}); a.Count != 0 {
		t.Fatalf("old vectors matched a new index: %v", ids(a))
	}
	e.must(http.StatusAccepted, "POST", "/api/vectors/"+id+"/upsert", map[string]any{"vectors": []any{
		map[string]any{"id": "m1", "values": vec(384, 1), "metadata": map[string]any{"director": "d1"}}}})
	if a := e.query(id, map[string]any{"vector": q, "filter": map[string]any{"director": "d1"}}); fmt.Sprint(ids(a)) != "[m1]" {
		t.Fatalf("rewritten vector not covered: %v", ids(a))
	}
	if r := e.do(ownerKey, "POST", "/api/vectors/"+id, map[string]any{"action": "index-metadata", "propertyName": "director", "indexType": "string"}); r.Status != 409 || r.Code() != "index_exists" {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	// The indexes and their coverage survive a restart.
	e.restart(true)
	if a := e.query(id, map[string]any{"vector": q, "filter": map[string]any{"director": "d1"}}); fmt.Sprint(ids(a)) != "[m1]" {
		t.Fatalf("after restart: %v", ids(a))
	}
	if a := e.query(id, map[string]any{"vector": q, "topK": 100, "filter": map[string]any{"genre": "drama"}}); a.Count != 20 {
		t.Fatalf("after restart: %d drama", a.Count)
	}
}

func TestNamespacesAndDelete(t *testing.T) {
	e := newEnv(t, plans.Pro)
	id := e.create(map[string]any{"name": "c", "dimensions": 384})
	e.must(http.StatusAccepted, "POST", "/api/vectors/"+id+"/upsert", map[string]any{"vectors": []any{
		map[string]any{"id": "a", "values": vec(384, 1), "namespace": "t1"},
		map[string]any{"id": "b", "values": vec(384, 2), "namespace": "t2"},
		map[string]any{"id": "c", "values": vec(384, 3)},
	}})
	if a := e.query(id, map[string]any{"vector": vec(384, 2), "namespace": "t1"}); fmt.Sprint(ids(a)) != "[a]" || a.Matches[0].Namespace != "t1" {
		t.Fatalf("namespace t1: %+v", a)
	}
	if a := e.query(id, map[string]any{"vector": vec(384, 2), "namespace": "none"}); a.Count != 0 {
		t.Fatalf("unknown namespace: %v", ids(a))
	}
	if a := e.query(id, map[string]any{"vector": vec(384, 2)}); a.Count != 3 || a.Matches[0].ID != "b" {
		t.Fatalf("all namespaces: %v", ids(a))
	}
	var d MutationAnswer
	e.must(http.StatusOK, "POST", "/api/vectors/"+id, map[string]any{"action": "delete", "ids": []string{"b", "zz"}}).Decode(t, &d)
	if d.Count != 1 || fmt.Sprint(d.IDs) != "[b]" {
		t.Fatalf("delete answer %+v", d)
	}
	if n := e.count(id); n != 2 {
		t.Fatalf("count %d", n)
	}
	if a := e.query(id, map[string]any{"vector": vec(384, 2), "namespace": "t2"}); a.Count != 0 {
		t.Fatalf("deleted vector found: %v", ids(a))
	}
	for _, body := range []map[string]any{{"action": "delete"}, {"action": "delete", "ids": []string{strings.Repeat("x", 65)}}, {"action": "drop"}} {
		if r := e.do(ownerKey, "POST", "/api/vectors/"+id, body); r.Status != 400 {
			t.Fatalf("%v: %d %s", body, r.Status, r.Body)
		}
	}
	// Deleting the collection: later calls answer 410, the file is gone.
	e.must(http.StatusOK, "DELETE", "/api/vectors/"+id, nil)
	if r := e.do(ownerKey, "GET", "/api/vectors/"+id, nil); r.Status != 410 || r.Code() != "collection_deleted" {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if _, err := os.Stat(e.svc.path(id)); !os.IsNotExist(err) {
		t.Fatalf("file left: %v", err)
	}
}

func TestTeardownFailedProjectRefusesChanges(t *testing.T) {
	e := newEnv(t, plans.Pro)
	id := e.create(map[string]any{"name": "c", "dimensions": 384})
	if _, err := e.DB.Exec(`UPDATE projects SET status = 'teardown_failed' WHERE id = ?`, e.project); err != nil {
		t.Fatal(err)
	}
	up := map[string]any{"vectors": []any{map[string]any{"id": "a", "values": vec(384, 1)}}}
	if r := e.do(ownerKey, "POST", "/api/vectors/"+id+"/upsert", up); r.Status != 409 || r.Code() != "project_teardown_failed" {
		t.Fatalf("upsert: %d %s", r.Status, r.Body)
	}
	if r := e.do(ownerKey, "POST", "/api/projects/"+e.project+"/vectors", map[string]any{"name": "d", "dimensions": 384}); r.Status != 409 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	e.must(http.StatusOK, "POST", "/api/vectors/"+id+"/query", map[string]any{"vector": vec(384, 1)})
	e.must(http.StatusOK, "DELETE", "/api/vectors/"+id, nil)
}

func TestTextUpsertAndQuery(t *testing.T) {
	e := newEnv(t, plans.Pro)
	id := e.create(map[string]any{"name": "c", "dimensions": 384})
	e.must(http.StatusAccepted, "POST", "/api/vectors/"+id+"/upsert", map[string]any{"vectors": []any{
		map[string]any{"id": "cat", "text": "the cat sat"}, map[string]any{"id": "dog", "text": "a dog ran"}, map[string]any{"id": "v", "values": vec(384, 1)}}})
	if a := e.query(id, map[string]any{"text": "a dog ran", "topK": 1}); fmt.Sprint(ids(a)) != "[dog]" {
		t.Fatalf("text query: %v", ids(a))
	}
	big := e.create(map[string]any{"name": "big", "dimensions": 1536})
	if r := e.do(ownerKey, "POST", "/api/vectors/"+big+"/upsert", map[string]any{"vectors": []any{map[string]any{"id": "x", "text": "hi"}}}); r.Status != 400 || r.Code() != "no_embedding_model" {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	e.svc.d.Embedder = nil
	if r := e.do(ownerKey, "POST", "/api/vectors/"+id+"/query", map[string]any{"text": "hi"}); r.Status != 503 || r.Code() != "ai_unavailable" {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
}

func TestDurableAcrossCrashAndRestart(t *testing.T) {
	e := newEnv(t, plans.Pro)
	id := e.create(map[string]any{"name": "c", "dimensions": 384, "metric": "euclidean"})
	e.must(http.StatusAccepted, "POST", "/api/vectors/"+id+"/upsert", upsertBody(300, 384))
	e.must(http.StatusOK, "POST", "/api/vectors/"+id, map[string]any{"action": "delete", "ids": []string{"b0", "b1"}})
	before := e.query(id, map[string]any{"vector": vec(384, 42), "topK": 10})
	// A crash: the service is never closed; a new one reads the files.
	e.restart(false)
	if n := e.count(id); n != 298 {
		t.Fatalf("count %d after a crash", n)
	}
	after := e.query(id, map[string]any{"vector": vec(384, 42), "topK": 10})
	if fmt.Sprint(ids(before)) != fmt.Sprint(ids(after)) || after.Matches[0].Score != 0 {
		t.Fatalf("before %v, after %v", ids(before), ids(after))
	}
}

func TestProjectRemovalAndCounter(t *testing.T) {
	e := newEnv(t, plans.Pro)
	a := e.create(map[string]any{"name": "a", "dimensions": 384})
	e.create(map[string]any{"name": "b", "dimensions": 384})
	ctx := context.Background()
	if e.svc.Service() != "vectors" {
		t.Fatal(e.svc.Service())
	}
	if n, _ := e.svc.Count(ctx, e.project); n != 2 {
		t.Fatalf("count %d", n)
	}
	if err := e.svc.Remove(ctx, e.project); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.Remove(ctx, e.project); err != nil {
		t.Fatalf("second remove: %v", err)
	}
	if n, _ := e.svc.Count(ctx, e.project); n != 0 {
		t.Fatalf("count %d", n)
	}
	if r := e.do(ownerKey, "GET", "/api/vectors/"+a, nil); r.Status != 410 {
		t.Fatalf("%d", r.Status)
	}
	entries, _ := os.ReadDir(e.svc.cfg.Dir)
	if len(entries) != 0 {
		t.Fatalf("files left: %v", entries)
	}
}

func TestMetering(t *testing.T) {
	e := newEnv(t, plans.Pro)
	id := e.create(map[string]any{"name": "c", "dimensions": 384})
	e.must(http.StatusAccepted, "POST", "/api/vectors/"+id+"/upsert", upsertBody(10, 384))
	e.query(id, map[string]any{"vector": vec(384, 1)})
	e.query(id, map[string]any{"vector": vec(384, 2)})
	ctx := context.Background()
	if err := e.svc.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.Flush(ctx); err != nil { // stored vectors: once a day
		t.Fatal(err)
	}
	ws := e.Owner.WorkspaceID
	from, to := e.Clock.Now().Add(-24*3600e9), e.Clock.Now().Add(24*3600e9)
	for m, want := range map[metering.Metric]float64{MetricOperations: 3, MetricStored: 10, MetricQueriedDimensions: 2 * 10 * 384} {
		if got, err := e.Meter.Total(ctx, ws, e.project, m, from, to); err != nil || got != want {
			t.Fatalf("%s = %v (%v), want %v", m, got, err, want)
		}
	}
}
