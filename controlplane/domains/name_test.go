package domains

import (
	"errors"
	"strings"
	"testing"
)

func TestParseName(t *testing.T) {
	for _, tc := range []struct {
		in   string
		host string // "" for a refusal
		apex bool
	}{
		{"example.com", "example.com", true},
		{" Example.COM. ", "example.com", true},
		{"www.example.com", "www.example.com", false},
		{"a.b.example.co.uk", "a.b.example.co.uk", false},
		{"example.co.uk", "example.co.uk", true},
		{"bücher.example", "xn--bcher-kva.example", true},
		{"shop.example", "shop.example", true},
		{"x-1.example", "x-1.example", true},
		{"me.github.io", "me.github.io", true},
		{"", "", false},
		{"com", "", false},
		{"co.uk", "", false},
		{"github.io", "", false},
		{"localhost", "", false},
		{"*.example.com", "", false},
		{"http://example.com", "", false},
		{"example.com:8080", "", false},
		{"example.com/path", "", false},
		{"user@example.com", "", false},
		{"[::1]", "", false},
		{"192.0.2.1", "", false},
		{"1.2.3.4.5", "", false},
		{"a..example", "", false},
		{".example.com", "", false},
		{"example.com..", "", false},
		{"-a.example", "", false},
		{"a-.example", "", false},
		{"a_b.example", "", false},
		{"a b.example", "", false},
		{"a\x00b.example", "", false},
		{strings.Repeat("a", 64) + ".example", "", false},
		{strings.Repeat("a.", 127) + "example", "", false},
	} {
		t.Run(tc.in, func(t *testing.T) {
			n, err := ParseName(tc.in)
			if tc.host == "" {
				if err == nil || !errors.Is(err, ErrName) {
					t.Fatalf("ParseName(%q) = %+v, %v; want a refusal", tc.in, n, err)
				}
				return
			}
			if err != nil || n.Host != tc.host || n.Apex != tc.apex {
				t.Fatalf("ParseName(%q) = %+v, %v; want %s apex=%v", tc.in, n, err, tc.host, tc.apex)
			}
		})
	}
}

// FuzzParseName: whatever it accepts is a lower-case LDH host name of at
// most MaxName bytes with a dot, and parsing it again gives it back.
func FuzzParseName(f *testing.F) {
	for _, s := range []string{"example.com", "www.Example.com.", "bücher.example", "co.uk", "a..b", "*.x.y", "1.2.3.4", "x.example:80",
		"xn--bcher-kva.example", "a.b.c.d.e.f.example.co.uk"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		n, err := ParseName(in)
		if err != nil {
			if !errors.Is(err, ErrName) {
				t.Fatalf("error %v does not wrap ErrName", err)
			}
			return
		}
		if len(n.Host) > MaxName || !strings.Contains(n.Host, ".") || strings.Trim(n.Host, "abcdefghijklmnopqrstuvwxyz0123456789.-") != "" {
			t.Fatalf("ParseName(%q) accepted %q", in, n.Host)
		}
		again, err := ParseName(n.Host)
		if err != nil || again != n {
			t.Fatalf("ParseName(%q) = %+v, then %+v, %v", in, n, again, err)
		}
	})
}
