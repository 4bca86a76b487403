package rules

import (
	"slices"
	"strconv"
	"strings"
)

// Limits on the size of Shield settings. The spec leaves them open; these are
// far above what a hand-kept list reaches and keep a compiled Ruleset small
// (a 50,000-range trie is a few MB at most).
const (
	// MaxAddressEntries is the most entries denyIps or allowIps may hold.
	MaxAddressEntries = 50_000
	// MaxCountryEntries is the most entries blockedCountries may hold (there
	// are 252 codes it can name).
	MaxCountryEntries = 300
)

// Settings is a workspace's Shield settings as the control plane stores them
// and the API shows them (spec: Shield settings). Site passwords are not part
// of it: the control plane keeps their hashes (see HashPassword).
//
// The zero value has every rule off and Enabled false; DefaultSettings returns
// the spec's defaults.
type Settings struct {
	// Enabled false stops every rule (site passwords stay in force). Default true.
	Enabled bool `json:"enabled"`
	// BlockedCountries are ISO 3166-1 alpha-2 codes, plus XX (unknown
	// country), T1 (anonymizing network) and XK (Kosovo), refused with 403
	// "Not available in your region". Default empty.
	BlockedCountries []string `json:"blockedCountries"`
	// DenyIPs are addresses or CIDR ranges, IPv4 or IPv6, always refused.
	// Default empty.
	DenyIPs []string `json:"denyIps"`
	// AllowIPs are addresses or CIDR ranges let past the country and
	// AI-crawler rules; an address also on DenyIPs is refused. Default empty.
	AllowIPs []string `json:"allowIps"`
	// BlockAICrawlers refuses AI crawlers and assistant fetchers that declare
	// themselves in the user agent. Default false.
	BlockAICrawlers bool `json:"blockAiCrawlers"`
	// LogOnly counts what the country and AI-crawler rules would refuse and
	// lets it through. Default false.
	LogOnly bool `json:"logOnly"`
}

// DefaultSettings returns the spec's defaults: enabled, every list empty (not
// nil, so they encode as []), crawlers not blocked, log-only off.
func DefaultSettings() Settings {
	return Settings{
		Enabled:          true,
		BlockedCountries: []string{},
		DenyIPs:          []string{},
		AllowIPs:         []string{},
	}
}

// Normalized returns a copy of s in canonical form: entries trimmed of
// surrounding white space, country codes in upper case, addresses and ranges
// in netip's canonical text (IPv4-mapped IPv6 as IPv4, a single address
// without /32 or /128), duplicates dropped keeping the first, nil lists as
// empty ones. Entries it cannot parse are kept (trimmed) for Validate to name.
// It does not change s.
func (s Settings) Normalized() Settings {
	s.BlockedCountries = normalizeList(s.BlockedCountries, func(e string) string {
		if len(e) == 2 {
			return string([]byte{upper(e[0]), upper(e[1])})
		}
		return e
	})
	canonIP := func(e string) string {
		if p, err := ParseIPEntry(e); err == nil {
			return canonicalIP(p)
		}
		return e
	}
	s.DenyIPs = normalizeList(s.DenyIPs, canonIP)
	s.AllowIPs = normalizeList(s.AllowIPs, canonIP)
	return s
}

func normalizeList(in []string, canon func(string) string) []string {
	out := make([]string, 0, len(in))
	seen := make(map[string]struct{}, len(in))
	for _, e := range in {
		e = canon(strings.TrimSpace(e))
		if _, dup := seen[e]; dup {
			continue
		}
		seen[e] = struct{}{}
		out = append(out, e)
	}
	return out
}

// Validate reports the first bad entry of s as a *ValidationError (which
// matches ErrInvalidSettings), or nil. It is pure and strict: it accepts
// lower-case country codes but not surrounding spaces; call Normalized first
// to accept what a person types.
func (s Settings) Validate() error {
	if n := len(s.BlockedCountries); n > MaxCountryEntries {
		return tooMany("blockedCountries", n, MaxCountryEntries)
	}
	for i, c := range s.BlockedCountries {
		if _, err := ParseCountry(c); err != nil {
			return inField(err, "blockedCountries", i)
		}
	}
	for _, l := range []struct {
		field   string
		entries []string
	}{{"denyIps", s.DenyIPs}, {"allowIps", s.AllowIPs}} {
		if n := len(l.entries); n > MaxAddressEntries {
			return tooMany(l.field, n, MaxAddressEntries)
		}
		for i, e := range l.entries {
			if _, err := ParseIPEntry(e); err != nil {
				return inField(err, l.field, i)
			}
		}
	}
	return nil
}

func tooMany(field string, n, limit int) error {
	return &ValidationError{Field: field, Index: -1,
		Message: strconv.Itoa(n) + " entries; at most " + strconv.Itoa(limit) + " are allowed"}
}

// Equal reports whether s and o hold the same settings, list order included.
func (s Settings) Equal(o Settings) bool {
	return s.Enabled == o.Enabled && s.BlockAICrawlers == o.BlockAICrawlers && s.LogOnly == o.LogOnly &&
		slices.Equal(s.BlockedCountries, o.BlockedCountries) &&
		slices.Equal(s.DenyIPs, o.DenyIPs) && slices.Equal(s.AllowIPs, o.AllowIPs)
}
