package index

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/svcplatform/platform/controlplane/vectors/synth"
)

func TestKernelsMatchNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 7, 8, 9, 31, 32, 33, 40, 384, 767, 768, 1536} {
		a, b := make([]float32, n), make([]float32, n)
		for i := range a {
			a[i], b[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
		}
		var l2 float64
		for i := range a {
			d := float64(a[i]) - float64(b[i])
			l2 += d * d
		}
		if got, want := float64(Dot(a, b)), float64(NaiveDot(a, b)); math.Abs(got-want) > 1e-3*(1+math.Abs(want)) {
			t.Errorf("n=%d: Dot %v, naive %v", n, got, want)
		}
		if got := float64(L2Sq(a, b)); math.Abs(got-l2) > 1e-3*(1+l2) {
			t.Errorf("n=%d: L2Sq %v, want %v", n, got, l2)
		}
		if got, want := float64(dotGo(a, b)), float64(NaiveDot(a, b)); math.Abs(got-want) > 1e-3*(1+math.Abs(want)) {
			t.Errorf("n=%d: dotGo %v, naive %v", n, got, want)
		}
		if got := float64(l2SqGo(a, b)); math.Abs(got-l2) > 1e-3*(1+l2) {
			t.Errorf("n=%d: l2SqGo %v, want %v", n, got, l2)
		}
	}
}

func TestScores(t *testing.T) {
	tests := []struct {
		name   string
		metric Metric
		q, v   []float32
		want   float64
	}{
		{"cosine identical", Cosine, []float32{1, 0}, []float32{2, 0}, 1},
		{"cosine orthogonal", Cosine, []float32{1, 0}, []float32{0, 3}, 0},
		{"cosine opposite", Cosine, []float32{1, 0}, []float32{-1, 0}, -1},
		{"euclidean distance", Euclidean, []float32{0, 0}, []float32{3, 4}, 5},
		{"euclidean identical", Euclidean, []float32{1, 2}, []float32{1, 2}, 0},
		{"dot negated", DotProduct, []float32{1, 2}, []float32{3, 4}, -11},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewStore(2, tc.metric)
			p, ok := s.Prepare(tc.v)
			if !ok {
				t.Fatal("prepare refused")
			}
			slot := s.Add(p)
			q, _ := s.Prepare(tc.q)
			hits := s.Exact(q, 1, nil)
			if len(hits) != 1 || hits[0].Slot != slot {
				t.Fatalf("hits %v", hits)
			}
			if got := tc.metric.Score(hits[0].Dist); math.Abs(got-tc.want) > 1e-5 {
				t.Fatalf("score %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCosineRefusesZero(t *testing.T) {
	if _, ok := NewStore(3, Cosine).Prepare([]float32{0, 0, 0}); ok {
		t.Fatal("zero vector accepted for cosine")
	}
	if _, ok := NewStore(3, Euclidean).Prepare([]float32{0, 0, 0}); !ok {
		t.Fatal("zero vector refused for euclidean")
	}
}

// bruteForce ranks every accepted live slot with float64 arithmetic.
func bruteForce(s *Store, q []float32, k int, accept Accept) []int32 {
	type sd struct {
		slot int32
		d    float64
	}
	var all []sd
	for i := 0; i < s.Slots(); i++ {
		if !s.Alive(int32(i)) || (accept != nil && !accept(int32(i))) {
			continue
		}
		all = append(all, sd{int32(i), float64(s.metric.Distance(q, s.Vector(int32(i))))})
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].d != all[j].d {
			return all[i].d < all[j].d
		}
		return all[i].slot < all[j].slot
	})
	out := []int32{}
	for i := 0; i < len(all) && i < k; i++ {
		out = append(out, all[i].slot)
	}
	return out
}

func TestExactIsTrueTopKWithFilterAndDeletes(t *testing.T) {
	for _, m := range []Metric{Cosine, Euclidean, DotProduct} {
		for _, n := range []int{50, 10000} { // one core and split across cores
			t.Run(m.String()+"/"+map[int]string{50: "small", 10000: "parallel"}[n], func(t *testing.T) {
				data := synth.Clustered(n, 16, 8, 0.5, 7)
				s := NewStore(16, m)
				for _, v := range data {
					p, _ := s.Prepare(v)
					s.Add(p)
				}
				for i := 0; i < n; i += 7 {
					s.Kill(int32(i))
				}
				even := func(slot int32) bool { return slot%2 == 0 }
				for qi, qv := range synth.Queries(5, 16, 8, 0.5, 7) {
					q, _ := s.Prepare(qv)
					for _, accept := range []Accept{nil, even} {
						got := s.Exact(q, 10, accept)
						want := bruteForce(s, q, 10, accept)
						if len(got) != len(want) {
							t.Fatalf("query %d: %d hits, want %d", qi, len(got), len(want))
						}
						for i := range got {
							if got[i].Slot != want[i] && math.Abs(float64(got[i].Dist)-float64(s.metric.Distance(q, s.Vector(want[i])))) > 1e-4 {
								t.Fatalf("query %d rank %d: slot %d, want %d", qi, i, got[i].Slot, want[i])
							}
							if !s.Alive(got[i].Slot) || (accept != nil && !accept(got[i].Slot)) {
								t.Fatalf("returned a dead or filtered slot %d", got[i].Slot)
							}
						}
						if n := s.Naive(q, 10); accept == nil && len(n) != len(got) {
							t.Fatalf("naive %d hits", len(n))
						}
					}
				}
			})
		}
	}
}

// recallAt10 is the share of the exact top 10 the graph finds.
func recallAt10(t *testing.T, s *Store, h *HNSW, queries [][]float32, ef int) float64 {
	t.Helper()
	found, total := 0, 0
	for _, qv := range queries {
		q, _ := s.Prepare(qv)
		want := map[int32]bool{}
		for _, x := range s.Exact(q, 10, nil) {
			want[x.Slot] = true
		}
		for _, x := range h.Search(q, 10, ef) {
			if want[x.Slot] {
				found++
			}
			if !s.Alive(x.Slot) {
				t.Fatalf("graph returned dead slot %d", x.Slot)
			}
		}
		total += len(want)
	}
	return float64(found) / float64(total)
}

func TestHNSWRecallAt10(t *testing.T) {
	n := 6000
	if testing.Short() || raceEnabled {
		n = 1500
	}
	// workers 1 inserts one slot at a time as vectors arrive; 4 builds in
	// parallel batches over slots already stored (the service's indexer).
	for _, workers := range []int{1, 4} {
		for _, m := range []Metric{Cosine, Euclidean, DotProduct} {
			t.Run(fmt.Sprint(m, "-workers-", workers), func(t *testing.T) {
				data := synth.Clustered(n, 48, 30, 1.0, 42)
				s := NewStore(48, m)
				h := NewHNSW(s, HNSWConfig{Seed: 1})
				for _, v := range data {
					p, _ := s.Prepare(v)
					slot := s.Add(p)
					if workers == 1 {
						h.Insert(slot)
					}
				}
				for h.Covered() < s.Slots() {
					h.InsertBatch(min(500, s.Slots()-h.Covered()), workers)
				}
				if h.Covered() != n {
					t.Fatalf("covered %d, want %d", h.Covered(), n)
				}
				queries := synth.Queries(100, 48, 30, 1.0, 42)
				if r := recallAt10(t, s, h, queries, DefaultEf); r < 0.95 {
					t.Fatalf("recall@10 = %.3f, want >= 0.95", r)
				} else {
					t.Logf("recall@10 = %.3f", r)
				}
				// A quarter deleted: the graph still routes through them and
				// never returns them.
				for i := 0; i < n; i += 4 {
					s.Kill(int32(i))
				}
				if r := recallAt10(t, s, h, queries, DefaultEf); r < 0.95 {
					t.Fatalf("recall@10 after deletes = %.3f, want >= 0.95", r)
				}
			})
		}
	}
}

func TestHNSWSmallAndOutOfOrder(t *testing.T) {
	s := NewStore(2, Euclidean)
	h := NewHNSW(s, HNSWConfig{})
	if got := h.Search([]float32{0, 0}, 3, 10); got != nil {
		t.Fatalf("empty graph answered %v", got)
	}
	for i := 0; i < 5; i++ {
		h.Insert(s.Add([]float32{float32(i), 0}))
	}
	got := h.Search([]float32{0.1, 0}, 3, 10)
	if len(got) != 3 || got[0].Slot != 0 || got[1].Slot != 1 || got[2].Slot != 2 {
		t.Fatalf("got %v", got)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("out-of-order insert did not panic")
		}
	}()
	h.Insert(9)
}

