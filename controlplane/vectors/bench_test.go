package vectors

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/vectors/index"
	"github.com/svcplatform/platform/controlplane/vectors/synth"
)

// BenchmarkCollection100k is the area's one-run benchmark: 100,000 x 768
// seeded clustered vectors upserted through the service (JSON decoding,
// the SQLite file, the in-memory index), then the same queries answered by
// a naive Go loop, the exact path and the approximate (HNSW) path, with
// p50/p99 latency per query, recall@10 against the exact path, upserts per
// second and memory per vector. Run it with
//
//	go test -run '^$' -bench Collection100k -benchtime 1x -timeout 60m ./controlplane/vectors/
//
// (VECTORS_BENCH_N changes the vector count.)
func BenchmarkCollection100k(b *testing.B) {
	n, dims, clusters, queries := 100_000, 768, 100, 200
	if s := os.Getenv("VECTORS_BENCH_N"); s != "" {
		fmt.Sscan(s, &n)
	}
	for b.Loop() {
		runCollectionBench(b, n, dims, clusters, queries)
	}
}

func runCollectionBench(b *testing.B, n, dims, clusters, nq int) {
	e := newEnv(b, plans.Enterprise)
	ctx := context.Background()
	id := e.create(map[string]any{"name": "bench", "dimensions": dims})
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	data := synth.Clustered(n, dims, clusters, 1.0, 2026)
	// Upserts: 1,000 per request, through the service.
	bodies := make([][]byte, 0, n/1000+1)
	for lo := 0; lo < n; lo += 1000 {
		var vs []map[string]any
		for i := lo; i < min(lo+1000, n); i++ {
			vs = append(vs, map[string]any{"id": fmt.Sprint("v", i), "values": data[i], "metadata": map[string]any{"i": i}})
		}
		body, _ := json.Marshal(map[string]any{"vectors": vs})
		bodies = append(bodies, body)
	}
	start := time.Now()
	for _, body := range bodies {
		if _, err := e.svc.Upsert(ctx, e.Owner, id, body); err != nil {
			b.Fatal(err)
		}
	}
	upsertDur := time.Since(start)
	bodies = nil
	start = time.Now()
	if err := e.svc.WaitIndexed(ctx); err != nil {
		b.Fatal(err)
	}
	graphDur := time.Since(start)
	data = nil
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	c, err := e.svc.open(ctx, record{ID: id})
	if err != nil {
		b.Fatal(err)
	}
	fi, _ := os.Stat(e.svc.path(id))
	var wal int64
	if w, err := os.Stat(e.svc.path(id) + "-wal"); err == nil {
		wal = w.Size()
	}

	qs := synth.Queries(nq, dims, clusters, 1.0, 2026)
	prepared := make([][]float32, nq)
	for i, q := range qs {
		prepared[i], _ = c.st.Prepare(q)
	}
	type run struct {
		name  string
		fn    func(q []float32) []index.Hit
		lat   []time.Duration
		total time.Duration
	}
	c.mu.RLock()
	graph := c.g
	runs := []*run{
		{name: "naive loop", fn: func(q []float32) []index.Hit { return c.st.Naive(q, 10) }},
		{name: "exact", fn: func(q []float32) []index.Hit { return c.st.Exact(q, 10, nil) }},
		{name: "approximate (HNSW)", fn: func(q []float32) []index.Hit {
			if graph == nil {
				return c.st.Exact(q, 10, nil)
			}
			return index.Merge(10, graph.Search(q, 10, index.DefaultEf), c.st.ExactFrom(q, 10, graph.Covered(), nil))
		}},
		{name: "exact float32 only", fn: func(q []float32) []index.Hit { return c.st.ExactFloat(q, 10, nil) }},
	}
	results := make([][][]index.Hit, len(runs))
	for ri, r := range runs {
		results[ri] = make([][]index.Hit, nq)
		for i, q := range prepared {
			s := time.Now()
			results[ri][i] = r.fn(q)
			d := time.Since(s)
			r.lat = append(r.lat, d)
			r.total += d
		}
	}
	c.mu.RUnlock()
	identical := 0
	for i := range prepared {
		if slices.Equal(results[1][i], results[3][i]) {
			identical++
		}
	}
	recall := func(ri int) float64 {
		found, total := 0, 0
		for i := range prepared {
			want := map[int32]bool{}
			for _, h := range results[1][i] {
				want[h.Slot] = true
			}
			for _, h := range results[ri][i] {
				if want[h.Slot] {
					found++
				}
			}
			total += len(want)
		}
		return float64(found) / float64(total)
	}
	pct := func(l []time.Duration, p float64) time.Duration {
		s := append([]time.Duration(nil), l...)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		return s[min(len(s)-1, int(p*float64(len(s))))]
	}
	logf("%d x %d clustered vectors (%d clusters), %d queries, topK 10, GOMAXPROCS %d", n, dims, clusters, nq, runtime.GOMAXPROCS(0))
	logf("upserts: %.0f vectors/s (%v for %d, 1,000 per request, durable when answered)", float64(n)/upsertDur.Seconds(), upsertDur.Round(time.Millisecond), n)
	logf("HNSW graph built in background: %v (M %d, efConstruction %d), search ef %d", graphDur.Round(time.Millisecond), index.DefaultM, index.DefaultEfConstruction, index.DefaultEf)
	logf("memory: %.0f bytes/vector in the Go heap (vectors %d B + graph + ids + maps); file %.0f bytes/vector on disk",
		float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(n), dims*4, float64(fi.Size()+wal)/float64(n))
	logf("%-20s %10s %10s %10s %8s %9s", "path", "p50", "p99", "mean", "recall", "speedup")
	for ri, r := range runs {
		mean := r.total / time.Duration(nq)
		logf("%-20s %10v %10v %10v %8.3f %8.1fx", r.name, pct(r.lat, 0.5).Round(time.Microsecond), pct(r.lat, 0.99).Round(time.Microsecond),
			mean.Round(time.Microsecond), recall(ri), float64(runs[0].total)/float64(r.total))
	}
	logf("exact (int8 scan + float32 re-rank) identical to the float32 scan on %d of %d queries", identical, nq)
	if identical != nq {
		b.Errorf("the quantized exact path differs from the float32 scan on %d queries", nq-identical)
	}
	// The graph's search width: recall against speed.
	if graph != nil {
		logf("%-20s %10s %10s %10s %8s %9s", "HNSW ef", "p50", "p99", "mean", "recall", "vs exact")
		c.mu.RLock()
		for _, ef := range []int{16, 32, 48, 64, 96, 128} {
			var lat []time.Duration
			var total time.Duration
			found := 0
			for i, q := range prepared {
				s := time.Now()
				hits := graph.Search(q, 10, ef)
				d := time.Since(s)
				lat, total = append(lat, d), total+d
				want := map[int32]bool{}
				for _, h := range results[1][i] {
					want[h.Slot] = true
				}
				for _, h := range hits {
					if want[h.Slot] {
						found++
					}
				}
			}
			logf("%-20d %10v %10v %10v %8.3f %8.1fx", ef, pct(lat, 0.5).Round(time.Microsecond), pct(lat, 0.99).Round(time.Microsecond),
				(total / time.Duration(nq)).Round(time.Microsecond), float64(found)/float64(10*nq), float64(runs[1].total)/float64(total))
		}
		c.mu.RUnlock()
	}
	b.ReportMetric(float64(n)/upsertDur.Seconds(), "upserts/s")
	b.ReportMetric(recall(2), "recall@10")
	b.ReportMetric(float64(pct(runs[1].lat, 0.5).Microseconds()), "exact-p50-µs")
	b.ReportMetric(float64(pct(runs[2].lat, 0.5).Microseconds()), "approx-p50-µs")
}

// logf prints a line of the benchmark's table (b.Logf truncates long
// benchmark logs).
func logf(format string, args ...any) { fmt.Printf(format+"\n", args...) }
