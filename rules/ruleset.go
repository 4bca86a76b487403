package rules

import (
	"net/netip"

	"github.com/gaissmai/bart"

	"github.com/svcplatform/platform/geodata"
)

// Ruleset is a workspace's Shield settings compiled for the edge. It is
// immutable and safe for concurrent use; the edge swaps in a new one when the
// settings change.
type Ruleset struct {
	enabled         bool
	logOnly         bool
	blockAICrawlers bool
	deny, allow     *bart.Lite
	hasDeny         bool
	hasAllow        bool
	countries       countrySet
	hasCountries    bool
	settings        Settings // normalized, for BlockedCountries and Settings
}

// Compile validates s (after Settings.Normalized, so lower-case codes and
// spaces around entries are accepted) and compiles it into a Ruleset. The
// address lists go into prefix tries, so a lookup costs the same for ten
// entries as for fifty thousand. The error is a *ValidationError.
func Compile(s Settings) (*Ruleset, error) {
	s = s.Normalized()
	if err := s.Validate(); err != nil {
		return nil, err
	}
	rs := &Ruleset{
		enabled:         s.Enabled,
		logOnly:         s.LogOnly,
		blockAICrawlers: s.BlockAICrawlers,
		deny:            new(bart.Lite),
		allow:           new(bart.Lite),
		settings:        s,
	}
	for _, e := range s.DenyIPs {
		p, _ := ParseIPEntry(e) // validated above
		rs.deny.Insert(p)
	}
	for _, e := range s.AllowIPs {
		p, _ := ParseIPEntry(e)
		rs.allow.Insert(p)
	}
	for _, e := range s.BlockedCountries {
		c, _ := ParseCountry(e)
		rs.countries.add(c)
	}
	rs.hasDeny, rs.hasAllow = len(s.DenyIPs) > 0, len(s.AllowIPs) > 0
	rs.hasCountries = !rs.countries.empty()
	return rs, nil
}

// Settings returns a copy of the normalized settings rs was compiled from.
func (rs *Ruleset) Settings() Settings {
	s := rs.settings
	s.BlockedCountries = append([]string{}, s.BlockedCountries...)
	s.DenyIPs = append([]string{}, s.DenyIPs...)
	s.AllowIPs = append([]string{}, s.AllowIPs...)
	return s
}

// BlockedCountries returns the blocked country codes, upper case, in the
// order they were saved, for deploy and go-live log lines.
func (rs *Ruleset) BlockedCountries() []string {
	return append([]string{}, rs.settings.BlockedCountries...)
}

// robotsPath always passes the AI-crawler rule.
const robotsPath = "/robots.txt"

// Evaluate applies rs to one request, in the spec's order and scope:
//
//  1. enabled=false (or a nil rs): Allow, no rule applies.
//  2. deny list (static sites, functions): Refuse, whatever else holds,
//     log-only included.
//  3. allow list (static sites, functions): Allow, past the rules below.
//  4. country (every target): Refuse with "Not available in your region".
//  5. AI crawler (static sites, functions; never for /robots.txt): Refuse.
//
// Under logOnly, rules 4 and 5 give WouldRefuse instead of Refuse for static
// sites and functions; server apps and worker programs have no log-only and
// are refused. The country is looked up with loc only when rule 4 must be
// checked; a nil loc or an invalid address is country XX. Evaluate does not
// allocate and keeps nothing of f, which must not be nil.
func (rs *Ruleset) Evaluate(f *Facts, loc geodata.Locator) Decision {
	if rs == nil || !rs.enabled {
		return Decision{}
	}
	addr := plainAddr(f.Addr)
	full := !f.Target.countryOnly()
	if full {
		if rs.hasDeny && rs.deny.Contains(addr) {
			return Decision{Verdict: Refuse, Rule: RuleDenyList, Count: true, Status: StatusRefused, Body: BodyDenyList}
		}
		if rs.hasAllow && rs.allow.Contains(addr) {
			return Decision{}
		}
	}
	var d Decision
	if rs.hasCountries {
		c := geodata.Unknown
		if loc != nil && addr.IsValid() {
			c = normalizeCountry(loc.Country(addr))
		}
		d.Country = c
		if rs.countries.has(c) {
			d.Rule, d.Body = RuleCountry, BodyCountry
			return rs.refuse(d, full)
		}
	}
	if full && rs.blockAICrawlers && string(f.Path) != robotsPath {
		if tok, ok := MatchCrawler(f.UserAgent); ok {
			d.Rule, d.Body, d.Crawler = RuleAICrawler, BodyAICrawler, tok
			return rs.refuse(d, full)
		}
	}
	return d
}

// refuse completes d for a rule that caught the request.
func (rs *Ruleset) refuse(d Decision, full bool) Decision {
	if full && rs.logOnly {
		d.Verdict, d.Body, d.Count = WouldRefuse, "", true
		return d
	}
	d.Verdict, d.Status, d.Count = Refuse, StatusRefused, full
	return d
}

// plainAddr returns a as the edge matches it: an IPv4-mapped IPv6 address as
// IPv4, without a zone. It rebuilds the address from its bytes, which also
// tells escape analysis that nothing of Facts reaches the Locator, so the
// caller's Facts and its buffers may stay on the stack.
func plainAddr(a netip.Addr) netip.Addr {
	a = a.Unmap()
	switch {
	case a.Is4():
		return netip.AddrFrom4(a.As4())
	case a.Is6():
		return netip.AddrFrom16(a.As16())
	}
	return netip.Addr{}
}

// normalizeCountry upper-cases what a Locator returned, and reads anything
// that is not two code characters as XX.
func normalizeCountry(c geodata.Country) geodata.Country {
	c = geodata.Country{upper(c[0]), upper(c[1])}
	if countryIndex(c) < 0 {
		return geodata.Unknown
	}
	return c
}
