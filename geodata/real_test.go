package geodata

import (
	"net/netip"
	"os"
	"slices"
	"testing"
)

// realDB returns the path of a real country database: $PLATFORM_GEOIP, or
// the one `make geodata` fetches into ../data/geo/country.mmdb. It skips the
// test or benchmark when there is none.
func realDB(tb testing.TB) string {
	tb.Helper()
	path := os.Getenv("PLATFORM_GEOIP")
	if path == "" {
		path = "../data/geo/country.mmdb"
	}
	if _, err := os.Stat(path); err != nil {
		tb.Skipf("no real country database (%v); set PLATFORM_GEOIP or run make geodata", err)
	}
	return path
}

// TestRealDatabase checks well-known addresses in a real database, of
// either layout (ip-location-db or GeoLite2 Country).
func TestRealDatabase(t *testing.T) {
	db, _ := openTest(t, Config{CountryDB: realDB(t), NoReload: true})
	for _, tc := range []struct {
		addr string
		want []Country // any of
	}{
		{"8.8.8.8", []Country{c("US")}},              // Google DNS
		{"1.1.1.1", []Country{c("AU"), c("US")}},     // Cloudflare DNS: APNIC labs, AU in whois
		{"193.99.144.80", []Country{c("DE")}},        // heise.de
		{"133.242.0.1", []Country{c("JP")}},          // JPNIC space
		{"::ffff:8.8.8.8", []Country{c("US")}},       // IPv4-mapped
		{"2001:4860:4860::8888", []Country{c("US")}}, // Google DNS
		{"2a01:4f8::1", []Country{c("DE")}},          // Hetzner
		{"2001:240::1", []Country{c("JP")}},          // IIJ (WIDE's 2001:200::/28 is AU in the npm data)
		{"2606:4700:4700::1111", []Country{c("US")}}, // Cloudflare DNS
		{"10.0.0.1", []Country{Unknown}},             // private
		{"127.0.0.1", []Country{Unknown}},            // loopback
		{"::1", []Country{Unknown}},                  // loopback
		{"fe80::1%eth0", []Country{Unknown}},         // link-local
	} {
		if got := db.Country(netip.MustParseAddr(tc.addr)); !slices.Contains(tc.want, got) {
			t.Errorf("Country(%s) = %v, want one of %v", tc.addr, got, tc.want)
		}
	}
	src := db.Sources()[0]
	t.Logf("%s: %s, built %s, %d networks", src.Path, src.DatabaseType, src.BuildTime.Format("2006-01-02"), src.Networks)
	if src.Networks < 100_000 {
		t.Errorf("only %d networks", src.Networks)
	}
}

// BenchmarkRealCountry looks up addresses in a real database, with the
// fixture overrides, anonymizer list and Anonymous-IP database in front of
// it: "ipv4" and "ipv6" repeat one address (warm caches), "ipv4-random" and
// "ipv6-random" cycle through 64k random addresses of the database (cold
// caches, closer to an edge under load).
//
//	PLATFORM_GEOIP=/path/country.mmdb go test -run '^$' -bench Real ./geodata/
func BenchmarkRealCountry(b *testing.B) {
	db := benchWarm(b, realDB(b))
	for _, v6 := range []bool{false, true} {
		name := "ipv4-random"
		if v6 {
			name = "ipv6-random"
		}
		addrs := sampleAddrs(db, 1<<16, v6)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			var sink Country
			i := 0
			for b.Loop() {
				sink = db.Country(addrs[i&(len(addrs)-1)])
				i++
			}
			_ = sink
		})
	}
}

// BenchmarkRealLoad measures reading and indexing a real database, the
// cost of a startup or a reload.
func BenchmarkRealLoad(b *testing.B) {
	data, err := os.ReadFile(realDB(b))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := loadCountryDB(data); err != nil {
			b.Fatal(err)
		}
	}
}
