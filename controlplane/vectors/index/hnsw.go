package index

import (
	"math"
	"math/rand/v2"
	"sort"
	"sync"
)

// HNSWConfig shapes the graph. The zero value takes the defaults.
type HNSWConfig struct {
	// M is the number of links a node gets per layer (2M on layer 0).
	M int
	// EfConstruction is the candidate list size while inserting.
	EfConstruction int
	// Seed makes the level draws reproducible.
	Seed uint64
}

// Defaults of HNSWConfig, chosen on the recall test and the benchmark
// (see README.md).
const (
	DefaultM              = 16
	DefaultEfConstruction = 100
)

// HNSW is a hierarchical navigable small world graph over the slots of a
// Store (Malkov and Yashunin, 2016), with the neighbour-selection
// heuristic. Slots are inserted in order: slots below Covered are in the
// graph, later ones are not yet and a caller scans them exactly. Dead slots
// stay in the graph as waypoints and are never returned. Insert must not
// run concurrently with anything else; Search may run concurrently with
// other searches.
type HNSW struct {
	st       *Store
	m, m0    int
	efC      int
	ml       float64
	rng      *rand.Rand
	levels   []int8
	links    [][][]int32
	entry    int32
	maxLevel int
	visited  sync.Pool
}

// NewHNSW returns an empty graph over st.
func NewHNSW(st *Store, cfg HNSWConfig) *HNSW {
	if cfg.M <= 0 {
		cfg.M = DefaultM
	}
	if cfg.EfConstruction <= 0 {
		cfg.EfConstruction = DefaultEfConstruction
	}
	return &HNSW{st: st, m: cfg.M, m0: 2 * cfg.M, efC: cfg.EfConstruction, ml: 1 / math.Log(float64(cfg.M)),
		rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)), entry: -1}
}

// Covered is the number of slots in the graph: slots [0, Covered).
func (h *HNSW) Covered() int { return len(h.levels) }

// Bytes estimates the memory the links take.
func (h *HNSW) Bytes() int {
	n := cap(h.levels) + cap(h.links)*24
	for _, ls := range h.links {
		n += cap(ls) * 24
		for _, l := range ls {
			n += cap(l) * 4
		}
	}
	return n
}

type visited struct {
	marks []uint32
	gen   uint32
}

func (h *HNSW) getVisited() *visited {
	v, _ := h.visited.Get().(*visited)
	if v == nil {
		v = &visited{}
	}
	if n := len(h.levels); len(v.marks) < n {
		v.marks = make([]uint32, n+n/4)
		v.gen = 0
	}
	v.gen++
	if v.gen == 0 {
		clear(v.marks)
		v.gen = 1
	}
	return v
}

// seen marks slot and reports whether it was marked already.
func (v *visited) seen(slot int32) bool {
	if v.marks[slot] == v.gen {
		return true
	}
	v.marks[slot] = v.gen
	return false
}

func (h *HNSW) dist(q []float32, slot int32) float32 {
	return h.st.metric.Distance(q, h.st.Vector(slot))
}

// Insert adds the next slot (it must equal Covered) to the graph.
func (h *HNSW) Insert(slot int32) {
	if int(slot) != len(h.levels) {
		panic("index: HNSW insert out of order")
	}
	if !h.st.alive[slot] {
		h.levels = append(h.levels, -1)
		h.links = append(h.links, nil)
		return
	}
	level := int(math.Floor(-math.Log(1-h.rng.Float64()) * h.ml))
	if level > 30 {
		level = 30
	}
	h.levels = append(h.levels, int8(level))
	h.links = append(h.links, make([][]int32, level+1))
	if h.entry < 0 {
		h.entry, h.maxLevel = slot, level
		return
	}
	q := h.st.Vector(slot)
	vis := h.getVisited()
	defer h.visited.Put(vis)
	ep := []Hit{{Slot: h.entry, Dist: h.dist(q, h.entry)}}
	for l := h.maxLevel; l > level; l-- {
		ep = h.greedy(q, ep[0], l)
	}
	for l := min(level, h.maxLevel); l >= 0; l-- {
		vis.gen++
		if vis.gen == 0 {
			clear(vis.marks)
			vis.gen = 1
		}
		w := h.searchLayer(q, ep, h.efC, l, vis)
		neigh := h.selectNeighbors(w, h.m)
		own := make([]int32, len(neigh), h.maxLinks(l)+1)
		for i, n := range neigh {
			own[i] = n.Slot
		}
		h.links[slot][l] = own
		for _, n := range neigh {
			h.link(n.Slot, slot, n.Dist, l)
		}
		ep = w
	}
	if level > h.maxLevel {
		h.entry, h.maxLevel = slot, level
	}
}

func (h *HNSW) maxLinks(level int) int {
	if level == 0 {
		return h.m0
	}
	return h.m
}

