package rules

import (
	"net/netip"
	"strings"
)

// maxIPEntryLen bounds one denyIps or allowIps entry; the longest IPv6 range
// written out in full is 43 bytes.
const maxIPEntryLen = 64

// ParseIPEntry parses one denyIps or allowIps entry: an IPv4 or IPv6 address
// (a /32 or /128) or a CIDR range. It is strict: no surrounding spaces, no
// zones, no leading zeros in IPv4 octets, and a range must not have host bits
// set ("10.0.0.1/8" is refused, naming 10.0.0.0/8, because the author may have
// meant another range). An IPv4-mapped IPv6 address or a range of at least
// /96 inside ::ffff:0:0/96 is returned as its IPv4 form, because visitors'
// mapped addresses are matched as IPv4. The error is a *ValidationError.
func ParseIPEntry(s string) (netip.Prefix, error) {
	if s == "" {
		return netip.Prefix{}, invalid(s, "empty entry")
	}
	if len(s) > maxIPEntryLen {
		return netip.Prefix{}, invalid(s, "not an address or CIDR range (too long)")
	}
	if strings.IndexByte(s, '/') < 0 {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return netip.Prefix{}, invalid(s, "not an address or CIDR range")
		}
		if a.Zone() != "" {
			return netip.Prefix{}, invalid(s, "an address with a zone is not allowed")
		}
		a = a.Unmap()
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		if strings.IndexByte(s, '%') >= 0 {
			return netip.Prefix{}, invalid(s, "a range with a zone is not allowed")
		}
		return netip.Prefix{}, invalid(s, "not an address or CIDR range")
	}
	if m := p.Masked(); m != p {
		return netip.Prefix{}, invalid(s, "host bits set; the range is "+m.String())
	}
	if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p, nil
}

// ParseIPList parses every entry with ParseIPEntry. An error names the first
// bad entry and its index.
func ParseIPList(entries []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(entries))
	for i, e := range entries {
		p, err := ParseIPEntry(e)
		if err != nil {
			return nil, inField(err, "", i)
		}
		out = append(out, p)
	}
	return out, nil
}

// canonicalIP returns the canonical text of an entry: a bare address for a
// single address, otherwise the range.
func canonicalIP(p netip.Prefix) string {
	if p.Bits() == p.Addr().BitLen() {
		return p.Addr().String()
	}
	return p.String()
}
