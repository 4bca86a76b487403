package memory

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/metering"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

// TestMetering: every key operation counts as memory_operations (one per
// key of a bulk call, one per listing, reads of missing keys included),
// per project, once, flushed in batches; store management is not counted.
func TestMetering(t *testing.T) { eachEngine(t, testMetering) }

func testMetering(t *testing.T, e pgtest.Engine) {
	f := newFixture(t, e, Config{})
	st := f.create("kv")
	base := "/api/memory/" + st.ID
	for _, c := range []struct {
		name, key, method, path string
		body                    any
		ops                     float64
	}{
		{"put", "dev", "PUT", keyPath(st.ID, "a"), "v", 1},
		{"get", "viewer", "GET", keyPath(st.ID, "a"), nil, 1},
		{"get a missing key", "viewer", "GET", keyPath(st.ID, "nothing"), nil, 1},
		{"list", "viewer", "GET", base + "/keys", nil, 1},
		{"bulk put of 3", "dev", "PUT", base + "/bulk", map[string]any{"entries": []map[string]any{{"key": "b", "value": "1"}, {"key": "c", "value": "2"}, {"key": "d", "value": "3"}}}, 3},
		{"bulk get of 4", "viewer", "POST", base + "/bulk/get", map[string]any{"keys": []string{"a", "b", "c", "x"}}, 4},
		{"bulk delete of 2", "dev", "POST", base + "/bulk/delete", map[string]any{"keys": []string{"b", "c"}}, 2},
		{"delete", "dev", "DELETE", keyPath(st.ID, "d"), nil, 1},
		{"store read", "viewer", "GET", base, nil, 0},
		{"refused write", "viewer", "PUT", keyPath(st.ID, "a"), "v", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := f.operations()
			f.call(c.key, c.method, c.path, c.body)
			if got := f.operations() - before; got != c.ops {
				t.Fatalf("counted %v operations, want %v", got, c.ops)
			}
		})
	}
	// Many operations make one event per project and day.
	for range 50 {
		f.must(http.StatusOK, "viewer", "GET", keyPath(st.ID, "a"), nil)
	}
	before := f.count("usage_events")
	f.operations()
	if n := f.count("usage_events") - before; n != 1 {
		t.Fatalf("50 gets made %d usage events, want 1", n)
	}
	n, err := f.meter.Total(context.Background(), "ws_a", "prj_a", metering.MemoryOperations, t0.Add(-time.Hour), t0.Add(time.Hour))
	if err != nil || n != 14+50 {
		t.Fatalf("prj_a's memory_operations = %v, %v; want 64", n, err)
	}
	// Close flushes what is left.
	f.must(http.StatusOK, "viewer", "GET", keyPath(st.ID, "a"), nil)
	if err := f.svc.Close(); err != nil {
		t.Fatal(err)
	}
	if n, _ := f.meter.Total(context.Background(), "ws_a", "prj_a", metering.MemoryOperations, t0.Add(-time.Hour), t0.Add(time.Hour)); n != 65 {
		t.Fatalf("after Close: %v, want 65", n)
	}
}

// TestTeardown: deleting a project removes its stores and all their keys
// (in batches), leaves other projects' stores, and is safe to run again;
// an interrupted store removal is finished by the sweep.
func TestTeardown(t *testing.T) { eachEngine(t, testTeardown) }

