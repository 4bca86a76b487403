/*
 * SPDX-FileCopyrightText: © 2017-2025 Istari Digital, Inc.
 * SPDX-License-Identifier: Apache-2.0
 *
 * Modified for github.com/svcplatform/platform/cache: the access buffer
 * recycles its batches instead of allocating one per drain (see ringBuffer).
 */

package ristretto

import (
	"sync"
)

// ringConsumer is the user-defined object responsible for receiving and
// processing items in batches when buffers are drained. Push takes ownership
// of the batch when it returns true; the consumer hands the batch back with
// the recycle function given to newRingBuffer once it is done with it.
type ringConsumer interface {
	Push([]uint64) bool
}

// ringStripes is the number of stripes of a ringBuffer (a power of two).
const ringStripes = 16

// ringStripe is one batch being filled, behind its own lock.
type ringStripe struct {
	mu   sync.Mutex
	data []uint64
	_    [40]byte // keep stripes on separate cache lines
}

// ringBuffer is the lossy access buffer of the BP-Wrapper paper (section III
// part A): accesses are appended to one of ringStripes stripes (chosen by the
// key hash, skipped when its lock is taken: losing an access only makes the
// frequency estimate slightly less precise), and a full stripe is handed to
// the consumer as a batch.
//
// Upstream ristretto kept stripes in a sync.Pool (emptied by every GC) and
// allocated a new batch on every drain, about 8 bytes per Get. Here every
// batch is allocated once, up front: a full stripe takes a spare batch from
// free and gives its own to the consumer, which returns it through recycle;
// with no spare batch (the consumer is behind) the stripe's accesses are
// dropped, as upstream does when the consumer's channel is full. Get then
// allocates nothing, ever.
type ringBuffer struct {
	cons    ringConsumer
	capa    int
	free    chan []uint64
	stripes [ringStripes]ringStripe
}

// newRingBuffer returns a striped ring buffer of batches of capa items, with
// spare batches for a consumer holding up to inFlight of them at a time.
func newRingBuffer(cons ringConsumer, capa int64, inFlight int) *ringBuffer {
	b := &ringBuffer{cons: cons, capa: int(capa), free: make(chan []uint64, inFlight+1)}
	for i := range b.stripes {
		b.stripes[i].data = make([]uint64, 0, capa)
	}
	for range inFlight + 1 {
		b.free <- make([]uint64, 0, capa)
	}
	return b
}

// recycle returns a batch the consumer is done with.
func (b *ringBuffer) recycle(batch []uint64) {
	if cap(batch) != b.capa {
		return
	}
	select {
	case b.free <- batch[:0]:
	default:
	}
}

// Push adds an element to one of the stripes and drains it to the consumer
// when full.
func (b *ringBuffer) Push(item uint64) {
	s := &b.stripes[(item^item>>32)&(ringStripes-1)]
	if !s.mu.TryLock() {
		return // lossy: another goroutine holds this stripe
	}
	s.data = append(s.data, item)
	if len(s.data) >= b.capa {
		select {
		case spare := <-b.free:
			if b.cons.Push(s.data) {
				s.data = spare
			} else {
				b.free <- spare
				s.data = s.data[:0]
			}
		default:
			s.data = s.data[:0] // the consumer is behind: drop this batch
		}
	}
	s.mu.Unlock()
}
