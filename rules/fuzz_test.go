package rules

import (
	"bytes"
	"errors"
	"net/netip"
	"net/url"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/svcplatform/platform/geodata"
)

// FuzzEvaluate checks Evaluate never panics, the deny list always wins and
// the allow list never beats it, against an oracle built from netip.
func FuzzEvaluate(f *testing.F) {
	f.Add([]byte{192, 0, 2, 1}, uint8(24), uint8(32), uint8(0b11), uint8(0), uaGPTBot, "/")
	f.Add([]byte{192, 0, 2, 1}, uint8(32), uint8(24), uint8(0b1011), uint8(2), uaGPTBot, "/robots.txt")
	f.Add([]byte{0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, uint8(48), uint8(64), uint8(0b1110011), uint8(1), uaChrome, "/x")
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1}, uint8(104), uint8(8), uint8(0b1111101), uint8(3), "", "")
	f.Add([]byte{}, uint8(0), uint8(0), uint8(0xff), uint8(0), "CCBot", "/a")
	f.Fuzz(func(t *testing.T, ab []byte, denyBits, allowBits, flags, target uint8, ua, urlPath string) {
		var addr netip.Addr
		switch {
		case len(ab) >= 16:
			addr = netip.AddrFrom16([16]byte(ab[:16]))
			if flags&64 != 0 {
				addr = addr.WithZone("eth0")
			}
		case len(ab) >= 4:
			addr = netip.AddrFrom4([4]byte(ab[:4]))
		}
		entry := func(in bool, bits uint8) (string, bool) {
			if !addr.IsValid() {
				return "", false
			}
			a := addr.WithZone("")
			if !in { // a neighbour, which the range may or may not hold
				b := a.AsSlice()
				b[len(b)-1] ^= 1
				a, _ = netip.AddrFromSlice(b)
			}
			p, err := a.Prefix(int(bits) % (a.BitLen() + 1))
			if err != nil {
				t.Fatal(err)
			}
			return canonicalIP(p), true
		}
		s := Settings{Enabled: flags&4 == 0, LogOnly: flags&8 != 0, BlockAICrawlers: flags&16 != 0}
		if flags&32 != 0 {
			s.BlockedCountries = []string{"XX", "RU"}
		}
		if e, ok := entry(flags&1 != 0, denyBits); ok {
			s.DenyIPs = []string{e}
		}
		if e, ok := entry(flags&2 != 0, allowBits); ok {
			s.AllowIPs = []string{e}
		}
		rs, err := Compile(s)
		if err != nil {
			t.Fatalf("Compile(%+v) = %v", s, err)
		}
		tg := Target(target % 5)
		d := rs.Evaluate(&Facts{Addr: addr, UserAgent: []byte(ua), Path: []byte(urlPath), Target: tg}, testLocator())

		// Oracle.
		plain := addr.Unmap().WithZone("")
		holds := func(list []string) bool {
			for _, e := range list {
				p, err := ParseIPEntry(e)
				if err != nil {
					t.Fatal(err)
				}
				if p.Contains(plain) {
					return true
				}
			}
			return false
		}
		full := tg != TargetServerApp && tg != TargetWorker
		denied := s.Enabled && full && holds(s.DenyIPs)
		allowed := s.Enabled && full && holds(s.AllowIPs)
		switch {
		case !s.Enabled && d != (Decision{}):
			t.Fatalf("disabled, but Evaluate = %+v", d)
		case denied && (d.Verdict != Refuse || d.Rule != RuleDenyList):
			t.Fatalf("%v is on the deny list %v, but Evaluate = %+v", addr, s.DenyIPs, d)
		case !denied && d.Rule == RuleDenyList:
			t.Fatalf("%v is not on the deny list %v, but Evaluate = %+v", addr, s.DenyIPs, d)
		case allowed && !denied && d.Verdict != Allow:
			t.Fatalf("%v is on the allow list %v only, but Evaluate = %+v", addr, s.AllowIPs, d)
		case d.Verdict == WouldRefuse && (!s.LogOnly || !full || d.Rule == RuleDenyList):
			t.Fatalf("WouldRefuse without log-only: %+v", d)
		case d.Verdict == Refuse && (d.Status != 403 || d.Body == ""):
			t.Fatalf("refusal without status or body: %+v", d)
		case d.Verdict == Allow && (d.Rule != RuleNone || d.Count || d.Status != 0):
			t.Fatalf("inconsistent allow: %+v", d)
		case d.Rule == RuleAICrawler && (!full || urlPath == "/robots.txt" || !s.BlockAICrawlers):
			t.Fatalf("crawler rule out of scope: %+v", d)
		case d.Count != (d.Verdict != Allow && full):
			t.Fatalf("Count wrong: %+v", d)
		}
	})
}

