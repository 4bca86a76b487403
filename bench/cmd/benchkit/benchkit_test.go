package main

import (
	"net/netip"
	"strings"
	"testing"
)

func TestMakePage(t *testing.T) {
	if got := len(makePage()); got != pageBytes {
		t.Fatalf("page is %d bytes, want %d", got, pageBytes)
	}
}

func TestDenyRanges(t *testing.T) {
	avoid := []netip.Addr{netip.MustParseAddr("2.0.1.1"), netip.MustParseAddr("1.0.1.1")}
	rs := denyRanges(10000, avoid...)
	if len(rs) != 10000 {
		t.Fatalf("%d ranges, want 10000", len(rs))
	}
	if first := rs[0]; !first.Addr().Is4() || first.Bits() > 24 || !first.Contains(first.Addr().Next()) {
		t.Fatalf("first range %s must be IPv4, at most /24, holding its second address", first)
	}
	seen := map[netip.Prefix]bool{}
	v6 := 0
	for _, p := range rs {
		if seen[p] || p != p.Masked() || !public(p.Addr()) || holdsAny(p, avoid) {
			t.Fatalf("range %s: duplicate, not masked, not public or holding an avoided address", p)
		}
		seen[p] = true
		if p.Addr().Is6() {
			v6++
		}
	}
	if v6 < 500 || v6 > 1500 {
		t.Errorf("%d IPv6 ranges, want about 1000", v6)
	}
	if again := denyRanges(10000, avoid...); again[9999] != rs[9999] {
		t.Error("ranges differ between runs")
	}
}

