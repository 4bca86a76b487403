package wasm

import (
	"sync"

	"github.com/tetratelabs/wazero/experimental"
	"golang.org/x/sys/unix"
)

// keepResidentBytes bounds the memory a reservation may have used and
// still go back to the pool: zeroing it costs about as much as faulting it
// in again, and idle reservations hold at most this much each.
const keepResidentBytes = 16 << 20

// memPool keeps up to max idle reservations of size bytes, zeroed.
type memPool struct {
	size uint64
	max  int

	mu     sync.Mutex
	idle   []*mmapMemory
	closed bool
}

func newMemPool(size uint64, max int) *memPool { return &memPool{size: size, max: max} }

// get is a linear memory able to grow to maxBytes with its first capBytes
// (the initial memory) usable: an idle reservation, a new one, or a Go
// slice when the system refuses a reservation. wazero panics when the
// initial memory cannot be had, so that part is made usable here, where a
// refusal can still fall back.
func (p *memPool) get(capBytes, maxBytes uint64) experimental.LinearMemory {
	if m := p.reservation(maxBytes); m != nil {
		if m.Reallocate(capBytes) != nil {
			return m
		}
		m.Free()
	}
	return &heapMemory{buf: make([]byte, 0, capBytes)}
}

func (p *memPool) reservation(maxBytes uint64) *mmapMemory {
	if maxBytes > p.size {
		return reserve(maxBytes) // not pooled
	}
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		m := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return m
	}
	p.mu.Unlock()
	if m := reserve(p.size); m != nil {
		m.pool = p
		return m
	}
	return nil
}

// put takes back m, whose instance has ended: zeroed and kept when there
// is room, else unmapped.
func (p *memPool) put(m *mmapMemory) {
	if m.used > keepResidentBytes {
		m.unmap()
		return
	}
	clear(m.buf[:m.used])
	m.used = 0
	p.mu.Lock()
	if p.closed || len(p.idle) >= p.max {
		p.mu.Unlock()
		m.unmap()
		return
	}
	p.idle = append(p.idle, m)
	p.mu.Unlock()
}

// close unmaps the idle reservations; those in use are unmapped when
// their instance ends.
func (p *memPool) close() {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.closed = nil, true
	p.mu.Unlock()
	for _, m := range idle {
		m.unmap()
	}
}

// mmapMemory is a linear memory in an anonymous private mapping of the
// largest size it may grow to, inaccessible (PROT_NONE: neither counted
// nor backed) past the most it has ever been grown to. Pages come zeroed
// from the kernel on first touch, and the pool zeroes what an instance
// used before the next one gets it; wazero checks every access against
// the current length, so an instance reaches nothing past it.
type mmapMemory struct {
	pool      *memPool // nil: not pooled
	buf       []byte   // the whole reservation
	committed uint64   // readable and writable prefix
	used      uint64   // the longest this instance has made it
}

// reserve maps size bytes, nil when the system refuses.
func reserve(size uint64) *mmapMemory {
	if size == 0 || size > maxMemoryLimitBytes {
		return nil
	}
	buf, err := unix.Mmap(-1, 0, int(size), unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return nil
	}
	return &mmapMemory{buf: buf}
}

// Reallocate makes the first size bytes usable; nil (the grow fails) past
// the reservation or when the system refuses.
func (m *mmapMemory) Reallocate(size uint64) []byte {
	if size > uint64(len(m.buf)) {
		return nil
	}
	if size > m.committed {
		if err := unix.Mprotect(m.buf[m.committed:size], unix.PROT_READ|unix.PROT_WRITE); err != nil {
			return nil
		}
		// Fault the new pages in at once (Linux 5.14+; else on first
		// touch): cheaper than one trap per page, and the pool's zeroing
		// makes them resident anyway. Only up to what the pool keeps: a
		// large grow is faulted in as the function touches it.
		if m.committed < keepResidentBytes {
			_ = unix.Madvise(m.buf[m.committed:min(size, keepResidentBytes)], unix.MADV_POPULATE_WRITE)
		}
		m.committed = size
	}
	m.used = max(m.used, size)
	return m.buf[:size:size]
}

// Free ends the instance's use: back to the pool, or unmapped.
func (m *mmapMemory) Free() {
	if m.pool != nil {
		m.pool.put(m)
		return
	}
	m.unmap()
}

func (m *mmapMemory) unmap() {
	if m.buf != nil {
		_ = unix.Munmap(m.buf)
		m.buf = nil
	}
}
