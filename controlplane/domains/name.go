package domains

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
	"golang.org/x/net/publicsuffix"
)

// MaxName is the longest name accepted, in bytes of its ASCII form.
const MaxName = 253

// Errors of ParseName; handlers answer them 400 invalid_domain.
var (
	// ErrName is wrapped by every refusal of ParseName.
	ErrName = errors.New("domains: invalid name")
)

// Name is a parsed custom domain name.
type Name struct {
	// Host is the name in lower-case ASCII (punycode), without a trailing
	// dot.
	Host string
	// Apex is true when Host is a registrable domain (example.com,
	// example.co.uk): its routing records are A/AAAA, and it may bring its
	// www name along.
	Apex bool
}

// ParseName reads a custom domain name as a user typed it: surrounding
// space and one trailing dot are dropped, case is folded and international
// names are converted to their ASCII form. It refuses schemes, ports,
// paths, wildcards, IP addresses, single labels, labels that are empty,
// over 63 bytes, hyphen-edged or hold anything but letters, digits and
// hyphens, names over MaxName bytes, and public suffixes (com, co.uk,
// github.io) themselves.
func ParseName(in string) (Name, error) {
	n := strings.TrimSpace(in)
	if n == "" {
		return Name{}, fmt.Errorf("%w: a name is required (shop.example.com or example.com)", ErrName)
	}
	if len(n) > 4*MaxName {
		return Name{}, fmt.Errorf("%w: at most %d characters", ErrName, MaxName)
	}
	if !utf8.ValidString(n) || strings.ContainsAny(n, "/:@?#[]\\ \t\r\n") || strings.ContainsFunc(n, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return Name{}, fmt.Errorf("%w: give the name alone, without a scheme, port or path (shop.example.com)", ErrName)
	}
	if strings.Contains(n, "*") {
		return Name{}, fmt.Errorf("%w: wildcard names are not offered: add each name", ErrName)
	}
	n = strings.TrimSuffix(n, ".")
	ascii, err := idna.Lookup.ToASCII(n)
	if err != nil {
		return Name{}, fmt.Errorf("%w: %q is not a valid host name", ErrName, clip(in))
	}
	ascii = strings.ToLower(ascii)
	if again, err := idna.Lookup.ToASCII(ascii); err != nil || again != ascii {
		return Name{}, fmt.Errorf("%w: %q is not a valid host name", ErrName, clip(in))
	}
	if len(ascii) == 0 || len(ascii) > MaxName {
		return Name{}, fmt.Errorf("%w: a name is 1 to %d characters", ErrName, MaxName)
	}
	labels := strings.Split(ascii, ".")
	if len(labels) < 2 {
		return Name{}, fmt.Errorf("%w: %q needs a dot (example.com)", ErrName, clip(ascii))
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return Name{}, fmt.Errorf("%w: %q has an empty, over-long or hyphen-edged label", ErrName, clip(ascii))
		}
		for i := 0; i < len(l); i++ {
			if c := l[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return Name{}, fmt.Errorf("%w: %q may hold only letters, digits, hyphens and dots", ErrName, clip(ascii))
			}
		}
	}
	if strings.Trim(labels[len(labels)-1], "0123456789") == "" {
		return Name{}, fmt.Errorf("%w: %q ends in a number: give a domain, not an IP address", ErrName, clip(ascii))
	}
	reg, err := publicsuffix.EffectiveTLDPlusOne(ascii)
	if err != nil {
		return Name{}, fmt.Errorf("%w: %q is a public suffix that anyone registers names under: give your own domain", ErrName, clip(ascii))
	}
	return Name{Host: ascii, Apex: reg == ascii}, nil
}

// under reports whether host is domain or a name under it.
func under(host, domain string) bool {
	domain = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(domain), "."))
	return domain != "" && (host == domain || strings.HasSuffix(host, "."+domain))
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
