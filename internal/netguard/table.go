package netguard

import (
	"fmt"
	"net/netip"
)

// Rule says what Blocked does with an address of a Range.
type Rule int

const (
	// Refused addresses are not globally reachable: refused unless the
	// operator allows private networks.
	Refused Rule = iota
	// Reachable marks a globally reachable block inside a refused one
	// (192.0.0.9/32 inside 192.0.0.0/24): allowed.
	Reachable
	// Carried marks addresses that carry an IPv4 address (IPv4-mapped,
	// NAT64, 6to4): judged by the IPv4 address they carry.
	Carried
)

// Range is one row of the table.
type Range struct {
	// Prefix is the block.
	Prefix netip.Prefix
	// Name is the block's name in the registry, and its RFC.
	Name string
	// Rule is what Blocked does with it.
	Rule Rule
}

func entry(prefix, name string, rule Rule) Range {
	return Range{Prefix: netip.MustParsePrefix(prefix), Name: name, Rule: rule}
}

// table holds every entry of the IANA IPv4 and IPv6 Special-Purpose Address
// Registries (iana.org/assignments/iana-ipv4-special-registry and
// iana-ipv6-special-registry) whose "Globally Reachable" is not True, the
// globally reachable entries inside them, and multicast (from the multicast
// address registries). Blocked uses the most specific row, so a Reachable
// row wins over the Refused block around it. IPv6 outside 2000::/3 is
// refused besides (globalUnicast): IANA has allocated nothing else for
// global unicast.
var table = []Range{
	// IPv4.
	entry("0.0.0.0/8", `"this network" (RFC 791); 0.x reaches this host on Linux`, Refused),
	entry("10.0.0.0/8", "private use (RFC 1918)", Refused),
	entry("100.64.0.0/10", "shared address space, carrier-grade NAT (RFC 6598)", Refused),
	entry("127.0.0.0/8", "loopback (RFC 1122)", Refused),
	entry("169.254.0.0/16", "link local, cloud metadata services (RFC 3927)", Refused),
	entry("172.16.0.0/12", "private use (RFC 1918)", Refused),
	entry("192.0.0.0/24", "IETF protocol assignments (RFC 6890)", Refused),
	entry("192.0.0.9/32", "Port Control Protocol anycast (RFC 7723)", Reachable),
	entry("192.0.0.10/32", "TURN anycast (RFC 8155)", Reachable),
	entry("192.0.2.0/24", "documentation, TEST-NET-1 (RFC 5737)", Refused),
	entry("192.88.99.0/24", "deprecated 6to4 relay anycast (RFC 7526)", Refused),
	entry("192.168.0.0/16", "private use (RFC 1918)", Refused),
	entry("198.18.0.0/15", "benchmarking (RFC 2544)", Refused),
	entry("198.51.100.0/24", "documentation, TEST-NET-2 (RFC 5737)", Refused),
	entry("203.0.113.0/24", "documentation, TEST-NET-3 (RFC 5737)", Refused),
	entry("224.0.0.0/4", "multicast (RFC 5771)", Refused),
	entry("240.0.0.0/4", "reserved (RFC 1112)", Refused),
	entry("255.255.255.255/32", "limited broadcast (RFC 919)", Refused),

	// IPv6.
	entry("::/128", "unspecified (RFC 4291)", Refused),
	entry("::1/128", "loopback (RFC 4291)", Refused),
	entry("::ffff:0:0/96", "IPv4-mapped (RFC 4291)", Carried),
	entry("64:ff9b::/96", "IPv4-IPv6 translation, NAT64 (RFC 6052)", Carried),
	entry("64:ff9b:1::/48", "local-use IPv4-IPv6 translation (RFC 8215)", Refused),
	entry("100::/64", "discard-only (RFC 6666)", Refused),
	entry("100:0:0:1::/64", "dummy IPv6 prefix (RFC 9780)", Refused),
	entry("2001::/23", "IETF protocol assignments (RFC 2928)", Refused),
	entry("2001::/32", "Teredo: tunnels to any IPv4 host (RFC 4380)", Refused),
	entry("2001:1::1/128", "Port Control Protocol anycast (RFC 7723)", Reachable),
	entry("2001:1::2/128", "TURN anycast (RFC 8155)", Reachable),
	entry("2001:1::3/128", "DNS-SD service registration protocol anycast (RFC 9665)", Reachable),
	entry("2001:2::/48", "benchmarking (RFC 5180)", Refused),
	entry("2001:3::/32", "AMT (RFC 7450)", Reachable),
	entry("2001:4:112::/48", "AS112-v6 (RFC 7535)", Reachable),
	entry("2001:10::/28", "deprecated ORCHID (RFC 4843)", Refused),
	entry("2001:20::/28", "ORCHIDv2 (RFC 7343)", Reachable),
	entry("2001:30::/28", "drone remote ID entity tags (RFC 9374)", Reachable),
	entry("2001:db8::/32", "documentation (RFC 3849)", Refused),
	entry("2002::/16", "6to4 (RFC 3056)", Carried),
	entry("3fff::/20", "documentation (RFC 9637)", Refused),
	entry("5f00::/16", "segment routing SRv6 SIDs (RFC 9602)", Refused),
	entry("fc00::/7", "unique local (RFC 4193)", Refused),
	entry("fe80::/10", "link-local unicast (RFC 4291)", Refused),
	entry("ff00::/8", "multicast (RFC 4291)", Refused),
}

// globalUnicast is the only IPv6 block IANA has allocated for global
// unicast; everything outside it is reserved or special-purpose (fec0::/10,
// the deprecated site-local, among them).
var globalUnicast = netip.MustParsePrefix("2000::/3")

// Ranges returns a copy of the table Blocked applies, for those who must
// apply the same rules elsewhere (routes in a sandbox) or show them.
func Ranges() []Range { return append([]Range(nil), table...) }

// lookup returns the most specific row holding a.
func lookup(a netip.Addr) (Range, bool) {
	var best Range
	found := false
	for _, row := range table {
		if row.Prefix.Contains(a) && (!found || row.Prefix.Bits() > best.Prefix.Bits()) {
			best, found = row, true
		}
	}
	return best, found
}

// carried returns the IPv4 address an IPv4-mapped (::ffff:0:0/96), NAT64
// (64:ff9b::/96) or 6to4 (2002::/16) address carries.
func carried(a netip.Addr) netip.Addr {
	b := a.As16()
	if b[0] == 0x20 && b[1] == 0x02 {
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})
	}
	return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
}

// Blocked reports whether a is on a network the platform does not connect
// to for its users: a row of the table that is not globally reachable, or
// IPv6 outside global unicast. An address that carries an IPv4 address
// (IPv4-mapped, NAT64, 6to4) is judged by that IPv4 address. The zero
// address is blocked.
func Blocked(a netip.Addr) bool {
	blocked, _ := verdict(a)
	return blocked
}

// verdict is Blocked, with the reason of a refusal for error messages.
func verdict(a netip.Addr) (blocked bool, why string) {
	if !a.IsValid() {
		return true, "not an IP address"
	}
	a = a.WithZone("")
	row, ok := lookup(a)
	if !ok {
		if a.Is6() && !globalUnicast.Contains(a) {
			return true, "outside IPv6 global unicast 2000::/3"
		}
		return false, ""
	}
	switch row.Rule {
	case Reachable:
		return false, ""
	case Carried:
		v4 := carried(a)
		if blocked, why := verdict(v4); blocked {
			return true, fmt.Sprintf("carries %s: %s", v4, why)
		}
		return false, ""
	}
	return true, row.Prefix.String() + ", " + row.Name
}
