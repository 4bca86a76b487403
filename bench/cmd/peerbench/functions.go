package main

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// fnRun is one run of calls to one target.
type fnRun struct {
	Target string  `json:"target"`
	Round  int     `json:"round"`
	Calls  int     `json:"calls"`
	P50us  float64 `json:"p50_us"`
	P99us  float64 `json:"p99_us"`
	CPUus  float64 `json:"cpu_per_call_us"`
	Errors int     `json:"errors"`
}

// fnTarget is a hello-world handler to call: the platform's function
// through the edge, or the same handler in workerd.
type fnTarget struct {
	name, url, host string
	pid             int
}

// runFunctions calls the platform's function and workerd's Worker one call
// at a time, in alternating rounds, and writes functions.md: warm-call
// latency and CPU per call, each a median of per-round ratios. The first
// calls (cold starts) are measured by bench/peers.sh and passed in.
func runFunctions(args []string) error {
	fs := flag.NewFlagSet("functions", flag.ExitOnError)
	out := fs.String("out", "", "results folder (functions.md)")
	platform := fs.String("platform", "", "the edge's HTTPS base URL (https://127.0.0.1:PORT)")
	host := fs.String("host", "", "the function's host name at the edge")
	platformPID := fs.Int("platform-pid", 0, "the platform's process")
	workerd := fs.String("workerd", "", "the Worker's base URL")
	workerdPID := fs.Int("workerd-pid", 0, "miniflare's Node.js process (workerd, its child, counts too)")
	calls := fs.Int("calls", 300, "calls of each run, one at a time")
	rounds := fs.Int("rounds", 5, "rounds, alternating the targets' order")
	coldPlatform := fs.Duration("cold-platform", 0, "the platform's first call after its deploy loaded the module")
	coldWorkerd := fs.Duration("cold-workerd", 0, "workerd's first call after miniflare was started")
	fs.Parse(args)
	if *out == "" || *platform == "" || *workerd == "" {
		return errors.New("-out, -platform and -workerd are required")
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 2, DisableCompression: true,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true, ServerName: *host}}} // the edge's own CA, like wrk
	targets := []fnTarget{{"platform", *platform + "/hello", *host, *platformPID}, {"workerd", *workerd + "/hello", "", *workerdPID}}
	var runs []fnRun
	for round := 1; round <= *rounds; round++ {
		ts := slices.Clone(targets)
		if round%2 == 0 {
			slices.Reverse(ts)
		}
		logf("functions: round %d of %d", round, *rounds)
		for _, t := range ts {
			fnLoad(client, t, max(1, *calls/10)) // warm-up
			r := fnLoad(client, t, *calls)
			r.Round = round
			runs = append(runs, r)
		}
	}
	byTarget := func(name string) map[int]fnRun {
		m := map[int]fnRun{}
		for _, r := range runs {
			if r.Target == name {
				m[r.Round] = r
			}
		}
		return m
	}
	pm, wm := byTarget("platform"), byTarget("workerd")
	ratio := func(f func(fnRun) float64) float64 {
		var xs []float64
		for round, p := range pm {
			if w, ok := wm[round]; ok && f(w) > 0 {
				xs = append(xs, f(p)/f(w))
			}
		}
		return median(xs)
	}
	med := func(m map[int]fnRun, f func(fnRun) float64) float64 {
		var xs []float64
		for _, r := range m {
			xs = append(xs, f(r))
		}
		return median(xs)
	}
	var b strings.Builder
	b.WriteString("### Functions: the platform's WASI function against the same handler in workerd\n\n")
	fmt.Fprintf(&b, "A hello-world handler, one call at a time, %d calls a run after a tenth as many to warm up, %d rounds: the platform's through its edge (HTTPS, keep-alive; a Go WASI module, a fresh instance per call), workerd's through miniflare (HTTP, keep-alive; a JavaScript module in a warm isolate). CPU/call: the server's processes ÷ calls. Ratios: platform ÷ workerd, medians of per-round ratios (below 1.00: the platform is ahead).\n\n", *calls, *rounds)
	b.WriteString("| target | first call | warm p50 | warm p99 | CPU/call | errors |\n|---|---:|---:|---:|---:|---:|\n")
	for _, t := range []struct {
		name string
		m    map[int]fnRun
		cold time.Duration
	}{{"platform", pm, *coldPlatform}, {"workerd", wm, *coldWorkerd}} {
		errs := 0
		for _, r := range t.m {
			errs += r.Errors
		}
		fmt.Fprintf(&b, "| %s | %s | %.0f µs | %.0f µs | %.0f µs | %d |\n", t.name, t.cold.Round(time.Microsecond),
			med(t.m, func(r fnRun) float64 { return r.P50us }), med(t.m, func(r fnRun) float64 { return r.P99us }),
			med(t.m, func(r fnRun) float64 { return r.CPUus }), errs)
	}
	coldRatio := 0.0
	if *coldWorkerd > 0 {
		coldRatio = float64(*coldPlatform) / float64(*coldWorkerd)
	}
	fmt.Fprintf(&b, "\nplatform ÷ workerd: first call %.2f, warm p50 %.2f, warm p99 %.2f, CPU/call %.2f (target: first call and warm-call overhead at most workerd's, 1.00)\n\n",
		coldRatio, ratio(func(r fnRun) float64 { return r.P50us }), ratio(func(r fnRun) float64 { return r.P99us }), ratio(func(r fnRun) float64 { return r.CPUus }))
	if err := os.WriteFile(filepath.Join(*out, "functions.md"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	fmt.Print(b.String())
	return nil
}

// fnLoad makes n calls to t one at a time.
func fnLoad(client *http.Client, t fnTarget, n int) fnRun {
	r := fnRun{Target: t.name, Calls: n}
	lat := make([]float64, 0, n)
	cpu0 := treeCPU(t.pid)
	for range n {
		req, _ := http.NewRequest(http.MethodGet, t.url, nil)
		if t.host != "" {
			req.Host = t.host
		}
		began := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			r.Errors++
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.HasPrefix(string(body), "hello") {
			r.Errors++
			continue
		}
		lat = append(lat, float64(time.Since(began).Microseconds()))
	}
	if t.pid != 0 && n > 0 {
		r.CPUus = float64((treeCPU(t.pid) - cpu0).Microseconds()) / float64(n)
	}
	slices.Sort(lat)
	r.P50us, r.P99us = percentile(lat, 50), percentile(lat, 99)
	return r
}
