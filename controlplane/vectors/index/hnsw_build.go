package index

import (
	"math"
	"slices"
	"sort"
	"sync"
)

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
