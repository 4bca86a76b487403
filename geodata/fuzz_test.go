package geodata

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"
)

func FuzzParseOverrides(f *testing.F) {
	f.Add(string(readFixture(f, "overrides.txt")))
	for _, s := range []string{"10.0.0.0/8 DE", "::ffff:1.2.3.4 t1 # x", "2001:db8::/32\tXX\r\n", "1.2.3.4/33 DE", "a b c", "\xef\xbb\xbf10.0.0.0/8 uk"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		list, err := ParseOverrides(strings.NewReader(in))
		if err != nil {
			return
		}
		// Accepted lines round-trip: formatting them gives a file that
		// parses to the same overrides.
		var buf bytes.Buffer
		for _, o := range list {
			if !o.Prefix.IsValid() || o.Prefix != o.Prefix.Masked() || o.Prefix.Addr().Is4In6() || o.Prefix.Addr().Zone() != "" || !o.Country.Valid() {
				t.Fatalf("accepted a bad override %v from %q", o, in)
			}
			buf.WriteString(o.String() + "\n")
		}
		again, err := ParseOverrides(&buf)
		if err != nil {
			t.Fatalf("formatted overrides do not parse: %v\n%s", err, buf.String())
		}
		if len(again) != len(list) {
			t.Fatalf("round trip: %v, want %v", again, list)
		}
		for i := range list {
			if again[i] != list[i] {
				t.Fatalf("round trip: %v, want %v", again[i], list[i])
			}
		}
	})
}

func FuzzParsePrefixList(f *testing.F) {
	f.Add(string(readFixture(f, "anonymizers.txt")))
	for _, s := range []string{"10.0.0.0/8", "fe80::1%eth0", "::ffff:0:0/96", "1.2.3.4/8", "# only\n\n", "x/y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		list, err := ParsePrefixList(strings.NewReader(in))
		if err != nil {
			return
		}
		var buf bytes.Buffer
		for _, p := range list {
			if !p.IsValid() || p != p.Masked() || p.Addr().Is4In6() {
				t.Fatalf("accepted a bad network %v from %q", p, in)
			}
			buf.WriteString(p.String() + "\n")
		}
		again, err := ParsePrefixList(&buf)
		if err != nil {
			t.Fatalf("formatted list does not parse: %v\n%s", err, buf.String())
		}
		if len(again) != len(list) {
			t.Fatalf("round trip: %v, want %v", again, list)
		}
		for i := range list {
			if again[i] != list[i] {
				t.Fatalf("round trip: %v, want %v", again[i], list[i])
			}
		}
	})
}

// FuzzCountry looks up arbitrary addresses, as 16 bytes read as IPv6 and
// their first 4 as IPv4: never a panic, always a valid code.
func FuzzCountry(f *testing.F) {
	db, _ := openTest(f, Config{
		CountryDB:      fixture("country-geoip2.mmdb"),
		AnonymousDB:    fixture("anonymous.mmdb"),
		AnonymizerList: fixture("anonymizers.txt"),
		Overrides:      fixture("overrides.txt"),
		NoReload:       true,
	})
	for _, lc := range lookupCases {
		a := netip.MustParseAddr(lc.addr).As16()
		f.Add(a[:])
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		var a16 [16]byte
		copy(a16[:], b)
		for _, a := range []netip.Addr{netip.AddrFrom16(a16), netip.AddrFrom4([4]byte(a16[:4])), netip.AddrFrom16(a16).WithZone("eth0")} {
			if c := db.Country(a); !c.Valid() {
				t.Fatalf("Country(%s) = %q", a, c[:])
			}
		}
	})
}

// FuzzLoadCountryDB loads mutated databases: a broken file is refused, never
// a panic.
func FuzzLoadCountryDB(f *testing.F) {
	for _, name := range []string{"country-geoip2.mmdb", "country-flat.mmdb", "country-flat-ipv4.mmdb", "anonymous.mmdb"} {
		f.Add(readFixture(f, name))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if table, _, err := loadCountryDB(data); err == nil {
			s := &snapshot{country: table}
			for _, lc := range lookupCases {
				if c := s.lookup(netip.MustParseAddr(lc.addr)); !c.Valid() {
					t.Fatalf("Country(%s) = %q", lc.addr, c[:])
				}
			}
		}
		_, _, _ = loadAnonymousDB(data, true)
	})
}
