package netguard

import (
	"net/netip"
	"strings"
	"testing"
)

// blockCase is one address of a block of the IANA special-purpose
// registries, with the answer written out by hand.
type blockCase struct {
	block   string // the registry entry (or "public", "global unicast")
	addr    string
	blocked bool
}

// blockCases has, for every row of the table, its first and last address
// and its neighbours just outside (which may fall in another row).
var blockCases = []blockCase{
	// IPv4.
	{"0.0.0.0/8", "0.0.0.0", true}, {"0.0.0.0/8", "0.255.255.255", true}, {"0.0.0.0/8", "1.0.0.0", false},
	{"10.0.0.0/8", "10.0.0.0", true}, {"10.0.0.0/8", "10.255.255.255", true},
	{"10.0.0.0/8", "9.255.255.255", false}, {"10.0.0.0/8", "11.0.0.0", false},
	{"100.64.0.0/10", "100.64.0.0", true}, {"100.64.0.0/10", "100.127.255.255", true},
	{"100.64.0.0/10", "100.63.255.255", false}, {"100.64.0.0/10", "100.128.0.0", false},
	{"127.0.0.0/8", "127.0.0.0", true}, {"127.0.0.0/8", "127.255.255.255", true},
	{"127.0.0.0/8", "126.255.255.255", false}, {"127.0.0.0/8", "128.0.0.0", false},
	{"169.254.0.0/16", "169.254.0.0", true}, {"169.254.0.0/16", "169.254.255.255", true},
	{"169.254.0.0/16", "169.254.169.254", true}, // cloud metadata
	{"169.254.0.0/16", "169.253.255.255", false}, {"169.254.0.0/16", "169.255.0.0", false},
	{"172.16.0.0/12", "172.16.0.0", true}, {"172.16.0.0/12", "172.31.255.255", true},
	{"172.16.0.0/12", "172.15.255.255", false}, {"172.16.0.0/12", "172.32.0.0", false},
	{"192.0.0.0/24", "192.0.0.0", true}, {"192.0.0.0/24", "192.0.0.255", true},
	{"192.0.0.0/24", "191.255.255.255", false}, {"192.0.0.0/24", "192.0.1.0", false},
	{"192.0.0.0/24", "192.0.0.8", true}, {"192.0.0.0/24", "192.0.0.170", true}, // dummy, NAT64 discovery
	{"192.0.0.9/32", "192.0.0.9", false},
	{"192.0.0.10/32", "192.0.0.10", false}, {"192.0.0.10/32", "192.0.0.11", true},
	{"192.0.2.0/24", "192.0.2.0", true}, {"192.0.2.0/24", "192.0.2.255", true},
	{"192.0.2.0/24", "192.0.1.255", false}, {"192.0.2.0/24", "192.0.3.0", false},
	{"192.88.99.0/24", "192.88.99.0", true}, {"192.88.99.0/24", "192.88.99.255", true},
	{"192.88.99.0/24", "192.88.98.255", false}, {"192.88.99.0/24", "192.88.100.0", false},
	{"192.168.0.0/16", "192.168.0.0", true}, {"192.168.0.0/16", "192.168.255.255", true},
	{"192.168.0.0/16", "192.167.255.255", false}, {"192.168.0.0/16", "192.169.0.0", false},
	{"198.18.0.0/15", "198.18.0.0", true}, {"198.18.0.0/15", "198.19.255.255", true},
	{"198.18.0.0/15", "198.17.255.255", false}, {"198.18.0.0/15", "198.20.0.0", false},
	{"198.51.100.0/24", "198.51.100.0", true}, {"198.51.100.0/24", "198.51.100.255", true},
	{"198.51.100.0/24", "198.51.99.255", false}, {"198.51.100.0/24", "198.51.101.0", false},
	{"203.0.113.0/24", "203.0.113.0", true}, {"203.0.113.0/24", "203.0.113.255", true},
	{"203.0.113.0/24", "203.0.112.255", false}, {"203.0.113.0/24", "203.0.114.0", false},
	{"224.0.0.0/4", "224.0.0.0", true}, {"224.0.0.0/4", "239.255.255.255", true},
	{"224.0.0.0/4", "223.255.255.255", false},
	{"240.0.0.0/4", "240.0.0.0", true}, {"240.0.0.0/4", "255.255.255.254", true},
	{"240.0.0.0/4", "255.255.255.255", true}, {"255.255.255.255/32", "255.255.255.255", true},

	// IPv6.
	{"::/128", "::", true},
	{"::1/128", "::1", true}, {"::1/128", "::2", true}, // outside global unicast
	{"::ffff:0.0.0.0/96", "::ffff:0.0.0.0", true}, {"::ffff:0.0.0.0/96", "::ffff:255.255.255.255", true},
	{"::ffff:0.0.0.0/96", "::ffff:8.8.8.8", false}, {"::ffff:0.0.0.0/96", "::ffff:192.0.2.1", true},
	{"::ffff:0.0.0.0/96", "::ffff:192.0.0.9", false}, {"::ffff:0.0.0.0/96", "::ffff:10.0.0.1", true},
	{"::ffff:0.0.0.0/96", "::fffe:ffff:ffff", true}, {"::ffff:0.0.0.0/96", "::1:0:0:0", true}, // outside global unicast
	{"::ffff:0.0.0.0/96", "::ffff:0:a00:1", true}, // SIIT, outside global unicast
	{"64:ff9b::/96", "64:ff9b::", true}, {"64:ff9b::/96", "64:ff9b::ffff:ffff", true},
	{"64:ff9b::/96", "64:ff9b::808:808", false}, {"64:ff9b::/96", "64:ff9b::a00:1", true},
	{"64:ff9b::/96", "64:ff9b::7f00:1", true}, {"64:ff9b::/96", "64:ff9b::cb00:7101", true},
	{"64:ff9b::/96", "64:ff9a:ffff:ffff:ffff:ffff:ffff:ffff", true}, {"64:ff9b::/96", "64:ff9b:0:0:0:1::", true},
	{"64:ff9b:1::/48", "64:ff9b:1::", true}, {"64:ff9b:1::/48", "64:ff9b:1:ffff:ffff:ffff:ffff:ffff", true},
	{"64:ff9b:1::/48", "64:ff9b:1::808:808", true}, // local use: the operator's own translator
	{"100::/64", "100::", true}, {"100::/64", "100::ffff:ffff:ffff:ffff", true},
	{"100:0:0:1::/64", "100:0:0:1::", true}, {"100:0:0:1::/64", "100::1:ffff:ffff:ffff:ffff", true},
	{"2001::/23", "2001::", true}, {"2001::/23", "2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff", true},
	{"2001::/23", "2000:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false}, {"2001::/23", "2001:200::", false},
	{"2001::/32", "2001::", true}, {"2001::/32", "2001:0:ffff:ffff:ffff:ffff:ffff:ffff", true}, {"2001::/32", "2001:0:4136:e378::1", true},
	{"2001:1::1/128", "2001:1::1", false}, {"2001:1::1/128", "2001:1::", true},
	{"2001:1::2/128", "2001:1::2", false},
	{"2001:1::3/128", "2001:1::3", false}, {"2001:1::3/128", "2001:1::4", true},
	{"2001:2::/48", "2001:2::", true}, {"2001:2::/48", "2001:2:0:ffff:ffff:ffff:ffff:ffff", true},
	{"2001:2::/48", "2001:1:ffff:ffff:ffff:ffff:ffff:ffff", true}, {"2001:2::/48", "2001:2:1::", true},
	{"2001:3::/32", "2001:3::", false}, {"2001:3::/32", "2001:3:ffff:ffff:ffff:ffff:ffff:ffff", false},
	{"2001:3::/32", "2001:2:ffff:ffff:ffff:ffff:ffff:ffff", true}, {"2001:3::/32", "2001:4::", true},
	{"2001:4:112::/48", "2001:4:112::", false}, {"2001:4:112::/48", "2001:4:112:ffff:ffff:ffff:ffff:ffff", false},
	{"2001:4:112::/48", "2001:4:111:ffff:ffff:ffff:ffff:ffff", true}, {"2001:4:112::/48", "2001:4:113::", true},
	{"2001:10::/28", "2001:10::", true}, {"2001:10::/28", "2001:1f:ffff:ffff:ffff:ffff:ffff:ffff", true},
	{"2001:10::/28", "2001:f:ffff:ffff:ffff:ffff:ffff:ffff", true},
	{"2001:20::/28", "2001:20::", false}, {"2001:20::/28", "2001:2f:ffff:ffff:ffff:ffff:ffff:ffff", false},
	{"2001:30::/28", "2001:30::", false}, {"2001:30::/28", "2001:3f:ffff:ffff:ffff:ffff:ffff:ffff", false},
	{"2001:30::/28", "2001:40::", true},
	{"2001:db8::/32", "2001:db8::", true}, {"2001:db8::/32", "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", true},
	{"2001:db8::/32", "2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", false}, {"2001:db8::/32", "2001:db9::", false},
	{"2002::/16", "2002::", true}, {"2002::/16", "2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true},
	{"2002::/16", "2002:808:808::", false}, {"2002::/16", "2002:c000:201::", true}, {"2002::/16", "2002:7f00:1::", true},
	{"2002::/16", "2001:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false}, {"2002::/16", "2003::", false},
	{"3fff::/20", "3fff::", true}, {"3fff::/20", "3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff", true},
	{"3fff::/20", "3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false}, {"3fff::/20", "3fff:1000::", false},
	{"5f00::/16", "5f00::", true}, {"5f00::/16", "5f00:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true},
	{"fc00::/7", "fc00::", true}, {"fc00::/7", "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true},
	{"fc00::/7", "fd12:3456::1", true},
	{"fe80::/10", "fe80::", true}, {"fe80::/10", "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true},
	{"fe80::/10", "fe80::1%eth0", true},
	{"fe80::/10", "fec0::1", true}, // site-local, outside global unicast
	{"ff00::/8", "ff00::", true}, {"ff00::/8", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true},
	{"ff00::/8", "ff02::1", true},
	{"global unicast", "2000::", false}, {"global unicast", "3fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false},
	{"global unicast", "1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true}, {"global unicast", "4000::", true},
	{"public", "8.8.8.8", false}, {"public", "1.1.1.1", false}, {"public", "2606:4700::1111", false},
}

func TestBlocked(t *testing.T) {
	for _, tc := range blockCases {
		t.Run(tc.block+"/"+tc.addr, func(t *testing.T) {
			if got := Blocked(netip.MustParseAddr(tc.addr)); got != tc.blocked {
				t.Fatalf("Blocked(%s) = %v, want %v", tc.addr, got, tc.blocked)
			}
		})
	}
	if !Blocked(netip.Addr{}) {
		t.Fatal("the zero address must be blocked")
	}
}

// Every row of the table has hand-written cases for its first and last
// address, so a row added to the table without a test fails here.
func TestEveryRowTested(t *testing.T) {
	type key struct {
		block string
		addr  netip.Addr
	}
	tested := map[key]bool{}
	for _, tc := range blockCases {
		tested[key{tc.block, netip.MustParseAddr(tc.addr).WithZone("")}] = true
	}
	for _, row := range Ranges() {
		first := row.Prefix.Masked().Addr()
		last := lastAddr(row.Prefix)
		for _, a := range []netip.Addr{first, last} {
			if !tested[key{row.Prefix.String(), a}] {
				t.Errorf("%s (%s): no case for %s", row.Prefix, row.Name, a)
			}
		}
	}
}

// lastAddr returns the highest address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// A refusal names the block that refused it.
func TestRefusalNamesTheBlock(t *testing.T) {
	for _, tc := range []struct{ addr, want string }{
		{"203.0.113.9:443", "203.0.113.0/24, documentation"},
		{"[64:ff9b::a00:1]:443", "carries 10.0.0.1: 10.0.0.0/8, private use"},
		{"[fec0::1]:443", "outside IPv6 global unicast"},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			g := &guard{}
			if err := g.check(tc.addr); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("check(%s) = %v, want it to name %q", tc.addr, err, tc.want)
			}
		})
	}
	rows := Ranges()
	rows[0].Name = "changed"
	if table[0].Name == "changed" {
		t.Fatal("Ranges returns the table itself, not a copy")
	}
}

// An IPv4 address gets the same answer in every form that carries it.
func FuzzBlocked(f *testing.F) {
	for _, s := range []string{"192.0.2.1", "8.8.8.8", "10.0.0.1", "192.0.0.9", "255.255.255.255", "0.0.0.0"} {
		f.Add(netip.MustParseAddr(s).AsSlice())
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		a, ok := netip.AddrFromSlice(b)
		Blocked(a) // any input: no panic
		if !ok || !a.Is4() {
			return
		}
		v4 := a.As4()
		want := Blocked(a)
		for _, form := range []netip.Addr{
			netip.AddrFrom16([16]byte{10: 0xff, 11: 0xff, 12: v4[0], 13: v4[1], 14: v4[2], 15: v4[3]}),        // ::ffff:a.b.c.d
			netip.AddrFrom16([16]byte{1: 0x64, 2: 0xff, 3: 0x9b, 12: v4[0], 13: v4[1], 14: v4[2], 15: v4[3]}), // 64:ff9b::a.b.c.d
			netip.AddrFrom16([16]byte{0: 0x20, 1: 0x02, 2: v4[0], 3: v4[1], 4: v4[2], 5: v4[3], 15: 1}),       // 2002:a.b.c.d::1
		} {
			if got := Blocked(form); got != want {
				t.Fatalf("Blocked(%s) = %v, Blocked(%s) = %v", form, got, a, want)
			}
		}
	})
}
