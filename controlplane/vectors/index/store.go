package index

import (
	"runtime"
	"sync"
)

// Store holds vectors of one dimension count in one contiguous float32
// slice, slot after slot, so a scan reads memory in order. A removed slot
// stays allocated (marked dead) until the store is rebuilt, so slot numbers
// the HNSW graph holds stay valid. Store is not safe for concurrent
// mutation: the owner serialises writes and excludes readers while writing.
type Store struct {
	dims   int
	metric Metric
	data   []float32
	alive  []bool
	live   int
	// q holds every slot's int8 codes and error terms (quant.go): the
	// exact search scans them first, a quarter of the bytes.
	q codes
}

// NewStore returns an empty store for vectors of dims values ranked by m.
func NewStore(dims int, m Metric) *Store { return &Store{dims: dims, metric: m} }

// Dims is the number of values of each vector.
func (s *Store) Dims() int { return s.dims }

// Metric is the store's ranking.
func (s *Store) Metric() Metric { return s.metric }

// Slots is the number of slots ever added (live and dead).
func (s *Store) Slots() int { return len(s.alive) }

// Live is the number of live vectors.
func (s *Store) Live() int { return s.live }

// Alive tells whether slot holds a live vector.
func (s *Store) Alive(slot int32) bool { return s.alive[slot] }

// Vector returns the stored (for cosine, unit-length) values of slot; the
// slice aliases the store.
func (s *Store) Vector(slot int32) []float32 {
	o := int(slot) * s.dims
	return s.data[o : o+s.dims : o+s.dims]
}

// Prepare returns the form of v that is stored and searched with: a copy,
// unit-length for cosine. ok is false for a zero vector under cosine.
func (s *Store) Prepare(v []float32) ([]float32, bool) {
	c := append([]float32(nil), v...)
	if s.metric == Cosine {
		return c, Normalize(c)
	}
	return c, true
}

// Add appends a prepared vector and returns its slot.
func (s *Store) Add(prepared []float32) int32 {
	s.data = append(growArena(s.data, s.dims), prepared[:s.dims]...)
	s.q.add(prepared[:s.dims])
	s.alive = append(s.alive, true)
	s.live++
	return int32(len(s.alive) - 1)
}

// Kill marks slot dead.
func (s *Store) Kill(slot int32) {
	if s.alive[slot] {
		s.alive[slot] = false
		s.live--
	}
}

// Bytes is the memory the vectors take.
func (s *Store) Bytes() int { return cap(s.data)*4 + cap(s.alive) + s.q.bytes() }

// Accept tells whether a live slot may be returned (a filter, a namespace);
// nil accepts every slot.
type Accept func(slot int32) bool

// minParallel is the slot count below which a search runs on one core.
const minParallel = 8192

// Exact returns the k live slots closest to the prepared query q among the
// accepted ones, closest first: the filter runs before ranking, so this is
// the true top k of the accepted set, exactly as ExactFloat ranks it. Above
// minQuantized slots it scans the int8 codes and re-ranks in float32 only
// the candidates the error bound cannot rule out (quant.go).
func (s *Store) Exact(q []float32, k int, accept Accept) []Hit { return s.ExactFrom(q, k, 0, accept) }

// ExactFrom is Exact over the slots from first on (the ones an HNSW graph
// does not cover yet).
func (s *Store) ExactFrom(q []float32, k, first int, accept Accept) []Hit {
	if len(s.alive)-first >= minQuantized {
		return s.quantized(q, k, first, accept)
	}
	return s.ExactFloatFrom(q, k, first, accept)
}

// ExactFloat is the float32 scan of every slot: the slots are split across
// the available cores, each keeping its own top k, merged at the end. The
// quantized scan returns exactly its answer.
func (s *Store) ExactFloat(q []float32, k int, accept Accept) []Hit {
	return s.ExactFloatFrom(q, k, 0, accept)
}

// ExactFloatFrom is ExactFloat from slot first on.
func (s *Store) ExactFloatFrom(q []float32, k, first int, accept Accept) []Hit {
	n := len(s.alive)
	if k <= 0 || first >= n {
		return nil
	}
	workers := runtime.GOMAXPROCS(0)
	if n-first < minParallel || workers < 2 {
		t := newTopK(k)
		s.scan(q, first, n, accept, t)
		return t.sorted()
	}
	parts := make([]*topK, workers)
	var wg sync.WaitGroup
	chunk := (n - first + workers - 1) / workers
	for w := 0; w < workers; w++ {
		lo, hi := first+w*chunk, min(first+(w+1)*chunk, n)
		parts[w] = newTopK(k)
		if lo >= hi {
			continue
		}
		wg.Add(1)
		go func(t *topK) {
			defer wg.Done()
			s.scan(q, lo, hi, accept, t)
		}(parts[w])
	}
	wg.Wait()
	t := newTopK(k)
	for _, p := range parts {
		for _, h := range p.h {
			t.push(h)
		}
	}
	return t.sorted()
}

// scan ranks slots [lo, hi) into t.
func (s *Store) scan(q []float32, lo, hi int, accept Accept, t *topK) {
	d := s.dims
	q = q[:d:d]
	euclid := s.metric == Euclidean
	for i := lo; i < hi; i++ {
		if !s.alive[i] || (accept != nil && !accept(int32(i))) {
			continue
		}
		v := s.data[i*d : i*d+d : i*d+d]
		var dist float32
		if euclid {
			dist = L2Sq(q, v)
		} else {
			dist = -Dot(q, v)
		}
		t.push(Hit{Slot: int32(i), Dist: dist})
	}
}

// Naive is the plain loop the benchmark compares with: one core, the
// one-accumulator dot product, a full sort-free top k.
func (s *Store) Naive(q []float32, k int) []Hit {
	t := newTopK(k)
	for i := range s.alive {
		if !s.alive[i] {
			continue
		}
		v := s.Vector(int32(i))
		var dist float32
		if s.metric == Euclidean {
			for j := range q {
				x := q[j] - v[j]
				dist += x * x
			}
		} else {
			dist = -NaiveDot(q, v)
		}
		t.push(Hit{Slot: int32(i), Dist: dist})
	}
	return t.sorted()
}
