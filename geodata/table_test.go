package geodata

import (
	"math/rand/v2"
	"net/netip"
	"os"
	"testing"

	"github.com/gaissmai/bart"
)

// bartOracle is what the rangeTable replaced, kept as the oracle of its
// tests: a bart.Table and a bart.Lite with the same networks inserted in
// the same order.
type bartOracle struct {
	t *bart.Table[Country]
	l *bart.Lite
	b rangeBuilder
}

func newOracle() *bartOracle { return &bartOracle{t: new(bart.Table[Country]), l: new(bart.Lite)} }

func (o *bartOracle) insert(p netip.Prefix, c Country) {
	o.t.Insert(p, c)
	o.l.Insert(p)
	o.b.insert(p, c)
}

// check compares the rangeTable built from the same networks with bart on
// addrs.
func (o *bartOracle) check(t *testing.T, rt *rangeTable, addrs []netip.Addr) {
	t.Helper()
	for _, a := range addrs {
		want, wantOK := o.t.Lookup(a)
		got, ok := rt.lookup(a)
		if got != want || ok != wantOK {
			t.Fatalf("lookup(%s) = %v, %v; bart says %v, %v", a, got, ok, want, wantOK)
		}
		if got, want := rt.contains(a), o.l.Contains(a); got != want {
			t.Fatalf("contains(%s) = %v; bart.Lite says %v", a, got, want)
		}
	}
	if got, want := rt.prefixes, o.l.Size(); got != want {
		t.Fatalf("%d distinct networks, bart.Lite has %d", got, want)
	}
}

// probes returns addresses around the edges of every network: its first
// and last address, the ones just outside it, and its middle.
func probes(ps []netip.Prefix) []netip.Addr {
	out := []netip.Addr{
		netip.MustParseAddr("0.0.0.0"), netip.MustParseAddr("255.255.255.255"),
		netip.MustParseAddr("::"), netip.MustParseAddr("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"),
		netip.MustParseAddr("::ffff:0.0.0.0"), netip.MustParseAddr("::ffff:10.1.2.3"),
		netip.MustParseAddr("10.1.2.3"), netip.MustParseAddr("2001:db8::1"),
		netip.MustParseAddr("fe80::1%eth0"), {},
	}
	for _, p := range ps {
		if !p.IsValid() {
			continue
		}
		p = p.Masked()
		first := p.Addr()
		last := lastAddr(p)
		out = append(out, first, last, first.Prev(), last.Next(), midAddr(p))
	}
	return out
}

// lastAddr returns the last address of the masked network p.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().As16()
	off := 0
	if p.Addr().Is4() {
		off = 96
	}
	for i := off + p.Bits(); i < 128; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a := netip.AddrFrom16(b)
	if p.Addr().Is4() {
		a = a.Unmap()
	}
	return a
}

// midAddr returns the first address of the upper half of the masked
// network p, or its only address.
func midAddr(p netip.Prefix) netip.Addr {
	if p.Bits() == p.Addr().BitLen() {
		return p.Addr()
	}
	b := p.Addr().As16()
	i := 128 - p.Addr().BitLen() + p.Bits()
	b[i/8] |= 0x80 >> (i % 8)
	a := netip.AddrFrom16(b)
	if p.Addr().Is4() {
		a = a.Unmap()
	}
	return a
}

