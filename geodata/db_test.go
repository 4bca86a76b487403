package geodata

import (
	"errors"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// c is a shorthand for a Country literal in tables.
func c(s string) Country { return Country{s[0], s[1]} }

// lookupCases hold, for an address, the country with the country database
// alone and with every source (fixtures anonymous.mmdb, anonymizers.txt and
// overrides.txt). Both country fixtures give the same answers.
var lookupCases = []struct {
	addr    string
	country Country // country database only
	full    Country // all four sources
	why     string
}{
	{"8.8.8.8", c("US"), c("GB"), "override wins over the country"},
	{"8.8.8.9", c("US"), c("US"), ""},
	{"::ffff:8.8.8.9", c("US"), c("US"), "IPv4-mapped is unmapped"},
	{"::ffff:10.0.0.1%eth0", Unknown, c("DE"), "IPv4-mapped with a zone"},
	{"8.8.4.4", c("US"), c("US"), "hosting provider only: not T1 by default"},
	{"1.1.1.1", c("AU"), c("AU"), ""},
	{"81.2.69.142", c("GB"), c("SE"), "override given as an IPv4-mapped network"},
	{"193.99.144.80", c("DE"), c("DE"), ""},
	{"133.242.0.1", c("JP"), c("JP"), ""},
	{"185.220.101.1", c("DE"), c("NL"), "override wins over T1"},
	{"185.220.101.2", c("DE"), Anonymous, "Tor exit: T1 wins over the country"},
	{"192.0.2.1", c("NL"), c("NL"), ""},
	{"192.0.2.200", c("NL"), Anonymous, "is_anonymous without a reason"},
	{"198.51.100.1", c("FR"), Anonymous, "VPN"},
	{"198.51.100.100", c("FR"), c("FR"), "registered_country when there is no country"},
	{"198.51.100.200", c("DE"), c("DE"), "country, not represented_country"},
	{"203.0.113.1", c("SE"), c("SE"), "lower-case code in the database"},
	{"203.0.113.70", Unknown, Unknown, "withdrawn code AN is XX"},
	{"203.0.113.130", Unknown, Anonymous, "public proxy with no country"},
	{"203.0.113.250", Unknown, Unknown, "unlisted"},
	{"9.9.9.9", Unknown, Unknown, "unlisted"},
	{"45.83.64.1", Unknown, Anonymous, "anonymizer list"},
	{"104.244.72.115", Unknown, Anonymous, "anonymizer list, one address"},
	{"104.244.72.116", Unknown, Unknown, ""},
	{"10.0.0.1", Unknown, c("DE"), "private: the database's US is ignored; override"},
	{"10.1.2.3", Unknown, c("FR"), "longest override wins"},
	{"10.8.0.1", Unknown, c("DE"), "override wins over the anonymous database"},
	{"127.0.0.1", Unknown, Unknown, "loopback"},
	{"169.254.1.1", Unknown, Unknown, "link-local"},
	{"172.16.5.5", Unknown, Anonymous, "override to T1"},
	{"192.168.1.10", Unknown, c("CH"), "override of one address"},
	{"192.168.1.11", Unknown, Unknown, "private"},
	{"192.168.77.7", Unknown, Anonymous, "the anonymizer list applies to private ranges"},
	{"0.0.0.0", Unknown, Unknown, "unspecified"},
	{"255.255.255.255", Unknown, Unknown, "broadcast"},
	{"224.0.0.1", Unknown, Unknown, "multicast"},
	{"2001:4860:4860::8888", c("US"), Anonymous, "anonymizer list wins over the country"},
	{"2001:4860:1::1", c("US"), c("US"), ""},
	{"2606:4700:4700::1111", c("US"), c("US"), ""},
	{"2606:4700:10::1", c("US"), c("US"), "hosting provider only"},
	{"2a00:1450:4001:80b::200e", c("IE"), c("IE"), ""},
	{"2a01:4f8::1", c("DE"), c("DE"), ""},
	{"2a01:4f8:c0c::1", c("DE"), Anonymous, "Tor exit"},
	{"2001:200::1", c("JP"), c("JP"), ""},
	{"2001:db8::1", c("NL"), c("NL"), ""},
	{"2001:db8::1%eth0", c("NL"), c("NL"), "zone ignored"},
	{"2001:db8:1::1", c("FR"), c("FR"), "registered_country"},
	{"2001:db8:2::1", c("SE"), c("SE"), "lower-case code"},
	{"2001:db8:3::1", c("DE"), c("DE"), "not represented_country"},
	{"2001:db8:ffff::1", Unknown, Anonymous, "residential proxy"},
	{"2001:db8:4::1", Unknown, Unknown, "unlisted"},
	{"fe80::1%eth0", Unknown, Unknown, "link-local with a zone"},
	{"fd00:1234::1", Unknown, c("DE"), "unique-local override"},
	{"fc00::1", Unknown, Unknown, "unique-local"},
	{"::1", Unknown, Unknown, "loopback"},
	{"::", Unknown, Unknown, "unspecified"},
	{"ff02::1", Unknown, Unknown, "multicast"},
	{"2002:808:808::1", Unknown, Unknown, "6to4 is not mapped to its IPv4 address"},
	{"::8.8.8.8", Unknown, Unknown, "IPv4-compatible (deprecated) is IPv6"},
}

func TestCountry(t *testing.T) {
	full := func(countryDB string) Config {
		return Config{
			CountryDB:      fixture(countryDB),
			AnonymousDB:    fixture("anonymous.mmdb"),
			AnonymizerList: fixture("anonymizers.txt"),
			Overrides:      fixture("overrides.txt"),
			NoReload:       true,
		}
	}
	for _, tc := range []struct {
		name string
		cfg  Config
		want func(addr netip.Addr, country, full Country) Country
	}{
		{
			name: "geoip2",
			cfg:  Config{CountryDB: fixture("country-geoip2.mmdb"), NoReload: true},
			want: func(_ netip.Addr, country, _ Country) Country { return country },
		},
		{
			name: "flat",
			cfg:  Config{CountryDB: fixture("country-flat.mmdb"), NoReload: true},
			want: func(_ netip.Addr, country, _ Country) Country { return country },
		},
		{
			name: "flat-ipv4-only",
			cfg:  Config{CountryDB: fixture("country-flat-ipv4.mmdb"), NoReload: true},
			want: func(a netip.Addr, country, _ Country) Country {
				if a.Unmap().Is6() {
					return Unknown
				}
				return country
			},
		},
		{
			name: "geoip2-all-sources",
			cfg:  full("country-geoip2.mmdb"),
			want: func(_ netip.Addr, _, full Country) Country { return full },
		},
		{
			name: "flat-all-sources",
			cfg:  full("country-flat.mmdb"),
			want: func(_ netip.Addr, _, full Country) Country { return full },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, _ := openTest(t, tc.cfg)
			for _, lc := range lookupCases {
				addr := netip.MustParseAddr(lc.addr)
				want := tc.want(addr, lc.country, lc.full)
				if got := db.Country(addr); got != want {
					t.Errorf("Country(%s) = %v, want %v (%s)", lc.addr, got, want, lc.why)
				}
			}
			if got := db.Country(netip.Addr{}); got != Unknown {
				t.Errorf("Country(invalid) = %v, want XX", got)
			}
		})
	}
}

