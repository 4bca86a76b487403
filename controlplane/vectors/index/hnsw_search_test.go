package index

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/svcplatform/platform/controlplane/vectors/synth"
)

// buildGraph stores data under m and inserts it all into a graph, in
// parallel batches as the service's indexer does.
func buildGraph(data [][]float32, dims int, m Metric, seed uint64) (*Store, *HNSW) {
	s := NewStore(dims, m)
	for _, v := range data {
		p, _ := s.Prepare(v)
		s.Add(p)
	}
	h := NewHNSW(s, HNSWConfig{Seed: seed})
	for h.Covered() < s.Slots() {
		h.InsertBatch(min(256, s.Slots()-h.Covered()), 2)
	}
	return s, h
}

// TestHNSWRecall768 holds the nibble walk to recall@10 >= 0.95 at 768
// dimensions for every metric, with norms that differ under euclidean and
// dot-product (the walk's distance then uses them).
func TestHNSWRecall768(t *testing.T) {
	n, nq := 1500, 50
	if testing.Short() || raceEnabled {
		n, nq = 700, 20
	}
	for _, m := range []Metric{Cosine, Euclidean, DotProduct} {
		t.Run(m.String(), func(t *testing.T) {
			data := synth.Clustered(n, 768, 25, 1.0, 11)
			if m != Cosine {
				for i, v := range data {
					for j := range v {
						v[j] *= float32(1 + i%5)
					}
				}
			}
			s, h := buildGraph(data, 768, m, 5)
			r := recallAt10(t, s, h, synth.Queries(nq, 768, 25, 1.0, 11), DefaultEf)
			t.Logf("recall@10 = %.3f", r)
			if r < 0.95 {
				t.Fatalf("recall@10 = %.3f, want >= 0.95", r)
			}
		})
	}
}

// TestHNSWSearchDistancesExact: the walk ranks by codes, but every
// distance returned is the float32 distance, closest first.
func TestHNSWSearchDistancesExact(t *testing.T) {
	n := 1500
	if raceEnabled {
		n = 500
	}
	s, h := buildGraph(synth.Clustered(n, 96, 10, 1.0, 3), 96, Euclidean, 2)
	for _, qv := range synth.Queries(10, 96, 10, 1.0, 3) {
		q, _ := s.Prepare(qv)
		hits := h.Search(q, 10, DefaultEf)
		if len(hits) != 10 {
			t.Fatalf("%d hits", len(hits))
		}
		for i, x := range hits {
			if want := s.metric.Distance(q, s.Vector(x.Slot)); x.Dist != want {
				t.Fatalf("hit %d: distance %v, want %v", i, x.Dist, want)
			}
			if i > 0 && less(x, hits[i-1]) {
				t.Fatalf("hits out of order: %v", hits)
			}
		}
	}
}

// TestHNSWRowScales: the nibble scale stored next to each bottom-layer
// link is the linked node's, whatever pruning and parallel inserts did.
func TestHNSWRowScales(t *testing.T) {
	n := 3000
	if raceEnabled {
		n = 800
	}
	s, h := buildGraph(synth.Clustered(n, 48, 20, 1.0, 8), 48, Cosine, 4)
	for slot := range int32(s.Slots()) {
		o := int(slot) * h.row
		links := h.linksOf(slot, 0)
		if len(links) > h.m0 {
			t.Fatalf("slot %d has %d links", slot, len(links))
		}
		for i, x := range links {
			if got := math.Float32frombits(uint32(h.base[o+1+h.m0+i])); got != h.nscale[x] {
				t.Fatalf("slot %d link %d: scale %v, want %v", slot, x, got, h.nscale[x])
			}
		}
	}
}

// TestHNSWSearchAllocs: a search's working memory is pooled; the answer is
// its one allocation.
func TestHNSWSearchAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items at random under the race detector")
	}
	s, h := buildGraph(synth.Clustered(2000, 64, 10, 1.0, 6), 64, Cosine, 1)
	q, _ := s.Prepare(synth.Queries(1, 64, 10, 1.0, 6)[0])
	h.Search(q, 10, DefaultEf)
	if a := testing.AllocsPerRun(100, func() { h.Search(q, 10, DefaultEf) }); a > 1 {
		t.Fatalf("%v allocations per search, want 1", a)
	}
}

func TestGrowArena(t *testing.T) {
	for _, n := range []int{1, 100, 1 << 20, 3 << 20} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var a []int32
			for i := 0; len(a) < 2*n; i++ {
				a = growArena(a, n)
				if cap(a)-len(a) < n {
					t.Fatalf("room for %d, want %d", cap(a)-len(a), n)
				}
				if tail := a[len(a):cap(a)]; tail[0] != 0 || tail[len(tail)-1] != 0 {
					t.Fatal("new room not zero")
				}
				for j := 0; j < n; j++ {
					a = append(a, int32(len(a)))
				}
			}
			for i, x := range a {
				if x != int32(i) {
					t.Fatalf("element %d is %d after growing", i, x)
				}
			}
		})
	}
}

// TestHNSWPivots: the pivots are exactly the nodes on level 2 and above,
// their codes and scales copies of the nodes' own (whatever pruning and
// parallel inserts did), and a search started from them finds as much as
// one descending the upper layers.
func TestHNSWPivots(t *testing.T) {
	n := 6000
	if raceEnabled {
		n = 1200
	}
	s, h := buildGraph(synth.Clustered(n, 64, 20, 1.0, 13), 64, Cosine, 7)
	nb := nibbleBytes(64)
	var want []int32
	for slot, lv := range h.levels {
		if lv >= pivLevel {
			want = append(want, int32(slot))
		}
	}
	if len(want) == 0 || !slices.Equal(h.piv, want) {
		t.Fatalf("pivots %v, want the nodes on level %d and above %v", h.piv, pivLevel, want)
	}
	for i, slot := range h.piv {
		nib, _ := appendNibbles(nil, s.Vector(slot))
		if !slices.Equal(h.pivNib[i*nb:(i+1)*nb], nib) || h.pivScale[i] != h.nscale[slot] {
			t.Fatalf("pivot %d (slot %d): codes or scale differ from the node's", i, slot)
		}
	}
	queries := synth.Queries(60, 64, 20, 1.0, 13)
	fromPivots := recallAt10(t, s, h, queries, DefaultEf)
	h.descend = true
	descent := recallAt10(t, s, h, queries, DefaultEf)
	h.descend = false
	t.Logf("recall@10 from the pivots %.3f, descending %.3f", fromPivots, descent)
	if fromPivots < 0.95 || fromPivots < descent-0.02 {
		t.Fatalf("recall@10 from the pivots %.3f, descending %.3f", fromPivots, descent)
	}
}
