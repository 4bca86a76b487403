package index

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"unsafe"
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
	DefaultEfConstruction = 200
)

// HNSW is a hierarchical navigable small world graph over the slots of a
// Store (Malkov and Yashunin, 2016), with the neighbour-selection
// heuristic. Slots are inserted in order: slots below Covered are in the
// graph, later ones are not yet and a caller scans them exactly. Dead slots
// stay in the graph as waypoints and are never returned. Insert must not
// run concurrently with anything else; Search may run concurrently with
// other searches.
type HNSW struct {
	st     *Store
	m, m0  int
	efC    int
	ml     float64
	rng    *rand.Rand
	levels []int8
	// base holds the bottom layer's links, one row of 1+2·m0 int32 per
	// slot (the count, the links, then the nibble scale of each linked
	// node as float32 bits), so expanding a node reads one place besides
	// the neighbours' codes; upper holds the links of levels 1 and above
	// of the nodes that have them (upper[slot][l-1]; nil for the others).
	base  []int32
	row   int
	upper [][][]int32
	// pl holds every slot's nibble codes split in two bit planes
	// (nibble.go), the high plane then the low one, nscale their scales.
	pl     []uint8
	nscale []float32
	// sigmas is how many standard deviations of the H plane's estimate a
	// neighbour may lie beyond the beam before its L plane is left unread
	// (0 or less reads every neighbour whole); floatRerank is FloatRerank.
	// The benchmark and the tests vary them.
	sigmas      float64
	floatRerank int
	entry       int32
	maxLevel    int
	// piv are the nodes on level pivLevel and above, pivNib their nibble
	// codes one after another, pivScale their scales: a search scans them
	// in order (a few hundred nodes whose codes stay in the CPU caches
	// across queries) and starts from the closest, instead of descending
	// the upper layers from the entry point (node after node at random
	// places). descend makes searches descend anyway (the benchmark's
	// comparison).
	piv       []int32
	pivNib    []uint8
	pivScale  []float32
	descend   bool
	visited   sync.Pool
	searchers sync.Pool
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
	return &HNSW{st: st, m: cfg.M, m0: 2 * cfg.M, row: 1 + 4*cfg.M, efC: cfg.EfConstruction, ml: 1 / math.Log(float64(cfg.M)),
		sigmas: DefaultSigmas, floatRerank: FloatRerank, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)), entry: -1}
}

// Covered is the number of slots in the graph: slots [0, Covered).
func (h *HNSW) Covered() int { return len(h.levels) }

// Bytes estimates the memory the links take.
func (h *HNSW) Bytes() int {
	n := cap(h.levels) + cap(h.base)*4 + cap(h.upper)*24 + cap(h.pl) + cap(h.nscale)*4 + cap(h.piv)*4 + cap(h.pivNib) + cap(h.pivScale)*4
	for _, ls := range h.upper {
		n += cap(ls) * 24
		for _, l := range ls {
			n += cap(l) * 4
		}
	}
	return n
}

type visited struct {
	marks []uint8 // a byte per slot keeps the set in the CPU caches
	gen   uint8
}

func (h *HNSW) getVisited() *visited {
	v, _ := h.visited.Get().(*visited)
	if v == nil {
		v = &visited{}
	}
	if n := len(h.levels); len(v.marks) < n {
		v.marks = make([]uint8, n+n/4)
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
			h.appendNode(-1)
			continue
		}
		level := int(math.Floor(-math.Log(1-h.rng.Float64()) * h.ml))
		if level > 30 {
			level = 30
		}
		h.appendNode(int8(level))
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
		for _, x := range h.linksOf(slot, l) {
			if !slices.Contains(own, x) {
				own = append(own, x)
			}
		}
		if len(own) > h.maxLinks(l) {
			own = h.prune(slot, own, l)
		}
		h.setLinks(slot, l, own)
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
		return h.linksOf(slot, l)
	}
	h.lock(slot, true)
	buf = append(buf[:0], h.linksOf(slot, l)...)
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
	ls := h.linksOf(n, l)
	if slices.Contains(ls, slot) {
		return
	}
	if len(ls) < h.maxLinks(l) {
		h.setLinks(n, l, append(ls, slot))
		return
	}
	all := make([]int32, len(ls), len(ls)+1)
	copy(all, ls)
	h.setLinks(n, l, h.prune(n, append(all, slot), l))
}

