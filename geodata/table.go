package geodata

import (
	"cmp"
	"encoding/binary"
	"math/bits"
	"net/netip"
	"slices"
)

// rangeTable is a longest-prefix-match table from networks to countries,
// made only of pointer-free slices, so that the garbage collector allocates
// it in noscan spans and never marks through it: a loaded country database
// (a million networks) costs a GC cycle nothing, where a trie of nodes
// (gaissmai/bart) is what every cycle marked.
//
// It is built once per load by a rangeBuilder and never changed. The
// networks of each family are flattened into disjoint ranges sorted by
// their first address, each with the country of the longest network that
// covers it (zero, noCountry, for a gap); neighbouring ranges of the same
// country are merged. A lookup finds the last range starting at or before
// the address: an index on the top bits of the address (a table of
// buckets, crowded buckets split again, see family) gives a short run of
// ranges to binary-search, in the ip-location-db file 4 ranges for the
// average IPv4 address and 7 for IPv6.
//
// Layout: IPv4 ranges are 8 bytes (a uint32 start and the Country), IPv6
// ones 24 (two uint64 and the Country), buckets 8 (two uint32). For the
// ip-location-db file (494k IPv4 and 517k IPv6 networks): 342k IPv4 ranges
// and 275k IPv6 ones, 545k buckets, 14.4 MB in all.
type rangeTable struct {
	v4       family4
	v6       family6
	prefixes int // distinct networks inserted
}

// noCountry marks a gap: an address no network of the table covers. Every
// Country the loaders insert is a valid, non-zero code.
var noCountry Country

// lookup returns the country of the longest network of t that contains
// addr, and false when none does. An IPv4 address is looked up among the
// IPv4 networks and any other (an IPv4-mapped one included) among the IPv6
// networks, as bart.Table.Lookup does; callers unmap addresses first. A
// zone is ignored; an invalid address is in no network.
func (t *rangeTable) lookup(addr netip.Addr) (Country, bool) {
	if !addr.IsValid() {
		return noCountry, false
	}
	c := t.find(keyOf(addr))
	return c, c != noCountry
}

// contains reports whether a network of t contains addr.
func (t *rangeTable) contains(addr netip.Addr) bool {
	_, ok := t.lookup(addr)
	return ok
}

// addrKey is a valid address as the tables search it: an IPv4 address in
// lo, an IPv6 one in hi and lo. Converting a netip.Addr costs about as much
// as a search, so a DB converts it once for its four tables.
type addrKey struct {
	hi, lo uint64
	is4    bool
}

// keyOf returns the key of addr, which must be valid.
func keyOf(addr netip.Addr) addrKey {
	if addr.Is4() {
		a := addr.As4()
		return addrKey{lo: uint64(binary.BigEndian.Uint32(a[:])), is4: true}
	}
	a := addr.As16()
	return addrKey{hi: binary.BigEndian.Uint64(a[:8]), lo: binary.BigEndian.Uint64(a[8:])}
}

