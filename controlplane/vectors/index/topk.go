package index

import "sort"

// Hit is one result: a slot of the store and its internal distance.
type Hit struct {
	Slot int32
	Dist float32
}

// less orders hits closest first, ties by slot.
func less(a, b Hit) bool {
	if a.Dist != b.Dist {
		return a.Dist < b.Dist
	}
	return a.Slot < b.Slot
}

// topK keeps the k closest hits seen, as a max-heap on distance.
type topK struct {
	k int
	h []Hit
}

func newTopK(k int) *topK { return &topK{k: k, h: make([]Hit, 0, k)} }

// worst is the distance a new hit must beat once the heap is full.
func (t *topK) full() bool { return len(t.h) == t.k }

// push offers a hit.
func (t *topK) push(x Hit) {
	if len(t.h) < t.k {
		t.h = append(t.h, x)
		t.up(len(t.h) - 1)
		return
	}
	if !less(x, t.h[0]) {
		return
	}
	t.h[0] = x
	t.down(0)
}

func (t *topK) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !less(t.h[p], t.h[i]) {
			return
		}
		t.h[p], t.h[i] = t.h[i], t.h[p]
		i = p
	}
}

func (t *topK) down(i int) {
	n := len(t.h)
	for {
		l, m := 2*i+1, i
		if l < n && less(t.h[m], t.h[l]) {
			m = l
		}
		if r := l + 1; r < n && less(t.h[m], t.h[r]) {
			m = r
		}
		if m == i {
			return
		}
		t.h[m], t.h[i] = t.h[i], t.h[m]
		i = m
	}
}

// sorted returns the hits closest first.
func (t *topK) sorted() []Hit {
	out := append([]Hit(nil), t.h...)
	sort.Slice(out, func(i, j int) bool { return less(out[i], out[j]) })
	return out
}
