package ristretto

import (
	"testing"
	"time"
	"unsafe"
)

// batchConsumer records the batches it is given; it recycles them when
// recycle is set, else keeps them (a consumer that is behind).
type batchConsumer struct {
	batches [][]uint64
	accept  bool
	recycle func([]uint64)
}

func (c *batchConsumer) Push(keys []uint64) bool {
	if !c.accept {
		return false
	}
	c.batches = append(c.batches, append([]uint64(nil), keys...))
	if c.recycle != nil {
		c.recycle(keys)
	}
	return true
}

func TestRingBuffer(t *testing.T) {
	const capa = 8
	tests := []struct {
		name        string
		accept      bool
		recycle     bool
		pushes      int
		wantBatches int
	}{
		// One stripe (the same key) filled 10 times: 10 batches, the
		// same few arrays going round.
		{"recycled", true, true, 10 * capa, 10},
		// The consumer keeps every batch: the spares run out after
		// inFlight+1 drains, then accesses are dropped, never allocated.
		{"consumer behind", true, false, 10 * capa, 3},
		// The consumer refuses: the stripe starts again on its own array.
		{"refused", false, true, 10 * capa, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cons := &batchConsumer{accept: tt.accept}
			b := newRingBuffer(cons, capa, 2)
			if tt.recycle {
				cons.recycle = b.recycle
			}
			arrays := map[*uint64]bool{}
			for i := range b.stripes {
				arrays[unsafe.SliceData(b.stripes[i].data)] = true
			}
			var spares [][]uint64
			for len(b.free) > 0 {
				spares = append(spares, <-b.free)
			}
			for _, s := range spares {
				arrays[unsafe.SliceData(s)] = true
				b.free <- s
			}
			for range tt.pushes {
				b.Push(42)
			}
			if len(cons.batches) != tt.wantBatches {
				t.Fatalf("%d batches, want %d", len(cons.batches), tt.wantBatches)
			}
			for _, batch := range cons.batches {
				if len(batch) != capa {
					t.Fatalf("batch of %d, want %d", len(batch), capa)
				}
				for _, k := range batch {
					if k != 42 {
						t.Fatalf("batch holds %d", k)
					}
				}
			}
			for i := range b.stripes {
				if !arrays[unsafe.SliceData(b.stripes[i].data)] {
					t.Fatalf("stripe %d has an array allocated after start", i)
				}
			}
		})
	}
}

// TestRingBufferRecycleIgnoresForeignBatches: only batches of the buffer's
// size go back to the free list, and never past its capacity.
func TestRingBufferRecycleIgnoresForeignBatches(t *testing.T) {
	b := newRingBuffer(&batchConsumer{}, 8, 2)
	n := len(b.free)
	b.recycle(make([]uint64, 0, 4))
	b.recycle(make([]uint64, 0, 8)) // free is full: dropped
	if len(b.free) != n {
		t.Fatalf("free holds %d, want %d", len(b.free), n)
	}
}

// TestGetFeedsThePolicy: accesses recorded by Get reach the admission
// policy's frequency sketch, and the batch comes back to the free list.
func TestGetFeedsThePolicy(t *testing.T) {
	c, err := NewCache(&Config[uint64, int]{NumCounters: 1000, MaxCost: 100, BufferItems: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Set(7, 1, 1)
	c.Wait()
	full := cap(c.getBuf.free)
	for range 64 { // one stripe: key 7's
		c.Get(7)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		c.cachePolicy.Lock()
		est := c.cachePolicy.admit.Estimate(7)
		c.cachePolicy.Unlock()
		if est > 0 && len(c.getBuf.free) == full {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("estimate %d, %d of %d batches free", est, len(c.getBuf.free), full)
		}
		time.Sleep(time.Millisecond) // polling the policy goroutine, bounded by deadline
	}
}
