package mail

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/mail"
	"strings"

	"golang.org/x/net/idna"
)

// Address limits (RFC 5321 section 4.5.3.1).
const (
	maxAddressInput = 512 // "Name <address>" as given
	maxLocalPart    = 64
	maxDomain       = 253
	maxAddress      = 254
)

// ErrBadAddress is returned for a string that is not one e-mail address
// this platform sends to.
var ErrBadAddress = errors.New("not an e-mail address")

func badAddress(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrBadAddress}, args...)...)
}

// ParseAddress reads one address, bare (ada@example.com) or with a display
// name (Ada <ada@example.com>). It refuses control characters (so nothing
// can add a header), more than one address, a local part that is not ASCII,
// an address literal ([192.0.2.1]) and a domain that is not a host name
// with a dot; an internationalised domain is converted to its ASCII
// (punycode) form and domains are lowercased.
func ParseAddress(s string) (*mail.Address, error) {
	if len(s) > maxAddressInput {
		return nil, badAddress("longer than %d bytes", maxAddressInput)
	}
	for _, r := range s {
		if isControl(r) {
			return nil, badAddress("contains a control character (line breaks are not allowed)")
		}
	}
	a, err := mail.ParseAddress(strings.TrimSpace(s))
	if err != nil {
		return nil, badAddress("%q cannot be read as name <address> or address", clipText(s, 80))
	}
	at := strings.LastIndexByte(a.Address, '@')
	if at <= 0 || at == len(a.Address)-1 {
		return nil, badAddress("%q has no local part or no domain", clipText(a.Address, 80))
	}
	local, domain := a.Address[:at], a.Address[at+1:]
	if len(local) > maxLocalPart {
		return nil, badAddress("the part before @ is longer than %d characters", maxLocalPart)
	}
	for i := 0; i < len(local); i++ {
		if local[i] >= 0x80 {
			return nil, badAddress("the part before @ must be ASCII")
		}
	}
	host, err := hostName(domain)
	if err != nil {
		return nil, badAddress("%v", err)
	}
	a.Address = local + "@" + host
	if len(a.Address) > maxAddress {
		return nil, badAddress("longer than %d characters", maxAddress)
	}
	for _, r := range a.Name {
		if isControl(r) {
			return nil, badAddress("the display name contains a control character")
		}
	}
	return a, nil
}

// hostName checks a domain and returns it in lowercase ASCII: letters,
// digits and hyphens in labels of 1 to 63 characters, at least two labels,
// a top-level label that is not all digits, 253 characters at most.
func hostName(domain string) (string, error) {
	if strings.HasPrefix(domain, "[") {
		return "", errors.New("address literals ([...]) are not accepted: use a domain")
	}
	d := strings.TrimSuffix(domain, ".")
	ascii, err := idna.Lookup.ToASCII(d)
	if err != nil {
		return "", fmt.Errorf("domain %q is not a valid host name", clipText(domain, 80))
	}
	ascii = strings.ToLower(ascii)
	if len(ascii) == 0 || len(ascii) > maxDomain {
		return "", fmt.Errorf("domain must be 1 to %d characters", maxDomain)
	}
	labels := strings.Split(ascii, ".")
	if len(labels) < 2 {
		return "", fmt.Errorf("domain %q needs a dot (example.com)", clipText(ascii, 80))
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return "", fmt.Errorf("domain %q has an empty, over-long or hyphen-edged label", clipText(ascii, 80))
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return "", fmt.Errorf("domain %q may hold only letters, digits, hyphens and dots", clipText(ascii, 80))
			}
		}
	}
	tld := labels[len(labels)-1]
	if strings.Trim(tld, "0123456789") == "" {
		return "", fmt.Errorf("domain %q ends in a number: use a domain, not an IP address", clipText(ascii, 80))
	}
	return ascii, nil
}

// Recipients is the "to" of a send request: one address as a string, or
// an array of them.
type Recipients []string

// UnmarshalJSON accepts "a@example.com" and ["a@example.com", ...].
func (r *Recipients) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*r = Recipients{s}
		return nil
	}
	var list []string
	if err := json.Unmarshal(b, &list); err != nil {
		return errors.New("to must be an address or an array of addresses")
	}
	*r = list
	return nil
}

// clipText shortens s to n bytes at a rune boundary for messages.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "..."
}

// isControl reports C0 and C1 control characters and DEL.
func isControl(r rune) bool { return r < 0x20 || r >= 0x7f && r < 0xa0 }