// find returns the country of the longest network of t that contains k, or
// noCountry. (The lookups of both families are written out here: this
// function is too big to be inlined, and one call fewer is 10-20% of a
// lookup with warm caches.)
func (t *rangeTable) find(k addrKey) Country {
	if k.is4 {
		f, a := &t.v4, uint32(k.lo)
		key := k.lo << 32
		if key>>f.wshift != f.wprefix {
			return noCountry
		}
		i := (key >> f.shift) & f.mask
		lo, hi := f.buckets[i].first, f.buckets[i+1].first
		if f.buckets[i].node != 0 {
			lo, hi = f.descend(i, key)
		}
		for lo < hi {
			m := (lo + hi) / 2
			if f.ranges[m].start <= a {
				lo = m + 1
			} else {
				hi = m
			}
		}
		return f.ranges[lo-1].c
	}
	f := &t.v6
	if k.hi>>f.wshift != f.wprefix {
		return noCountry
	}
	i := (k.hi >> f.shift) & f.mask
	lo, hi := f.buckets[i].first, f.buckets[i+1].first
	if f.buckets[i].node != 0 {
		lo, hi = f.descend(i, k.hi)
	}
	for lo < hi {
		m := (lo + hi) / 2
		r := &f.ranges[m]
		if r.hi < k.hi || (r.hi == k.hi && r.lo <= k.lo) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return f.ranges[lo-1].c
}

// family is the index of one family's ranges, over a 64-bit key: the high
// half of an IPv6 address, or an IPv4 address in the top 32 bits.
//
// Addresses outside the window (the keys whose top wbits bits are wprefix)
// are in no network: the window is the longest common prefix of the first
// and the last address covered. Inside it, the k1 bits after the window's
// select a bucket of the first level, buckets[0 : 1<<k1]; the ranges of
// bucket i are ranges[buckets[i].first : buckets[i+1].first], the ones that
// start in it. Addresses are not spread evenly (in the ip-location-db file
// one /36 of IPv6, Hetzner's, holds 24k of its 275k ranges), so a bucket of
// more than splitMin ranges is split by a node: the bits its ranges' keys
// share are skipped, and the k bits after them select one of the node's own
// 1<<k buckets (plus one that marks the end), which may be split again: a
// trie as deep as the data is dense. The range an address is in is the
// last one that starts at or before it: in its bucket, found by binary
// search, or else the one before the bucket's first (ranges[0] starts at
// address 0, so there always is one).
type family struct {
	buckets []bucket
	nodes   []node
	wprefix uint64
	wshift  uint8 // key >> wshift is the window prefix: 64 - wbits
	shift   uint8 // (key >> shift) & mask is the first-level bucket: 64 - wbits - k1
	mask    uint64
}

// bucket is a run of ranges: the index of its first one, and the node that
// splits it, nodes[node-1] (0 when it is not split).
type bucket struct {
	first uint32
	node  uint32
}

// node splits a bucket whose ranges' keys share their top pos bits, prefix:
// the k bits after those select one of buckets[sub : sub+1<<k].
type node struct {
	prefix uint64
	sub    uint32
	pos, k uint8
}

// descend returns the ranges that may hold key, which is in the split
// first-level bucket i: ranges[lo-1] is the answer when none of
// ranges[lo:hi] starts at or before key.
func (f *family) descend(i, key uint64) (lo, hi uint32) {
	for {
		b := &f.buckets[i]
		if b.node == 0 {
			return b.first, f.buckets[i+1].first
		}
		n := &f.nodes[b.node-1]
		switch top := key >> (64 - n.pos); {
		case top < n.prefix: // before every range of the bucket
			return b.first, b.first
		case top > n.prefix: // after them
			end := f.buckets[i+1].first
			return end, end
		}
		i = uint64(n.sub) + (key<<n.pos)>>(64-n.k)
	}
}

// family4 holds the IPv4 ranges.
type family4 struct {
	family
	ranges []range4
}

type range4 struct {
	start uint32
	c     Country
}

// family6 holds the IPv6 ranges.
type family6 struct {
	family
	ranges []range6
}

type range6 struct {
	hi, lo uint64
	c      Country
}

const (
	// maxL1Bits bounds the first level of the index: 2^16+1 buckets of 8
	// bytes.
	maxL1Bits = 16
	// maxSplitBits bounds a split bucket's table.
	maxSplitBits = 16
	// splitMin is the most ranges a bucket holds before it is split.
	splitMin = 8
)

// u128 is an address of either family as a 128-bit number; an IPv4 address
// is in lo.
type u128 struct{ hi, lo uint64 }

func (a u128) less(b u128) bool { return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo) }

func (a u128) next() u128 {
	if a.lo == ^uint64(0) {
		return u128{a.hi + 1, 0}
	}
	return u128{a.hi, a.lo + 1}
}

// entry is one inserted network: its first address and its length as an
// IPv6 network (an IPv4 /n, whose address is in lo, has bits 96+n), 24
// bytes.
type entry struct {
	start u128
	seq   uint32 // insertion order, the later of two equal networks wins
	bits  uint8
	c     Country
}

// end returns the last address of e.
func (e *entry) end() u128 {
	a := e.start
	if e.bits < 64 {
		return u128{a.hi | ^uint64(0)>>e.bits, ^uint64(0)}
	}
	return u128{a.hi, a.lo | ^uint64(0)>>(e.bits-64)}
}

// bound starts a range: the addresses from start to the next bound's start
// have country c (noCountry for a gap).
type bound struct {
	start u128
	c     Country
}

// rangeBuilder collects networks, in any order, for a rangeTable. As with
// bart.Table.Insert, a network is masked, an invalid one is ignored, and a
// network inserted twice keeps the later country.
type rangeBuilder struct {
	v4, v6 entryList
	seq    uint32
}

