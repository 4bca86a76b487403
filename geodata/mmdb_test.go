package geodata

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"
	maxminddb "github.com/oschwald/maxminddb-golang/v2"
)

// buildMMDB writes a database with mmdbwriter: network -> record.
func buildMMDB(t testing.TB, opts mmdbwriter.Options, records map[string]mmdbtype.DataType) []byte {
	t.Helper()
	opts.IncludeReservedNetworks = true
	if opts.DatabaseType == "" {
		opts.DatabaseType = "test"
	}
	tree, err := mmdbwriter.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	for cidr, rec := range records {
		_, n, err := net.ParseCIDR(cidr)
		if err != nil {
			t.Fatal(err)
		}
		if err := tree.Insert(n, rec); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if _, err := tree.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func flat(code string) mmdbtype.Map { return mmdbtype.Map{"country_code": mmdbtype.String(code)} }

func TestLoadCountryDBLayouts(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    mmdbwriter.Options
		records map[string]mmdbtype.DataType
		want    map[string]Country // address -> country
		errPart string
	}{
		{
			name:    "record covering the whole space also covers IPv4",
			opts:    mmdbwriter.Options{DisableIPv4Aliasing: true},
			records: map[string]mmdbtype.DataType{"::/0": flat("DE")},
			want:    map[string]Country{"8.8.8.8": c("DE"), "2001:db8::1": c("DE")},
		},
		{
			name:    "record covering ::/64 also covers IPv4",
			opts:    mmdbwriter.Options{DisableIPv4Aliasing: true},
			records: map[string]mmdbtype.DataType{"::/64": flat("FR"), "2001:db8::/32": flat("NL")},
			want:    map[string]Country{"8.8.8.8": c("FR"), "2001:db8::1": c("NL"), "2001:db9::1": Unknown},
		},
		{
			name: "IPinfo-style country string",
			records: map[string]mmdbtype.DataType{"8.8.8.0/24": mmdbtype.Map{
				"country": mmdbtype.String("US"), "country_name": mmdbtype.String("United States"),
			}},
			want: map[string]Country{"8.8.8.8": c("US")},
		},
		{
			name: "country.iso_code wins over country_code",
			records: map[string]mmdbtype.DataType{"8.8.8.0/24": mmdbtype.Map{
				"country":      mmdbtype.Map{"iso_code": mmdbtype.String("US")},
				"country_code": mmdbtype.String("CA"),
			}},
			want: map[string]Country{"8.8.8.8": c("US")},
		},
		{
			name: "T1 in a database",
			records: map[string]mmdbtype.DataType{
				"8.8.8.0/24": flat("T1"), "9.9.9.0/24": flat("XX"), "1.1.1.0/24": flat("AU"),
			},
			want: map[string]Country{"8.8.8.8": Anonymous, "9.9.9.9": Unknown, "1.1.1.1": c("AU")},
		},
		{
			name:    "records that are not maps",
			records: map[string]mmdbtype.DataType{"8.8.8.0/24": mmdbtype.String("US")},
			errPart: "not a country database",
		},
		{
			name:    "no networks",
			records: map[string]mmdbtype.DataType{},
			errPart: "not a country database",
		},
		{
			name:    "only bad codes",
			records: map[string]mmdbtype.DataType{"8.8.8.0/24": flat("--"), "9.9.9.0/24": flat("EU")},
			errPart: "not a country database",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := buildMMDB(t, tc.opts, tc.records)
			table, _, err := loadCountryDB(data)
			if tc.errPart != "" {
				if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.errPart) {
					t.Fatalf("error %v, want ErrInvalid with %q", err, tc.errPart)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			s := &snapshot{country: table}
			for a, want := range tc.want {
				if got := s.lookup(netip.MustParseAddr(a)); got != want {
					t.Errorf("Country(%s) = %v, want %v", a, got, want)
				}
			}
		})
	}
}

// TestMatchesMaxMindReader checks the tables against maxminddb's own lookup,
// for random addresses in and around every network of every fixture.
func TestMatchesMaxMindReader(t *testing.T) {
	for _, name := range []string{"country-geoip2.mmdb", "country-flat.mmdb", "country-flat-ipv4.mmdb", "anonymous.mmdb", "reload-a.mmdb"} {
		t.Run(name, func(t *testing.T) {
			data := readFixture(t, name)
			r, err := maxminddb.OpenBytes(data)
			if err != nil {
				t.Fatal(err)
			}
			s := &snapshot{}
			anon := name == "anonymous.mmdb"
			if anon {
				s.anonymous, _, err = loadAnonymousDB(data, false)
			} else {
				s.country, _, err = loadCountryDB(data)
			}
			if err != nil {
				t.Fatal(err)
			}
			want := func(a netip.Addr) Country {
				if !a.IsGlobalUnicast() || a.IsPrivate() {
					return Unknown
				}
				if r.Metadata.IPVersion == 4 && a.Is6() {
					return Unknown
				}
				var rec any
				if err := r.Lookup(a).Decode(&rec); err != nil {
					t.Fatalf("maxminddb: %s: %v", a, err)
				}
				if anon {
					if recordAnonFlags(rec).isT1(false) {
						return Anonymous
					}
					return Unknown
				}
				if cc := recordCountry(rec); cc.ok {
					return cc.c
				}
				return Unknown
			}
			rng := rand.New(rand.NewPCG(1, 2))
			n := 0
			for res := range r.Networks(maxminddb.IncludeNetworksWithoutData()) {
				p := res.Prefix()
				if p.Addr().Is4In6() || (p.Addr().Is6() && p.Bits() < 16) {
					continue // IPv4 aliases are not looked up; huge empty networks add nothing
				}
				for range 4 {
					a := randomIn(rng, p)
					if got, w := s.lookup(a), want(a); got != w {
						t.Errorf("%s (in %s): table says %v, maxminddb %v", a, p, got, w)
					}
					n++
				}
			}
			if n < 50 {
				t.Errorf("only %d addresses checked", n)
			}
		})
	}
}

// randomIn returns a random address of p.
func randomIn(rng *rand.Rand, p netip.Prefix) netip.Addr {
	b := p.Addr().As16()
	start := 0
	if p.Addr().Is4() {
		start = 96
	}
	for i := start + p.Bits(); i < 128; i++ {
		if rng.IntN(2) == 1 {
			b[i/8] |= 1 << (7 - i%8)
		}
	}
	a := netip.AddrFrom16(b)
	if p.Addr().Is4() {
		a = a.Unmap()
	}
	return a
}

// corruptTree returns reload-a.mmdb with its search tree rewritten: node i
// of the first k nodes gets children child(i) (both records), the others
// are emptied.
func corruptTree(t testing.TB, k int, child func(i int) int) []byte {
	data := bytes.Clone(readFixture(t, "reload-a.mmdb"))
	r, err := maxminddb.OpenBytes(data)
	if err != nil {
		t.Fatal(err)
	}
	n := int(r.Metadata.NodeCount)
	if r.Metadata.RecordSize != 24 || n < k+1 {
		t.Fatalf("record size %d, %d nodes", r.Metadata.RecordSize, n)
	}
	for i := range n {
		rec := n // empty
		if i < k {
			rec = child(i)
		}
		for half := range 2 {
			o := i*6 + half*3
			data[o], data[o+1], data[o+2] = byte(rec>>16), byte(rec>>8), byte(rec)
		}
	}
	return data
}

// TestCorruptTree loads trees that a walk of every path would follow for
// ever: a cycle, and a chain of nodes whose two children are the same node
// (2^k paths). They must be refused at once.
func TestCorruptTree(t *testing.T) {
	for _, tc := range []struct {
		name  string
		k     int
		child func(i int) int
	}{
		{"cycle to the root", 4, func(int) int { return 0 }},
		{"shared children", 60, func(i int) int { return i + 1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := loadCountryDB(corruptTree(t, tc.k, tc.child))
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "reached twice") {
				t.Fatalf("loadCountryDB: %v, want ErrInvalid for a node reached twice", err)
			}
		})
	}
}
