package wasm

import (
	"bytes"
	"encoding/binary"
	"slices"
)

// Data segments. wazero evaluates each active data segment's offset
// expression, with allocations, every time it instantiates a module, and Go's
// linker writes tens of thousands of small segments (the example function:
// 33,095 segments, 0.8 MB; about 3 ms of every call). compactData rewrites
// the data section once, when a module is loaded, into a few segments that
// give the instance the same initial memory: the active segments sorted by
// offset (they do not overlap, so their order does not change the image),
// and neighbours at most mergeGap bytes apart joined with the zeros that lie
// between them (linear memory starts zeroed). Instantiation still fails
// exactly when a segment lies outside the memory: a merged segment ends
// where its last part ends.
//
// A module with a data count section may refer to segments by index
// (memory.init, data.drop), so there every segment keeps its index and its
// bytes, as a passive segment (which instantiation does not evaluate; wazero
// gives memory.init an active segment's bytes as it does a passive one's),
// and the merged active segments follow them, with the count raised.

// mergeGap is the largest run of zeros written to join two segments: about
// what evaluating one more segment costs in copying.
const mergeGap = 1 << 10

const (
	sectionData      = 11
	sectionDataCount = 12
	opI32Const       = 0x41
	opEnd            = 0x0b
	segActive        = 0 // active, memory 0, offset expression, bytes
	segPassive       = 1 // passive, bytes
)

// dataSegment is a data segment: passive, or active in memory 0 at a
// constant offset.
type dataSegment struct {
	passive bool
	offset  uint32
	init    []byte
}

// end is the first byte past the segment (may exceed the 32-bit space).
func (s dataSegment) end() uint64 { return uint64(s.offset) + uint64(len(s.init)) }

// span is a section's place in a module: from its id byte to the end of
// its body; start < 0 when the module has none.
type span struct{ start, end int }

// compactData returns mod with its data segments merged as the comment
// above says, or mod itself when there is nothing to gain or the module is
// outside what it rewrites: a passive segment without a data count section,
// a segment of another memory or with an offset other than i32.const,
// overlapping active segments, or anything it cannot parse (wazero then
// reports the module's fault when it compiles it).
func compactData(mod []byte) []byte {
	data, count, segs, ok := dataSection(mod)
	if !ok {
		return mod
	}
	var active []dataSegment
	for _, s := range segs {
		if !s.passive {
			active = append(active, s)
		} else if count.start < 0 {
			return mod
		}
	}
	slices.SortStableFunc(active, func(a, b dataSegment) int {
		switch {
		case a.offset < b.offset:
			return -1
		case a.offset > b.offset:
			return 1
		}
		return 0
	})
	for i := 1; i < len(active); i++ {
		if active[i-1].end() > uint64(active[i].offset) {
			return mod // overlapping: order matters
		}
	}
	merged := mergeSegments(active)
	if len(merged) == len(active) || (count.start >= 0 && len(merged) > len(active)/2) {
		return mod
	}
	out := segs[:0:0]
	if count.start >= 0 {
		for _, s := range segs {
			out = append(out, dataSegment{passive: true, init: s.init})
		}
	}
	out = append(out, merged...)

	var body []byte
	body = binary.AppendUvarint(body, uint64(len(out)))
	for _, s := range out {
		if s.passive {
			body = append(body, segPassive)
		} else {
			body = append(body, segActive, opI32Const)
			body = appendVarint32(body, int32(s.offset))
			body = append(body, opEnd)
		}
		body = binary.AppendUvarint(body, uint64(len(s.init)))
		body = append(body, s.init...)
	}
	rewritten := make([]byte, 0, len(mod)+len(body)-(data.end-data.start)+16)
	rest := 0
	if count.start >= 0 { // the data count section comes before the data section
		rewritten = append(rewritten, mod[:count.start]...)
		rewritten = append(rewritten, sectionDataCount)
		n := binary.AppendUvarint(nil, uint64(len(out)))
		rewritten = binary.AppendUvarint(rewritten, uint64(len(n)))
		rewritten = append(rewritten, n...)
		rest = count.end
	}
	rewritten = append(rewritten, mod[rest:data.start]...)
	rewritten = append(rewritten, sectionData)
	rewritten = binary.AppendUvarint(rewritten, uint64(len(body)))
	rewritten = append(rewritten, body...)
	return append(rewritten, mod[data.end:]...)
}