func testTeardown(t *testing.T, e pgtest.Engine) {
	f := newFixture(t, e, Config{SweepBatch: 10})
	a, b := f.create("a"), f.create("b")
	var other StoreAnswer
	f.must(http.StatusCreated, "dev", "POST", "/api/projects/prj_b/memory", map[string]any{"name": "kept"}).Decode(t, &other)
	for _, id := range []string{a.ID, b.ID, other.Store.ID} {
		var es []map[string]any
		for i := range 35 {
			es = append(es, map[string]any{"key": fmt.Sprintf("k%02d", i), "value": "v"})
		}
		f.must(http.StatusOK, "dev", "PUT", "/api/memory/"+id+"/bulk", map[string]any{"entries": es})
	}
	if bl, err := f.svc.Blockers(context.Background(), "prj_a"); err != nil || len(bl) != 0 {
		t.Fatalf("blockers = %v, %v", bl, err)
	}
	st, err := f.svc.Stored(context.Background(), "ws_a")
	if err != nil || len(st) != 2 || st[0] != (Stored{Project: "prj_a", Keys: 70, Bytes: 70 * 4}) || st[1].Project != "prj_b" {
		t.Fatalf("stored = %+v, %v", st, err)
	}
	for range 2 { // a second run finds nothing left and succeeds
		if err := f.svc.Remove(context.Background(), "prj_a"); err != nil {
			t.Fatal(err)
		}
		if n := f.count("memory_stores", "project_id = ?", "prj_a"); n != 0 {
			t.Fatalf("%d stores of prj_a left", n)
		}
		if n := f.count("memory_keys", "store_id IN (?, ?)", a.ID, b.ID); n != 0 {
			t.Fatalf("%d keys of prj_a left", n)
		}
	}
	if n, _ := f.svc.Count(context.Background(), "prj_a"); n != 0 {
		t.Fatalf("prj_a counts %d stores", n)
	}
	if s := f.store(other.Store.ID); s.Keys != 35 {
		t.Fatalf("prj_b's store: %+v", s)
	}
	// A deletion cut short (the store marked, its keys still there) is
	// finished by the sweep.
	if _, err := f.db.ExecContext(context.Background(), `UPDATE memory_stores SET status = 'deleting' WHERE id = ?`, other.Store.ID); err != nil {
		t.Fatal(err)
	}
	f.must(http.StatusNotFound, "viewer", "GET", "/api/memory/"+other.Store.ID, nil)
	f.sweep()
	if n, m := f.count("memory_stores"), f.count("memory_keys"); n != 0 || m != 0 {
		t.Fatalf("after the sweep: %d stores, %d keys", n, m)
	}
}

// TestConcurrentWrites: puts and deletes racing on one store, new keys and
// the same keys, keep the store's counts equal to its rows on both
// engines (on PostgreSQL the store's row is locked, not retried).
func TestConcurrentWrites(t *testing.T) { eachEngine(t, testConcurrentWrites) }

func testConcurrentWrites(t *testing.T, e pgtest.Engine) {
	f := newFixture(t, e, Config{})
	st := f.create("kv")
	const workers, each = 6, 15
	var wg sync.WaitGroup
	errs := make(chan string, workers*each*2)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				for _, rq := range []struct{ method, key, body string }{
					{"PUT", fmt.Sprintf("own-%d-%d", w, i), "value"},
					{"PUT", fmt.Sprintf("shared-%d", i%5), fmt.Sprintf("from %d", w)},
					{"DELETE", fmt.Sprintf("shared-%d", (i+w)%5), ""},
				} {
					var body any
					if rq.body != "" {
						body = rq.body
					}
					if r := f.call("dev", rq.method, keyPath(st.ID, rq.key), body); r.Status != http.StatusOK {
						errs <- fmt.Sprintf("%s %s: %d %s", rq.method, rq.key, r.Status, r.Body)
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	f.consistent(st.ID)
	if n := f.count("memory_keys", "store_id = ? AND key_name >= ? AND key_name < ?", st.ID, []byte("own-"), []byte("own.")); n != workers*each {
		t.Fatalf("%d own keys, want %d", n, workers*each)
	}
}

// TestRunFlushes: while Run runs, counted operations reach the meter every
// FlushEvery without a Close; Run returns when its context ends.
func TestRunFlushes(t *testing.T) {
	f := newFixture(t, pgtest.Engines()[0], Config{FlushEvery: 5 * time.Millisecond})
	st := f.create("kv")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.svc.Run(ctx) }()
	f.must(http.StatusOK, "dev", "PUT", keyPath(st.ID, "k"), "v")
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, err := f.meter.Total(context.Background(), "ws_a", "prj_a", metering.MemoryOperations, t0.Add(-time.Hour), t0.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("memory_operations %v after 10 s of Run, want 1", n)
		}
		runtime.Gosched()
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run returned %v", err)
	}
}
