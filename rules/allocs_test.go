//go:build !race

package rules

import (
	"testing"
	"time"
)

// TestZeroAllocs holds the edge's hot path to zero allocations.
func TestZeroAllocs(t *testing.T) {
	rs, err := Compile(benchSettings())
	if err != nil {
		t.Fatal(err)
	}
	loc := benchLocator(t)
	signer, _ := NewSessionSigner(make([]byte, 32))
	now := time.Now()
	cookie, _ := signer.Issue("my-site", 7, now)
	counters := NewCounters()
	counters.Add("site", RuleCountry, Refuse, now) // first sight of a key may allocate

	tests := []struct {
		name string
		fn   func()
	}{
		{"Evaluate IPv4 with country lookup", func() {
			rs.Evaluate(&Facts{Addr: benchAddr4, UserAgent: []byte(ua200), Path: []byte("/")}, loc)
		}},
		{"Evaluate IPv6 with country lookup", func() {
			rs.Evaluate(&Facts{Addr: benchAddr6, UserAgent: []byte(ua200), Path: []byte("/"), Target: TargetFunction}, loc)
		}},
		{"Evaluate crawler refused", func() {
			rs.Evaluate(&Facts{Addr: benchAddr4, UserAgent: []byte(uaGPTBot), Path: []byte("/")}, loc)
		}},
		{"Evaluate server app", func() {
			rs.Evaluate(&Facts{Addr: benchAddr6, UserAgent: []byte(uaGPTBot), Target: TargetServerApp}, loc)
		}},
		{"MatchCrawler", func() { MatchCrawler([]byte(ua200)) }},
		{"MatchCrawler hit", func() { MatchCrawler([]byte("Mozilla/5.0 (compatible; Kangaroo Bot/1.0)")) }},
		{"IsPrivateRequestPath plain", func() { IsPrivateRequestPath([]byte("/assets/css/site.css")) }},
		{"IsPrivateRequestPath encoded", func() { IsPrivateRequestPath([]byte("/a/%252e%252e/%252eenv%2500")) }},
		{"IsPrivateRequestPath well-known", func() { IsPrivateRequestPath([]byte("/.well-known/acme-challenge/x")) }},
		{"SessionSigner.Verify", func() { signer.Verify([]byte(cookie), "my-site", 7, now) }},
		{"Counters.Add", func() { counters.Add("site", RuleCountry, Refuse, now) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if n := testing.AllocsPerRun(100, tc.fn); n != 0 {
				t.Errorf("%v allocations per run, want 0", n)
			}
		})
	}
}
