package h2

import (
	"math/rand/v2"
	"testing"
)

// TestOpenedIDs: against a plain set of the identifiers opened, over
// random gaps, small and past the window.
func TestOpenedIDs(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var o openedIDs
	opened := map[uint32]bool{}
	id := uint32(1)
	for range 20000 {
		opened[id] = true
		o.open(id)
		for range 8 {
			q := id - 2*uint32(r.IntN(int(id/2)+1))
			if want := opened[q] || (id-q)/2 >= openedWindow; o.wasOpened(q) != want {
				t.Fatalf("after opening %d: wasOpened(%d) = %v, want %v", id, q, !want, want)
			}
		}
		switch r.IntN(10) {
		case 0:
			id += 2 * uint32(1+r.IntN(3*openedWindow))
		case 1, 2:
			id += 2 * uint32(1+r.IntN(200))
		default:
			id += 2
		}
	}
}
