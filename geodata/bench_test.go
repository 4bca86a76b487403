package geodata

import (
	"math/rand/v2"
	"net/netip"
	"os"
	"testing"
)

// benchAddrs are looked up by the fixture benchmarks: public addresses that
// go through every source and end in the country database.
var benchAddrs = map[string]netip.Addr{
	"ipv4": netip.MustParseAddr("193.99.144.80"),
	"ipv6": netip.MustParseAddr("2a00:1450:4001:80b::200e"),
}

// benchWarm opens countryDB behind the fixture overrides, anonymizer list
// and Anonymous-IP database, and benchmarks repeated IPv4 and IPv6 lookups.
func benchWarm(b *testing.B, countryDB string) *DB {
	db, _ := openTest(b, Config{
		CountryDB:      countryDB,
		AnonymousDB:    fixture("anonymous.mmdb"),
		AnonymizerList: fixture("anonymizers.txt"),
		Overrides:      fixture("overrides.txt"),
		NoReload:       true,
	})
	for _, name := range []string{"ipv4", "ipv6"} {
		addr := benchAddrs[name]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			var sink Country
			for b.Loop() {
				sink = db.Country(addr)
			}
			_ = sink
		})
	}
	return db
}

// BenchmarkCountry looks up addresses with all four fixture sources.
//
//	go test -run '^$' -bench . -benchtime 2s ./geodata/
func BenchmarkCountry(b *testing.B) {
	db := benchWarm(b, fixture("country-flat.mmdb"))
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			var sink Country
			for pb.Next() {
				sink = db.Country(benchAddrs["ipv4"])
			}
			_ = sink
		})
	})
}

// sampleAddrs returns n random addresses of the networks of db's country
// database, IPv4 or IPv6, to defeat the caches. The networks are read into a
// bart.Table, as the package did before the rangeTable, so that the
// addresses are the same as in the benchmarks of that version.
func sampleAddrs(b *testing.B, db *DB, n int, v6 bool) []netip.Addr {
	data, err := os.ReadFile(db.cfg.CountryDB)
	if err != nil {
		b.Fatal(err)
	}
	t := bartCountryDB(b, data)
	var pfx []netip.Prefix
	all := t.All4()
	if v6 {
		all = t.All6()
	}
	for p := range all {
		pfx = append(pfx, p)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	out := make([]netip.Addr, n)
	for i := range out {
		out[i] = randomIn(rng, pfx[rng.IntN(len(pfx))])
	}
	return out
}