// link adds a link from n to slot on level l, pruning n's links with the
// heuristic when they overflow.
func (h *HNSW) link(n, slot int32, d float32, l int) {
	ls := append(h.links[n][l], slot)
	max := h.maxLinks(l)
	if len(ls) <= max {
		h.links[n][l] = ls
		return
	}
	base := h.st.Vector(n)
	cand := make([]Hit, len(ls))
	for i, x := range ls {
		if x == slot {
			cand[i] = Hit{Slot: x, Dist: d}
		} else {
			cand[i] = Hit{Slot: x, Dist: h.dist(base, x)}
		}
	}
	sort.Slice(cand, func(i, j int) bool { return less(cand[i], cand[j]) })
	sel := h.selectNeighbors(cand, max)
	ls = ls[:0]
	for _, s := range sel {
		ls = append(ls, s.Slot)
	}
	h.links[n][l] = ls
}

// selectNeighbors picks up to m of the candidates (sorted closest first)
// with the heuristic: a candidate is kept when it is closer to the base than
// to every one kept so far, which keeps links pointing in diverse
// directions (what makes clustered data searchable); the pruned ones fill
// the remaining places.
func (h *HNSW) selectNeighbors(cand []Hit, m int) []Hit {
	if len(cand) <= m {
		return cand
	}
	out := make([]Hit, 0, m)
	var pruned []Hit
	for _, c := range cand {
		if len(out) == m {
			break
		}
		cv := h.st.Vector(c.Slot)
		good := true
		for _, r := range out {
			if h.dist(cv, r.Slot) < c.Dist {
				good = false
				break
			}
		}
		if good {
			out = append(out, c)
		} else {
			pruned = append(pruned, c)
		}
	}
	for _, p := range pruned {
		if len(out) == m {
			break
		}
		out = append(out, p)
	}
	return out
}

// greedy walks level l from ep to the closest node it can reach.
func (h *HNSW) greedy(q []float32, ep Hit, l int) []Hit {
	cur := ep
	for changed := true; changed; {
		changed = false
		for _, n := range h.links[cur.Slot][l] {
			if d := h.dist(q, n); d < cur.Dist {
				cur, changed = Hit{Slot: n, Dist: d}, true
			}
		}
	}
	return []Hit{cur}
}

// searchLayer is the beam search of one level: it returns up to ef nodes
// closest to q, closest first.
func (h *HNSW) searchLayer(q []float32, ep []Hit, ef, l int, vis *visited) []Hit {
	cand := minHeap{}
	res := newTopK(ef)
	for _, e := range ep {
		vis.seen(e.Slot)
		cand.push(e)
		res.push(e)
	}
	for len(cand) > 0 {
		c := cand.pop()
		if res.full() && c.Dist > res.h[0].Dist {
			break
		}
		for _, n := range h.links[c.Slot][l] {
			if vis.seen(n) {
				continue
			}
			d := h.dist(q, n)
			if !res.full() || d < res.h[0].Dist {
				x := Hit{Slot: n, Dist: d}
				cand.push(x)
				res.push(x)
			}
		}
	}
	return res.sorted()
}

// Search returns up to k live slots close to the prepared query q, closest
// first, exploring ef candidates on the bottom layer (ef >= k).
func (h *HNSW) Search(q []float32, k, ef int) []Hit {
	if h.entry < 0 || k <= 0 {
		return nil
	}
	ef = max(ef, k)
	vis := h.getVisited()
	defer h.visited.Put(vis)
	ep := Hit{Slot: h.entry, Dist: h.dist(q, h.entry)}
	for l := h.maxLevel; l > 0; l-- {
		ep = h.greedy(q, ep, l)[0]
	}
	w := h.searchLayer(q, []Hit{ep}, ef, 0, vis)
	out := make([]Hit, 0, k)
	for _, x := range w {
		if h.st.alive[x.Slot] {
			out = append(out, x)
			if len(out) == k {
				break
			}
		}
	}
	return out
}

// minHeap is a binary min-heap of hits.
type minHeap []Hit

func (m *minHeap) push(x Hit) {
	*m = append(*m, x)
	a := *m
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if !less(a[i], a[p]) {
			break
		}
		a[i], a[p] = a[p], a[i]
		i = p
	}
}

func (m *minHeap) pop() Hit {
	a := *m
	top := a[0]
	n := len(a) - 1
	a[0] = a[n]
	a = a[:n]
	for i := 0; ; {
		l, s := 2*i+1, i
		if l < n && less(a[l], a[s]) {
			s = l
		}
		if r := l + 1; r < n && less(a[r], a[s]) {
			s = r
		}
		if s == i {
			break
		}
		a[i], a[s] = a[s], a[i]
		i = s
	}
	*m = a
	return top
}

// Merge combines hit lists (each closest first, distinct slots) into the k
// closest.
func Merge(k int, lists ...[]Hit) []Hit {
	t := newTopK(k)
	for _, l := range lists {
		for _, x := range l {
			t.push(x)
		}
	}
	return t.sorted()
}

// DefaultEf is the bottom-layer candidate list of a search when the caller
// has no reason to pick another (at least topK is used).
const DefaultEf = 96
