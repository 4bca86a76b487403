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

// fnTarget is a hello-world handler to call: one of the platform's
// functions through the edge, or the same handler in workerd.
type fnTarget struct {
	name, label, url, host string
	pid                    int
	cold                   time.Duration
}

// runFunctions calls the platform's functions (the Go example and, with
// -host-as, the AssemblyScript one) and workerd's Worker one call at a
// time, in alternating rounds, and writes functions.md: warm-call latency
// and CPU per call, each a median of per-round ratios to workerd. The first
// calls (cold starts) are measured by bench/peers.sh and passed in.
func runFunctions(args []string) error {
	fs := flag.NewFlagSet("functions", flag.ExitOnError)
	out := fs.String("out", "", "results folder (functions.md)")
	platform := fs.String("platform", "", "the edge's HTTPS base URL (https://127.0.0.1:PORT)")
	host := fs.String("host", "", "the Go function's host name at the edge")
	hostAS := fs.String("host-as", "", "the AssemblyScript function's host name at the edge (optional)")
	platformPID := fs.Int("platform-pid", 0, "the platform's process")
	workerd := fs.String("workerd", "", "the Worker's base URL")
	workerdPID := fs.Int("workerd-pid", 0, "miniflare's Node.js process (workerd, its child, counts too)")
	calls := fs.Int("calls", 300, "calls of each run, one at a time")
	rounds := fs.Int("rounds", 5, "rounds, alternating the targets' order")
	coldPlatform := fs.Duration("cold-platform", 0, "the Go function's first call after its deploy loaded the module")
	coldPlatformAS := fs.Duration("cold-platform-as", 0, "the AssemblyScript function's first call after its deploy loaded the module")
	coldWorkerd := fs.Duration("cold-workerd", 0, "workerd's first call after miniflare was started")
	fs.Parse(args)
	if *out == "" || *platform == "" || *workerd == "" {
		return errors.New("-out, -platform and -workerd are required")
	}
	// One client per host name: TLS's server name is the host's.
	clients := map[string]*http.Client{}
	client := func(host string) *http.Client {
		if clients[host] == nil {
			clients[host] = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 2, DisableCompression: true,
				TLSClientConfig: &tls.Config{InsecureSkipVerify: true, ServerName: host}}} // the edge's own CA, like wrk
		}
		return clients[host]
	}
	targets := []fnTarget{{"platform", "platform (Go)", *platform + "/hello", *host, *platformPID, *coldPlatform}}
	if *hostAS != "" {
		targets = append(targets, fnTarget{"platform-as", "platform (AssemblyScript)", *platform + "/hello", *hostAS, *platformPID, *coldPlatformAS})
	}
	targets = append(targets, fnTarget{"workerd", "workerd", *workerd + "/hello", "", *workerdPID, *coldWorkerd})
	var runs []fnRun
	for round := 1; round <= *rounds; round++ {
		ts := slices.Clone(targets)
		if round%2 == 0 {
			slices.Reverse(ts)
		}
		logf("functions: round %d of %d", round, *rounds)
		for _, t := range ts {
			fnLoad(client(t.host), t, max(1, *calls/10)) // warm-up
			r := fnLoad(client(t.host), t, *calls)
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
	wm := byTarget("workerd")
	ratio := func(pm map[int]fnRun, f func(fnRun) float64) float64 {
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
	p50 := func(r fnRun) float64 { return r.P50us }
	p99 := func(r fnRun) float64 { return r.P99us }
	cpu := func(r fnRun) float64 { return r.CPUus }
	var b strings.Builder
	b.WriteString("### Functions: the platform's WASI functions against the same handler in workerd\n\n")
	fmt.Fprintf(&b, "A hello-world handler, one call at a time, %d calls a run after a tenth as many to warm up, %d rounds: the platform's through its edge (HTTPS, keep-alive; a WASI module, a fresh instance per call: the Go example, whose Go runtime starts in every instance, and, where built, the AssemblyScript one, which has no language runtime), workerd's through miniflare (HTTP, keep-alive; a JavaScript module in a warm isolate). CPU/call: the server's processes ÷ calls. Ratios: platform ÷ workerd, medians of per-round ratios (below 1.00: the platform is ahead).\n\n", *calls, *rounds)
	b.WriteString("| target | first call | warm p50 | warm p99 | CPU/call | errors |\n|---|---:|---:|---:|---:|---:|\n")
	for _, t := range targets {
		m := byTarget(t.name)
		errs := 0
		for _, r := range m {
			errs += r.Errors
		}
		fmt.Fprintf(&b, "| %s | %s | %.0f µs | %.0f µs | %.0f µs | %d |\n", t.label, t.cold.Round(time.Microsecond),
			med(m, p50), med(m, p99), med(m, cpu), errs)
	}
	b.WriteString("\n")
	for _, t := range targets[:len(targets)-1] {
		coldRatio := 0.0
		if *coldWorkerd > 0 {
			coldRatio = float64(t.cold) / float64(*coldWorkerd)
		}
		pm := byTarget(t.name)
		fmt.Fprintf(&b, "%s ÷ workerd: first call %.2f, warm p50 %.2f, warm p99 %.2f, CPU/call %.2f (target: first call and warm-call overhead at most workerd's, 1.00)\n\n",
			t.label, coldRatio, ratio(pm, p50), ratio(pm, p99), ratio(pm, cpu))
	}
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