// mergeSegments joins sorted, non-overlapping segments at most mergeGap
// apart. The zeros it writes in all are bounded by the segments' own bytes
// (plus one gap), so a module of many tiny segments spread out cannot make
// its rewrite much larger than itself.
func mergeSegments(segs []dataSegment) []dataSegment {
	budget := uint64(mergeGap)
	for _, s := range segs {
		budget += uint64(len(s.init))
	}
	var out []dataSegment
	for i := 0; i < len(segs); {
		j := i + 1
		for j < len(segs) {
			gap := uint64(segs[j].offset) - segs[j-1].end()
			if gap > mergeGap || gap > budget {
				break
			}
			budget -= gap
			j++
		}
		if j == i+1 {
			out = append(out, segs[i])
			i = j
			continue
		}
		first, last := segs[i], segs[j-1]
		init := make([]byte, last.end()-uint64(first.offset))
		for _, s := range segs[i:j] {
			copy(init[s.offset-first.offset:], s.init)
		}
		out = append(out, dataSegment{offset: first.offset, init: init})
		i = j
	}
	return out
}

// dataSection finds mod's data section, its data count section (start -1
// when there is none) and the segments; ok is false when compactData must
// leave mod alone.
func dataSection(mod []byte) (data, count span, segs []dataSegment, ok bool) {
	if len(mod) < 8 || !bytes.Equal(mod[:8], []byte{0, 'a', 's', 'm', 1, 0, 0, 0}) {
		return span{}, span{}, nil, false
	}
	data, count = span{-1, -1}, span{-1, -1}
	var declared uint64
	for p := 8; p < len(mod); {
		id := mod[p]
		size, n := binary.Uvarint(mod[p+1:])
		if n <= 0 || n > 5 || size > uint64(len(mod)-p-1-n) {
			return span{}, span{}, nil, false
		}
		body := p + 1 + n
		next := body + int(size)
		switch id {
		case sectionDataCount:
			c, n := binary.Uvarint(mod[body:next])
			if count.start >= 0 || data.start >= 0 || n <= 0 || n > 5 || body+n != next {
				return span{}, span{}, nil, false
			}
			count, declared = span{p, next}, c
		case sectionData:
			if data.start >= 0 {
				return span{}, span{}, nil, false
			}
			data = span{p, next}
			if segs, ok = parseSegments(mod[body:next]); !ok {
				return span{}, span{}, nil, false
			}
		}
		p = next
	}
	if data.start < 0 || (count.start >= 0 && declared != uint64(len(segs))) {
		return span{}, span{}, nil, false
	}
	return data, count, segs, true
}

// parseSegments reads a data section's body when every segment is passive
// or active in memory 0 at an i32.const offset.
func parseSegments(b []byte) ([]dataSegment, bool) {
	count, n := binary.Uvarint(b)
	if n <= 0 || n > 5 || count > uint64(len(b)) { // a segment takes at least 2 bytes
		return nil, false
	}
	b = b[n:]
	segs := make([]dataSegment, 0, count)
	for range count {
		var s dataSegment
		switch {
		case len(b) >= 1 && b[0] == segPassive:
			s.passive = true
			b = b[1:]
		case len(b) >= 2 && b[0] == segActive && b[1] == opI32Const:
			off, n := readVarint32(b[2:])
			if n <= 0 || 2+n >= len(b) || b[2+n] != opEnd {
				return nil, false
			}
			s.offset = uint32(off)
			b = b[3+n:]
		default:
			return nil, false
		}
		size, n := binary.Uvarint(b)
		if n <= 0 || n > 5 || size > uint64(len(b)-n) {
			return nil, false
		}
		s.init = b[n : n+int(size)]
		segs = append(segs, s)
		b = b[n+int(size):]
	}
	return segs, len(b) == 0
}

// readVarint32 decodes a signed LEB128 of at most 5 bytes (an i32.const
// immediate); n <= 0 when it is malformed.
func readVarint32(b []byte) (v int32, n int) {
	var r int64
	var shift uint
	for i := 0; i < 5 && i < len(b); i++ {
		c := b[i]
		r |= int64(c&0x7f) << shift
		shift += 7
		if c&0x80 == 0 {
			if shift < 64 && c&0x40 != 0 {
				r |= -1 << shift
			}
			if r < -1<<31 || r > 1<<31-1 {
				return 0, -1
			}
			return int32(r), i + 1
		}
	}
	return 0, -1
}

// appendVarint32 appends v as a signed LEB128.
func appendVarint32(b []byte, v int32) []byte {
	x := int64(v)
	for {
		c := byte(x & 0x7f)
		x >>= 7
		if (x == 0 && c&0x40 == 0) || (x == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