// prune cuts ls, candidate links of n on level l, to the maximum with the
// heuristic (in place).
func (h *HNSW) prune(n int32, ls []int32, l int) []int32 {
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
	return ls
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
// first, exploring ef candidates on the bottom layer (ef >= k).
//
// The search's cost is memory: each node it ranks is a cache miss at a
// random place. So the walk ranks by the nibble codes (nibble.go, 384 bytes
// a 768-dimension node) split in two bit planes, asking for the high plane
// of all a node's unvisited neighbours at once before ranking them so their
// misses overlap, with the scales it needs stored next to the links; a
// neighbour whose high plane puts it beyond the beam's worst by more than
// sigmas standard deviations of the estimate is dropped, the others' low
// planes are read and they are ranked exactly by their nibble codes. The
// walk starts from the closest pivot. The best of the ef nodes found (by
// the nibble codes, within a margin of their error) are ranked again by
// the int8 codes, and the best max(k, FloatRerank) of those in float32, so
// the distances returned are exact. Its working memory comes from a pool:
// the answer is the only allocation.
func (h *HNSW) Search(q []float32, k, ef int) []Hit {
	hits, _ := h.search(q, k, ef)
	return hits
}

// walkStats counts a search's work: the nodes the walk ranked (their H
// plane read), those of its start (pivots scanned, upper layers' nodes),
// and those read whole (both planes).
type walkStats struct {
	dists, start, whole, expand, int8s, floats int
}

// DefaultSigmas is how far (in standard deviations of the H plane's
// estimate) beyond the beam's worst a neighbour may seem before its L plane
// is left unread: chosen on the benchmark's recall (docs/notes/2026-11-22-vectors-search.md), and
// checked on data unlike it (TestHNSWPlaneRejection/skewed: same recall).
//
// Every live node of the walk is ranked again by the int8 codes. Keeping
// only those within a margin of the nibble distance's error saved 4-16 µs a
// query on the benchmark's data, but the error was measured on that data:
// on skewed data (Laplace noise, dimensions scaled 0.2 to 5) it cut
// recall@10 from 0.993 to 0.912, so it was removed (docs/notes/2026-11-22-vectors-search.md).
const DefaultSigmas = 2.0

// FloatRerank is how many of the walk's nodes, best by the int8 codes, a
// search ranks in float32 (at least k).
const FloatRerank = 12

// search is Search; it also returns the walk's counts.
func (h *HNSW) search(q []float32, k, ef int) ([]Hit, walkStats) {
	if h.entry < 0 || k <= 0 {
		return nil, walkStats{}
	}
	ef = max(ef, k)
	s := h.getSearcher()
	defer h.searchers.Put(s)
	s.stats = walkStats{}
	st := h.st
	qn := s.codeWalkQuery(q[:st.dims])
	// The H plane's estimate of Q·U, raised by sigmas standard deviations:
	// scale·(estA·(Q·H) + estB) is at least the node's q·x but for a
	// fraction of the nodes that a normal tail of sigmas leaves.
	s.estA = float32(s.b8 * (4 + lowSlope))
	s.estB = float32(s.b8 * ((lowMean-7.5)*float64(s.sumQ) + h.sigmas*math.Sqrt(lowVar*float64(qn))))
	s.reject = h.sigmas > 0
	var ep Hit
	if len(h.piv) > 0 && len(h.piv) <= maxPivots && !h.descend {
		// The bottom layer's walk starts at the closest pivot itself:
		// greedy steps on level 1 first (about 35 nodes read one hop
		// after another) did not shorten it.
		ep = h.scanPivots(s)
	} else {
		ep = Hit{Slot: h.entry, Dist: h.wdist(s, h.entry, h.nscale[h.entry])}
		for l := h.maxLevel; l > 0; l-- {
			ep = h.greedyQuery(s, ep, l)
		}
	}
	h.searchBase(s, ep, ef)
	// The walk's live nodes, ranked again by the int8 codes.
	live := s.res.h[:0]
	for _, x := range s.res.h {
		if st.alive[x.Slot] {
			live = append(live, x)
		}
	}
	s.stats.int8s = len(live)
	d := st.dims
	for _, x := range live {
		prefetch(unsafe.Pointer(&st.q.x[int(x.Slot)*d]), (d+63)/64)
	}
	for i, x := range live {
		live[i].Dist = h.adist(&s.qc, x.Slot)
	}
	sortHits(live)
	// The best of those in float32.
	live = live[:min(len(live), max(h.floatRerank, k))]
	for _, x := range live {
		prefetch(unsafe.Pointer(&st.data[int(x.Slot)*d]), (4*d+63)/64)
	}
	t := &s.out
	t.k, t.h = k, t.h[:0]
	s.stats.floats = len(live)
	for _, x := range live {
		t.push(Hit{Slot: x.Slot, Dist: h.dist(q, x.Slot)})
	}
	out := make([]Hit, len(t.h))
	copy(out, t.h)
	sortHits(out)
	return out, s.stats
}

// wdist is the distance the walk ranks by: slot's nibble codes, whose
// scale the caller passes (from a link row where it can).
func (h *HNSW) wdist(s *searcher, slot int32, scale float32) float32 {
	pb := len(s.q8) / 4
	o := int(slot) * 2 * pb
	qu := 4*DotU2(h.pl[o:o+pb:o+pb], s.q8) + DotU2(h.pl[o+pb:o+2*pb:o+2*pb], s.q8)
	return h.fromU(s, slot, scale, qu)
}

// fromU is the walk's distance of slot, of the given nibble scale, from
// Q·U.
func (h *HNSW) fromU(s *searcher, slot int32, scale float32, qu int32) float32 {
	approx := float64(scale) * s.b8 * (float64(qu) - 7.5*float64(s.sumQ))
	if h.st.metric == Euclidean {
		return float32(s.qc.qq + h.st.q.sq[slot] - 2*approx)
	}
	return float32(-approx)
}

// pivLevel is the lowest level of the pivots (about one node in M², some
// 400 of 100,000 nodes: 150 KB of codes at 768 dimensions). maxPivots
// bounds the scan: a graph with more (above about 260,000 nodes) descends
// its upper layers instead.
const (
	pivLevel  = 2
	maxPivots = 1024
)

// scanPivots returns the pivot closest to the query by the walk's codes.
func (h *HNSW) scanPivots(s *searcher) Hit {
	q8 := s.q8[:s.nq8]
	if cap(s.pbuf) < len(h.piv) {
		s.pbuf = make([]int32, len(h.piv))
	}
	sums := s.pbuf[:len(h.piv)]
	dotU4Seq(h.pivNib, q8, sums)
	b8 := float32(s.b8)
	c75 := float32(7.5 * float64(s.sumQ))
	euclid := h.st.metric == Euclidean
	best := Hit{Slot: -1}
	for i, slot := range h.piv {
		approx := h.pivScale[i] * b8 * (float32(sums[i]) - c75)
		d := -approx
		if euclid {
			d = float32(s.qc.qq+h.st.q.sq[slot]) - 2*approx
		}
		if best.Slot < 0 || d < best.Dist {
			best = Hit{Slot: slot, Dist: d}
		}
	}
	s.stats.start += len(h.piv)
	return best
}

// prefetchWalk asks for both of slot's planes ahead of wdist.
func (h *HNSW) prefetchWalk(s *searcher, slot int32) {
	pb := len(s.q8) / 4
	prefetch(unsafe.Pointer(&h.pl[int(slot)*2*pb]), (2*pb+63)/64)
}

// searcher is the working memory of one Search.
type searcher struct {
	vis  visited
	qc   qcode
	cand minHeap
	res  topK
	out  topK
	buf  []int32
	sbuf []float32
	pbuf []int32 // the pivots' Q·U
	hbuf []int32 // Q·H of the neighbours kept after their H plane
	q8   []int8  // the query's int8 codes for the walk, padded to whole plane blocks
	nq8  int     // their length padded to whole nibble blocks only
	b8   float64
	sumQ int64 // their sum
	// estA and estB turn Q·H into the H plane's optimistic estimate of
	// q·x (times the node's scale); reject is set when the walk may drop
	// nodes on it.
	estA, estB float32
	reject     bool
	stats      walkStats
}

func (h *HNSW) getSearcher() *searcher {
	s, _ := h.searchers.Get().(*searcher)
	if s == nil {
		s = &searcher{}
	}
	v := &s.vis
	if n := len(h.levels); len(v.marks) < n {
		v.marks = make([]uint8, n+n/4)
		v.gen = 0
	}
	v.gen++
	if v.gen == 0 {
		clear(v.marks)
		v.gen = 1
	}
	return s
}

// adist is slot's distance from the coded query by the int8 codes.
func (h *HNSW) adist(qc *qcode, slot int32) float32 {
	return h.st.q.approxDist(qc, int(slot), h.st.dims, h.st.metric == Euclidean)
}

// greedyQuery walks level l from ep to the closest node it reaches.
func (h *HNSW) greedyQuery(s *searcher, ep Hit, l int) Hit {
	cur := ep
	for changed := true; changed; {
		changed = false
		ls := h.upper[cur.Slot][l-1]
		for _, n := range ls {
			h.prefetchWalk(s, n)
		}
		s.stats.dists += len(ls)
		s.stats.start += len(ls)
		s.stats.whole += len(ls)
		for _, n := range ls {
			if d := h.wdist(s, n, h.nscale[n]); d < cur.Dist {
				cur, changed = Hit{Slot: n, Dist: d}, true
			}
		}
	}
	return cur
}

// searchBase is the beam search of the bottom layer from ep: s.res ends
// with up to ef nodes closest to the query by the codes.
func (h *HNSW) searchBase(s *searcher, ep Hit, ef int) {
	vis := &s.vis
	s.cand = s.cand[:0]
	res := &s.res
	res.k, res.h = ef, res.h[:0]
	vis.seen(ep.Slot)
	s.cand.push(ep)
	res.push(ep)
	pb := len(s.q8) / 4
	lines := (pb + 63) / 64
	// A node's planes lie one after the other: H, then L.
	hA, lA, stride, lOff := h.pl, h.pl, 2*pb, pb
	euclid := h.st.metric == Euclidean
	for len(s.cand) > 0 {
		c := s.cand.pop()
		if res.full() && c.Dist > res.h[0].Dist {
			break
		}
		s.stats.expand++
		buf := s.buf[:0]
		o := int(c.Slot) * h.row
		links := h.base[o+1 : o+1+int(h.base[o]) : o+1+h.m0]
		scales := h.base[o+1+h.m0 : o+1+h.m0+len(links)]
		sc := s.sbuf[:0]
		full := res.full() && s.reject
		for i, n := range links {
			if !vis.seen(n) {
				prefetch(unsafe.Pointer(&hA[int(n)*stride]), lines)
				if !full {
					prefetch(unsafe.Pointer(&lA[int(n)*stride+lOff]), lines)
				}
				buf = append(buf, n)
				sc = append(sc, math.Float32frombits(uint32(scales[i])))
			}
		}
		s.stats.dists += len(buf)
		// The H planes first: a neighbour whose optimistic estimate is
		// beyond the beam's worst (as it stands before this expansion:
		// it only tightens) would not enter it; the others' L planes are
		// asked for at once.
		hq := s.hbuf[:0]
		kept := 0
		var worst float32
		if full {
			worst = res.h[0].Dist
		}
		for i, n := range buf {
			o := int(n) * stride
			dh := DotU2(hA[o:o+pb:o+pb], s.q8)
			if full {
				est := sc[i] * (s.estA*float32(dh) + s.estB)
				opt := -est
				if euclid {
					opt = float32(s.qc.qq+h.st.q.sq[n]) - 2*est
				}
				if opt > worst {
					continue
				}
				prefetch(unsafe.Pointer(&lA[o+lOff]), lines)
			}
			buf[kept], sc[kept] = n, sc[i]
			hq = append(hq, dh)
			kept++
		}
		s.stats.whole += kept
		for i, n := range buf[:kept] {
			o := int(n)*stride + lOff
			dl := DotU2(lA[o:o+pb:o+pb], s.q8)
			d := h.fromU(s, n, sc[i], 4*hq[i]+dl)
			if !res.full() || d < res.h[0].Dist {
				// It may be expanded next: ask for its row now.
				prefetch(unsafe.Pointer(&h.base[int(n)*h.row]), (h.row*4+63)/64)
				x := Hit{Slot: n, Dist: d}
				s.cand.push(x)
				res.push(x)
			}
		}
		s.buf, s.sbuf, s.hbuf = buf, sc, hq
		if len(s.cand) > 0 {
			// The closest candidate is the next one expanded: ask for its
			// row now.
			prefetch(unsafe.Pointer(&h.base[int(s.cand[0].Slot)*h.row]), (h.row*4+63)/64)
		}
	}
}

// sortHits orders hits closest first without allocating.
func sortHits(a []Hit) {
	slices.SortFunc(a, func(x, y Hit) int {
		if less(x, y) {
			return -1
		}
		if less(y, x) {
			return 1
		}
		return 0
	})
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
const DefaultEf = 64

// linksOf is slot's link list on level l. On level 0 it aliases the
// slot's row: the caller holds the slot's lock during a parallel build.
func (h *HNSW) linksOf(slot int32, l int) []int32 {
	if l > 0 {
		return h.upper[slot][l-1]
	}
	o := int(slot) * h.row
	return h.base[o+1 : o+1+int(h.base[o]) : o+1+h.m0]
}

// appendNode adds the next slot with level lv (-1 for a dead placeholder)
// and no links yet.
func (h *HNSW) appendNode(lv int8) {
	h.levels = append(h.levels, lv)
	slot := int32(len(h.levels) - 1)
	h.pl = growArena(h.pl, 2*planeBytes(h.st.dims))
	var a float32
	h.pl, a = appendPlanes(h.pl, h.st.Vector(slot))
	h.nscale = append(h.nscale, a)
	if lv >= pivLevel {
		h.piv = append(h.piv, slot)
		h.pivNib, a = appendNibbles(h.pivNib, h.st.Vector(slot))
		h.pivScale = append(h.pivScale, a)
	}
	h.base = growArena(h.base, h.row)
	h.base = h.base[:len(h.base)+h.row]
	clear(h.base[len(h.base)-h.row:])
	if lv > 0 {
		for len(h.upper) < len(h.levels)-1 {
			h.upper = append(h.upper, nil)
		}
		h.upper = append(h.upper, make([][]int32, lv))
	}
}

// setLinks replaces slot's link list on level l (at most maxLinks(l)).
func (h *HNSW) setLinks(slot int32, l int, ls []int32) {
	if l > 0 {
		h.upper[slot][l-1] = ls
		return
	}
	o := int(slot) * h.row
	n := copy(h.base[o+1:o+1+h.m0], ls)
	h.base[o] = int32(n)
	for i, x := range ls[:n] {
		h.base[o+1+h.m0+i] = int32(math.Float32bits(h.nscale[x]))
	}
}
