package main

import (
	"net/netip"
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
