package edge

import (
	"net"
	"net/netip"
	"unsafe"

	"github.com/valyala/fasthttp"
)

// headerXFF is X-Forwarded-For.
const headerXFF = "X-Forwarded-For"

// maxForwardedHops bounds how many X-Forwarded-For entries are examined, so
// a header of ten thousand commas costs no more than a short one.
const maxForwardedHops = 32

// proxies is the set of trusted proxies. A nil or empty set trusts no one.
type proxies []netip.Prefix

func (p proxies) trusted(a netip.Addr) bool {
	for _, pr := range p {
		if pr.Contains(a) {
			return true
		}
	}
	return false
}

// peerAddr returns the address of the connection's peer, IPv4-mapped IPv6
// addresses as IPv4. It does not allocate.
func peerAddr(ctx *fasthttp.RequestCtx) netip.Addr {
	switch a := ctx.RemoteAddr().(type) {
	case *net.TCPAddr:
		ip, _ := netip.AddrFromSlice(a.IP)
		return ip.Unmap()
	case *net.UDPAddr:
		ip, _ := netip.AddrFromSlice(a.IP)
		return ip.Unmap()
	}
	return netip.Addr{}
}

// clientAddr returns the visitor's address: the peer, or, when the peer is a
// trusted proxy, the right-most X-Forwarded-For entry that is not a trusted
// proxy (walking from the right, every trusted hop is skipped; an entry that
// is not an address stops the walk at the last trusted hop). It does not
// allocate.
func clientAddr(h *fasthttp.RequestHeader, peer netip.Addr, trusted proxies) netip.Addr {
	if len(trusted) == 0 || !trusted.trusted(peer) {
		return peer
	}
	vals := h.PeekAll(headerXFF)
	client := peer
	hops := 0
	for i := len(vals) - 1; i >= 0; i-- {
		v := vals[i]
		end := len(v)
		for end > 0 {
			start := end - 1
			for start >= 0 && v[start] != ',' {
				start--
			}
			entry := v[start+1 : end]
			end = start
			entry = trimSpace(entry)
			if len(entry) == 0 {
				continue
			}
			if hops++; hops > maxForwardedHops {
				return client
			}
			a, ok := parseForwardedAddr(entry)
			if !ok {
				return client
			}
			client = a
			if !trusted.trusted(a) {
				return a
			}
		}
	}
	return client
}

// parseForwardedAddr parses one X-Forwarded-For entry: an IPv4 or IPv6
// address, optionally with a port ("1.2.3.4:80", "[2001:db8::1]:443").
// Zones are refused. It does not allocate and does not keep b.
func parseForwardedAddr(b []byte) (netip.Addr, bool) {
	if len(b) == 0 || len(b) > 64 {
		return netip.Addr{}, false
	}
	if b[0] == '[' {
		end := -1
		for i, c := range b {
			if c == ']' {
				end = i
				break
			}
		}
		if end < 0 {
			return netip.Addr{}, false
		}
		b = b[1:end]
	} else {
		colons, last := 0, -1
		for i, c := range b {
			if c == ':' {
				colons++
				last = i
			}
		}
		if colons == 1 { // IPv4 with a port
			b = b[:last]
		}
	}
	for _, c := range b {
		if c == '%' {
			return netip.Addr{}, false
		}
	}
	if len(b) == 0 {
		return netip.Addr{}, false
	}
	// netip.ParseAddr keeps nothing of its argument once zones are ruled
	// out, so the bytes are read in place.
	a, err := netip.ParseAddr(unsafe.String(&b[0], len(b)))
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}
