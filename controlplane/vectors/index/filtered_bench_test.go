package index

import (
	"fmt"
	"os"
	"testing"

	"github.com/svcplatform/platform/controlplane/vectors/synth"
)

// BenchmarkExactFiltered is the filtered path (Exact with an Accept) at 1 %
// selectivity on the clustered data of the peer comparison
// (bench/README.md, "Vector search"): 100,000 x 768 cosine by default
// (VECTORS_BENCH_N), one query per op.
//
//	go test -run '^$' -bench ExactFiltered -cpu 1 ./controlplane/vectors/index/
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
	for i := range mask {
		mask[i] = i%100 == 7
	}
	accept := func(slot int32) bool { return mask[slot] }
	qs := synth.Queries(64, dims, 100, 1.0, 2026)
	for i, q := range qs {
		qs[i], _ = s.Prepare(q)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.Exact(qs[i%len(qs)], 10, accept)
	}
}