// TestRangeTable checks the edge cases of the flattening against bart and
// against the expected answers.
func TestRangeTable(t *testing.T) {
	type ins struct {
		p string
		c string
	}
	for _, tc := range []struct {
		name string
		nets []ins
		want map[string]string // address -> country, "" for none
	}{
		{name: "empty", want: map[string]string{"1.2.3.4": "", "::": "", "::ffff:1.2.3.4": ""}},
		{
			name: "IPv4 /0 and /32",
			nets: []ins{{"0.0.0.0/0", "DE"}, {"1.2.3.4/32", "FR"}, {"255.255.255.255/32", "NL"}, {"0.0.0.0/32", "CH"}},
			want: map[string]string{"0.0.0.0": "CH", "0.0.0.1": "DE", "1.2.3.3": "DE", "1.2.3.4": "FR", "1.2.3.5": "DE",
				"255.255.255.254": "DE", "255.255.255.255": "NL", "::": "", "::ffff:1.2.3.4": ""},
		},
		{
			name: "IPv6 /0 and /128",
			nets: []ins{{"::/0", "US"}, {"2001:db8::1/128", "JP"}, {"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128", "AU"}, {"::/128", "BR"}},
			want: map[string]string{"::": "BR", "::1": "US", "2001:db8::": "US", "2001:db8::1": "JP", "2001:db8::2": "US",
				"ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe": "US", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff": "AU",
				"::ffff:1.2.3.4": "US", "1.2.3.4": ""},
		},
		{
			name: "nested networks, longest wins",
			nets: []ins{{"10.0.0.0/8", "DE"}, {"10.1.0.0/16", "FR"}, {"10.1.2.0/24", "CH"}, {"10.1.2.128/25", "XX"}, {"10.2.0.0/16", "DE"}},
			want: map[string]string{"9.255.255.255": "", "10.0.0.0": "DE", "10.1.0.0": "FR", "10.1.1.255": "FR", "10.1.2.0": "CH",
				"10.1.2.127": "CH", "10.1.2.128": "XX", "10.1.2.255": "XX", "10.1.3.0": "FR", "10.1.255.255": "FR",
				"10.2.0.1": "DE", "10.255.255.255": "DE", "11.0.0.0": ""},
		},
		{
			name: "networks ending together",
			nets: []ins{{"10.0.0.0/8", "DE"}, {"10.255.0.0/16", "FR"}, {"10.255.255.0/24", "CH"}, {"11.0.0.0/8", "NL"}},
			want: map[string]string{"10.254.255.255": "DE", "10.255.254.255": "FR", "10.255.255.255": "CH", "11.0.0.0": "NL"},
		},
		{
			name: "same network twice, the later wins",
			nets: []ins{{"10.0.0.0/8", "DE"}, {"10.0.0.0/8", "FR"}, {"2001:db8::/32", "FR"}, {"2001:db8::/32", "DE"}},
			want: map[string]string{"10.0.0.1": "FR", "2001:db8::1": "DE"},
		},
		{
			name: "host bits are masked",
			nets: []ins{{"10.1.2.3/8", "DE"}},
			want: map[string]string{"10.0.0.0": "DE", "10.255.255.255": "DE"},
		},
		{
			name: "4-in-6 networks are IPv6",
			nets: []ins{{"::ffff:0:0/96", "DE"}, {"::ffff:10.0.0.0/104", "FR"}, {"10.0.0.0/8", "NL"}},
			want: map[string]string{"::ffff:10.1.2.3": "FR", "::ffff:11.1.2.3": "DE", "10.1.2.3": "NL", "11.1.2.3": ""},
		},
		{
			name: "adjacent networks of one country",
			nets: []ins{{"10.0.0.0/9", "DE"}, {"10.128.0.0/9", "DE"}, {"10.64.0.0/10", "FR"}, {"2001:db8::/33", "DE"}, {"2001:db8:8000::/33", "DE"}},
			want: map[string]string{"10.0.0.0": "DE", "10.64.0.0": "FR", "10.127.255.255": "FR", "10.128.0.0": "DE",
				"10.255.255.255": "DE", "2001:db8::": "DE", "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff": "DE", "2001:db9::": ""},
		},
		{
			name: "IPv6 boundaries inside a high half",
			nets: []ins{{"2001:db8::/64", "DE"}, {"2001:db8::8000:0:0:0/65", "FR"}, {"2001:db8:0:1::/64", "NL"}},
			want: map[string]string{"2001:db8::7fff:ffff:ffff:ffff": "DE", "2001:db8::8000:0:0:0": "FR",
				"2001:db8::ffff:ffff:ffff:ffff": "FR", "2001:db8:0:1::": "NL", "2001:db8:0:2::": "", "2001:db7:ffff:ffff::": ""},
		},
		{
			name: "invalid networks are ignored",
			nets: []ins{{"", "DE"}},
			want: map[string]string{"0.0.0.0": "", "::": ""},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := newOracle()
			var ps []netip.Prefix
			for _, n := range tc.nets {
				p, _ := netip.ParsePrefix(n.p)
				o.insert(p, c(n.c))
				ps = append(ps, p)
			}
			rt := o.b.build()
			addrs := probes(ps)
			for a, want := range tc.want {
				addr := netip.MustParseAddr(a)
				addrs = append(addrs, addr)
				got, ok := rt.lookup(addr)
				if ok != (want != "") || (ok && got != c(want)) {
					t.Errorf("lookup(%s) = %v, %v, want %q", a, got, ok, want)
				}
			}
			o.check(t, rt, addrs)
		})
	}
}

