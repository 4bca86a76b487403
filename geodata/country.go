package geodata

import "net/netip"

// Country is an ISO 3166-1 alpha-2 country code in upper case, or one of the
// two pseudo-codes Unknown (XX) and Anonymous (T1). It is a value type so that
// lookups on the edge's hot path never allocate.
type Country [2]byte

// Unknown is the code of an address that no database places in a country.
var Unknown = Country{'X', 'X'}

// Anonymous is the code of an address on an anonymizing network (VPN, Tor exit,
// hosting or public proxy), as Cloudflare's T1.
var Anonymous = Country{'T', '1'}

// String returns the two-letter code.
func (c Country) String() string { return string(c[:]) }

// Locator finds the country of an address. Implementations must be safe for
// concurrent use and must not allocate.
type Locator interface {
	Country(addr netip.Addr) Country
}