func TestMerge(t *testing.T) {
	got := Merge(3, []Hit{{1, 0.1}, {2, 0.5}}, []Hit{{3, 0.2}, {4, 0.9}})
	if len(got) != 3 || got[0].Slot != 1 || got[1].Slot != 3 || got[2].Slot != 2 {
		t.Fatalf("got %v", got)
	}
}

// TestHNSWDeadBeforeInsertAndHighDimensions: slots dead before the graph
// reaches them stay placeholders; on 384 overlapping-cluster dimensions the
// recall holds.
func TestHNSWDeadBeforeInsertAndHighDimensions(t *testing.T) {
	n := 3000
	if testing.Short() || raceEnabled {
		n = 800
	}
	data := synth.Clustered(n, 384, 40, 1.5, 9)
	s := NewStore(384, Cosine)
	for _, v := range data {
		p, _ := s.Prepare(v)
		s.Add(p)
	}
	for i := 0; i < n; i += 3 {
		s.Kill(int32(i))
	}
	h := NewHNSW(s, HNSWConfig{Seed: 3})
	for i := 0; i < n; i++ {
		h.Insert(int32(i))
	}
	if h.Covered() != n {
		t.Fatalf("covered %d", h.Covered())
	}
	if r := recallAt10(t, s, h, synth.Queries(60, 384, 40, 1.5, 9), DefaultEf); r < 0.95 {
		t.Fatalf("recall@10 = %.3f", r)
	}
}
