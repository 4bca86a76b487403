package wasm

import "testing"

// TestMemPool: reservations come back zeroed, at most max stay idle, a
// reservation larger than the pool's is not pooled, a grow past the
// reservation fails, and closing unmaps the idle ones and those returned
// later.
func TestMemPool(t *testing.T) {
	const size = 1 << 20
	p := newMemPool(size, 1)
	get := func(maxBytes uint64) *mmapMemory {
		t.Helper()
		m, ok := p.get(64<<10, maxBytes).(*mmapMemory)
		if !ok {
			t.Fatal("not a reservation")
		}
		return m
	}
	a := get(size)
	buf := a.Reallocate(128 << 10)
	buf[100000] = 7
	if a.Reallocate(size+1) != nil {
		t.Fatal("grew past the reservation")
	}
	b := get(size)
	a.Free()
	b.Free() // the pool keeps one
	if len(p.idle) != 1 || p.idle[0] != a || b.buf != nil {
		t.Fatalf("idle %d (want the first), second unmapped %v", len(p.idle), b.buf == nil)
	}
	c := get(size)
	if c != a {
		t.Fatal("the idle reservation was not reused")
	}
	if got := c.Reallocate(128 << 10)[100000]; got != 0 {
		t.Fatalf("reused memory holds %d, want 0", got)
	}
	big := get(2 * size)
	if big.pool != nil {
		t.Fatal("a reservation larger than the pool's is pooled")
	}
	big.Free()
	if big.buf != nil {
		t.Fatal("an unpooled reservation was not unmapped")
	}
	c.Free()
	p.close()
	if len(p.idle) != 0 || c.buf != nil {
		t.Fatal("close left an idle reservation mapped")
	}
	d := get(size)
	d.Free()
	if d.buf != nil || len(p.idle) != 0 {
		t.Fatal("a reservation returned after close was kept")
	}
}
