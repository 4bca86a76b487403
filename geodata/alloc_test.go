//go:build !race

package geodata

import (
	"net/netip"
	"testing"
)

// TestCountryAllocs holds the hot path to zero allocations, for every kind
// of address and every source.
func TestCountryAllocs(t *testing.T) {
	db, _ := openTest(t, Config{
		CountryDB:      fixture("country-geoip2.mmdb"),
		AnonymousDB:    fixture("anonymous.mmdb"),
		AnonymizerList: fixture("anonymizers.txt"),
		Overrides:      fixture("overrides.txt"),
		NoReload:       true,
	})
	addrs := []netip.Addr{{}}
	for _, lc := range lookupCases {
		addrs = append(addrs, netip.MustParseAddr(lc.addr))
	}
	var sink Country
	allocs := testing.AllocsPerRun(100, func() {
		for _, a := range addrs {
			sink = db.Country(a)
		}
	})
	if allocs != 0 {
		t.Errorf("Country allocates %.1f times per %d lookups, want 0", allocs, len(addrs))
	}
	_ = sink
}