// TestRangeTableRandom compares the table with bart on random sets of
// nested networks, large enough to use the index.
func TestRangeTableRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{1, 10, 300, 9000} {
		o := newOracle()
		var ps []netip.Prefix
		for range n {
			p := randomPrefix(rng)
			o.insert(p, randomCountry(rng))
			ps = append(ps, p)
		}
		rt := o.b.build()
		addrs := probes(ps)
		for range 4 * n {
			addrs = append(addrs, randomIn(rng, randomPrefix(rng)))
		}
		o.check(t, rt, addrs)
	}
}

var testCountries = []Country{c("DE"), c("FR"), c("US"), Unknown, Anonymous}

func randomCountry(rng *rand.Rand) Country { return testCountries[rng.IntN(len(testCountries))] }

// randomPrefix returns a network near a few base addresses, so that many
// are nested.
func randomPrefix(rng *rand.Rand) netip.Prefix {
	bases := []string{"10.0.0.0", "0.0.0.0", "255.255.255.255", "2001:db8::", "::", "::ffff:10.0.0.0", "ffff::"}
	a := netip.MustParseAddr(bases[rng.IntN(len(bases))])
	b := a.AsSlice()
	for range rng.IntN(3) {
		b[rng.IntN(len(b))] ^= byte(rng.Uint32())
	}
	a, _ = netip.AddrFromSlice(b)
	p, _ := a.Prefix(rng.IntN(a.BitLen() + 1))
	return p
}

// FuzzRangeTable builds a table of the networks the input describes and
// checks that it answers exactly as bart.Table.Lookup and bart.Lite.Contains
// for the edges and middles of every network and for addresses the input
// gives. Each network takes 3 bytes: family (IPv4, IPv6, IPv4-mapped),
// length and country, then an address of 4 or 16 bytes; after a network, a
// byte b < 32 adds an address to look up.
func FuzzRangeTable(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 32, 1, 1, 2, 3, 4})
	f.Add([]byte{1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 128, 3, 0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1})
	f.Add([]byte{2, 104, 1, 10, 0, 0, 0, 0, 8, 2, 10, 0, 0, 0, 0, 9, 3, 10, 1, 0, 0})
	f.Fuzz(func(t *testing.T, in []byte) {
		o := newOracle()
		var ps []netip.Prefix
		var extra []netip.Addr
		for len(in) >= 3 && len(ps) < 256 {
			fam, bits, cc := in[0]%3, int(in[1]), testCountries[int(in[2])%len(testCountries)]
			in = in[3:]
			var a netip.Addr
			switch fam {
			case 0:
				var b [4]byte
				in = in[copy(b[:], in):]
				a, bits = netip.AddrFrom4(b), bits%33
			case 1:
				var b [16]byte
				in = in[copy(b[:], in):]
				a, bits = netip.AddrFrom16(b), bits%129
			default:
				var b [4]byte
				in = in[copy(b[:], in):]
				a, bits = netip.AddrFrom16(netip.AddrFrom4(b).As16()), 96+bits%33
			}
			p := netip.PrefixFrom(a, bits)
			o.insert(p, cc)
			ps = append(ps, p)
			extra = append(extra, a)
			if len(in) > 0 && in[0] < 32 {
				// an address near the network: its first one with a bit flipped
				b := a.As16()
				off := 0
				if a.Is4() {
					off = 96
				}
				i := off + int(in[0])*(128-off)/32
				b[i/8] ^= 0x80 >> (i % 8)
				x := netip.AddrFrom16(b)
				if a.Is4() {
					x = x.Unmap()
				}
				extra = append(extra, x)
				in = in[1:]
			}
		}
		rt := o.b.build()
		o.check(t, rt, append(probes(ps), extra...))
	})
}

