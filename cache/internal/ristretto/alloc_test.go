//go:build !race

package ristretto

import (
	"runtime"
	"testing"
)

// TestGetDoesNotAllocate counts every allocation of the process over
// 2,000,000 hits and misses (testing.AllocsPerRun rounds an average down,
// which hid upstream's one 512-byte batch per 64 Gets: ~31,000 here). The
// runtime's own bookkeeping while the policy goroutine parks and wakes
// (sudogs, GC workers) sometimes allocates a few objects, a number that does
// not grow with the Gets; maxRuntimeAllocs allows for it.
func TestGetDoesNotAllocate(t *testing.T) {
	const gets, maxRuntimeAllocs = 2_000_000, 16
	c, err := NewCache(&Config[uint64, *int]{NumCounters: 10000, MaxCost: 1000, BufferItems: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	v := 1
	for k := range uint64(16) {
		c.Set(k, &v, 1)
	}
	c.Wait()
	get := func(n int) {
		for i := range n {
			c.Get(uint64(i) % 32) // half hits, half misses, every stripe
		}
	}
	get(10000)
	runtime.GC() // finish the cycle setup started (its mark workers allocate)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	get(gets)
	runtime.ReadMemStats(&after)
	if n := after.Mallocs - before.Mallocs; n > maxRuntimeAllocs {
		t.Fatalf("%d allocations in %d Gets, want at most %d (the runtime's)", n, gets, maxRuntimeAllocs)
	}
}