// privateSamples are known-private paths FuzzFileGuard encodes.
var privateSamples = []string{
	"/.env", "/.env.local", "/app/.env.production", "/.git/config", "/.ssh/id_rsa", "/id_rsa",
	"/keys/id_ed25519", "/id_ecdsa.pub", "/tls/server.key", "/cert.pem", "/store.p12", "/a.pfx",
	"/putty.ppk", "/.htpasswd", "/.well-known/../.env", "/.well-known/.git/HEAD", "/deep/er/path/key.pem.bak",
	"/authorized_keys", "/x/.DS_Store",
}

// FuzzFileGuard encodes a known-private path at random (percent-encoding up
// to three deep in either case, mixed case, '\', "//", "/./", "/x/../",
// encoded separators, trailing dots, spaces and slashes) and requires the
// request guard to keep calling it private.
func FuzzFileGuard(f *testing.F) {
	f.Add(uint8(0), []byte{0})
	f.Add(uint8(1), []byte{2, 3, 4, 5, 6, 7, 0x16, 0x26, 0x36, 0x46})
	f.Add(uint8(14), []byte{4, 5, 4, 5, 0x12, 0x13, 0x14})
	f.Add(uint8(5), []byte{0x10, 0x11, 0x17, 0x27, 0x37, 0x47, 0x57})
	f.Fuzz(func(t *testing.T, idx uint8, choices []byte) {
		canonical := privateSamples[int(idx)%len(privateSamples)]
		if ok, _ := PrivateFile(canonical); !ok {
			t.Fatalf("sample %q is not private", canonical)
		}
		encoded := encodeRandomly(canonical, choices)
		if !IsPrivateRequestPath([]byte(encoded)) {
			t.Fatalf("%q (from %q) is public", encoded, canonical)
		}
	})
}

func encodeRandomly(p string, choices []byte) string {
	if len(choices) == 0 {
		return p
	}
	next := 0
	choice := func() byte {
		c := choices[next%len(choices)]
		next++
		return c
	}
	var b strings.Builder
	enc := func(c byte, upper bool) string {
		s := "%" + hex2(c)
		if upper {
			s = strings.ToUpper(s)
		}
		return s
	}
	for i := range len(p) {
		c, ch := p[i], choice()
		if ch&0x10 != 0 && ('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			c ^= 0x20 // flip case
		}
		switch ch % 8 {
		case 0, 1:
			b.WriteByte(c)
		case 2:
			b.WriteString(enc(c, true))
		case 3:
			b.WriteString(enc(c, false))
		case 4:
			b.WriteString("%25" + enc(c, ch&0x20 != 0)[1:])
		case 5:
			b.WriteString("%2525" + enc(c, ch&0x20 != 0)[1:])
		case 6, 7:
			if c != '/' {
				b.WriteByte(c)
				break
			}
			seps := []string{"\\", "//", "/./", "/x/../", "%2f", "%5C", "%252F", "/%2e/", "/%2E%2E/"}
			sep := seps[int(ch>>4)%len(seps)]
			if i == 0 && strings.Contains(sep, "..") {
				sep = "/" // a leading "/.." would climb from the root, which is fine, but keep it simple
			}
			b.WriteString(sep)
		}
	}
	suffixes := []string{"", ".", "%20", "/", "%2e%20", "..", "%2F", "%252e"}
	b.WriteString(suffixes[int(choice())%len(suffixes)])
	return b.String()
}

