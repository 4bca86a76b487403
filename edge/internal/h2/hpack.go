package h2

import (
	"errors"
	"unsafe"

	"golang.org/x/net/http2/hpack"
)

// HPACK (RFC 7541) on byte slices, with dynamic tables of fixed memory: a
// table keeps its entries' bytes in one buffer of twice the table's
// maximum size, compacted in place when its end is reached, and its entry
// records in a ring. So neither decoding nor encoding allocates once a
// connection's tables are made, whatever the peer sends.

// maxTableSize bounds both dynamic tables: the decoder's is the 4,096
// octets every peer may assume (SETTINGS_HEADER_TABLE_SIZE is never
// raised), the encoder's uses at most that much of what the peer allows.
const maxTableSize = defaultTableSize

// entryOverhead is the size an entry adds beyond its name and value.
const entryOverhead = 32

var (
	errHpackIndex   = errors.New("hpack: index out of range")
	errHpackVarint  = errors.New("hpack: integer overflow")
	errHpackTrunc   = errors.New("hpack: truncated header block")
	errHpackUpdate  = errors.New("hpack: dynamic table size update past the allowed size or after a field")
	errHpackHuffman = errors.New("hpack: invalid Huffman-coded string")
)

type staticEntry struct{ name, value []byte }

// staticTable is RFC 7541 Appendix A (index 1 is staticTable[0]).
var staticTable = func() []staticEntry {
	raw := [...][2]string{
		{":authority", ""}, {":method", "GET"}, {":method", "POST"}, {":path", "/"}, {":path", "/index.html"},
		{":scheme", "http"}, {":scheme", "https"}, {":status", "200"}, {":status", "204"}, {":status", "206"},
		{":status", "304"}, {":status", "400"}, {":status", "404"}, {":status", "500"}, {"accept-charset", ""},
		{"accept-encoding", "gzip, deflate"}, {"accept-language", ""}, {"accept-ranges", ""}, {"accept", ""},
		{"access-control-allow-origin", ""}, {"age", ""}, {"allow", ""}, {"authorization", ""},
		{"cache-control", ""}, {"content-disposition", ""}, {"content-encoding", ""}, {"content-language", ""},
		{"content-length", ""}, {"content-location", ""}, {"content-range", ""}, {"content-type", ""},
		{"cookie", ""}, {"date", ""}, {"etag", ""}, {"expect", ""}, {"expires", ""}, {"from", ""}, {"host", ""},
		{"if-match", ""}, {"if-modified-since", ""}, {"if-none-match", ""}, {"if-range", ""},
		{"if-unmodified-since", ""}, {"last-modified", ""}, {"link", ""}, {"location", ""}, {"max-forwards", ""},
		{"proxy-authenticate", ""}, {"proxy-authorization", ""}, {"range", ""}, {"referer", ""}, {"refresh", ""},
		{"retry-after", ""}, {"server", ""}, {"set-cookie", ""}, {"strict-transport-security", ""},
		{"transfer-encoding", ""}, {"user-agent", ""}, {"vary", ""}, {"via", ""}, {"www-authenticate", ""},
	}
	t := make([]staticEntry, len(raw))
	for i, e := range raw {
		t[i] = staticEntry{[]byte(e[0]), []byte(e[1])}
	}
	return t
}()

// staticName returns a name's first index in the static table, 0 for a
// name it does not hold (a switch: no hashing, no allocation).
func staticName(name []byte) uint8 {
	switch string(name) {
	case ":authority":
		return 1
	case ":method":
		return 2
	case ":path":
		return 4
	case ":scheme":
		return 6
	case ":status":
		return 8
	case "accept-charset":
		return 15
	case "accept-encoding":
		return 16
	case "accept-language":
		return 17
	case "accept-ranges":
		return 18
	case "accept":
		return 19
	case "access-control-allow-origin":
		return 20
	case "age":
		return 21
	case "allow":
		return 22
	case "authorization":
		return 23
	case "cache-control":
		return 24
	case "content-disposition":
		return 25
	case "content-encoding":
		return 26
	case "content-language":
		return 27
	case "content-length":
		return 28
	case "content-location":
		return 29
	case "content-range":
		return 30
	case "content-type":
		return 31
	case "cookie":
		return 32
	case "date":
		return 33
	case "etag":
		return 34
	case "expect":
		return 35
	case "expires":
		return 36
	case "from":
		return 37
	case "host":
		return 38
	case "if-match":
		return 39
	case "if-modified-since":
		return 40
	case "if-none-match":
		return 41
	case "if-range":
		return 42
	case "if-unmodified-since":
		return 43
	case "last-modified":
		return 44
	case "link":
		return 45
	case "location":
		return 46
	case "max-forwards":
		return 47
	case "proxy-authenticate":
		return 48
	case "proxy-authorization":
		return 49
	case "range":
		return 50
	case "referer":
		return 51
	case "refresh":
		return 52
	case "retry-after":
		return 53
	case "server":
		return 54
	case "set-cookie":
		return 55
	case "strict-transport-security":
		return 56
	case "transfer-encoding":
		return 57
	case "user-agent":
		return 58
	case "vary":
		return 59
	case "via":
		return 60
	case "www-authenticate":
		return 61
	}
	return 0
}

