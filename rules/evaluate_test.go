package rules

import (
	"net/netip"
	"testing"

	"github.com/svcplatform/platform/geodata"
)

// Addresses of the evaluation tests and their countries (see testLocator).
const (
	addrFR        = "203.0.113.10"     // FR, on no list
	addrRU        = "198.51.100.7"     // RU, blocked
	addrDenied    = "192.0.2.1"        // RU, deny list 192.0.2.0/24
	addrBoth      = "192.0.2.99"       // RU, deny list and allow list
	addrAllowed   = "100.64.0.5"       // RU, allow list 100.64.0.0/10
	addrDenied6   = "2001:db8:dead::1" // DE, deny list 2001:db8:dead::/48
	addrAllowed6  = "2001:db8:beef::1" // CN, allow list 2001:db8:beef::/48
	addrCN6       = "2001:db8:1::1"    // CN, blocked
	addrUnknown   = "10.1.1.1"         // XX
	addrAnonymous = "185.220.101.1"    // T1
)

func testLocator() tableLocator {
	return newTableLocator(map[string]string{
		"203.0.113.0/24":     "FR",
		"198.51.100.0/24":    "RU",
		"192.0.2.0/24":       "RU",
		"100.64.0.0/10":      "RU",
		"2001:db8:dead::/48": "DE",
		"2001:db8:beef::/48": "CN",
		"2001:db8:1::/48":    "CN",
		"185.220.101.0/24":   "T1",
		"fe80::/10":          "DE",
	})
}

func baseSettings() Settings {
	s := DefaultSettings()
	s.BlockedCountries = []string{"RU", "CN"}
	s.DenyIPs = []string{"192.0.2.0/24", "2001:db8:dead::/48", "fe80::/64"}
	s.AllowIPs = []string{"192.0.2.99", "100.64.0.0/10", "2001:db8:beef::/48"}
	s.BlockAICrawlers = true
	return s
}

const (
	uaChrome = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36"
	uaGPTBot = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)"
)

var (
	denied = Decision{Verdict: Refuse, Rule: RuleDenyList, Count: true, Status: 403, Body: BodyDenyList}
	allow  = Decision{}
)

func countryRefused(c string, count bool) Decision {
	return Decision{Verdict: Refuse, Rule: RuleCountry, Count: count, Status: 403, Body: BodyCountry, Country: cc(c)}
}

func countryWould(c string) Decision {
	return Decision{Verdict: WouldRefuse, Rule: RuleCountry, Count: true, Country: cc(c)}
}

func allowIn(c string) Decision { return Decision{Country: cc(c)} }

func crawlerRefused(c string) Decision {
	return Decision{Verdict: Refuse, Rule: RuleAICrawler, Count: true, Status: 403, Body: BodyAICrawler, Country: cc(c), Crawler: "GPTBot"}
}