// FuzzRequestPath checks the request guard against a reference decoder:
// a path it calls public must not name a private file after net/url decodes
// it once, twice or three times and path.Clean resolves it.
func FuzzRequestPath(f *testing.F) {
	for _, s := range []string{"/", "/index.html", "/%2eenv", "/a/../b", "/.well-known/x", "/a%2fb", "/%252e", "/x%5c.env"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if IsPrivateRequestPath([]byte(raw)) {
			return
		}
		p, _, _ := strings.Cut(raw, "?")
		p, _, _ = strings.Cut(p, "#")
		for range 3 {
			dec, err := url.PathUnescape(p)
			if err != nil {
				return
			}
			p = dec
			clean := strings.TrimPrefix(path.Clean("/"+strings.ReplaceAll(p, "\\", "/")), "/")
			if private, why := PrivateFile(clean); private {
				t.Fatalf("%q is public, but decodes to %q, a %s", raw, clean, why)
			}
		}
	})
}

// FuzzParseIPList checks the address-list parser never panics, refuses with
// a ValidationError, and accepts only canonical, masked, zone-free ranges
// that survive a round trip.
func FuzzParseIPList(f *testing.F) {
	for _, s := range []string{"192.0.2.1", "192.0.2.0/24", "10.0.0.1/8", "2001:db8::/32", "::ffff:1.2.3.4", "::ffff:1.2.3.0/120",
		"fe80::1%eth0", "1.2.3.4/33", "", " 1.2.3.4", "::/0", "0.0.0.0/0", "1.2.3.4/024", "01.2.3.4"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseIPEntry(s)
		if err != nil {
			var ve *ValidationError
			if !errors.Is(err, ErrInvalidSettings) || !errors.As(err, &ve) || ve.Entry != s {
				t.Fatalf("ParseIPEntry(%q) error %v is not a ValidationError naming the entry", s, err)
			}
			if _, lerr := ParseIPList([]string{"192.0.2.1", s}); lerr == nil || !errors.As(lerr, &ve) || ve.Index != 1 {
				t.Fatalf("ParseIPList did not name index 1: %v", lerr)
			}
			return
		}
		switch {
		case !p.IsValid():
			t.Fatalf("ParseIPEntry(%q) = invalid prefix", s)
		case p != p.Masked():
			t.Fatalf("ParseIPEntry(%q) = %v, not masked", s, p)
		case p.Addr().Zone() != "":
			t.Fatalf("ParseIPEntry(%q) = %v, with a zone", s, p)
		case p.Addr().Is4In6() && p.Bits() >= 96:
			t.Fatalf("ParseIPEntry(%q) = %v, mapped", s, p)
		}
		c := canonicalIP(p)
		back, err := ParseIPEntry(c)
		if err != nil || back != p {
			t.Fatalf("canonical %q of %q parses to %v, %v; want %v", c, s, back, err, p)
		}
		n := (Settings{DenyIPs: []string{s}}).Normalized()
		if n.DenyIPs[0] != c {
			t.Fatalf("Normalized(%q) = %q, want %q", s, n.DenyIPs[0], c)
		}
	})
}

