package vectors

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/svcplatform/platform/controlplane/plans"
)

// TestReplacedVectorsDoNotGrowMemory: rewriting the same ids again and
// again leaves dead slots, which compaction reclaims; answers, namespaces
// and filters stay right across it.
func TestReplacedVectorsDoNotGrowMemory(t *testing.T) {
	e := newEnv(t, plans.Pro, Config{GraphThreshold: 500})
	id := e.create(map[string]any{"name": "c", "dimensions": 384, "metadataIndexes": []map[string]any{{"propertyName": "round", "indexType": "number"}}})
	const n, rounds = 200, 15
	for r := 0; r < rounds; r++ {
		var vs []map[string]any
		for i := 0; i < n; i++ {
			vs = append(vs, map[string]any{"id": fmt.Sprint("r", i), "values": vec(384, uint64(r*1000+i)), "namespace": fmt.Sprint("ns", i%2),
				"metadata": map[string]any{"round": r}})
		}
		body, _ := json.Marshal(map[string]any{"vectors": vs})
		if _, err := e.svc.Upsert(t.Context(), e.Owner, id, body); err != nil {
			t.Fatal(err)
		}
	}
	c, err := e.svc.open(t.Context(), record{ID: id})
	if err != nil {
		t.Fatal(err)
	}
	c.mu.RLock()
	slots, live := c.st.Slots(), c.st.Live()
	c.mu.RUnlock()
	if live != n || slots > 2*compactMin+n {
		t.Fatalf("%d slots for %d live vectors", slots, live)
	}
	last := rounds - 1
	a := e.query(id, map[string]any{"vector": vec(384, uint64(last*1000+7)), "topK": 1, "namespace": "ns1", "filter": map[string]any{"round": last}})
	if fmt.Sprint(ids(a)) != "[r7]" {
		t.Fatalf("after compaction: %v", ids(a))
	}
	if a := e.query(id, map[string]any{"vector": vec(384, 1), "topK": 100, "filter": map[string]any{"round": map[string]any{"$lt": last}}}); a.Count != 0 {
		t.Fatalf("old rounds still indexed: %v", ids(a))
	}
	e.must(http.StatusOK, "GET", "/api/vectors/"+id, nil)
}
