package h2

import "bytes"

// Indexing policies of an encoded field.
const (
	indexYes   = iota // literal with incremental indexing
	indexNo           // literal without indexing (a value that changes)
	indexNever        // never indexed (a secret: RFC 7541 §7.1.3)
)

// encoder encodes header blocks with one connection's dynamic table, of
// at most maxTableSize octets and at most what the peer allows.
type encoder struct {
	t dynTable
	// A change of the peer's SETTINGS_HEADER_TABLE_SIZE waiting for the
	// next block: the smallest size since the last block, then the last.
	pending          bool
	pendingMin, next uint32
	// Where the block's n-th field was found whole in the dynamic table
	// last time: responses repeat their fields in the same order, so
	// the search starts there (0: no hint).
	ord  int
	hint [16]uint8
}

func (e *encoder) init() { e.t.init(maxTableSize) }

// setPeerTableSize records the peer's SETTINGS_HEADER_TABLE_SIZE.
func (e *encoder) setPeerTableSize(v uint32) {
	v = min(v, maxTableSize)
	if !e.pending {
		if v == e.t.maxSize {
			return
		}
		e.pending, e.pendingMin = true, v
	}
	e.pendingMin = min(e.pendingMin, v)
	e.next = v
}

// begin starts a header block with the size update owed (RFC 7541
// §4.2). A peer that lowered its size and raised it again since the last
// block gets the lowest size in this block and the last one in the next:
// one update per block, which every decoder takes (x/net's refuses a
// second update in a block while its table holds entries).
func (e *encoder) begin(dst []byte) []byte {
	e.ord = 0
	if !e.pending {
		return dst
	}
	v := e.next
	if e.pendingMin < e.next && e.pendingMin < e.t.maxSize {
		v, e.pendingMin = e.pendingMin, e.next
	} else {
		e.pending = false
	}
	e.t.setMaxSize(v)
	return appendVarInt(dst, 5, 0x20, uint64(v))
}

// status appends :status.
func (e *encoder) status(dst []byte, code int) []byte {
	switch code {
	case 200:
		return append(dst, 0x88)
	case 204:
		return append(dst, 0x89)
	case 206:
		return append(dst, 0x8a)
	case 304:
		return append(dst, 0x8b)
	case 400:
		return append(dst, 0x8c)
	case 404:
		return append(dst, 0x8d)
	case 500:
		return append(dst, 0x8e)
	}
	if code < 100 || code > 999 {
		code = 500
	}
	// Literal without indexing, name :status (index 8).
	return append(dst, 0x08, 3, byte('0'+code/100), byte('0'+code/10%10), byte('0'+code%10))
}

// field appends one field; name must be lowercase.
func (e *encoder) field(dst, name, value []byte, policy int) []byte {
	// The dynamic table, newest first: a whole match, else a name.
	var nameIdx uint64
	t := &e.t
	ord := e.ord
	e.ord++
	if ord < len(e.hint) && policy != indexNever {
		if i := int(e.hint[ord]); i != 0 && i <= t.n {
			ent := t.ents[(t.first+t.n-i)&ringMask]
			v := t.data[ent.off : ent.off+ent.nlen+ent.vlen]
			if int(ent.nlen) == len(name) && bytes.Equal(v[:ent.nlen], name) && bytes.Equal(v[ent.nlen:], value) {
				return appendVarInt(dst, 7, 0x80, uint64(len(staticTable)+i))
			}
		}
	}
	// A field kept out of the table whose name the static table holds
	// is written with that name at once: the table seldom holds its
	// value (only one another block indexed), and the static index is
	// the shorter.
	si := staticName(name)
	if policy != indexYes && si != 0 {
		dst = appendVarInt(dst, 4, neverBits(policy), uint64(si))
		return appendRaw(dst, value)
	}
	for i := 1; i <= t.n; i++ {
		ent := t.ents[(t.first+t.n-i)&ringMask]
		if int(ent.nlen) != len(name) {
			continue
		}
		v := t.data[ent.off : ent.off+ent.nlen+ent.vlen]
		if !bytes.Equal(v[:ent.nlen], name) {
			continue
		}
		if policy != indexNever && bytes.Equal(v[ent.nlen:], value) {
			if ord < len(e.hint) {
				e.hint[ord] = uint8(i) // i <= maxEntries
			}
			return appendVarInt(dst, 7, 0x80, uint64(len(staticTable)+i))
		}
		if nameIdx == 0 {
			nameIdx = uint64(len(staticTable) + i)
		}
	}
	if si != 0 {
		nameIdx = uint64(si) // the static index is the shorter
	}
	sz := uint32(len(name)+len(value)) + entryOverhead
	if policy == indexYes && sz > t.maxSize/2 {
		policy = indexNo // it would push out everything else
	}
	if policy != indexYes {
		dst = appendVarInt(dst, 4, neverBits(policy), nameIdx)
		if nameIdx == 0 {
			dst = appendRaw(dst, name)
		}
		return appendRaw(dst, value)
	}
	dst = appendVarInt(dst, 6, 0x40, nameIdx)
	if nameIdx == 0 {
		dst = appendString(dst, name)
	}
	dst = appendString(dst, value)
	t.add(name, value)
	return dst
}

// neverBits is the first octet's pattern of a literal kept out of the
// table: never indexed (0x10) or without indexing (0x00).
func neverBits(policy int) byte {
	if policy == indexNever {
		return 0x10
	}
	return 0x00
}

// appendRaw appends s as a string literal without Huffman coding. Fields
// kept out of the table are written so: they are encoded on every
// response, and coding them would cost more CPU than the few octets it
// saves; what enters the table is Huffman-coded once (appendString).
func appendRaw(dst, s []byte) []byte {
	dst = appendVarInt(dst, 7, 0x00, uint64(len(s)))
	return append(dst, s...)
}
