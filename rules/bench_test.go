package rules

import (
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/geodata"
)

// ua200 is a real in-app browser user agent (Facebook's Android WebView),
// 200 bytes long, that no crawler token matches, so the scan reads it all.
const ua200 = "Mozilla/5.0 (Linux; Android 14; SM-S918B Build/UP1A.231005.007; wv) AppleWebKit/537.36 " +
	"(KHTML, like Gecko) Version/4.0 Chrome/126.0.6478.134 Mobile Safari/537.36 [FB_IAB/FB4A;FBAV/471.0.0.35.79;IABM;]"

// Visitors of the benchmark: in the fixture databases both are US, which is
// not blocked, and on no address list, so Evaluate does all its work.
var (
	benchAddr4 = netip.MustParseAddr("8.8.8.8")
	benchAddr6 = netip.MustParseAddr("2001:4860:4860::8888")
)

// benchSettings returns 10,000 deny ranges, 1,000 allow ranges and 50 blocked
// countries, none of which holds the benchmark's visitors.
func benchSettings() Settings {
	r := rand.New(rand.NewPCG(1, 2))
	ranges := func(n int) []string {
		out := make([]string, 0, n)
		for len(out) < n {
			var p netip.Prefix
			if len(out)%5 == 4 { // one in five IPv6
				var a [16]byte
				a[0], a[1] = 0x20, byte(r.IntN(256))
				for i := 2; i < 6; i++ {
					a[i] = byte(r.IntN(256))
				}
				p = netip.PrefixFrom(netip.AddrFrom16(a), 32+r.IntN(17)).Masked()
			} else {
				var a [4]byte
				for i := range a {
					a[i] = byte(r.IntN(256))
				}
				p = netip.PrefixFrom(netip.AddrFrom4(a), 16+r.IntN(17)).Masked()
			}
			if p.Contains(benchAddr4) || p.Contains(benchAddr6) {
				continue
			}
			out = append(out, p.String())
		}
		return out
	}
	s := DefaultSettings()
	s.DenyIPs = ranges(10_000)
	s.AllowIPs = ranges(1_000)
	s.BlockAICrawlers = true
	s.BlockedCountries = strings.Fields("AF AL DZ AO AR AM AZ BY BD BO BA BR BG KH CM CN CO CU " +
		"EC EG ET GH IN ID IR IQ KZ KE KP KG LA LY MA MM NP NG PK PE PH RO RU SA RS SO SD SY TH UA VE XX")
	if len(s.BlockedCountries) != 50 {
		panic("benchmark wants 50 blocked countries")
	}
	return s
}

// benchLocator opens the geodata package's GeoIP2 fixture with the real MMDB
// reader.
func benchLocator(tb testing.TB) geodata.Locator {
	tb.Helper()
	db, err := geodata.Open(geodata.Config{CountryDB: "../geodata/testdata/country-geoip2.mmdb", NoReload: true},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		tb.Fatalf("open geodata fixture: %v", err)
	}
	tb.Cleanup(func() { db.Close() })
	if c := db.Country(benchAddr4); c != (geodata.Country{'U', 'S'}) {
		tb.Fatalf("fixture places %v in %v, want US", benchAddr4, c)
	}
	return db
}

func BenchmarkEvaluate(b *testing.B) {
	rs, err := Compile(benchSettings())
	if err != nil {
		b.Fatal(err)
	}
	if len(ua200) != 200 {
		b.Fatalf("user agent is %d bytes, want 200", len(ua200))
	}
	loc := benchLocator(b)
	for _, bc := range []struct {
		name string
		addr netip.Addr
		ua   string
		want Verdict
	}{
		{"IPv4", benchAddr4, ua200, Allow},
		{"IPv6", benchAddr6, ua200, Allow},
		{"IPv4/crawler refused", benchAddr4, uaGPTBot, Refuse},
		{"IPv4/denied", netip.MustParseAddr(rs.settings.DenyIPs[0][:len(rs.settings.DenyIPs[0])-3]), ua200, Refuse},
	} {
		f := &Facts{Addr: bc.addr, UserAgent: []byte(bc.ua), Path: []byte("/index.html"), Target: TargetStaticSite}
		if d := rs.Evaluate(f, loc); d.Verdict != bc.want {
			b.Fatalf("%s: Evaluate = %+v, want %v", bc.name, d, bc.want)
		}
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rs.Evaluate(f, loc)
			}
		})
	}
}

func BenchmarkMatchCrawler(b *testing.B) {
	for _, ua := range []string{ua200, uaGPTBot, uaChrome} {
		b.Run(fmt.Sprintf("%d bytes", len(ua)), func(b *testing.B) {
			u := []byte(ua)
			b.ReportAllocs()
			for b.Loop() {
				MatchCrawler(u)
			}
		})
	}
}

func BenchmarkIsPrivateRequestPath(b *testing.B) {
	for _, p := range []string{"/assets/css/site.3f9a1c.css", "/%252e%252e/%252eenv", "/.well-known/acme-challenge/abcdef"} {
		b.Run(p, func(b *testing.B) {
			raw := []byte(p)
			b.ReportAllocs()
			for b.Loop() {
				IsPrivateRequestPath(raw)
			}
		})
	}
}

func BenchmarkSessionVerify(b *testing.B) {
	s, _ := NewSessionSigner(make([]byte, 32))
	now := time.Now()
	c, _ := s.Issue("my-site", 1, now)
	cookie := []byte(c)
	b.ReportAllocs()
	for b.Loop() {
		s.Verify(cookie, "my-site", 1, now)
	}
}

func BenchmarkCountersAdd(b *testing.B) {
	c := NewCounters()
	now := time.Now()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c.Add("site-123", RuleCountry, Refuse, now)
		}
	})
}

func BenchmarkCompile(b *testing.B) {
	s := benchSettings()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile(s); err != nil {
			b.Fatal(err)
		}
	}
}