func TestMedianRatio(t *testing.T) {
	rps := func(r result) float64 { return r.Wrk.Requests }
	mk := func(round int, reqs float64) result { return result{Round: round, Wrk: wrkStats{Requests: reqs}} }
	for _, tc := range []struct {
		name       string
		edge, peer []result
		want       float64
	}{
		{"paired by round", []result{mk(1, 10), mk(2, 30)}, []result{mk(2, 10), mk(1, 10)}, 2},
		{"odd count", []result{mk(1, 10), mk(2, 20), mk(3, 90)}, []result{mk(1, 10), mk(2, 10), mk(3, 10)}, 2},
		{"unpaired ignored", []result{mk(1, 20)}, []result{mk(1, 10), mk(2, 1)}, 2},
		{"none", nil, []result{mk(1, 10)}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := medianRatio(tc.edge, tc.peer, rps); got != tc.want {
				t.Errorf("medianRatio = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestResultValid(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    result
		want bool
	}{
		{"ok", result{Expect: "ok", Wrk: wrkStats{Requests: 5}}, true},
		{"ok with 4xx", result{Expect: "ok", Wrk: wrkStats{Requests: 5, Status: 1}}, false},
		{"refused all 403", result{Expect: "refused", Wrk: wrkStats{Requests: 5, Status: 5}}, true},
		{"refused some 200", result{Expect: "refused", Wrk: wrkStats{Requests: 5, Status: 4}}, false},
		{"socket error", result{Expect: "ok", Wrk: wrkStats{Requests: 5, Read: 1}}, false},
		{"no requests", result{Expect: "ok"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.r.valid(); got != tc.want {
				t.Errorf("valid = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestTableProtocols: HTTP/2 and HTTP/3 rows come after HTTPS, each with
// its own ratio against the edge on the same protocol.
func TestTableProtocols(t *testing.T) {
	mk := func(proto, server string, reqs float64) result {
		return result{Round: 1, Workload: "page4k", Proto: proto, Server: server, Expect: "ok",
			Wrk: wrkStats{Requests: reqs, DurationUS: 1e6, P99: 1000}}
	}
	cells := cellsOf([]result{mk("https", "edge", 300), mk("https", "nginx", 100), mk("h2", "edge", 200), mk("h2", "nginx", 100),
		mk("h3", "edge", 150), mk("h3", "caddy", 100)})
	var b strings.Builder
	printTable(&b, cells)
	out := b.String()
	for _, want := range []string{"| HTTPS | nginx | 100 | 0.000 | 1.00 | 3.00 | 1.00 |", "| HTTP/2 | nginx | 100 | 0.000 | 1.00 | 2.00 | 1.00 |",
		"| HTTP/3 | caddy | 100 | 0.000 | 1.00 | 1.50 | 1.00 |"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Index(out, "HTTP/2 | edge") < strings.Index(out, "HTTPS | nginx") || strings.Index(out, "HTTP/3 | edge") < strings.Index(out, "HTTP/2 | nginx") {
		t.Errorf("rows out of order:\n%s", out)
	}
}

// TestTableSteal: runs kept after runs discarded for steal are counted
// under the table, and steal on the load generator's core marks the cell.
func TestTableSteal(t *testing.T) {
	withMM := func(r result, mm float64) result { r.MM = mm; return r }
	withGC := func(r result, n int) result { r.GC = n; return r }
	withDAMON := func(r result, ms int) result { r.DAMONWait = &ms; return r }
	mk := func(server string, stealClient float64, retries int) result {
		return result{Round: 1, Workload: "page4k", Proto: "https", Server: server, Expect: "ok", StealClient: stealClient,
			Retries: retries, Wrk: wrkStats{Requests: 100, DurationUS: 1e6, P99: 1000}}
	}
	tests := []struct {
		name       string
		runs       []result
		wantNote   string
		wantMark   bool
		wantNoNote bool
	}{
		{"quiet", []result{mk("edge", 0, 0), mk("nginx", 0, 0)}, "", false, true},
		{"client steal marks", []result{mk("edge", 7, 0), mk("nginx", 0, 0)}, "", true, true},
		{"kdamond marks", []result{withMM(mk("edge", 0, 0), 6), mk("nginx", 0, 0)}, "", true, true},
		{"a little kdamond does not", []result{withMM(mk("edge", 0, 0), 1.2), mk("nginx", 0, 0)}, "", false, true},
		{"GC cycles counted", []result{withGC(mk("edge", 0, 0), 2), mk("nginx", 0, 0)}, "⁵ 1/1", false, true},
		{"DAMON-aligned runs counted", []result{withDAMON(mk("edge", 0, 0), 2300), withDAMON(mk("nginx", 0, 0), -2)}, "1 of the 2 runs started as a burst", false, true},
		{"retries counted", []result{mk("edge", 0, 1), mk("nginx", 0, 2)}, "2 of the 2 runs kept are re-runs: 3 runs were discarded", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cells := cellsOf(tt.runs)
			var b strings.Builder
			printTable(&b, cells)
			out := b.String()
			if tt.wantNote != "" && !strings.Contains(out, tt.wantNote) {
				t.Errorf("no %q:\n%s", tt.wantNote, out)
			}
			if tt.wantNoNote && strings.Contains(out, "re-runs") {
				t.Errorf("a retry note without retries:\n%s", out)
			}
			if got := strings.Contains(out, "| edge | 100 |") && strings.Contains(out, "% ⁴ |"); got != tt.wantMark {
				t.Errorf("steal mark %v, want %v:\n%s", got, tt.wantMark, out)
			}
		})
	}
}

// TestTargets: the speed targets are medians of per-round ratios over the
// rounds both servers ran, the extra target rounds (only edge and nginx on
// workloads 1 and 4) included, with the verdict on the right side of each
// limit.
func TestTargets(t *testing.T) {
	run := func(round int, workload, server string, rps, p99 float64) result {
		return result{Round: round, Workload: workload, Proto: "https", Server: server, Expect: "ok",
			Wrk: wrkStats{Requests: rps, DurationUS: 1e6, P99: p99}}
	}
	// rounds builds n rounds of edge and nginx on workload, edge's p99 and
	// req/s being nginx's times the given factors.
	rounds := func(workload string, n int, rpsRatio, p99Ratio float64) []result {
		var rs []result
		for r := 1; r <= n; r++ {
			rs = append(rs, run(r, workload, "edge", 1000*rpsRatio, 2000*p99Ratio), run(r, workload, "nginx", 1000, 2000))
		}
		return rs
	}
	tests := []struct {
		name string
		runs []result
		want []string
	}{
		{"both met", append(rounds("page4k", 11, 1, 1.2), rounds("proxy", 11, 0.9, 1)...),
			[]string{"cached page p99, edge ÷ nginx = 1.20 over 11 rounds, target <= 1.2: met",
				"forwarding req/s (workload 4), edge ÷ nginx = 0.90 over 11 rounds, target >= 0.9: met"}},
		{"both missed", append(rounds("page4k", 5, 1, 1.25), rounds("proxy", 5, 0.85, 1)...),
			[]string{"cached page p99, edge ÷ nginx = 1.25 over 5 rounds, target <= 1.2: MISSED",
				"forwarding req/s (workload 4), edge ÷ nginx = 0.85 over 5 rounds, target >= 0.9: MISSED"}},
		{"a round without nginx is not paired", append(rounds("page4k", 3, 1, 1), run(4, "page4k", "edge", 1000, 9000)),
			[]string{"cached page p99, edge ÷ nginx = 1.00 over 3 rounds"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cells := cellsOf(tt.runs)
			var b strings.Builder
			printTargets(&b, cells)
			for _, want := range tt.want {
				if !strings.Contains(b.String(), want) {
					t.Errorf("no %q in:\n%s", want, b.String())
				}
			}
		})
	}
}

// cellsOf groups runs into the table's cells.
func cellsOf(runs []result) map[cellKey][]result {
	cells := map[cellKey][]result{}
	for _, r := range runs {
		k := cellKey{r.Workload, r.Proto, r.Server}
		cells[k] = append(cells[k], r)
	}
	return cells
}