// entryList holds entries in chunks, so that a million of them are not
// copied again and again as one slice grows, and notes whether they came
// in order (they do from the MMDB walk), so that build need not sort them.
type entryList struct {
	chunks   [][]entry
	n        int
	unsorted bool
}

// maxChunk is the length of a full chunk: 96 KB.
const maxChunk = 4096

func (l *entryList) add(e entry) {
	if len(l.chunks) == 0 {
		l.chunks = append(l.chunks, make([]entry, 0, 16))
	}
	ch := &l.chunks[len(l.chunks)-1]
	if len(*ch) > 0 && !l.unsorted && entryOrder((*ch)[len(*ch)-1], e) > 0 {
		l.unsorted = true
	}
	if len(*ch) == cap(*ch) {
		if c := cap(*ch); c < maxChunk {
			*ch = append(make([]entry, 0, 4*c), *ch...)
		} else {
			l.chunks = append(l.chunks, make([]entry, 0, maxChunk))
			ch = &l.chunks[len(l.chunks)-1]
		}
	}
	*ch = append(*ch, e)
	l.n++
}

// sorted returns the entries in entryOrder, as chunks.
func (l *entryList) sorted() [][]entry {
	if !l.unsorted {
		return l.chunks
	}
	all := make([]entry, 0, l.n)
	for _, ch := range l.chunks {
		all = append(all, ch...)
	}
	slices.SortFunc(all, entryOrder)
	return [][]entry{all}
}

// entryOrder sorts entries by first address, a network before the ones
// inside it, and two equal networks in the order they were inserted.
func entryOrder(a, b entry) int {
	if a.start != b.start {
		if a.start.less(b.start) {
			return -1
		}
		return 1
	}
	if a.bits != b.bits {
		return cmp.Compare(a.bits, b.bits)
	}
	return cmp.Compare(a.seq, b.seq)
}

// insert adds the network p with country c, which must not be noCountry.
func (b *rangeBuilder) insert(p netip.Prefix, c Country) {
	if !p.IsValid() {
		return
	}
	p = p.Masked()
	e := entry{seq: b.seq, bits: uint8(p.Bits()), c: c}
	b.seq++
	if p.Addr().Is4() {
		a := p.Addr().As4()
		e.start, e.bits = u128{0, uint64(binary.BigEndian.Uint32(a[:]))}, e.bits+96
		b.v4.add(e)
		return
	}
	a := p.Addr().As16()
	e.start = u128{binary.BigEndian.Uint64(a[:8]), binary.BigEndian.Uint64(a[8:])}
	b.v6.add(e)
}

// build returns the table of the networks inserted. The builder must not be
// used again.
func (b *rangeBuilder) build() *rangeTable {
	t := &rangeTable{}
	max4, max6 := u128{0, uint64(^uint32(0))}, u128{^uint64(0), ^uint64(0)}

	bs, n := sweep(b.v4.sorted(), b.v4.n, max4)
	b.v4 = entryList{}
	t.prefixes += n
	t.v4.ranges = make([]range4, len(bs))
	for i, x := range bs {
		t.v4.ranges[i] = range4{uint32(x.start.lo), x.c}
	}
	first, last := window(bs, max4)
	t.v4.family = buildIndex(len(bs), func(i int) uint64 { return uint64(t.v4.ranges[i].start) << 32 }, first.lo<<32, last.lo<<32|0xffffffff, 32)

	bs, n = sweep(b.v6.sorted(), b.v6.n, max6)
	b.v6 = entryList{}
	t.prefixes += n
	t.v6.ranges = make([]range6, len(bs))
	for i, x := range bs {
		t.v6.ranges[i] = range6{x.start.hi, x.start.lo, x.c}
	}
	first, last = window(bs, max6)
	t.v6.family = buildIndex(len(bs), func(i int) uint64 { return t.v6.ranges[i].hi }, first.hi, last.hi, 64)
	return t
}

