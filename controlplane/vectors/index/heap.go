package index

import (
	"slices"
)

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
