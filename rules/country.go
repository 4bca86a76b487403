package rules

import "github.com/svcplatform/platform/geodata"

// countryHints are codes people often write for a real one.
var countryHints = map[string]string{
	"UK": "the United Kingdom is GB",
	"EL": "Greece is GR",
	"A1": "anonymizing networks are T1",
	"A2": "anonymizing networks are T1",
}

// countrySet is a bit set over countryIndex: a first letter A-Z and a
// second character A-Z or 0-9.
type countrySet [(26*36 + 63) / 64]uint64

// countryIndex maps an upper-case code to its bit, or -1 for a code outside
// [A-Z][A-Z0-9].
func countryIndex(c geodata.Country) int {
	a, b := c[0], c[1]
	if a < 'A' || a > 'Z' {
		return -1
	}
	var j int
	switch {
	case b >= 'A' && b <= 'Z':
		j = int(b - 'A')
	case b >= '0' && b <= '9':
		j = 26 + int(b-'0')
	default:
		return -1
	}
	return int(a-'A')*36 + j
}

func (s *countrySet) add(c geodata.Country) {
	if i := countryIndex(c); i >= 0 {
		s[i>>6] |= 1 << (i & 63)
	}
}

func (s *countrySet) has(c geodata.Country) bool {
	i := countryIndex(c)
	return i >= 0 && s[i>>6]&(1<<(i&63)) != 0
}

func (s *countrySet) empty() bool {
	for _, w := range s {
		if w != 0 {
			return false
		}
	}
	return true
}

// ParseCountry parses a country code for the blockedCountries list. Lower-case
// input is accepted and normalized to upper case; surrounding spaces are not.
// It accepts what geodata.Country.Valid accepts, the one list of codes in the
// module: the 249 officially assigned ISO 3166-1 alpha-2 codes, XX (unknown),
// T1 (anonymizing network) and XK (Kosovo, user-assigned but returned by
// MaxMind and the registries, so it can be blocked). UK is refused with a
// hint to use GB (and EL, A1, A2 with theirs). The error is a
// *ValidationError with an empty Field, matching ErrInvalidSettings.
func ParseCountry(s string) (geodata.Country, error) {
	if len(s) != 2 {
		return geodata.Country{}, invalid(s, "not a two-letter country code")
	}
	c := geodata.Country{upper(s[0]), upper(s[1])}
	if hint, ok := countryHints[string(c[:])]; ok {
		return geodata.Country{}, invalid(s, "not a country code; "+hint)
	}
	if !c.Valid() {
		return geodata.Country{}, invalid(s, "not an ISO 3166-1 country code")
	}
	return c, nil
}

func upper(b byte) byte {
	if b >= 'a' && b <= 'z' {
		return b - ('a' - 'A')
	}
	return b
}

func lower(b byte) byte {
	if b >= 'A' && b <= 'Z' {
		return b + ('a' - 'A')
	}
	return b
}
