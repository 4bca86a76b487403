package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// fakeClock advances only when slept on.
type fakeClock struct{ t time.Time }

func (c *fakeClock) Now() time.Time        { return c.t }
func (c *fakeClock) Sleep(d time.Duration) { c.t = c.t.Add(d) }

// TestWaitDAMON replays kdamond's CPU time as schedstat shows it: samples of
// 1.5 ms every 500 ms, and a burst that advances 4 ms a tick.
func TestWaitDAMON(t *testing.T) {
	ms := time.Millisecond
	type step struct {
		at  time.Duration // since the start
		cpu time.Duration // added to the CPU time then
	}
	burst := func(at time.Duration, ticks int) []step {
		var s []step
		for i := range ticks {
			s = append(s, step{at + time.Duration(i)*4*ms, 4 * ms})
		}
		return s
	}
	samples := func(from, to time.Duration) []step {
		var s []step
		for at := from; at < to; at += 500 * ms {
			s = append(s, step{at, 1500 * time.Microsecond})
		}
		return s
	}
	cat := func(ss ...[]step) []step {
		var all []step
		for _, s := range ss {
			all = append(all, s...)
		}
		return all
	}
	for _, tc := range []struct {
		name   string
		steps  []step
		max    time.Duration
		wantOK bool
		wantAt time.Duration // the return, within a poll
	}{
		{"burst after samples", cat(samples(100*ms, 1200*ms), burst(1300*ms, 10)), 12 * time.Second, true, 1300*ms + 36*ms + quietGap},
		{"short burst", cat(samples(0, 600*ms), burst(700*ms, 2)), 12 * time.Second, true, 704*ms + quietGap},
		{"samples alone are no burst", samples(0, 20*time.Second), 3 * time.Second, false, 3 * time.Second},
		{"two samples close together are no burst", []step{{100 * ms, 1800 * time.Microsecond}, {102 * ms, 1800 * time.Microsecond}}, time.Second, false, time.Second},
		{"a burst already under way at the start", burst(0, 5), 12 * time.Second, true, 16*ms + quietGap},
		{"nothing", nil, 2 * time.Second, false, 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := &fakeClock{t: time.Unix(1000, 0)}
			start := clk.t
			cpu := func() (time.Duration, error) {
				var sum time.Duration
				for _, s := range tc.steps {
					if clk.t.Sub(start) >= s.at {
						sum += s.cpu
					}
				}
				return sum, nil
			}
			ok, err := waitDAMON(cpu, clk, 2*ms, tc.max)
			if err != nil {
				t.Fatal(err)
			}
			got := clk.t.Sub(start)
			if ok != tc.wantOK || got < tc.wantAt || got > tc.wantAt+2*ms {
				t.Errorf("waitDAMON = %v after %v, want %v after %v", ok, got, tc.wantOK, tc.wantAt)
			}
		})
	}
}

func TestKdamondPIDs(t *testing.T) {
	proc := t.TempDir()
	for pid, files := range map[string]map[string]string{
		"77":   {"comm": "kdamond.0\n", "schedstat": "600000000 100 20\n"},
		"78":   {"comm": "kdamond.1\n", "schedstat": "5000000 1 1\n"},
		"100":  {"comm": "nginx\n", "schedstat": "999 1 1\n"},
		"self": {"comm": "kdamond.9\n"},
	} {
		if err := os.Mkdir(filepath.Join(proc, pid), 0o755); err != nil {
			t.Fatal(err)
		}
		for name, body := range files {
			if err := os.WriteFile(filepath.Join(proc, pid, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	pids, err := kdamondPIDs(proc)
	if err != nil {
		t.Fatal(err)
	}
	if len(pids) != 2 {
		t.Fatalf("kdamondPIDs = %v, want 77 and 78", pids)
	}
	sum, err := schedstatCPU(proc, append(pids, "4242")) // 4242 went away
	if err != nil || sum != 605*time.Millisecond {
		t.Errorf("schedstatCPU = %v, %v; want 605ms", sum, err)
	}
	os.WriteFile(filepath.Join(proc, "78", "schedstat"), []byte("x 1 1\n"), 0o644)
	if _, err := schedstatCPU(proc, pids); err == nil {
		t.Error("schedstatCPU read a malformed file without an error")
	}
}