func TestEvaluate(t *testing.T) {
	logOnly := func(s *Settings) { s.LogOnly = true }
	disabled := func(s *Settings) { s.Enabled = false }
	tests := []struct {
		name    string
		modify  func(*Settings)
		addr    string
		ua      string
		path    string
		target  Target
		want    Decision
		lookups int // calls to the locator
	}{
		// Static sites: every rule.
		{name: "static/plain visitor", addr: addrFR, ua: uaChrome, want: allowIn("FR"), lookups: 1},
		{name: "static/deny list", addr: addrDenied, ua: uaChrome, want: denied},
		{name: "static/deny list ipv6", addr: addrDenied6, ua: uaChrome, want: denied},
		{name: "static/deny beats allow on the same address", addr: addrBoth, ua: uaChrome, want: denied},
		{name: "static/blocked country", addr: addrRU, ua: uaChrome, want: countryRefused("RU", true), lookups: 1},
		{name: "static/blocked country ipv6", addr: addrCN6, ua: uaChrome, want: countryRefused("CN", true), lookups: 1},
		{name: "static/allow list passes country", addr: addrAllowed, ua: uaChrome, want: allow},
		{name: "static/allow list passes country ipv6", addr: addrAllowed6, ua: uaChrome, want: allow},
		{name: "static/allow list passes crawler", addr: addrAllowed, ua: uaGPTBot, want: allow},
		{name: "static/ai crawler", addr: addrFR, ua: uaGPTBot, want: crawlerRefused("FR"), lookups: 1},
		{name: "static/ai crawler from blocked country is a country refusal", addr: addrRU, ua: uaGPTBot, want: countryRefused("RU", true), lookups: 1},
		{name: "static/ai crawler off", modify: func(s *Settings) { s.BlockAICrawlers = false }, addr: addrFR, ua: uaGPTBot, want: allowIn("FR"), lookups: 1},
		{name: "static/robots.txt passes crawler", addr: addrFR, ua: uaGPTBot, path: "/robots.txt", want: allowIn("FR"), lookups: 1},
		{name: "static/robots.txt does not pass country", addr: addrRU, ua: uaGPTBot, path: "/robots.txt", want: countryRefused("RU", true), lookups: 1},
		{name: "static/robots.txt does not pass deny", addr: addrDenied, ua: uaGPTBot, path: "/robots.txt", want: denied},
		{name: "static/robots.txt upper case is not robots.txt", addr: addrFR, ua: uaGPTBot, path: "/ROBOTS.TXT", want: crawlerRefused("FR"), lookups: 1},
		{name: "static/no user agent", addr: addrFR, want: allowIn("FR"), lookups: 1},

		// Functions: address lists, country, AI crawler, log-only, counts.
		{name: "function/plain visitor", target: TargetFunction, addr: addrFR, ua: uaChrome, want: allowIn("FR"), lookups: 1},
		{name: "function/deny list", target: TargetFunction, addr: addrDenied, want: denied},
		{name: "function/deny beats allow", target: TargetFunction, addr: addrBoth, want: denied},
		{name: "function/blocked country", target: TargetFunction, addr: addrRU, want: countryRefused("RU", true), lookups: 1},
		{name: "function/allow list passes country", target: TargetFunction, addr: addrAllowed, want: allow},
		{name: "function/allow list passes crawler", target: TargetFunction, addr: addrAllowed6, ua: uaGPTBot, want: allow},
		{name: "function/ai crawler", target: TargetFunction, addr: addrFR, ua: uaGPTBot, want: crawlerRefused("FR"), lookups: 1},
		{name: "function/robots.txt passes crawler", target: TargetFunction, addr: addrFR, ua: uaGPTBot, path: "/robots.txt", want: allowIn("FR"), lookups: 1},
		{name: "function/log-only country", target: TargetFunction, modify: logOnly, addr: addrRU, want: countryWould("RU"), lookups: 1},
		{name: "function/log-only crawler", target: TargetFunction, modify: logOnly, addr: addrFR, ua: uaGPTBot,
			want: Decision{Verdict: WouldRefuse, Rule: RuleAICrawler, Count: true, Country: cc("FR"), Crawler: "GPTBot"}, lookups: 1},
		{name: "function/log-only deny still refuses", target: TargetFunction, modify: logOnly, addr: addrDenied, want: denied},

		// Server apps and worker programs: the country rule only.
		{name: "server-app/plain visitor", target: TargetServerApp, addr: addrFR, ua: uaChrome, want: allowIn("FR"), lookups: 1},
		{name: "server-app/blocked country", target: TargetServerApp, addr: addrRU, want: countryRefused("RU", false), lookups: 1},
		{name: "server-app/no deny list", target: TargetServerApp, addr: addrDenied6, want: allowIn("DE"), lookups: 1},
		{name: "server-app/deny-listed address from blocked country is a country refusal", target: TargetServerApp, addr: addrDenied, want: countryRefused("RU", false), lookups: 1},
		{name: "server-app/no allow list", target: TargetServerApp, addr: addrAllowed, want: countryRefused("RU", false), lookups: 1},
		{name: "server-app/no ai crawler rule", target: TargetServerApp, addr: addrFR, ua: uaGPTBot, want: allowIn("FR"), lookups: 1},
		{name: "server-app/no log-only", target: TargetServerApp, modify: logOnly, addr: addrRU, want: countryRefused("RU", false), lookups: 1},
		{name: "worker/blocked country", target: TargetWorker, addr: addrCN6, want: countryRefused("CN", false), lookups: 1},
		{name: "worker/no deny list", target: TargetWorker, addr: addrDenied6, ua: uaGPTBot, want: allowIn("DE"), lookups: 1},
		{name: "worker/no log-only", target: TargetWorker, modify: logOnly, addr: addrCN6, want: countryRefused("CN", false), lookups: 1},

		// enabled=false applies no rule, for every target, without a lookup.
		{name: "disabled/static deny list", modify: disabled, addr: addrDenied, ua: uaGPTBot, want: allow},
		{name: "disabled/static country", modify: disabled, addr: addrRU, want: allow},
		{name: "disabled/static crawler", modify: disabled, addr: addrFR, ua: uaGPTBot, want: allow},
		{name: "disabled/function deny list", target: TargetFunction, modify: disabled, addr: addrDenied, want: allow},
		{name: "disabled/server-app country", target: TargetServerApp, modify: disabled, addr: addrRU, want: allow},
		{name: "disabled/with log-only", modify: func(s *Settings) { s.Enabled, s.LogOnly = false, true }, addr: addrRU, want: allow},

		// Log-only on a static site: counts and lets through; deny still refuses.
		{name: "log-only/static country", modify: logOnly, addr: addrRU, ua: uaChrome, want: countryWould("RU"), lookups: 1},
		{name: "log-only/static crawler", modify: logOnly, addr: addrFR, ua: uaGPTBot,
			want: Decision{Verdict: WouldRefuse, Rule: RuleAICrawler, Count: true, Country: cc("FR"), Crawler: "GPTBot"}, lookups: 1},
		{name: "log-only/static deny still refuses", modify: logOnly, addr: addrDenied, want: denied},
		{name: "log-only/static deny beats allow", modify: logOnly, addr: addrBoth, want: denied},
		{name: "log-only/static allow list", modify: logOnly, addr: addrAllowed, ua: uaGPTBot, want: allow},
		{name: "log-only/static plain visitor", modify: logOnly, addr: addrFR, ua: uaChrome, want: allowIn("FR"), lookups: 1},

		// XX and T1 in the blocked list.
		{name: "XX/unknown address", modify: func(s *Settings) { s.BlockedCountries = []string{"XX"} }, addr: addrUnknown, want: countryRefused("XX", true), lookups: 1},
		{name: "XX/invalid address without lookup", modify: func(s *Settings) { s.BlockedCountries = []string{"XX"} }, addr: "", want: countryRefused("XX", true)},
		{name: "XX/known country passes", modify: func(s *Settings) { s.BlockedCountries = []string{"XX"} }, addr: addrRU, want: allowIn("RU"), lookups: 1},
		{name: "XX not blocked", addr: addrUnknown, want: allowIn("XX"), lookups: 1},
		{name: "T1/anonymizer", modify: func(s *Settings) { s.BlockedCountries = []string{"T1"} }, addr: addrAnonymous, want: countryRefused("T1", true), lookups: 1},
		{name: "T1/server app", target: TargetServerApp, modify: func(s *Settings) { s.BlockedCountries = []string{"t1"} }, addr: addrAnonymous, want: countryRefused("T1", false), lookups: 1},
		{name: "T1 not blocked", addr: addrAnonymous, want: allowIn("T1"), lookups: 1},

		// No country rule: no lookup.
		{name: "no blocked countries/no lookup", modify: func(s *Settings) { s.BlockedCountries = nil }, addr: addrRU, ua: uaChrome, want: allow},
		{name: "no blocked countries/crawler without lookup", modify: func(s *Settings) { s.BlockedCountries = nil }, addr: addrRU, ua: uaGPTBot,
			want: Decision{Verdict: Refuse, Rule: RuleAICrawler, Count: true, Status: 403, Body: BodyAICrawler, Crawler: "GPTBot"}},

		// IPv4-mapped IPv6 and zones.
		{name: "mapped/deny list", addr: "::ffff:192.0.2.1", want: denied},
		{name: "mapped/allow list", addr: "::ffff:100.64.0.5", ua: uaGPTBot, want: allow},
		{name: "mapped/country looked up as ipv4", addr: "::ffff:198.51.100.7", want: countryRefused("RU", true), lookups: 1},
		{name: "mapped/deny entry written mapped", modify: func(s *Settings) { s.DenyIPs = []string{"::ffff:203.0.113.0/120"} }, addr: addrFR, want: denied},
		{name: "mapped/server app country", target: TargetServerApp, addr: "::ffff:198.51.100.7", want: countryRefused("RU", false), lookups: 1},
		{name: "zone/deny list", addr: "fe80::1%eth0", want: denied},
		{name: "zone/deny list wide", addr: "2001:db8:dead::1%3", want: denied},
		{name: "zone/allow list", addr: "2001:db8:beef::1%eth0", ua: uaGPTBot, want: allow},
		{name: "zone/country", target: TargetServerApp, addr: "2001:db8:1::1%en0", want: countryRefused("CN", false), lookups: 1},
		{name: "zone/not in range", addr: "fe80:0:0:1::1%eth0", want: allowIn("DE"), lookups: 1},

		// Out-of-range target is checked as a static site.
		{name: "unknown target/deny list", target: Target(200), addr: addrDenied, want: denied},
		{name: "unknown target/crawler", target: Target(200), addr: addrFR, ua: uaGPTBot, want: crawlerRefused("FR"), lookups: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := baseSettings()
			if tc.modify != nil {
				tc.modify(&s)
			}
			rs, err := Compile(s)
			if err != nil {
				t.Fatal(err)
			}
			var addr netip.Addr
			if tc.addr != "" {
				addr = netip.MustParseAddr(tc.addr)
			}
			path := tc.path
			if path == "" {
				path = "/index.html"
			}
			loc := testLocator()
			calls := 0
			loc.calls = &calls
			f := &Facts{Addr: addr, UserAgent: []byte(tc.ua), Path: []byte(path), Target: tc.target}
			got := rs.Evaluate(f, loc)
			if got != tc.want {
				t.Errorf("Evaluate = %+v\nwant       %+v", got, tc.want)
			}
			if calls != tc.lookups {
				t.Errorf("locator called %d times, want %d", calls, tc.lookups)
			}
		})
	}
}

