package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// damon-wait: start a run just after the kernel's DAMON has done its
// periodic work, so the run does not share its core with it.
//
// This VM's kernel runs DAMON (kdamond) with a pageout scheme: it samples
// memory accesses every 0.5 s (about 1.5 ms of CPU each time) and, at every
// aggregation interval (5 s here, 5.12-5.27 s observed), applies the scheme
// in one burst of 10-50 ms of CPU on either core. A burst that lands on the
// server's core during a 3-s run shows as a 40-100 ms dip at a fraction of
// the rate, which sets that run's p99 whichever server it is
// (docs/notes/2026-11-23-bench-noise.md). The burst comes at a steady
// period, so a run started as one ends has the whole period to itself:
// WARMUP is not needed between them, and a 3-s run ends two seconds before
// the next one.
//
// The wait watches the summed CPU time of the kdamond threads
// (/proc/PID/schedstat, nanoseconds, which the kernel advances every tick
// while a thread runs): a burst is at least burstCPU of CPU within
// burstWindow (a sample is a few ms at most, once), and it has ended when the
// threads took no CPU for quietGap.
const (
	burstCPU    = 5 * time.Millisecond
	burstWindow = 50 * time.Millisecond
	quietGap    = 15 * time.Millisecond
)

// damonClock is what waitDAMON needs of time: now and a pause (a fake in
// the tests).
type damonClock interface {
	Now() time.Time
	Sleep(time.Duration)
}

type realClock struct{}

func (realClock) Now() time.Time        { return time.Now() }
func (realClock) Sleep(d time.Duration) { time.Sleep(d) }

// waitDAMON polls cpu (the kdamond threads' summed CPU time) every poll and
// returns when a burst has ended, with true, or after max without one, with
// false.
func waitDAMON(cpu func() (time.Duration, error), clk damonClock, poll, max time.Duration) (bool, error) {
	type point struct {
		at  time.Time
		cpu time.Duration
	}
	start := clk.Now()
	last, err := cpu()
	if err != nil {
		return false, err
	}
	window := []point{{start, last}} // the readings of the last burstWindow
	var burst bool                   // a burst is under way
	var lastRise time.Time           // when the CPU time last grew
	for {
		clk.Sleep(poll)
		now := clk.Now()
		v, err := cpu()
		if err != nil {
			return false, err
		}
		if v != last {
			lastRise = now
		}
		last = v
		window = append(window, point{now, v})
		for len(window) > 1 && now.Sub(window[1].at) >= burstWindow {
			window = window[1:]
		}
		if !burst && v-window[0].cpu >= burstCPU {
			burst = true
		}
		if burst && now.Sub(lastRise) >= quietGap {
			return true, nil
		}
		if !burst && now.Sub(start) >= max {
			return false, nil
		}
	}
}

// kdamondPIDs lists the kernel's kdamond threads under proc.
func kdamondPIDs(proc string) ([]string, error) {
	ents, err := os.ReadDir(proc)
	if err != nil {
		return nil, err
	}
	var pids []string
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		comm, err := os.ReadFile(filepath.Join(proc, e.Name(), "comm"))
		if err == nil && strings.HasPrefix(string(comm), "kdamond") {
			pids = append(pids, e.Name())
		}
	}
	return pids, nil
}

// schedstatCPU returns the summed on-CPU time of pids (the first field of
// /proc/PID/schedstat); a thread that went away counts as none.
func schedstatCPU(proc string, pids []string) (time.Duration, error) {
	var sum time.Duration
	for _, pid := range pids {
		b, err := os.ReadFile(filepath.Join(proc, pid, "schedstat"))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, err
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			return 0, fmt.Errorf("%s/%s/schedstat: empty", proc, pid)
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s/%s/schedstat: %w", proc, pid, err)
		}
		sum += time.Duration(ns)
	}
	return sum, nil
}

// runDAMONWait waits for the end of a kdamond burst and prints how long it
// waited in milliseconds: -1 without kdamond threads, the wait with a
// burst, and "none" after -max without one.
func runDAMONWait(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("damon-wait", flag.ContinueOnError)
	proc := fs.String("proc", "/proc", "the proc file system")
	poll := fs.Duration("poll", 2*time.Millisecond, "how often to read the kdamond threads' CPU time")
	max := fs.Duration("max", 12*time.Second, "the longest wait for a burst (more than two aggregation intervals)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	pids, err := kdamondPIDs(*proc)
	if err != nil {
		return err
	}
	if len(pids) == 0 {
		fmt.Fprintln(out, -1)
		return nil
	}
	start := time.Now()
	ok, err := waitDAMON(func() (time.Duration, error) { return schedstatCPU(*proc, pids) }, realClock{}, *poll, *max)
	if err != nil {
		return err
	}
	if !ok {
		fmt.Fprintln(out, "none")
		return nil
	}
	fmt.Fprintln(out, time.Since(start).Milliseconds())
	return nil
}