// sweep flattens n nested networks, sorted in entryOrder, into disjoint
// ranges, each with the country of the longest network covering it, and
// counts the distinct networks. max is the family's last address. The
// first bound starts at address 0.
func sweep(chunks [][]entry, n int, max u128) ([]bound, int) {
	out := make([]bound, 1, n+1)
	emit := func(start u128, c Country) {
		last := &out[len(out)-1]
		switch {
		case last.start == start: // a longer network, or the end of several, at the same address
			last.c = c
			if len(out) > 1 && out[len(out)-2].c == c {
				out = out[:len(out)-1]
			}
		case last.c != c:
			out = append(out, bound{start, c})
		}
	}
	// Networks are nested or disjoint, so the ones containing the current
	// address form a stack, the innermost on top.
	var stack []entry
	pop := func() {
		top := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		end := top.end()
		if end == max {
			return // so are the ends of those below it
		}
		c := noCountry
		if len(stack) > 0 {
			c = stack[len(stack)-1].c
		}
		emit(end.next(), c)
	}
	distinct := 0
	var prev entry
	for _, ch := range chunks {
		for _, e := range ch {
			if distinct == 0 || e.start != prev.start || e.bits != prev.bits {
				distinct++
			}
			prev = e
			for len(stack) > 0 && stack[len(stack)-1].end().less(e.start) {
				pop()
			}
			emit(e.start, e.c)
			stack = append(stack, e)
		}
	}
	for len(stack) > 0 {
		pop()
	}
	return out, distinct
}

// window returns the first and the last address that a bound with a
// country covers, or max and 0 when none does.
func window(bs []bound, max u128) (first, last u128) {
	i := slices.IndexFunc(bs, func(b bound) bool { return b.c != noCountry })
	if i < 0 {
		return max, u128{}
	}
	j := len(bs) - 1
	for bs[j].c == noCountry {
		j--
	}
	last = max
	if j+1 < len(bs) {
		last = u128{bs[j+1].start.hi, bs[j+1].start.lo}
		if last.lo == 0 {
			last.hi--
		}
		last.lo--
	}
	return bs[i].start, last
}

// buildIndex builds the index of n ranges, whose keys key(i) are sorted
// and whose covered addresses run from the keys first to last (first > last
// when no range has a country). Only the top width bits of a key can differ
// (32 for IPv4).
func buildIndex(n int, key func(i int) uint64, first, last uint64, width int) family {
	wbits := 64
	if first <= last {
		wbits = bits.LeadingZeros64(first ^ last)
	} else {
		first = 0 // no country anywhere: every lookup in the window ends in ranges[0], a gap
	}
	k1 := min(bits.Len(uint(n))-1, maxL1Bits, width)
	wbits = min(wbits, width-k1)
	f := family{wshift: uint8(64 - wbits), shift: uint8(64 - wbits - k1), mask: 1<<k1 - 1}
	f.wprefix = first >> f.wshift
	inWindow := func(i int) bool { return key(i)>>f.wshift == f.wprefix }

	// buckets[b].first: the first range that starts in bucket b or after it.
	f.buckets = make([]bucket, 1<<k1+1, 2<<k1)
	i := 0
	for i < n && key(i)>>f.wshift < f.wprefix {
		i++
	}
	for b := range 1 << k1 {
		for i < n && inWindow(i) && (key(i)>>f.shift)&f.mask < uint64(b) {
			i++
		}
		f.buckets[b].first = uint32(i)
	}
	for i < n && inWindow(i) {
		i++
	}
	f.buckets[1<<k1].first = uint32(i)
	for b := range 1 << k1 {
		f.split(b, key, width)
	}
	return f
}

// split splits bucket b if it holds more than splitMin ranges whose keys
// differ in their top width bits, and then its crowded buckets, and so on.
// Each split separates the bucket's first and last range, so the depth is
// at most log2 of the bucket's size.
func (f *family) split(b int, key func(i int) uint64, width int) {
	lo, hi := int(f.buckets[b].first), int(f.buckets[b+1].first)
	if hi-lo <= splitMin {
		return
	}
	pos := bits.LeadingZeros64(key(lo) ^ key(hi-1))
	if pos >= width {
		return // the keys are all the same: binary search on the low halves
	}
	k := min(max(bits.Len(uint(hi-lo))-2, 1), maxSplitBits, width-pos)
	sub := len(f.buckets)
	f.nodes = append(f.nodes, node{prefix: key(lo) >> (64 - pos), sub: uint32(sub), pos: uint8(pos), k: uint8(k)})
	f.buckets[b].node = uint32(len(f.nodes))
	f.buckets = append(f.buckets, make([]bucket, 1<<k+1)...)
	i := lo
	for s := range 1 << k {
		for i < hi && (key(i)<<pos)>>(64-k) < uint64(s) {
			i++
		}
		f.buckets[sub+s].first = uint32(i)
	}
	f.buckets[sub+1<<k].first = uint32(hi)
	for s := range 1 << k {
		f.split(sub+s, key, width)
	}
}