// lowerLocator returns country codes in lower case, as a sloppy Locator might.
type lowerLocator struct{}

func (lowerLocator) Country(netip.Addr) geodata.Country { return geodata.Country{'r', 'u'} }

// zeroLocator returns the zero Country.
type zeroLocator struct{}

func (zeroLocator) Country(netip.Addr) geodata.Country { return geodata.Country{} }

func TestEvaluateEdges(t *testing.T) {
	ru := netip.MustParseAddr(addrRU)
	tests := []struct {
		name      string
		countries []string
		loc       geodata.Locator
		want      Decision
	}{
		{"nil locator is XX", []string{"XX"}, nil, countryRefused("XX", true)},
		{"nil locator and XX not blocked", []string{"RU"}, nil, allowIn("XX")},
		{"lower-case locator answer", []string{"RU"}, lowerLocator{}, countryRefused("RU", true)},
		{"zero locator answer is XX", []string{"XX"}, zeroLocator{}, countryRefused("XX", true)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := DefaultSettings()
			s.BlockedCountries = tc.countries
			rs, err := Compile(s)
			if err != nil {
				t.Fatal(err)
			}
			if got := rs.Evaluate(&Facts{Addr: ru}, tc.loc); got != tc.want {
				t.Errorf("Evaluate = %+v, want %+v", got, tc.want)
			}
		})
	}
	t.Run("nil ruleset allows", func(t *testing.T) {
		var rs *Ruleset
		if got := rs.Evaluate(&Facts{Addr: ru}, testLocator()); got != allow {
			t.Errorf("Evaluate = %+v, want allow", got)
		}
	})
	t.Run("default settings allow", func(t *testing.T) {
		rs, err := Compile(DefaultSettings())
		if err != nil {
			t.Fatal(err)
		}
		if got := rs.Evaluate(&Facts{Addr: ru, UserAgent: []byte(uaGPTBot)}, testLocator()); got != allow {
			t.Errorf("Evaluate = %+v, want allow", got)
		}
	})
	t.Run("zero settings apply nothing", func(t *testing.T) {
		rs, err := Compile(Settings{DenyIPs: []string{addrRU}})
		if err != nil {
			t.Fatal(err)
		}
		if got := rs.Evaluate(&Facts{Addr: ru}, testLocator()); got != allow {
			t.Errorf("Evaluate = %+v, want allow", got)
		}
	})
}