// FuzzCrawlerMatch checks the matcher against a slow reference: a
// case-insensitive search for every listed token with a token boundary on
// both sides.
func FuzzCrawlerMatch(f *testing.F) {
	for _, s := range []string{uaChrome, uaGPTBot, ua200, "Kangaroo Bot", "kangaroo bot/1", "bigsur.ai", "x-GPTBot", "GPTBot_",
		"Applebot/0.1", "Applebot-Extended", "facebookexternalhit/1.1", "Code/1.9", "CCBot", "ccbot\xff", "Echobot Bot"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, ua []byte) {
		orig := bytes.Clone(ua)
		tok, ok := MatchCrawler(ua)
		if !bytes.Equal(ua, orig) {
			t.Fatal("MatchCrawler changed its input")
		}
		if want := referenceCrawlerMatch(ua); ok != want {
			t.Fatalf("MatchCrawler(%q) = %q, %v; reference says %v", ua, tok, ok, want)
		}
		if ok && !bytes.Contains(bytes.ToLower(ua), []byte(strings.ToLower(tok))) {
			t.Fatalf("MatchCrawler(%q) = %q, which it does not hold", ua, tok)
		}
	})
}

func referenceCrawlerMatch(ua []byte) bool {
	low := asciiLower(ua)
	isWord := func(i int) bool { return i >= 0 && i < len(low) && charClass[low[i]] != 0 }
	for _, ct := range crawlerTokens {
		tok := strings.ToLower(ct.token)
		for off := 0; ; {
			i := strings.Index(low[off:], tok)
			if i < 0 {
				break
			}
			i += off
			if !isWord(i-1) && !isWord(i+len(tok)) {
				return true
			}
			off = i + 1
		}
	}
	return false
}

func asciiLower(b []byte) string {
	out := make([]byte, len(b))
	for i, c := range b {
		out[i] = lower(c)
	}
	return string(out)
}

// FuzzCountryCode checks the country validator never panics, accepts exactly
// the listed codes in any case, and refuses with a ValidationError.
func FuzzCountryCode(f *testing.F) {
	for _, s := range []string{"GB", "gb", "UK", "uk", "XX", "t1", "XK", "ZZ", "", "G", "GBR", "\xff\xfe", "T1 "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseCountry(s)
		u := strings.ToUpper(s)
		want := len(s) == 2 && len(u) == 2 && geodata.Country([]byte(u)).Valid() &&
			!strings.ContainsFunc(s, func(r rune) bool { return r > 0x7f }) && u != "UK"
		if (err == nil) != want {
			t.Fatalf("ParseCountry(%q) = %v, %v; want ok=%v", s, c, err, want)
		}
		if err != nil {
			if !errors.Is(err, ErrInvalidSettings) {
				t.Fatalf("ParseCountry(%q) error %v is not ErrInvalidSettings", s, err)
			}
			return
		}
		if c.String() != strings.ToUpper(s) || c == (geodata.Country{'U', 'K'}) || !c.Valid() {
			t.Fatalf("ParseCountry(%q) = %v", s, c)
		}
	})
}

// FuzzDecodeSettingsPatch checks the PUT body decoder never panics, refuses
// with a ValidationError, and returns only settings that are normalized,
// valid and compile.
func FuzzDecodeSettingsPatch(f *testing.F) {
	for _, s := range []string{`{}`, `{"enabled":false}`, `{"blockedCountries":["uk"]}`, `{"denyIps":["10.0.0.1/8"]}`,
		`{"allowIps":null,"logOnly":true}`, `{"x":1}`, `[]`, `{"enabled":true}{}`, `{"denyIps":[" ::ffff:1.2.3.4 "]}`} {
		f.Add([]byte(s))
	}
	saved := baseSettings()
	f.Fuzz(func(t *testing.T, body []byte) {
		s, err := DecodeSettingsPatch(saved, body)
		if err != nil {
			if !errors.Is(err, ErrInvalidSettings) {
				t.Fatalf("error %v is not ErrInvalidSettings", err)
			}
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("decoded settings do not validate: %v", err)
		}
		if n := s.Normalized(); !n.Equal(s) {
			t.Fatalf("decoded settings not normalized: %+v", s)
		}
		if _, err := Compile(s); err != nil {
			t.Fatalf("decoded settings do not compile: %v", err)
		}
		if !slices.Equal(saved.DenyIPs, baseSettings().DenyIPs) {
			t.Fatal("saved settings changed")
		}
	})
}
