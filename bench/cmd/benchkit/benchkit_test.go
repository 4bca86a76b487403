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

// TestTableProtocols: the h2load rows (HTTP/1.1 and HTTP/2), then
// loadgen's HTTP/2 and HTTP/3 rows come after HTTPS, each with its own
// ratio against the edge on the same protocol, and every row with the
// server's CPU per request.
func TestTableProtocols(t *testing.T) {
	mk := func(proto, server string, reqs, cpuMS float64) result {
		return result{Round: 1, Workload: "page4k", Proto: proto, Server: server, Expect: "ok", ServerCPUMS: &cpuMS,
			Wrk: wrkStats{Requests: reqs, DurationUS: 1e6, P99: 1000}}
	}
	cells := cellsOf([]result{mk("https", "edge", 300, 30), mk("https", "nginx", 100, 20), mk("h2", "edge", 200, 20), mk("h2", "nginx", 100, 10),
		mk("h3", "edge", 150, 30), mk("h3", "caddy", 100, 40), mk("h2load", "edge", 400, 20), mk("h2load", "nginx", 100, 10), mk("h2load-h1", "edge", 300, 30)})
	var b strings.Builder
	printTable(&b, cells)
	out := b.String()
	rows := []string{"| HTTPS | edge | 300 | 100.0 | 0.000 | 1.00 | — |", "| HTTPS | nginx | 100 | 200.0 | 0.000 | 1.00 | 3.00 | 1.00 |",
		"| HTTPS (h2load --h1) | edge | 300 | 100.0 |", "| HTTP/2 (h2load) | edge | 400 | 50.0 |", "| HTTP/2 (h2load) | nginx | 100 | 100.0 | 0.000 | 1.00 | 4.00 | 1.00 |",
		"| HTTP/2 | edge | 200 | 100.0 |", "| HTTP/2 | nginx | 100 | 100.0 | 0.000 | 1.00 | 2.00 | 1.00 |",
		"| HTTP/3 | edge | 150 | 200.0 |", "| HTTP/3 | caddy | 100 | 400.0 | 0.000 | 1.00 | 1.50 | 1.00 |"}
	last := -1
	for _, want := range rows {
		i := strings.Index(out, want)
		if i < 0 {
			t.Errorf("table lacks %q:\n%s", want, out)
			continue
		}
		if i < last {
			t.Errorf("row %q out of order:\n%s", want, out)
		}
		last = i
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
// rounds both cells ran, the extra target rounds (only edge and nginx on
// workloads 1 and 4) included, oriented so that above 1 the edge is ahead
// (CPU per request: other ÷ edge; p99: edge ÷ nginx, at most the limit),
// with the verdict on the right side of each limit; HTTP/2 is compared with
// nginx and with the edge's own HTTP/1.1, HTTP/3 with Caddy, without a
// target; cells not measured have no row, figures older results lack say so.
func TestTargets(t *testing.T) {
	cpu := func(ms float64) *float64 { return &ms }
	run := func(round int, workload, proto, server string, rps, p99, cpuMS float64) result {
		r := result{Round: round, Workload: workload, Proto: proto, Server: server, Expect: "ok",
			Wrk: wrkStats{Requests: rps, DurationUS: 1e6, P99: p99}}
		if cpuMS > 0 {
			r.ServerCPUMS = cpu(cpuMS)
		}
		return r
	}
	// rounds builds n rounds of the edge on (workload, proto) and server on
	// (workload, otherProto): the edge's req/s and p99 are the other's
	// times the given factors, its CPU time the same (so its CPU per
	// request is the other's ÷ rpsRatio).
	rounds := func(workload, proto, server, otherProto string, n int, rpsRatio, p99Ratio float64) []result {
		var rs []result
		for r := 1; r <= n; r++ {
			rs = append(rs, run(r, workload, proto, "edge", 1000*rpsRatio, 2000*p99Ratio, 500),
				run(r, workload, otherProto, server, 1000, 2000, 500))
		}
		return rs
	}
	join := func(rss ...[]result) []result {
		var all []result
		for _, rs := range rss {
			all = append(all, rs...)
		}
		return all
	}
	tests := []struct {
		name   string
		runs   []result
		want   []string
		absent []string
	}{
		{"HTTPS met", join(rounds("page4k", "https", "nginx", "https", 11, 1.25, 1.2), rounds("proxy", "https", "nginx", "https", 11, 1, 1)),
			[]string{"| cached page, HTTPS (wrk) | req/s | 1,250 | 1,000 | edge ÷ nginx | 1.25 | >= 1.2 | 11 | met |",
				"| cached page, HTTPS (wrk) | CPU per request | 400.0 µs | 500.0 µs | nginx ÷ edge | 1.25 | >= 1.2 | 11 | met |",
				"| cached page, HTTPS (wrk) | p99 | 2.40 ms | 2.00 ms | edge ÷ nginx | 1.20 | <= 1.2 | 11 | met |",
				"| forwarding, HTTPS (wrk) | req/s | 1,000 | 1,000 | edge ÷ nginx | 1.00 | >= 1.0 | 11 | met |",
				"| forwarding, HTTPS (wrk) | CPU per request | 500.0 µs | 500.0 µs | nginx ÷ edge | 1.00 | >= 1.0 | 11 | met |"},
			[]string{"HTTP/2", "HTTP/3", "Caddy", "| MISSED |", "The edge's CPU per request"}},
		{"HTTPS missed", join(rounds("page4k", "https", "nginx", "https", 5, 1.1, 1.25), rounds("proxy", "https", "nginx", "https", 5, 0.85, 1)),
			[]string{"| edge ÷ nginx | 1.10 | >= 1.2 | 5 | MISSED |", "| nginx ÷ edge | 1.10 | >= 1.2 | 5 | MISSED |",
				"| edge ÷ nginx | 1.25 | <= 1.2 | 5 | MISSED |", "| forwarding, HTTPS (wrk) | req/s | 850 | 1,000 | edge ÷ nginx | 0.85 | >= 1.0 | 5 | MISSED |"},
			nil},
		{"HTTP/2 against nginx and the edge's HTTP/1.1", join(rounds("page4k", "h2load", "nginx", "h2load", 5, 1.3, 1), []result{
			run(1, "page4k", "h2load-h1", "edge", 1040, 2000, 500), run(2, "page4k", "h2load-h1", "edge", 1300, 2000, 500),
			run(3, "page4k", "h2load-h1", "edge", 1300, 2000, 500), run(4, "page4k", "h2load-h1", "edge", 1300, 2000, 500),
			run(5, "page4k", "h2load-h1", "edge", 1300, 2000, 500)}),
			[]string{"| cached page, HTTP/2 (h2load) | req/s | 1,300 | 1,000 | edge ÷ nginx | 1.30 | >= 1.2 | 5 | met |",
				"| cached page, HTTP/2 (h2load) | CPU per request | 384.6 µs | 500.0 µs | nginx ÷ edge | 1.30 | >= 1.2 | 5 | met |",
				"| cached page, HTTP/2 (h2load) against the edge's HTTP/1.1 (h2load --h1) | CPU per request | 384.6 µs | 384.6 µs | HTTP/1.1 ÷ HTTP/2 | 1.00 | >= 1.0 | 5 | met |",
				"| cached page, HTTP/2 (h2load) against the edge's HTTP/1.1 (h2load --h1) | req/s | 1,300 | 1,300 | HTTP/2 ÷ HTTP/1.1 | 1.00 | — | 5 | no target |",
				"The edge's CPU per request on the cached page (medians over rounds): HTTPS (h2load --h1) 384.6 µs, HTTP/2 (h2load) 384.6 µs."},
			[]string{"| MISSED |"}},
		{"HTTP/3 against Caddy and HTTP/2, no target", join(rounds("page4k", "h3", "caddy", "h3", 3, 1.5, 0.5), []result{run(1, "page4k", "h2", "edge", 1000, 2000, 500),
			run(2, "page4k", "h2", "edge", 1000, 2000, 500), run(3, "page4k", "h2", "edge", 1000, 2000, 500)}),
			[]string{"| cached page, HTTP/3 (loadgen) | req/s | 1,500 | 1,000 | edge ÷ Caddy | 1.50 | — | 3 | no target |",
				"| cached page, HTTP/3 (loadgen) | CPU per request | 333.3 µs | 500.0 µs | Caddy ÷ edge | 1.50 | — | 3 | no target |",
				"| cached page, HTTP/3 against the edge's HTTP/2 (loadgen) | CPU per request | 333.3 µs | 500.0 µs | HTTP/2 ÷ HTTP/3 | 1.50 | — | 3 | no target |",
				"The edge's CPU per request on the cached page (medians over rounds): HTTP/2 500.0 µs, HTTP/3 333.3 µs."},
			[]string{"| met |", "| MISSED |"}},
		{"a round without nginx is not paired", append(rounds("page4k", "https", "nginx", "https", 3, 1, 1), run(4, "page4k", "https", "edge", 1000, 9000, 500)),
			[]string{"| cached page, HTTPS (wrk) | p99 | 2.00 ms | 2.00 ms | edge ÷ nginx | 1.00 | <= 1.2 | 3 | met |"}, nil},
		{"CPU not recorded", []result{run(1, "proxy", "https", "edge", 1000, 2000, 0), run(1, "proxy", "https", "nginx", 1000, 2000, 0)},
			[]string{"| forwarding, HTTPS (wrk) | CPU per request | 0.0 µs | 0.0 µs | nginx ÷ edge | — | >= 1.0 | 1 | not measured |"}, nil},
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
			for _, no := range tt.absent {
				if strings.Contains(b.String(), no) {
					t.Errorf("%q in:\n%s", no, b.String())
				}
			}
		})
	}
}

// TestCPUPerRequest: the server's own CPU time per request when recorded,
// else its core's busy share over the run.
func TestCPUPerRequest(t *testing.T) {
	ms := func(v float64) *float64 { return &v }
	for _, tc := range []struct {
		name string
		r    result
		want float64 // µs
	}{
		{"processes' CPU time", result{ServerCPUMS: ms(1500), CPUServer: 100, Wrk: wrkStats{Requests: 100000, DurationUS: 3e6}}, 15},
		{"core share in older results", result{CPUServer: 50, Wrk: wrkStats{Requests: 100000, DurationUS: 3e6}}, 15},
		{"no requests", result{ServerCPUMS: ms(1500)}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.r.cpuPerRequest(); got != tc.want {
				t.Errorf("cpuPerRequest = %v µs, want %v", got, tc.want)
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