// maxEntries bounds a table's entries: each is at least entryOverhead
// octets. A power of two, so a ring index is a mask.
const maxEntries = maxTableSize / entryOverhead

const ringMask = maxEntries - 1

var _ [0]struct{} = [maxEntries & ringMask]struct{}{} // maxEntries is a power of two

// tableEntry locates one dynamic table entry's name and value in
// dynTable.data.
type tableEntry struct{ off, nlen, vlen uint32 }

func (e tableEntry) size() uint32 { return e.nlen + e.vlen + entryOverhead }

// dynTable is a dynamic table (RFC 7541 §2.3.2) of at most maxTableSize.
type dynTable struct {
	ents    [maxEntries]tableEntry // ring, oldest at first
	first   int
	n       int
	data    []byte // entries' names and values, oldest first
	size    uint32 // RFC 7541 §4.1 size of the entries
	maxSize uint32
}

func (t *dynTable) init(maxSize uint32) {
	t.data = make([]byte, 0, 256) // grown to 2*maxTableSize as entries come
	t.maxSize = maxSize
}

// at returns the entry of dynamic index i, 1 being the newest.
func (t *dynTable) at(i int) (name, value []byte, ok bool) {
	if i < 1 || i > t.n {
		return nil, nil, false
	}
	e := t.ents[(t.first+t.n-i)&ringMask]
	v := t.data[e.off : e.off+e.nlen+e.vlen]
	return v[:e.nlen], v[e.nlen:], true
}

func (t *dynTable) evictOldest() {
	t.size -= t.ents[t.first].size()
	t.first = (t.first + 1) & ringMask
	t.n--
	if t.n == 0 {
		t.first, t.data = 0, t.data[:0]
	}
}

func (t *dynTable) setMaxSize(v uint32) {
	t.maxSize = v
	for t.size > v {
		t.evictOldest()
	}
}

// add inserts an entry, evicting as RFC 7541 §4.4 says. name and value
// must not alias the table's own bytes.
func (t *dynTable) add(name, value []byte) {
	sz := uint32(len(name)+len(value)) + entryOverhead
	for t.n > 0 && t.size+sz > t.maxSize {
		t.evictOldest()
	}
	if sz > t.maxSize {
		return // an entry larger than the table empties it (done above)
	}
	if need := len(t.data) + len(name) + len(value); need > cap(t.data) {
		// Move the live bytes to the front; they are at most maxSize, so
		// the new entry fits behind them once the buffer has its full
		// size. Until then it grows (a connection's first requests).
		var start uint32
		if t.n > 0 {
			start = t.ents[t.first].off
		}
		buf := t.data[:cap(t.data)]
		if live := len(t.data) - int(start); live+len(name)+len(value) > cap(t.data)/2 && cap(t.data) < 2*maxTableSize {
			buf = make([]byte, min(2*maxTableSize, max(2*cap(t.data), 2*(live+len(name)+len(value)))))
		}
		n := copy(buf, t.data[start:])
		t.data = buf[:n]
		for i := range t.n {
			t.ents[(t.first+i)&ringMask].off -= start
		}
	}
	off := uint32(len(t.data))
	t.data = append(append(t.data, name...), value...)
	t.ents[(t.first+t.n)&ringMask] = tableEntry{off: off, nlen: uint32(len(name)), vlen: uint32(len(value))}
	t.n++
	t.size += sz
}

// readVarInt reads an integer of an n-bit prefix (RFC 7541 §5.1). Values
// past 2^28 are refused: no length or index of a valid block comes near.
func readVarInt(n uint8, p []byte) (uint64, []byte, error) {
	if len(p) == 0 {
		return 0, nil, errHpackTrunc
	}
	mask := uint64(1)<<n - 1
	i := uint64(p[0]) & mask
	p = p[1:]
	if i < mask {
		return i, p, nil
	}
	var m uint
	for len(p) > 0 {
		b := p[0]
		p = p[1:]
		i += uint64(b&0x7f) << m
		if b&0x80 == 0 {
			if i > 1<<28 {
				return 0, nil, errHpackVarint
			}
			return i, p, nil
		}
		m += 7
		if m > 28 {
			return 0, nil, errHpackVarint
		}
	}
	return 0, nil, errHpackTrunc
}

// appendVarInt appends i with an n-bit prefix whose other bits are first.
func appendVarInt(dst []byte, n uint8, first byte, i uint64) []byte {
	k := uint64(1)<<n - 1
	if i < k {
		return append(dst, first|byte(i))
	}
	dst = append(dst, first|byte(k))
	i -= k
	for ; i >= 128; i >>= 7 {
		dst = append(dst, byte(0x80|i&0x7f))
	}
	return append(dst, byte(i))
}

// appendString appends a string literal, Huffman-coded when shorter.
func appendString(dst, s []byte) []byte {
	if hl := hpack.HuffmanEncodeLength(b2s(s)); hl < uint64(len(s)) {
		dst = appendVarInt(dst, 7, 0x80, hl)
		return hpack.AppendHuffmanString(dst, b2s(s))
	}
	dst = appendVarInt(dst, 7, 0, uint64(len(s)))
	return append(dst, s...)
}

// b2s views b as a string for the duration of a call that keeps nothing.
func b2s(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
