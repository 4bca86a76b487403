package geodata

import (
	"errors"
	"fmt"
	"net/netip"
)

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

// ErrUnknownCountry is wrapped by the error of ParseCountry for a code that is
// not an assigned ISO 3166-1 alpha-2 code, XK, XX or T1.
var ErrUnknownCountry = errors.New("unknown country code")

// ParseCountry parses a two-letter code, ignoring ASCII case. It accepts the
// assigned ISO 3166-1 alpha-2 codes, XK (Kosovo, as MaxMind and Cloudflare
// use it), XX (Unknown) and T1 (Anonymous). UK is refused with a hint to use
// GB.
func ParseCountry(s string) (Country, error) {
	c, err := parseCountry(s)
	if err != nil {
		return c, fmt.Errorf("geodata: %w", err)
	}
	return c, nil
}

// parseCountry is ParseCountry with an error without scope, for the parsers
// of files, whose errors have their own.
func parseCountry(s string) (Country, error) {
	if len(s) == 2 {
		c := Country{upper(s[0]), upper(s[1])}
		if c.Valid() {
			return c, nil
		}
		if c == (Country{'U', 'K'}) {
			return Country{}, fmt.Errorf("%w %q: use GB for the United Kingdom", ErrUnknownCountry, s)
		}
	}
	return Country{}, fmt.Errorf("%w %q: want an ISO 3166-1 alpha-2 code, XX or T1", ErrUnknownCountry, s)
}

// Valid reports whether c is a code that ParseCountry accepts, in upper case.
// Every code a DB returns is valid.
func (c Country) Valid() bool {
	if c == Unknown || c == Anonymous {
		return true
	}
	a, b := c[0]-'A', c[1]-'A'
	return a < 26 && b < 26 && assigned[a]&(1<<b) != 0
}

func upper(b byte) byte {
	if 'a' <= b && b <= 'z' {
		return b - 'a' + 'A'
	}
	return b
}