func TestRulesetAccessors(t *testing.T) {
	s := baseSettings()
	s.BlockedCountries = []string{"ru", " cn ", "RU"}
	rs, err := Compile(s)
	if err != nil {
		t.Fatal(err)
	}
	if got := rs.BlockedCountries(); len(got) != 2 || got[0] != "RU" || got[1] != "CN" {
		t.Errorf("BlockedCountries = %q, want [RU CN]", got)
	}
	got := rs.Settings()
	got.DenyIPs[0] = "changed"
	if rs.Settings().DenyIPs[0] == "changed" {
		t.Error("Settings shares its slices with the Ruleset")
	}
}

func TestTextEncodings(t *testing.T) {
	for _, r := range []Rule{RuleNone, RuleDenyList, RuleCountry, RuleAICrawler} {
		t.Run("rule/"+r.String(), func(t *testing.T) {
			b, _ := r.MarshalText()
			var back Rule
			if err := back.UnmarshalText(b); err != nil || back != r {
				t.Errorf("round trip of %v = %v, %v", r, back, err)
			}
		})
	}
	for _, v := range []Verdict{Allow, Refuse, WouldRefuse} {
		t.Run("verdict/"+v.String(), func(t *testing.T) {
			b, _ := v.MarshalText()
			var back Verdict
			if err := back.UnmarshalText(b); err != nil || back != v {
				t.Errorf("round trip of %v = %v, %v", v, back, err)
			}
		})
	}
	t.Run("bad rule", func(t *testing.T) {
		var r Rule
		if err := r.UnmarshalText([]byte("nope")); err == nil {
			t.Error("no error")
		}
	})
	t.Run("bad verdict", func(t *testing.T) {
		var v Verdict
		if err := v.UnmarshalText([]byte("nope")); err == nil {
			t.Error("no error")
		}
	})
	for _, tg := range []Target{TargetStaticSite, TargetServerApp, TargetFunction, TargetWorker, Target(9)} {
		t.Run("target/"+tg.String(), func(t *testing.T) {
			if tg.String() == "" {
				t.Error("empty name")
			}
		})
	}
}
