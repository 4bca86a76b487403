package index

import (
	"fmt"
	"os"
	"testing"

	"github.com/svcplatform/platform/controlplane/vectors/synth"
)

// BenchmarkExactFiltered is the filtered path at 1 % selectivity on the
// clustered data of the peer comparison (bench/README.md, "Vector
// search"): 100,000 x 768 cosine by default (VECTORS_BENCH_N), one query
// per op. "scan" tests every slot against the filter (Exact with an
// Accept: what a filter the posting lists cannot answer costs);
// "postings" ranks only the slots of the value's posting list
// (ExactSlots: an equality or $in filter). cpu-ns/op is the process's CPU
// time per query, what to compare on a shared machine.
//
//	go test -run '^$' -bench ExactFiltered -cpu 1 -count 5 ./controlplane/vectors/index/
func BenchmarkExactFiltered(b *testing.B) {
	n, dims := 100_000, 768
	if s := os.Getenv("VECTORS_BENCH_N"); s != "" {
		fmt.Sscan(s, &n)
	}
	s := NewStore(dims, Cosine)
	for _, v := range synth.Clustered(n, dims, 100, 1.0, 2026) {
		p, _ := s.Prepare(v)
		s.Add(p)
	}
	mask := make([]bool, n)
	var list []int32
	for i := range mask {
		mask[i] = i%100 == 7
		if mask[i] {
			list = append(list, int32(i))
		}
	}
	accept := func(slot int32) bool { return mask[slot] }
	qs := synth.Queries(64, dims, 100, 1.0, 2026)
	for i, q := range qs {
		qs[i], _ = s.Prepare(q)
	}
	for _, bc := range []struct {
		name   string
		search func(q []float32) []Hit
	}{
		{"scan", func(q []float32) []Hit { return s.Exact(q, 10, accept) }},
		{"postings", func(q []float32) []Hit { return s.ExactSlots(q, 10, list, accept) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.ResetTimer()
			cpu := processCPU()
			for i := 0; i < b.N; i++ {
				bc.search(qs[i%len(qs)])
			}
			b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}
