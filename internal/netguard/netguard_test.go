package netguard

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/svcplatform/platform/internal/freeport"
)

func TestCheckURL(t *testing.T) {
	for _, tc := range []struct {
		url          string
		allowPrivate bool
		want         error
	}{
		{"http://8.8.8.8:3000", false, nil},
		{"https://[2606:4700::1111]", false, nil},
		{"http://127.0.0.1:9090", false, ErrForbiddenAddress},
		{"http://127.0.0.1:9090", true, nil},
		{"http://[::1]:7070", false, ErrForbiddenAddress},
		{"http://169.254.169.254", false, ErrForbiddenAddress},
		{"http://10.0.0.5:80", false, ErrForbiddenAddress},
		{"http://[::ffff:192.168.0.1]", false, ErrForbiddenAddress},
		{"http://localhost:3000", false, ErrForbiddenAddress},
		{"http://LOCALHOST.:3000", false, ErrForbiddenAddress},
		{"http://app.localhost", false, ErrForbiddenAddress},
		{"http://0.0.0.0:9090", false, ErrForbiddenAddress},
		{"https://192.0.2.10", false, ErrForbiddenAddress},          // documentation
		{"https://198.51.100.7:8443", false, ErrForbiddenAddress},   // documentation
		{"https://203.0.113.9", false, ErrForbiddenAddress},         // documentation
		{"https://198.18.0.1", false, ErrForbiddenAddress},          // benchmarking
		{"https://[2001:db8::1]", false, ErrForbiddenAddress},       // documentation
		{"https://[64:ff9b::c000:20a]", false, ErrForbiddenAddress}, // NAT64 of 192.0.2.10
		{"https://[2002:cb00:7109::1]", false, ErrForbiddenAddress}, // 6to4 of 203.0.113.9
		{"https://[::ffff:c633:6407]", false, ErrForbiddenAddress},  // mapped 198.51.100.7
		{"https://203.0.113.9", true, nil},                          // allowed by the operator
		{"https://192.0.0.9", false, nil},                           // PCP anycast, globally reachable
		{"http://no-such-name.invalid", false, nil},                 // checked again at connect time
		{"ftp://8.8.8.8", false, ErrInvalidURL},
		{"http://", false, ErrInvalidURL},
		{"http://8.8.8.8:99999", true, ErrInvalidURL},
		{"::", false, ErrInvalidURL},
	} {
		t.Run(tc.url, func(t *testing.T) {
			err := CheckURL(tc.url, tc.allowPrivate)
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("CheckURL(%q, %v) = %v, want %v", tc.url, tc.allowPrivate, err, tc.want)
			}
		})
	}
}

// TestDialer dials real listeners: loopback is refused at connect time
// unless private networks are allowed; the refusal happens before any SYN,
// so it reads the same whether or not the port answers.
func TestDialer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	closedAddr, err := freeport.Addr() // nobody listens there
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name         string
		allowPrivate bool
		addr         string
		want         error
	}{
		{"loopback refused", false, ln.Addr().String(), ErrForbiddenAddress},
		{"closed port refused alike", false, closedAddr, ErrForbiddenAddress},
		{"name resolving to loopback refused", false, "localhost:" + portOf(ln.Addr()), ErrForbiddenAddress},
		// Refused in Control, before a packet leaves: no network needed.
		{"documentation address refused", false, "192.0.2.1:443", ErrForbiddenAddress},
		{"NAT64 of a private address refused", false, "[64:ff9b::a00:1]:443", ErrForbiddenAddress},
		{"allowed", true, ln.Addr().String(), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Dialer(tc.allowPrivate).DialContext(ctx, "tcp", tc.addr)
			if c != nil {
				c.Close()
			}
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("dial %s: %v, want %v", tc.addr, err, tc.want)
			}
		})
	}
}

func portOf(a net.Addr) string {
	_, p, _ := net.SplitHostPort(a.String())
	return p
}

// TestOwnListeners: the platform's own listeners are refused on any of the
// host's addresses when they listen on an unspecified address.
func TestOwnListeners(t *testing.T) {
	g := &guard{own: []netip.AddrPort{netip.MustParseAddrPort("0.0.0.0:9090"), netip.MustParseAddrPort("1.2.3.7:7070")},
		interfaces: func() ([]net.Addr, error) {
			return []net.Addr{&net.IPNet{IP: net.ParseIP("1.2.3.20"), Mask: net.CIDRMask(24, 32)}}, nil
		}}
	for _, tc := range []struct {
		addr    string
		refused bool
	}{
		{"1.2.3.20:9090", true}, // an interface address, admin port
		{"1.2.3.20:9091", false},
		{"8.8.8.8:9090", false}, // not this host
		{"1.2.3.7:7070", true},
		{"1.2.3.7:7071", false},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			err := g.check(tc.addr)
			if (err != nil) != tc.refused || err != nil && !errors.Is(err, ErrForbiddenAddress) {
				t.Fatalf("check(%s) = %v, want refused=%v", tc.addr, err, tc.refused)
			}
		})
	}
	// Allowing private networks does not open the platform's own listeners.
	g.allowPrivate = true
	if err := g.check("1.2.3.20:9090"); !errors.Is(err, ErrForbiddenAddress) {
		t.Fatalf("own listener with allowPrivate: %v, want refused", err)
	}
	if err := g.check("127.0.0.1:9091"); err != nil {
		t.Fatalf("loopback with allowPrivate: %v", err)
	}
	g.allowPrivate = false
	g.interfaces = func() ([]net.Addr, error) { return nil, errors.New("no interfaces") }
	if g.check("8.8.8.8:9090") == nil {
		t.Fatal("with unlistable interfaces an own port must fail closed")
	}
}

func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{"http://127.0.0.1:80", "https://[::1]", "http://[fe80::1%25eth0]:80", "http://8.8.8.8", "http://a.localhost",
		"https://192.0.2.1", "https://[64:ff9b::c000:201]", "https://[2002:c000:201::]", "https://[::ffff:192.0.2.1]:8443"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		err := CheckURL(raw, false)
		if err != nil && !errors.Is(err, ErrInvalidURL) && !errors.Is(err, ErrForbiddenAddress) {
			t.Fatalf("CheckURL(%q): unexpected error class %v", raw, err)
		}
	})
}
