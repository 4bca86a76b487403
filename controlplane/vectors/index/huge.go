package index

import "unsafe"

// hugeFrom is the size from which an arena asks for huge pages.
const hugeFrom = 4 << 20

// growArena returns s with room for n more elements. A large arena is
// reallocated by hand rather than by append: the new one is advised to use
// huge pages (adviseHuge) before the copy touches it. A graph search reads
// ~1,000 vectors at random places of ~77 MB of codes per query; on 4 KB pages
// nearly every one is a TLB miss on top of the cache miss (on 2 MB pages
// the whole arena fits the TLB), which measured ~20% of the search time.
func growArena[T any](s []T, n int) []T {
	if len(s)+n <= cap(s) {
		return s
	}
	var zero T
	size := int(unsafe.Sizeof(zero))
	c := max(len(s)+n, 2*cap(s))
	if c*size >= hugeFrom {
		c = max(len(s)+n, cap(s)+cap(s)/4)
	}
	if c*size < hugeFrom {
		return append(s, make([]T, n)...)[:len(s)]
	}
	t := make([]T, len(s), c)
	adviseHuge(unsafe.Pointer(unsafe.SliceData(t)), c*size)
	copy(t, s)
	return t
}
