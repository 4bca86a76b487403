package index

import (
	"math"
	"unsafe"
)

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

// DefaultEf is the bottom-layer candidate list of a search when the caller
// has no reason to pick another (at least topK is used).
const DefaultEf = 64