func TestHostingIsAnonymous(t *testing.T) {
	for _, tc := range []struct {
		hosting bool
		addr    string
		want    Country
	}{
		{false, "8.8.4.4", c("US")},
		{true, "8.8.4.4", Anonymous},
		{false, "2606:4700:10::1", c("US")},
		{true, "2606:4700:10::1", Anonymous},
		{true, "8.8.8.9", c("US")},
		{true, "198.51.100.1", Anonymous},
	} {
		db, _ := openTest(t, Config{
			CountryDB:          fixture("country-flat.mmdb"),
			AnonymousDB:        fixture("anonymous.mmdb"),
			HostingIsAnonymous: tc.hosting,
			NoReload:           true,
		})
		if got := db.Country(netip.MustParseAddr(tc.addr)); got != tc.want {
			t.Errorf("hosting=%v: Country(%s) = %v, want %v", tc.hosting, tc.addr, got, tc.want)
		}
	}
}

func TestEmptyAndNil(t *testing.T) {
	db, _ := openTest(t, Config{})
	var nilDB *DB
	for _, l := range []Locator{db, nilDB} {
		for _, a := range []string{"8.8.8.8", "2001:db8::1", "10.0.0.1"} {
			if got := l.Country(netip.MustParseAddr(a)); got != Unknown {
				t.Errorf("%T Country(%s) = %v, want XX", l, a, got)
			}
		}
	}
	if s := db.Sources(); len(s) != 0 {
		t.Errorf("Sources() = %v, want none", s)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	truncated := readFixture(t, "country-flat.mmdb")
	truncated = truncated[:len(truncated)/2]
	for _, tc := range []struct {
		name  string
		cfg   Config
		is    error
		parts []string
	}{
		{
			name:  "missing country database",
			cfg:   Config{CountryDB: filepath.Join(dir, "geo", "country.mmdb")},
			is:    fs.ErrNotExist,
			parts: []string{"geodata: country database", filepath.Join(dir, "geo", "country.mmdb")},
		},
		{
			name:  "missing overrides",
			cfg:   Config{Overrides: filepath.Join(dir, "nope.txt")},
			is:    fs.ErrNotExist,
			parts: []string{"geodata: overrides", "nope.txt"},
		},
		{
			name:  "empty country database",
			cfg:   Config{CountryDB: write("empty.mmdb", "")},
			is:    ErrInvalid,
			parts: []string{"empty.mmdb"},
		},
		{
			name:  "garbage country database",
			cfg:   Config{CountryDB: write("garbage.mmdb", "this is not an mmdb file\n")},
			is:    ErrInvalid,
			parts: []string{"garbage.mmdb", "invalid"},
		},
		{
			name:  "truncated country database",
			cfg:   Config{CountryDB: write("truncated.mmdb", string(truncated))},
			is:    ErrInvalid,
			parts: []string{"truncated.mmdb"},
		},
		{
			name:  "anonymous database as country database",
			cfg:   Config{CountryDB: fixture("anonymous.mmdb")},
			is:    ErrInvalid,
			parts: []string{"not a country database"},
		},
		{
			name:  "country database as anonymous database",
			cfg:   Config{AnonymousDB: fixture("country-geoip2.mmdb")},
			is:    ErrInvalid,
			parts: []string{"not an Anonymous-IP database"},
		},
		{
			name:  "bad overrides line",
			cfg:   Config{Overrides: write("overrides.txt", "10.0.0.0/8 DE\n# ok\n192.168.0.0/16 UK\n")},
			is:    ErrInvalid,
			parts: []string{"overrides.txt", "line 3", "use GB"},
		},
		{
			name:  "bad anonymizer list line",
			cfg:   Config{AnonymizerList: write("anon.txt", "10.0.0.0/8\n10.0.0.0/33\n")},
			is:    ErrInvalid,
			parts: []string{"anonymizer list", "anon.txt", "line 2"},
		},
		{
			name:  "broken file with AllowMissing",
			cfg:   Config{CountryDB: write("garbage2.mmdb", "garbage"), AllowMissing: true},
			is:    ErrInvalid,
			parts: []string{"garbage2.mmdb"},
		},
		{
			name:  "negative durations",
			cfg:   Config{ReloadDelay: -1, PollInterval: -1},
			parts: []string{"geodata: config", "reloadDelay", "pollInterval"},
		},
		{
			name:  "same file twice",
			cfg:   Config{CountryDB: "x.mmdb", AnonymousDB: "./x.mmdb"},
			parts: []string{"same file"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logger, _ := newLogger()
			db, err := Open(tc.cfg, logger)
			if err == nil {
				db.Close()
				t.Fatal("Open succeeded")
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v is not %v", err, tc.is)
			}
			for _, p := range tc.parts {
				if !strings.Contains(err.Error(), p) {
					t.Errorf("error %q does not contain %q", err, p)
				}
			}
		})
	}
}

func TestSources(t *testing.T) {
	db, logs := openTest(t, Config{
		CountryDB:      fixture("country-geoip2.mmdb"),
		AnonymousDB:    fixture("anonymous.mmdb"),
		AnonymizerList: fixture("anonymizers.txt"),
		Overrides:      fixture("overrides.txt"),
		NoReload:       true,
	})
	got := db.Sources()
	want := []struct {
		kind, dbType string
		networks     int
	}{
		{"overrides", "", 8},
		{"anonymizer list", "", 4},
		{"anonymous database", "GeoIP2-Anonymous-IP", 7}, // hosting-only networks are left out
		{"country database", "GeoLite2-Country", 25},     // AN is left out
	}
	if len(got) != len(want) {
		t.Fatalf("Sources() = %+v", got)
	}
	for i, w := range want {
		g := got[i]
		if g.Kind != w.kind || g.DatabaseType != w.dbType || g.Networks != w.networks || !g.Loaded ||
			g.LoadedAt.IsZero() || len(g.SHA256) != 64 || g.ModTime.IsZero() {
			t.Errorf("source %d = %+v, want %+v", i, g, w)
		}
		if w.dbType != "" && g.BuildTime.Year() != 2026 {
			t.Errorf("source %d build time %v", i, g.BuildTime)
		}
	}
	if logs.count("codes that are not ISO 3166-1", "AN") != 1 {
		t.Errorf("no warning about the code AN; log:\n%s", logs)
	}
}
