package index

import (
	"math"
	"math/rand/v2"
	"slices"
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
	// During a parallel InsertBatch, stripes guard the links of the slots
	// hashed to them and top guards entry and maxLevel.
	stripes [lockStripes]sync.Mutex
	top     sync.RWMutex
}

// lockStripes is the number of link locks of a parallel build.
const lockStripes = 1024

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
	h.InsertBatch(1, 1)
}

// InsertBatch adds the next n slots to the graph with up to workers
// goroutines inserting at once (hnswlib's scheme: levels drawn in order, a
// lock per group of nodes around each link list, the entry point under its
// own lock). Nothing else may use the graph meanwhile.
func (h *HNSW) InsertBatch(n, workers int) {
	if n <= 0 {
		return
	}
	first := len(h.levels)
	for i := 0; i < n; i++ {
		slot := int32(first + i)
		if !h.st.alive[slot] {
			h.levels = append(h.levels, -1)
			h.links = append(h.links, nil)
			continue
		}
		level := int(math.Floor(-math.Log(1-h.rng.Float64()) * h.ml))
		if level > 30 {
			level = 30
		}
		h.levels = append(h.levels, int8(level))
		h.links = append(h.links, make([][]int32, level+1))
	}
	next := first
	// The first live node becomes the entry point alone.
	for ; next < first+n && h.entry < 0; next++ {
		if h.levels[next] >= 0 {
			h.entry, h.maxLevel = int32(next), int(h.levels[next])
		}
	}
	rest := first + n - next
	workers = max(1, min(workers, rest/4))
	if workers == 1 {
		for ; next < first+n; next++ {
			h.insert(int32(next), false)
		}
		return
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				slot := next
				next++
				mu.Unlock()
				if slot >= first+n {
					return
				}
				h.insert(int32(slot), true)
			}
		}()
	}
	wg.Wait()
}

// insert links slot, whose level is drawn, into the graph; locked is set
// when other inserts run at the same time.
func (h *HNSW) insert(slot int32, locked bool) {
	level := int(h.levels[slot])
	if level < 0 {
		return
	}
	if locked {
		h.top.RLock()
	}
	entry, maxLevel := h.entry, h.maxLevel
	if locked {
		h.top.RUnlock()
	}
	q := h.st.Vector(slot)
	dist := func(n int32) float32 { return h.dist(q, n) }
	vis := h.getVisited()
	defer h.visited.Put(vis)
	var buf []int32
	ep := []Hit{{Slot: entry, Dist: dist(entry)}}
	for l := maxLevel; l > level; l-- {
		ep, buf = h.greedy(dist, ep[0], l, locked, buf)
	}
	for l := min(level, maxLevel); l >= 0; l-- {
		vis.gen++
		if vis.gen == 0 {
			clear(vis.marks)
			vis.gen = 1
		}
		var w []Hit
		w, buf = h.searchLayer(dist, ep, h.efC, l, vis, locked, buf)
		neigh := h.selectNeighbors(w, h.m)
		h.lock(slot, locked)
		// Concurrent inserts may have linked to slot already: keep those.
		own := make([]int32, 0, h.maxLinks(l)+1)
		for _, n := range neigh {
			own = append(own, n.Slot)
		}
		for _, x := range h.links[slot][l] {
			if !slices.Contains(own, x) {
				own = append(own, x)
			}
		}
		h.links[slot][l] = own
		if len(own) > h.maxLinks(l) {
			h.prune(slot, l)
		}
		h.unlock(slot, locked)
		for _, n := range neigh {
			h.lock(n.Slot, locked)
			h.link(n.Slot, slot, l)
			h.unlock(n.Slot, locked)
		}
		ep = w
	}
	if locked {
		h.top.Lock()
		defer h.top.Unlock()
	}
	if level > h.maxLevel {
		h.entry, h.maxLevel = slot, level
	}
}

func (h *HNSW) lock(slot int32, locked bool) {
	if locked {
		h.stripes[uint32(slot)%lockStripes].Lock()
	}
}

