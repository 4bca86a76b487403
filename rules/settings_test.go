package rules

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name       string
		settings   Settings
		field      string
		index      int
		entry      string
		msg        string // substring of the message
		normalized bool   // Normalized first
	}{
		{name: "default is valid", settings: DefaultSettings()},
		{name: "zero is valid", settings: Settings{}},
		{name: "every kind of good entry", settings: Settings{
			BlockedCountries: []string{"GB", "us", "Xx", "T1", "XK", "AX", "ZW"},
			DenyIPs:          []string{"192.0.2.1", "192.0.2.0/24", "0.0.0.0/0", "2001:db8::1", "2001:db8::/32", "::/0", "::ffff:192.0.2.1", "::ffff:192.0.2.0/120"},
			AllowIPs:         []string{"10.0.0.0/8", "fd00::/8", "::1", "127.0.0.1/32", "::1/128"},
		}},
		{name: "country/not a code", settings: Settings{BlockedCountries: []string{"GB", "ZZ"}}, field: "blockedCountries", index: 1, entry: "ZZ", msg: "not an ISO 3166-1 country code"},
		{name: "country/UK hints GB", settings: Settings{BlockedCountries: []string{"UK"}}, field: "blockedCountries", index: 0, entry: "UK", msg: "the United Kingdom is GB"},
		{name: "country/uk lower case hints GB", settings: Settings{BlockedCountries: []string{"uk"}}, field: "blockedCountries", index: 0, entry: "uk", msg: "GB"},
		{name: "country/EL hints GR", settings: Settings{BlockedCountries: []string{"EL"}}, field: "blockedCountries", index: 0, entry: "EL", msg: "GR"},
		{name: "country/A1 hints T1", settings: Settings{BlockedCountries: []string{"A1"}}, field: "blockedCountries", index: 0, entry: "A1", msg: "T1"},
		{name: "country/three letters", settings: Settings{BlockedCountries: []string{"USA"}}, field: "blockedCountries", index: 0, entry: "USA", msg: "two-letter"},
		{name: "country/one letter", settings: Settings{BlockedCountries: []string{"U"}}, field: "blockedCountries", index: 0, entry: "U", msg: "two-letter"},
		{name: "country/empty", settings: Settings{BlockedCountries: []string{""}}, field: "blockedCountries", index: 0, msg: "two-letter"},
		{name: "country/digits", settings: Settings{BlockedCountries: []string{"12"}}, field: "blockedCountries", index: 0, entry: "12", msg: "ISO 3166-1"},
		{name: "country/T2", settings: Settings{BlockedCountries: []string{"T2"}}, field: "blockedCountries", index: 0, entry: "T2", msg: "ISO 3166-1"},
		{name: "country/EU", settings: Settings{BlockedCountries: []string{"EU"}}, field: "blockedCountries", index: 0, entry: "EU", msg: "ISO 3166-1"},
		{name: "country/space is strict", settings: Settings{BlockedCountries: []string{" GB"}}, field: "blockedCountries", index: 0, entry: " GB"},
		{name: "country/space normalized", settings: Settings{BlockedCountries: []string{" gb "}}, normalized: true},
		{name: "country/non-ascii", settings: Settings{BlockedCountries: []string{"ÜK"}}, field: "blockedCountries", index: 0, entry: "ÜK"},
		{name: "deny/bad octet", settings: Settings{DenyIPs: []string{"10.0.0.1", "10.0.0.300"}}, field: "denyIps", index: 1, entry: "10.0.0.300", msg: "not an address or CIDR range"},
		{name: "deny/prefix too long", settings: Settings{DenyIPs: []string{"10.0.0.0/33"}}, field: "denyIps", index: 0, entry: "10.0.0.0/33", msg: "CIDR"},
		{name: "deny/ipv6 prefix too long", settings: Settings{DenyIPs: []string{"2001:db8::/129"}}, field: "denyIps", index: 0, entry: "2001:db8::/129"},
		{name: "deny/host bits set", settings: Settings{DenyIPs: []string{"10.0.0.1/8"}}, field: "denyIps", index: 0, entry: "10.0.0.1/8", msg: "host bits set; the range is 10.0.0.0/8"},
		{name: "deny/ipv6 host bits set", settings: Settings{DenyIPs: []string{"2001:db8::1/32"}}, field: "denyIps", index: 0, entry: "2001:db8::1/32", msg: "2001:db8::/32"},
		{name: "deny/zone", settings: Settings{DenyIPs: []string{"fe80::1%eth0"}}, field: "denyIps", index: 0, entry: "fe80::1%eth0", msg: "zone"},
		{name: "deny/range with zone", settings: Settings{DenyIPs: []string{"fe80::%eth0/64"}}, field: "denyIps", index: 0, msg: "zone"},
		{name: "deny/leading zero", settings: Settings{DenyIPs: []string{"010.0.0.1"}}, field: "denyIps", index: 0, entry: "010.0.0.1"},
		{name: "deny/host name", settings: Settings{DenyIPs: []string{"example.com"}}, field: "denyIps", index: 0, entry: "example.com"},
		{name: "deny/empty", settings: Settings{DenyIPs: []string{""}}, field: "denyIps", index: 0, msg: "empty"},
		{name: "deny/two slashes", settings: Settings{DenyIPs: []string{"10.0.0.0/8/8"}}, field: "denyIps", index: 0},
		{name: "deny/range as dash", settings: Settings{DenyIPs: []string{"10.0.0.1-10.0.0.9"}}, field: "denyIps", index: 0},
		{name: "deny/space is strict", settings: Settings{DenyIPs: []string{"10.0.0.1 "}}, field: "denyIps", index: 0},
		{name: "deny/space normalized", settings: Settings{DenyIPs: []string{" 10.0.0.1\t"}}, normalized: true},
		{name: "deny/too long", settings: Settings{DenyIPs: []string{strings.Repeat("1", 100)}}, field: "denyIps", index: 0, msg: "too long"},
		{name: "allow/bad entry", settings: Settings{AllowIPs: []string{"::1", "1.2.3"}}, field: "allowIps", index: 1, entry: "1.2.3", msg: "not an address"},
		{name: "allow/host bits set", settings: Settings{AllowIPs: []string{"192.168.1.7/24"}}, field: "allowIps", index: 0, msg: "192.168.1.0/24"},
		{name: "limit/deny 50000 allowed", settings: Settings{DenyIPs: manyRanges(MaxAddressEntries)}},
		{name: "limit/deny too many", settings: Settings{DenyIPs: manyRanges(MaxAddressEntries + 1)}, field: "denyIps", index: -1, msg: "at most 50000"},
		{name: "limit/allow too many", settings: Settings{AllowIPs: manyRanges(MaxAddressEntries + 1)}, field: "allowIps", index: -1, msg: "at most"},
		{name: "limit/countries too many", settings: Settings{BlockedCountries: make([]string, MaxCountryEntries+1)}, field: "blockedCountries", index: -1, msg: "at most 300"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.settings
			if tc.normalized {
				s = s.Normalized()
			}
			err := s.Validate()
			if tc.field == "" {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				if _, err := Compile(tc.settings); err != nil {
					t.Fatalf("Compile = %v, want nil", err)
				}
				return
			}
			checkValidationError(t, err, tc.field, tc.index, tc.entry, tc.msg)
			// Compile normalizes first, so only surrounding spaces may pass.
			if _, cerr := Compile(tc.settings); cerr == nil && !strings.Contains(tc.name, "space is strict") {
				t.Errorf("Compile accepted what Validate refused")
			}
		})
	}
}

