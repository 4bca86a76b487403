package main

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestMaskIsOnePercent(t *testing.T) {
	n := 100_000
	got := 0
	for _, m := range maskOf(n) {
		if m {
			got++
		}
	}
	if got < 900 || got > 1100 {
		t.Fatalf("mask accepts %d of %d, want about 1 %%", got, n)
	}
}

func TestRecallOf(t *testing.T) {
	want := [][]int32{{1, 2, 3, 4}, {5, 6, 7, 8}}
	got := [][]int32{{4, 3, 2, 1}, {5, 6, 9, 10}}
	if r := recallOf(got, want); r != 0.75 {
		t.Fatalf("recall %v, want 0.75", r)
	}
}

func TestMedianAndPercentile(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(tc.xs); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.xs, got, tc.want)
		}
	}
	if p := percentile([]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 50); p != 5 {
		t.Errorf("p50 = %v", p)
	}
}

// pidCPU reads this process's own CPU time from /proc, in clock ticks.
func TestPidCPU(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("peerbench: no /proc on this system")
	}
	for processCPU() < 50*time.Millisecond {
	}
	if d := pidCPU(os.Getpid()); d <= 0 {
		t.Fatalf("pidCPU of this process = %v after %v of CPU", d, processCPU())
	}
}

// The table's ratios are medians of per-round ratios, and the targets say
// met or not met.
func TestVectorTable(t *testing.T) {
	d := &vecData{n: 1000, dims: 8, nq: 10, k: 10}
	var runs []vecRun
	runs = append(runs, vecRun{Kind: "build", Engine: "platform", WallS: 10, CPUS: 20}, vecRun{Kind: "build", Engine: "hnswlib", WallS: 5, CPUS: 10})
	for round, pq := range []float64{2, 3, 4} {
		runs = append(runs,
			vecRun{Kind: "query", Round: round + 1, Engine: "platform", Threads: 1, Ef: 16, Queries: 10, WallS: 10 / (pq * 100), CPUS: 10 / (pq * 100), Recall: 0.96},
			vecRun{Kind: "query", Round: round + 1, Engine: "hnswlib", Threads: 1, Ef: 16, Queries: 10, WallS: 10 / 100.0, CPUS: 10 / 100.0, Recall: 0.97})
	}
	out := vectorTable(runs, []string{"platform", "hnswlib"}, []int{16}, 0.95, d, 2, nil)
	for _, want := range []string{"| 16 | hnswlib | 0.970 | 100 | 100 | 3.00 | 3.00 |", "| build time <= 1.5x hnswlib's | 2.00 (CPU 2.00) | **not met** |", "one core | 3.00 q/s"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}
