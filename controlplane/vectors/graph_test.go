package vectors

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/vectors/synth"
)

// TestGraphAboveThresholdKeepsRecallAndFreshness: a collection past the
// threshold gets an HNSW graph; unfiltered queries through it keep
// recall@10 >= 0.95 against the exact scan, and vectors written after the
// graph was built are found at once (scanned until the graph covers them).
func TestGraphAboveThresholdKeepsRecallAndFreshness(t *testing.T) {
	n, threshold := 3000, 1000
	if testing.Short() || raceEnabled {
		n, threshold = 1200, 500
	}
	e := newEnv(t, plans.Pro, Config{GraphThreshold: threshold})
	id := e.create(map[string]any{"name": "c", "dimensions": 384})
	data := synth.Clustered(n, 384, 20, 1.0, 5)
	for lo := 0; lo < n; lo += 1000 {
		var vs []map[string]any
		for i := lo; i < min(lo+1000, n); i++ {
			vs = append(vs, map[string]any{"id": fmt.Sprint("p", i), "values": data[i]})
		}
		e.must(http.StatusAccepted, "POST", "/api/vectors/"+id+"/upsert", map[string]any{"vectors": vs})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	if err := e.svc.WaitIndexed(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("graph of %d built in %v", n, time.Since(start))
	c, err := e.svc.open(ctx, record{ID: id})
	if err != nil {
		t.Fatal(err)
	}
	c.mu.RLock()
	hasGraph := c.g != nil && c.g.Covered() == n
	c.mu.RUnlock()
	if !hasGraph {
		t.Fatal("no graph past the threshold")
	}
	found, total := 0, 0
	for _, q := range synth.Queries(40, 384, 20, 1.0, 5) {
		approx := e.query(id, map[string]any{"vector": q, "topK": 10})
		// The exact answer: a namespace filter ("" is every vector here)
		// forces the exact scan.
		exact := e.query(id, map[string]any{"vector": q, "topK": 10, "namespace": ""})
		want := map[string]bool{}
		for _, m := range exact.Matches {
			want[m.ID] = true
		}
		for _, m := range approx.Matches {
			if want[m.ID] {
				found++
			}
		}
		total += len(want)
	}
	if r := float64(found) / float64(total); r < 0.95 {
		t.Fatalf("recall@10 through the service = %.3f", r)
	}
	// A fresh vector is found before the indexer has run.
	fresh := synth.Queries(1, 384, 20, 1.0, 77)[0]
	e.must(http.StatusAccepted, "POST", "/api/vectors/"+id+"/upsert", map[string]any{"vectors": []any{map[string]any{"id": "fresh", "values": fresh}}})
	if a := e.query(id, map[string]any{"vector": fresh, "topK": 1}); a.Matches[0].ID != "fresh" {
		t.Fatalf("fresh vector not found: %v", ids(a))
	}
	// Deleted vectors are never returned by the graph.
	e.must(http.StatusOK, "POST", "/api/vectors/"+id, map[string]any{"action": "delete", "ids": []string{"fresh"}})
	if a := e.query(id, map[string]any{"vector": fresh, "topK": 5}); a.Matches[0].ID == "fresh" {
		t.Fatal("deleted vector returned")
	}
}
