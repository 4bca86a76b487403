package wasm

import (
	"github.com/tetratelabs/wazero/experimental"
)

// Linear memory. By default wazero keeps an instance's memory in a Go
// slice and copies it whole each time the function grows it (a Go
// function's runtime grows its memory several times while it starts), and
// the garbage collector then reclaims megabytes per call. Here an
// instance's memory is a reservation of the host's memory limit outside the
// Go heap (memory_linux.go): growing only makes more of it usable and
// nothing is copied. A reservation whose instance has ended is zeroed and
// kept for the next instance (memPool), so that a call does not pay the
// system for mapping, faulting in and unmapping its pages. Where that is
// not available, memory is a Go slice as wazero's own.

// callMemory is the allocator of one call. It frees the memory it handed
// out itself, once the instance has stopped running: wazero frees an
// instance's memory when it closes the instance, and a Runtime.Close (the
// host closing) does that from another goroutine while the instance may
// still be running, which a reservation, unlike a Go slice, cannot survive.
// It also frees the memory when instantiation failed before wazero could (a
// data segment past the memory's end).
type callMemory struct {
	pool *memPool
	mem  experimental.LinearMemory
}

// Allocate implements experimental.MemoryAllocator.
func (c *callMemory) Allocate(capBytes, maxBytes uint64) experimental.LinearMemory {
	c.mem = c.pool.get(capBytes, maxBytes)
	return keptMemory{c.mem}
}

// release frees the call's memory. Called once the instance has stopped
// running, on the call's goroutine.
func (c *callMemory) release() {
	if c.mem != nil {
		c.mem.Free()
		c.mem = nil
	}
}

// keptMemory is the memory wazero sees: its Free does nothing (release
// frees it).
type keptMemory struct{ experimental.LinearMemory }

func (keptMemory) Free() {}

// heapMemory is a linear memory in a Go slice, grown by copying.
type heapMemory struct{ buf []byte }

func (m *heapMemory) Reallocate(size uint64) []byte {
	if size > uint64(cap(m.buf)) {
		buf := make([]byte, size, max(size, 2*uint64(cap(m.buf))))
		copy(buf, m.buf)
		m.buf = buf
	}
	m.buf = m.buf[:size]
	return m.buf
}

func (m *heapMemory) Free() { m.buf = nil }

var (
	_ experimental.MemoryAllocator = (*callMemory)(nil)
	_ experimental.LinearMemory    = (*heapMemory)(nil)
)
