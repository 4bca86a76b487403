package geodata

import (
	"net/netip"
	"testing"

	"github.com/oschwald/geoip2-golang/v2"
	"github.com/oschwald/maxminddb-golang/v2"
)

// BenchmarkReaders answers the design's question "why not
// github.com/oschwald/geoip2-golang?": the same country lookups on the same
// database, in one run, through
//
//   - geodata: this package's DB.Country (the file indexed once into a
//     routing table, country codes decoded at load);
//   - geoip2: geoip2-golang's Reader.Country, the reader the design names;
//   - maxminddb: maxminddb-golang's Reader.Lookup decoding only
//     country.iso_code into a small struct, the leanest use of the MMDB
//     reader underneath geoip2.
//
// The database is the GeoIP2-layout fixture, or $PLATFORM_GEOIP when set (a
// GeoIP2/GeoLite2 Country file: geoip2-golang reads only that layout).
//
//	go test -run '^$' -bench Readers -benchmem ./geodata/
//	PLATFORM_GEOIP=/path/GeoLite2-Country.mmdb go test -run '^$' -bench Readers -benchmem ./geodata/
func BenchmarkReaders(b *testing.B) {
	path := fixture("country-geoip2.mmdb")
	if p, ok := realDB(); ok && p != "../data/geo/country.mmdb" {
		path = p
	}
	db, _ := openTest(b, Config{CountryDB: path, NoReload: true})
	g, err := geoip2.Open(path)
	if err != nil {
		b.Fatalf("geoip2: %v", err)
	}
	b.Cleanup(func() { g.Close() })
	m, err := maxminddb.Open(path)
	if err != nil {
		b.Fatalf("maxminddb: %v", err)
	}
	b.Cleanup(func() { m.Close() })

	type isoOnly struct {
		Country struct {
			ISOCode string `maxminddb:"iso_code"`
		} `maxminddb:"country"`
	}
	readers := []struct {
		name   string
		lookup func(netip.Addr) Country
	}{
		{"geodata", db.Country},
		{"geoip2", func(a netip.Addr) Country {
			r, err := g.Country(a)
			if err != nil {
				b.Fatal(err)
			}
			return code(r.Country.ISOCode)
		}},
		{"maxminddb", func(a netip.Addr) Country {
			var r isoOnly
			if err := m.Lookup(a).Decode(&r); err != nil {
				b.Fatal(err)
			}
			return code(r.Country.ISOCode)
		}},
	}
	addrs := map[string]netip.Addr{"ipv4": benchAddrs["ipv4"], "ipv6": netip.MustParseAddr("2a01:4f8::1")}
	for _, family := range []string{"ipv4", "ipv6"} {
		addr := addrs[family]
		want := db.Country(addr)
		for _, r := range readers {
			if got := r.lookup(addr); got != want {
				b.Fatalf("%s: %s gives %v, geodata %v", r.name, addr, got, want)
			}
			b.Run(family+"/"+r.name, func(b *testing.B) {
				b.ReportAllocs()
				var sink Country
				for b.Loop() {
					sink = r.lookup(addr)
				}
				_ = sink
			})
		}
	}
}

// code converts an ISO code as the readers return it, without allocating.
func code(s string) Country {
	if len(s) != 2 {
		return Unknown
	}
	return Country{s[0], s[1]}
}
