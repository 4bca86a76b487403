package index

import (
	"math"
	"math/rand/v2"
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
