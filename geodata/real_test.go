package geodata

import (
	"net/netip"
	"os"
	"runtime"
	"runtime/metrics"
	"slices"
	"testing"
)

// realDB returns the path of a real country database: $PLATFORM_GEOIP, or
// the one `make geodata` fetches into ../data/geo/country.mmdb, and false
// when there is none.
func realDB() (string, bool) {
	path := os.Getenv("PLATFORM_GEOIP")
	if path == "" {
		path = "../data/geo/country.mmdb"
	}
	_, err := os.Stat(path)
	return path, err == nil
}

// realOrSkip is realDB for the benchmarks that need a real database.
func realOrSkip(tb testing.TB) string {
	tb.Helper()
	path, ok := realDB()
	if !ok {
		tb.Skipf("no real country database at %s; set PLATFORM_GEOIP or run make geodata", path)
	}
	return path
}

// wellKnown are addresses whose country every database agrees on; the
// committed fixtures (testdata/gen) hold the same networks, so the table
// runs in a fresh clone and again on a real database when there is one.
var wellKnown = []struct {
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
}

// TestRealDatabase checks well-known addresses in both committed fixture
// layouts (GeoIP2 Country and ip-location-db), and in a real database of
// either layout when PLATFORM_GEOIP (or ../data/geo/country.mmdb) names one.
func TestRealDatabase(t *testing.T) {
	dbs := []struct {
		name, path  string
		minNetworks int
	}{
		{"fixture geoip2", fixture("country-geoip2.mmdb"), 20},
		{"fixture flat", fixture("country-flat.mmdb"), 20},
	}
	if path, ok := realDB(); ok {
		dbs = append(dbs, struct {
			name, path  string
			minNetworks int
		}{"real", path, 100_000})
	} else {
		t.Logf("no real database at %s: fixtures only (set PLATFORM_GEOIP for a real one)", path)
	}
	for _, d := range dbs {
		t.Run(d.name, func(t *testing.T) {
			db, _ := openTest(t, Config{CountryDB: d.path, NoReload: true})
			for _, tc := range wellKnown {
				t.Run(tc.addr, func(t *testing.T) {
					if got := db.Country(netip.MustParseAddr(tc.addr)); !slices.Contains(tc.want, got) {
						t.Errorf("Country(%s) = %v, want one of %v", tc.addr, got, tc.want)
					}
				})
			}
			src := db.Sources()[0]
			t.Logf("%s: %s, built %s, %d networks", src.Path, src.DatabaseType, src.BuildTime.Format("2006-01-02"), src.Networks)
			if src.Networks < d.minNetworks {
				t.Errorf("only %d networks, want at least %d", src.Networks, d.minNetworks)
			}
		})
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
	db := benchWarm(b, realOrSkip(b))
	for _, v6 := range []bool{false, true} {
		name := "ipv4-random"
		if v6 {
			name = "ipv6-random"
		}
		addrs := sampleAddrs(b, db, 1<<16, v6)
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
	data, err := os.ReadFile(realOrSkip(b))
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

// gcSink keeps the table of BenchmarkGCWithCountryTable alive.
var gcSink any

// BenchmarkGCWithCountryTable measures what the country table of a real
// database costs the garbage collector: the table is loaded, as a
// bart.Table (what the package used before) or as the rangeTable, and each
// iteration is a forced runtime.GC() with it live. It reports ns/op (the
// wall time of a whole cycle), gc-cpu-ms/op (the CPU the GC spent, from
// runtime/metrics), table-MB (the live heap the table adds) and live-MB
// (the test binary's whole live heap after a GC).
//
//	go test -run '^$' -bench GCWithCountryTable -benchtime 20x -count 3 ./geodata/
func BenchmarkGCWithCountryTable(b *testing.B) {
	data, err := os.ReadFile(realOrSkip(b))
	if err != nil {
		b.Fatal(err)
	}
	for _, impl := range []string{"bart", "rangeTable"} {
		b.Run(impl, func(b *testing.B) {
			gcSink = nil
			base := liveHeap()
			if impl == "bart" {
				gcSink = bartCountryDB(b, data)
			} else {
				t, _, err := loadCountryDB(data)
				if err != nil {
					b.Fatal(err)
				}
				gcSink = t
			}
			live := liveHeap()
			sample := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}}
			metrics.Read(sample)
			cpu0 := sample[0].Value.Float64()
			b.ResetTimer()
			for range b.N {
				runtime.GC()
			}
			b.StopTimer()
			metrics.Read(sample)
			b.ReportMetric((sample[0].Value.Float64()-cpu0)*1e3/float64(b.N), "gc-cpu-ms/op")
			b.ReportMetric(float64(live-base)/1e6, "table-MB")
			b.ReportMetric(float64(live)/1e6, "live-MB")
			gcSink = nil
		})
	}
}

// liveHeap returns the bytes of live heap objects after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
