package geodata

import (
	"fmt"
	"net/netip"
	"slices"
	"time"

	maxminddb "github.com/oschwald/maxminddb-golang/v2"
)

// An MMDB file is not searched at lookup time. It is read once, its search
// tree is walked (see walk), each distinct data record is decoded once
// (records are shared by offset), and the networks are put into a
// rangeTable (see table.go). Decoding a string with maxminddb allocates,
// and walking the MMDB tree costs one memory load per bit of prefix (about
// 100 ns for an IPv6 /32 with a warm cache); the rangeTable answers in
// 15-35 ns with a warm cache, allocates nothing and, being made of
// pointer-free slices, costs the garbage collector nothing to mark. For the
// ip-location-db file (1M networks) it takes about 14 MB of heap and
// 0.1-0.2 s to build. The file's bytes are not kept, so a file replaced or
// truncated in place can never be seen half-way by a lookup.

// mmdbInfo is what a loaded database reports about itself.
type mmdbInfo struct {
	dbType    string
	buildTime time.Time
	networks  int      // networks put in the table
	ignored   []string // distinct codes read as Unknown, sorted
}

// openMMDB parses data as an MMDB file.
func openMMDB(data []byte) (*maxminddb.Reader, error) {
	r, err := maxminddb.OpenBytes(data, maxminddb.DisableStringCache())
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return r, nil
}

// countryCode is the decoded country of one record.
type countryCode struct {
	raw string // as found, "" if none
	c   Country
	ok  bool // raw is a code ParseCountry accepts
}

// recordCountry finds the country of a record of either layout:
//
//   - GeoIP2/GeoLite2 Country and City: country.iso_code, and when the record
//     has no country (anycast and some satellite networks),
//     registered_country.iso_code. represented_country is not used: it names
//     the country a network serves (an overseas military base, an embassy),
//     while blocking by country, like Cloudflare's, is about where the
//     visitor is.
//   - flat layouts (ip-location-db, IPinfo): a top-level country_code, or a
//     top-level country that is itself a two-letter string.
func recordCountry(rec any) countryCode {
	m, _ := rec.(map[string]any)
	raw := ""
	switch c := m["country"].(type) {
	case map[string]any:
		raw, _ = c["iso_code"].(string)
	case string:
		if len(c) == 2 {
			raw = c
		}
	}
	if raw == "" {
		raw, _ = m["country_code"].(string)
	}
	if raw == "" {
		if c, ok := m["registered_country"].(map[string]any); ok {
			raw, _ = c["iso_code"].(string)
		}
	}
	if raw == "" {
		return countryCode{}
	}
	c, err := parseCountry(raw)
	return countryCode{raw: raw, c: c, ok: err == nil && c != Unknown}
}

// loadCountryDB builds the table of a country database. A database in which
// no network has a usable country is refused: it is most likely another kind
// of MMDB configured by mistake, and replacing good data with it would make
// every address XX.
func loadCountryDB(data []byte) (*rangeTable, mmdbInfo, error) {
	r, err := openMMDB(data)
	if err != nil {
		return nil, mmdbInfo{}, err
	}
	info := mmdbInfo{dbType: r.Metadata.DatabaseType, buildTime: r.Metadata.BuildTime()}
	var b rangeBuilder
	ignored := make(map[string]bool)
	err = walk(r, data, recordCountry, func(p netip.Prefix, cc countryCode) {
		if !cc.ok {
			if cc.raw != "" {
				ignored[cc.raw] = true
			}
			return
		}
		b.insert(p, cc.c)
		info.networks++
	})
	if err != nil {
		return nil, info, err
	}
	if info.networks == 0 {
		return nil, info, fmt.Errorf("%w: no network has a country code (country.iso_code, country_code or registered_country.iso_code): not a country database?", ErrInvalid)
	}
	for code := range ignored {
		info.ignored = append(info.ignored, code)
	}
	slices.Sort(info.ignored)
	return b.build(), info, nil
}

// anonFlags are the flags of an Anonymous-IP record.
type anonFlags struct {
	known                                     bool // any flag present
	anonymous, vpn, hosting, proxy, resi, tor bool
}

func recordAnonFlags(rec any) anonFlags {
	m, _ := rec.(map[string]any)
	var f anonFlags
	flag := func(name string) bool {
		v, ok := m[name].(bool)
		f.known = f.known || ok
		return v
	}
	f.anonymous = flag("is_anonymous")
	f.vpn = flag("is_anonymous_vpn")
	f.hosting = flag("is_hosting_provider")
	f.proxy = flag("is_public_proxy")
	f.resi = flag("is_residential_proxy")
	f.tor = flag("is_tor_exit_node")
	return f
}

// isT1 is the policy of the Anonymous-IP database: a VPN, a Tor exit node, a
// public or a residential proxy is T1. A hosting provider alone is T1 only
// when hosting counts (Config.HostingIsAnonymous): cloud addresses also carry
// corporate proxies, CI runners and the like. A record with is_anonymous and
// no reason is T1.
func (f anonFlags) isT1(hosting bool) bool {
	switch {
	case f.vpn || f.tor || f.proxy || f.resi:
		return true
	case f.hosting:
		return hosting
	default:
		return f.anonymous
	}
}

// loadAnonymousDB builds the set of anonymizing networks of a GeoIP2
// Anonymous-IP database. A database with none of its flags is refused.
func loadAnonymousDB(data []byte, hosting bool) (*rangeTable, mmdbInfo, error) {
	r, err := openMMDB(data)
	if err != nil {
		return nil, mmdbInfo{}, err
	}
	info := mmdbInfo{dbType: r.Metadata.DatabaseType, buildTime: r.Metadata.BuildTime()}
	var b rangeBuilder
	known := false
	err = walk(r, data, recordAnonFlags, func(p netip.Prefix, f anonFlags) {
		known = known || f.known
		if f.isT1(hosting) {
			b.insert(p, Anonymous)
			info.networks++
		}
	})
	if err != nil {
		return nil, info, err
	}
	if !known {
		return nil, info, fmt.Errorf("%w: no record has an Anonymous-IP flag (is_anonymous, is_anonymous_vpn, is_tor_exit_node, ...): not an Anonymous-IP database?", ErrInvalid)
	}
	return b.build(), info, nil
}