// TestRangeTableRealDatabase compares the country table of a real database
// with bart's, built from the same walk, on 200k random addresses of its
// networks and around them. It is skipped without a real database.
func TestRangeTableRealDatabase(t *testing.T) {
	path, ok := realDB()
	if !ok {
		t.Skipf("no real country database at %s; set PLATFORM_GEOIP or run make geodata", path)
	}
	if testing.Short() {
		t.Skip("-short")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rt, _, err := loadCountryDB(data)
	if err != nil {
		t.Fatal(err)
	}
	bt := bartCountryDB(t, data)
	rng := rand.New(rand.NewPCG(7, 8))
	var pfx []netip.Prefix
	for p := range bt.All() {
		pfx = append(pfx, p)
	}
	n := 0
	for range 100_000 {
		p := pfx[rng.IntN(len(pfx))]
		for _, a := range []netip.Addr{randomIn(rng, p), p.Addr(), p.Addr().Prev(), lastAddr(p), lastAddr(p).Next()} {
			if !a.IsValid() {
				continue
			}
			want, wantOK := bt.Lookup(a)
			if got, ok := rt.lookup(a); got != want || ok != wantOK {
				t.Fatalf("lookup(%s) (near %s) = %v, %v; bart says %v, %v", a, p, got, ok, want, wantOK)
			}
			n++
		}
	}
	t.Logf("%d addresses of %d networks: same answers", n, len(pfx))
	for _, f := range []struct {
		name   string
		ranges int
		f      *family
	}{{"IPv4", len(rt.v4.ranges), &rt.v4.family}, {"IPv6", len(rt.v6.ranges), &rt.v6.family}} {
		st := f.f.stats()
		t.Logf("%s: %d ranges, window /%d, %d buckets (%d split, %d levels); a range's bucket holds %.1f ranges on average, at most %d",
			f.name, f.ranges, 64-f.f.wshift, len(f.f.buckets), st.split, st.depth, float64(st.sumSq)/float64(f.ranges), st.max)
	}
}

type indexStats struct{ split, depth, max, sumSq int }

// stats describes the index of f: how many buckets are split, the deepest
// level, the largest bucket, and the sum of the squares of the buckets'
// sizes (so sumSq/ranges is the size of the bucket of the average range).
func (f *family) stats() indexStats {
	var st indexStats
	var walk func(base, n, depth int)
	walk = func(base, n, depth int) {
		st.depth = max(st.depth, depth)
		for b := base; b < base+n; b++ {
			if n := f.buckets[b].node; n != 0 {
				st.split++
				walk(int(f.nodes[n-1].sub), 1<<f.nodes[n-1].k, depth+1)
				continue
			}
			c := int(f.buckets[b+1].first - f.buckets[b].first)
			st.sumSq += c * c
			st.max = max(st.max, c)
		}
	}
	walk(0, int(f.mask)+1, 1)
	return st
}

// bartCountryDB loads a country database into a bart.Table as the package
// did before the rangeTable, by the same walk and in the same order.
func bartCountryDB(tb testing.TB, data []byte) *bart.Table[Country] {
	tb.Helper()
	r, err := openMMDB(data)
	if err != nil {
		tb.Fatal(err)
	}
	t := new(bart.Table[Country])
	err = walk(r, data, recordCountry, func(p netip.Prefix, cc countryCode) {
		if cc.ok {
			t.Insert(p, cc.c)
		}
	})
	if err != nil {
		tb.Fatal(err)
	}
	return t
}

// BenchmarkTableLookup compares the country table alone with the
// bart.Table it replaced, built from the same database in the same binary:
// one address repeated (warm caches) and 64k random addresses of the
// database's networks (cold caches). It uses the real database when there
// is one, else the flat fixture.
//
//	go test -run '^$' -bench TableLookup -count 5 ./geodata/
func BenchmarkTableLookup(b *testing.B) {
	path, ok := realDB()
	if !ok {
		path = fixture("country-flat.mmdb")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	rt, _, err := loadCountryDB(data)
	if err != nil {
		b.Fatal(err)
	}
	bt := bartCountryDB(b, data)
	impls := []struct {
		name   string
		lookup func(netip.Addr) (Country, bool)
	}{{"bart", bt.Lookup}, {"rangeTable", rt.lookup}}
	rng := rand.New(rand.NewPCG(9, 10))
	for _, family := range []string{"ipv4", "ipv6"} {
		var pfx []netip.Prefix
		all := bt.All4()
		if family == "ipv6" {
			all = bt.All6()
		}
		for p := range all {
			pfx = append(pfx, p)
		}
		random := make([]netip.Addr, 1<<16)
		for i := range random {
			random[i] = randomIn(rng, pfx[rng.IntN(len(pfx))])
		}
		warm := benchAddrs[family]
		for _, im := range impls {
			b.Run(family+"/"+im.name, func(b *testing.B) {
				var sink Country
				for b.Loop() {
					sink, _ = im.lookup(warm)
				}
				_ = sink
			})
		}
		for _, im := range impls {
			b.Run(family+"-random/"+im.name, func(b *testing.B) {
				var sink Country
				i := 0
				for b.Loop() {
					sink, _ = im.lookup(random[i&(len(random)-1)])
					i++
				}
				_ = sink
			})
		}
	}
}