func (h *HNSW) unlock(slot int32, locked bool) {
	if locked {
		h.stripes[uint32(slot)%lockStripes].Unlock()
	}
}

// neighbours returns slot's links on level l; under a parallel build a
// copy into buf taken under the slot's lock.
func (h *HNSW) neighbours(slot int32, l int, locked bool, buf []int32) []int32 {
	if !locked {
		return h.links[slot][l]
	}
	h.lock(slot, true)
	buf = append(buf[:0], h.links[slot][l]...)
	h.unlock(slot, true)
	return buf
}

func (h *HNSW) maxLinks(level int) int {
	if level == 0 {
		return h.m0
	}
	return h.m
}

// link adds a link from n to slot on level l, pruning n's links with the
// heuristic when they overflow. The caller holds n's lock when building in
// parallel.
func (h *HNSW) link(n, slot int32, l int) {
	if slices.Contains(h.links[n][l], slot) {
		return
	}
	h.links[n][l] = append(h.links[n][l], slot)
	if len(h.links[n][l]) > h.maxLinks(l) {
		h.prune(n, l)
	}
}

// prune cuts n's links on level l to the maximum with the heuristic.
func (h *HNSW) prune(n int32, l int) {
	ls := h.links[n][l]
	base := h.st.Vector(n)
	cand := make([]Hit, len(ls))
	for i, x := range ls {
		cand[i] = Hit{Slot: x, Dist: h.dist(base, x)}
	}
	sort.Slice(cand, func(i, j int) bool { return less(cand[i], cand[j]) })
	sel := h.selectNeighbors(cand, h.maxLinks(l))
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
func (h *HNSW) greedy(dist func(int32) float32, ep Hit, l int, locked bool, buf []int32) ([]Hit, []int32) {
	cur := ep
	for changed := true; changed; {
		changed = false
		buf = h.neighbours(cur.Slot, l, locked, buf)
		for _, n := range buf {
			if d := dist(n); d < cur.Dist {
				cur, changed = Hit{Slot: n, Dist: d}, true
			}
		}
	}
	return []Hit{cur}, buf
}

// searchLayer is the beam search of one level: it returns up to ef nodes
// closest to q, closest first.
func (h *HNSW) searchLayer(dist func(int32) float32, ep []Hit, ef, l int, vis *visited, locked bool, buf []int32) ([]Hit, []int32) {
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
		buf = h.neighbours(c.Slot, l, locked, buf)
		for _, n := range buf {
			if vis.seen(n) {
				continue
			}
			d := dist(n)
			if !res.full() || d < res.h[0].Dist {
				x := Hit{Slot: n, Dist: d}
				cand.push(x)
				res.push(x)
			}
		}
	}
	return res.sorted(), buf
}

// Search returns up to k live slots close to the prepared query q, closest
// first, exploring ef candidates on the bottom layer (ef >= k). The walk
// ranks by the int8 codes (a quarter of the memory to read per node); the
// ef nodes found are re-ranked in float32, so the distances returned are
// exact.
func (h *HNSW) Search(q []float32, k, ef int) []Hit {
	if h.entry < 0 || k <= 0 {
		return nil
	}
	ef = max(ef, k)
	vis := h.getVisited()
	defer h.visited.Put(vis)
	qc := h.st.q.codeQuery(q[:h.st.dims], h.st.metric)
	dims, euclid := h.st.dims, h.st.metric == Euclidean
	dist := func(n int32) float32 { return h.st.q.approxDist(qc, int(n), dims, euclid) }
	ep := Hit{Slot: h.entry, Dist: dist(h.entry)}
	for l := h.maxLevel; l > 0; l-- {
		var e []Hit
		e, _ = h.greedy(dist, ep, l, false, nil)
		ep = e[0]
	}
	w, _ := h.searchLayer(dist, []Hit{ep}, ef, 0, vis, false, nil)
	t := newTopK(k)
	for _, x := range w {
		if h.st.alive[x.Slot] {
			t.push(Hit{Slot: x.Slot, Dist: h.dist(q, x.Slot)})
		}
	}
	return t.sorted()
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
