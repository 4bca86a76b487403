package vectors

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/svcplatform/platform/controlplane/plans"
)

// TestConcurrentWritesQueriesAndIndexing runs upserts, deletes, queries
// (plain, filtered, with values) and the background graph builder on one
// collection at once; under -race this checks the locking. Every query
// answers 200 and the final count is exact.
func TestConcurrentWritesQueriesAndIndexing(t *testing.T) {
	e := newEnv(t, plans.Pro, Config{GraphThreshold: 200})
	id := e.create(map[string]any{"name": "c", "dimensions": 384, "metadataIndexes": []map[string]any{{"propertyName": "w", "indexType": "number"}}})
	ctx := context.Background()
	const writers, batches, per = 2, 4, 100
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for b := 0; b < batches; b++ {
				var vs []map[string]any
				for i := 0; i < per; i++ {
					vs = append(vs, map[string]any{"id": fmt.Sprint(w, "-", b, "-", i), "values": vec(384, uint64(w*10000+b*100+i)), "metadata": map[string]any{"w": w}})
				}
				body, _ := json.Marshal(map[string]any{"vectors": vs})
				if _, err := e.svc.Upsert(ctx, e.Owner, id, body); err != nil {
					errs <- err
					return
				}
				if _, err := e.svc.DeleteVectors(ctx, e.Owner, id, []string{fmt.Sprint(w, "-", b, "-0")}); err != nil {
					errs <- err
					return
				}
			}
		}(w)
	}
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				k := 5
				req := QueryRequest{TopK: &k, ReturnValues: r == 1}
				req.Vector = NewNumbers(vec(384, uint64(i)))
				if r == 2 {
					req.Filter = json.RawMessage(`{"w": 1}`)
				}
				if _, err := e.svc.Query(ctx, e.Owner, id, req); err != nil {
					errs <- err
					return
				}
			}
		}(r)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := e.count(id); n != writers*batches*(per-1) {
		t.Fatalf("count %d, want %d", n, writers*batches*(per-1))
	}
	if err := e.svc.WaitIndexed(ctx); err != nil {
		t.Fatal(err)
	}
}
