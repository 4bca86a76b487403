package geodata

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"

	maxminddb "github.com/oschwald/maxminddb-golang/v2"
)

// walk calls fn for every network of the MMDB file data (opened as r) that
// has a record, with the record decoded once per distinct record by decode.
//
// It reads the search tree itself rather than using Reader.Networks: a
// corrupt file whose nodes share children or point back up would make that
// iteration exponential (it follows every path, up to 2^128), and a refused
// reload must never hang. Here every node is expanded at most once, so the
// walk is linear in node_count; a node reached twice is a corrupt tree,
// except for the root of the IPv4 subtree (::/96), which IPv6 databases
// alias from ::ffff:0:0/96, 2001::/32 and 2002::/16 (those aliases are
// skipped, as lookups unmap addresses).
//
// Networks inside ::/96 are reported as IPv4. A network that covers all of
// ::/96, which only happens when a database has no separate IPv4 data, is
// also reported as 0.0.0.0/0, since lookups of IPv4 addresses go to the
// IPv4 half of the table.
func walk[T any](r *maxminddb.Reader, data []byte, decode func(rec any) T, fn func(netip.Prefix, T)) error {
	md := r.Metadata
	nodes := md.NodeCount
	var nodeSize uint
	switch md.RecordSize {
	case 24, 28, 32:
		nodeSize = md.RecordSize / 4
	default:
		return fmt.Errorf("%w: record size %d", ErrInvalid, md.RecordSize)
	}
	if nodes == 0 || nodes > uint(len(data))/nodeSize {
		return fmt.Errorf("%w: node count %d does not fit the file", ErrInvalid, nodes)
	}
	children := func(node uint) (left, right uint) {
		b := data[node*nodeSize : (node+1)*nodeSize]
		switch md.RecordSize {
		case 24:
			return uint(b[0])<<16 | uint(b[1])<<8 | uint(b[2]), uint(b[3])<<16 | uint(b[4])<<8 | uint(b[5])
		case 28:
			return uint(b[3]&0xF0)<<20 | uint(b[0])<<16 | uint(b[1])<<8 | uint(b[2]),
				uint(b[3]&0x0F)<<24 | uint(b[4])<<16 | uint(b[5])<<8 | uint(b[6])
		default:
			return uint(binary.BigEndian.Uint32(b[:4])), uint(binary.BigEndian.Uint32(b[4:]))
		}
	}

	// An IPv4 database's tree is the IPv4 subtree: it starts at bit 96.
	// In an IPv6 database, the IPv4 subtree is the node 96 zero bits down.
	startBits := 0
	ipv4Start := nodes // none
	if md.IPVersion == 4 {
		startBits = 96
	} else {
		var path [96]uint
		n := uint(0)
		for i := range 96 {
			if n >= nodes {
				break
			}
			if slices.Contains(path[:i], n) {
				return fmt.Errorf("%w: search tree node %d is reached twice", ErrInvalid, n)
			}
			path[i] = n
			n, _ = children(n)
		}
		if n < nodes {
			if slices.Contains(path[:], n) {
				return fmt.Errorf("%w: search tree node %d is reached twice", ErrInvalid, n)
			}
			ipv4Start = n
		}
	}

	// Depth first, the left child first, a record reported when its frame
	// is popped: networks come in address order (the IPv4 subtree first),
	// which is what the rangeTable's sort wants.
	type frame struct {
		node uint // a node, or a data pointer (> nodes)
		bits int
		ip   [16]byte
	}
	visited := make([]bool, nodes)
	visited[0] = true
	cache := make(map[uint]T)
	stack := []frame{{node: 0, bits: startBits}}
	for len(stack) > 0 {
		f := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if f.node > nodes {
			offset := f.node - nodes - 16 // data pointers count from the 16-byte separator
			v, ok := cache[offset]
			if !ok {
				var rec any
				if err := r.LookupOffset(uintptr(offset)).Decode(&rec); err != nil {
					return fmt.Errorf("%w: record at offset %d: %w", ErrInvalid, offset, err)
				}
				v = decode(rec)
				cache[offset] = v
			}
			p := netip.PrefixFrom(netip.AddrFrom16(f.ip), f.bits)
			if f.bits >= 96 && [12]byte(f.ip[:12]) == [12]byte{} {
				p = netip.PrefixFrom(netip.AddrFrom4([4]byte(f.ip[12:])), f.bits-96)
			}
			fn(p, v)
			if p.Addr().Is6() && f.bits <= 96 && p.Contains(netip.IPv6Unspecified()) {
				fn(netip.PrefixFrom(netip.IPv4Unspecified(), 0), v)
			}
			continue
		}
		if f.bits >= 128 {
			return fmt.Errorf("%w: search tree deeper than 128 bits", ErrInvalid)
		}
		left, right := children(f.node)
		for bit := 1; bit >= 0; bit-- { // push the right child first: the left one is popped first
			ptr, ip := left, f.ip
			if bit == 1 {
				ptr = right
				ip[f.bits/8] |= 0x80 >> (f.bits % 8)
			}
			bits := f.bits + 1
			switch {
			case ptr == nodes: // no data
			case ptr < nodes:
				if ptr == ipv4Start && (bits != 96 || ip != [16]byte{}) {
					continue // an alias of the IPv4 subtree
				}
				if visited[ptr] {
					return fmt.Errorf("%w: search tree node %d is reached twice", ErrInvalid, ptr)
				}
				visited[ptr] = true
				stack = append(stack, frame{node: ptr, bits: bits, ip: ip})
			case ptr < nodes+16:
				return fmt.Errorf("%w: search tree points into the data separator", ErrInvalid)
			default:
				stack = append(stack, frame{node: ptr, bits: bits, ip: ip})
			}
		}
	}
	return nil
}