func checkValidationError(t *testing.T, err error, field string, index int, entry, msg string) {
	t.Helper()
	if err == nil {
		t.Fatal("no error")
	}
	if !errors.Is(err, ErrInvalidSettings) {
		t.Errorf("errors.Is(%v, ErrInvalidSettings) = false", err)
	}
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error %T is not a *ValidationError", err)
	}
	if ve.Field != field || ve.Index != index || (entry != "" && ve.Entry != entry) {
		t.Errorf("error names %s[%d] %q, want %s[%d] %q", ve.Field, ve.Index, ve.Entry, field, index, entry)
	}
	if !strings.Contains(ve.Message, msg) {
		t.Errorf("message %q does not say %q", ve.Message, msg)
	}
	if entry != "" && !strings.Contains(err.Error(), fmt.Sprintf("%q", entry)) {
		t.Errorf("Error() = %q does not name the entry %q", err.Error(), entry)
	}
}

func manyRanges(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("10.%d.%d.0/24", i>>8&0xff, i&0xff)
		if i >= 1<<16 {
			out[i] = fmt.Sprintf("2001:db8:%x::/48", i)
		}
	}
	return out
}

func TestNormalized(t *testing.T) {
	in := Settings{
		Enabled:          true,
		BlockedCountries: []string{" gb", "Us", "GB", "zz"},
		DenyIPs:          []string{"2001:DB8::1", "::ffff:192.0.2.1", "192.0.2.1/32", "::ffff:192.0.2.0/120", "2001:db8::1/128", " bad "},
	}
	got := in.Normalized()
	want := Settings{
		Enabled:          true,
		BlockedCountries: []string{"GB", "US", "ZZ"},
		DenyIPs:          []string{"2001:db8::1", "192.0.2.1", "192.0.2.0/24", "bad"},
		AllowIPs:         []string{},
	}
	if !got.Equal(want) {
		t.Errorf("Normalized =\n%+v\nwant\n%+v", got, want)
	}
	if in.BlockedCountries[0] != " gb" {
		t.Error("Normalized changed its receiver")
	}
	if again := got.Normalized(); !again.Equal(got) {
		t.Errorf("Normalized is not idempotent: %+v", again)
	}
}

func TestDefaultSettingsJSON(t *testing.T) {
	b, err := json.Marshal(DefaultSettings())
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"enabled":true,"blockedCountries":[],"denyIps":[],"allowIps":[],"blockAiCrawlers":false,"logOnly":false}`
	if string(b) != want {
		t.Errorf("DefaultSettings JSON = %s, want %s", b, want)
	}
}

func TestParseCountryAgainstTZData(t *testing.T) {
	// tzdata's iso3166.tab lists the assigned codes; cross-check the embedded list.
	b, err := os.ReadFile("/usr/share/zoneinfo/iso3166.tab")
	if err != nil {
		t.Skip("no tzdata iso3166.tab on this machine")
	}
	n := 0
	for line := range strings.Lines(string(b)) {
		if strings.HasPrefix(line, "#") || len(line) < 2 {
			continue
		}
		n++
		code := line[:2]
		if _, err := ParseCountry(code); err != nil {
			t.Errorf("ParseCountry(%q) = %v", code, err)
		}
	}
	if n != 249 {
		t.Errorf("iso3166.tab has %d codes, want 249", n)
	}
	accepted := 0
	for a := 'A'; a <= 'Z'; a++ {
		for b := 'A'; b <= 'Z'; b++ {
			if _, err := ParseCountry(string([]rune{a, b})); err == nil {
				accepted++
			}
		}
	}
	if want := n + 2; accepted != want { // + XX and XK; T1 has a digit
		t.Errorf("ParseCountry accepts %d letter pairs, want %d", accepted, want)
	}
}
