package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// wrkStats is what bench/wrk.lua prints when a run is done; latencies in
// microseconds.
type wrkStats struct {
	Requests   float64 `json:"requests"`
	DurationUS float64 `json:"duration_us"`
	Bytes      float64 `json:"bytes"`
	Connect    float64 `json:"connect"`
	Read       float64 `json:"read"`
	Write      float64 `json:"write"`
	Status     float64 `json:"status"`
	Timeout    float64 `json:"timeout"`
	P50        float64 `json:"p50"`
	P90        float64 `json:"p90"`
	P99        float64 `json:"p99"`
	P999       float64 `json:"p999"`
	Max        float64 `json:"max"`
}

// result is one line of results.jsonl: one load run of one server.
type result struct {
	Round     int     `json:"round"`
	Workload  string  `json:"workload"`
	Proto     string  `json:"proto"`
	Server    string  `json:"server"`
	Expect    string  `json:"expect"` // "ok" (2xx/3xx) or "refused" (4xx)
	CPUServer float64 `json:"cpu_server"`
	CPUClient float64 `json:"cpu_client"`
	Steal     float64 `json:"steal_server"`
	// StealClient and Retries: the load generator's core's steal, and how
	// many runs of this cell before this one were discarded for steal or
	// for the kernel's memory-management threads (bench/lib/load.sh,
	// STEAL_MAX, MM_MAX); MM is those threads' CPU (kdamond above all), in
	// % of a core. Absent in older results.
	StealClient float64 `json:"steal_client"`
	Retries     int     `json:"steal_retries"`
	MM          float64 `json:"mm_cpu"`
	// GC is how many GC cycles the edge completed during the run (-1 for
	// another server; 0 in older results).
	GC int `json:"gc_cycles"`
	// DAMONWait is how long the run waited for a burst of the kernel's
	// DAMON to end before it started (bench/lib/load.sh, damon_wait): -1
	// when it did not wait (DAMON_ALIGN=0, no kdamond), -2 when no burst
	// came; nil in older results.
	DAMONWait *int    `json:"damon_wait_ms"`
	Foreign   float64 `json:"foreign_cpu"`
	// ServerCPUMS is the CPU time (user and system, ms) the server's own
	// processes used during the run (bench/lib/load.sh, server_ticks: the
	// edge; nginx's master and worker; Varnish's and hitch's processes);
	// nil in older results.
	ServerCPUMS *float64 `json:"cpu_server_ms"`
	Wrk         wrkStats `json:"wrk"`
}

func (r result) rps() float64 { return r.Wrk.Requests / (r.Wrk.DurationUS / 1e6) }

// cpuPerRequest is the server's CPU time per request, in µs: its
// processes' own CPU time over the run (which holds when other work shares
// the core), or, in older results without it, the server core's busy share
// over the run's duration.
func (r result) cpuPerRequest() float64 {
	if r.Wrk.Requests == 0 {
		return 0
	}
	if r.ServerCPUMS != nil {
		return *r.ServerCPUMS * 1000 / r.Wrk.Requests
	}
	return r.CPUServer / 100 * r.Wrk.DurationUS / r.Wrk.Requests
}

// valid reports whether every answer was the expected kind and no socket
// error happened.
func (r result) valid() bool {
	w := r.Wrk
	if w.Requests == 0 || w.Connect+w.Read+w.Write+w.Timeout > 0 {
		return false
	}
	if r.Expect == "refused" {
		return w.Status == w.Requests
	}
	return w.Status == 0
}

// workloads in table order, with their titles.
var workloads = []struct{ key, title string }{
	{"page4k", "1 cached 4 KB page, Shield on"},
	{"file1m", "2 1 MB static file"},
	{"deny", "3a refused by the deny list"},
	{"country", "3b refused by country"},
	{"proxy", "4 forwarded to an origin"},
	{"redirect", "plain HTTP redirect to HTTPS"},
}

// protos in table order: HTTP/1.1 over TLS (wrk), HTTP/1.1 over TLS and
// HTTP/2 by h2load (h2load-h1, h2load: many requests in flight), HTTP/2
// over TLS and HTTP/3 (bench/cmd/loadgen), plain HTTP/1.1 (wrk). Each
// protocol's rows have their own ratios, against the edge on the same
// protocol.
var protos = []string{"https", "h2load-h1", "h2load", "h2", "h3", "http"}

// protoTitles are the proto column's words.
var protoTitles = map[string]string{"https": "HTTPS", "h2load-h1": "HTTPS (h2load --h1)", "h2load": "HTTP/2 (h2load)",
	"h2": "HTTP/2", "h3": "HTTP/3", "http": "HTTP"}

// servers in table order.
var servers = []string{"edge", "nginx", "nginx+rules", "varnish", "caddy"}

type cellKey struct{ workload, proto, server string }

// runTable prints the markdown table of a results file: per server and
// workload the median over rounds of req/s, p50 and p99, and the median of
// the per-round ratios of the edge to each peer (same workload; HTTPS for
// the edge, whose plain HTTP only redirects).
func runTable(args []string, w io.Writer) error {
	fs := flag.NewFlagSet("table", flag.ContinueOnError)
	in := fs.String("in", "", "results.jsonl")
	if err := fs.Parse(args); err != nil {
		return err
	}
	f, err := os.Open(*in)
	if err != nil {
		return err
	}
	defer f.Close()
	cells := map[cellKey][]result{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var r result
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			return fmt.Errorf("table: %s: %w", *in, err)
		}
		k := cellKey{r.Workload, r.Proto, r.Server}
		cells[k] = append(cells[k], r)
	}
	if err := sc.Err(); err != nil {
		return err
	}
	printTable(w, cells)
	printTargets(w, cells)
	return nil
}

func printTable(w io.Writer, cells map[cellKey][]result) {
	fmt.Fprintln(w, "| workload | proto | server | req/s | CPU µs/req | p50 ms | p99 ms | edge ÷ peer, req/s | edge ÷ peer, p99 | req/s min–max | cores busy srv/cli |")
	fmt.Fprintln(w, "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	notes := map[string]bool{}
	reruns, discarded, runs, aligned := 0, 0, 0, 0
	for _, wl := range workloads {
		for _, proto := range protos {
			for _, s := range servers {
				rs := cells[cellKey{wl.key, proto, s}]
				if len(rs) == 0 {
					continue
				}
				edge := edgeCell(cells, wl.key, proto)
				ratio, p99ratio := "—", "—"
				switch {
				case s == "edge":
				case edge == nil:
					ratio, p99ratio = "n/a¹", "n/a¹"
					notes["1"] = true
				default:
					ratio = fmt.Sprintf("%.2f", medianRatio(edge, rs, func(r result) float64 { return r.rps() }))
					p99ratio = fmt.Sprintf("%.2f", medianRatio(edge, rs, func(r result) float64 { return r.Wrk.P99 }))
				}
				mark := ""
				for _, r := range rs {
					if !r.valid() {
						mark = " ⚠²"
						notes["2"] = true
					}
				}
				cli := median(rs, func(r result) float64 { return r.CPUClient })
				busy := fmt.Sprintf("%.0f/%.0f %%", median(rs, func(r result) float64 { return r.CPUServer }), cli)
				if cli >= 90 {
					busy += " ³"
					notes["3"] = true
				}
				gcRuns := 0
				for _, r := range rs {
					runs++
					if r.DAMONWait != nil && *r.DAMONWait >= 0 {
						aligned++
					}
					discarded += r.Retries
					if r.Retries > 0 {
						reruns++
					}
					if r.GC > 0 {
						gcRuns++
					}
				}
				if _, hi := minMax(rs, func(r result) float64 { return max(r.Steal, r.StealClient, r.Foreign, r.MM) }); hi >= 5 {
					busy += " ⁴"
					notes["4"] = true
				}
				if gcRuns > 0 {
					busy += fmt.Sprintf(" ⁵ %d/%d", gcRuns, len(rs))
					notes["5"] = true
				}
				lo, hi := minMax(rs, func(r result) float64 { return r.rps() })
				fmt.Fprintf(w, "| %s | %s | %s%s | %s | %.1f | %s | %s | %s | %s | %s–%s | %s |\n",
					wl.title, protoTitles[proto], s, mark,
					num(median(rs, func(r result) float64 { return r.rps() })),
					median(rs, result.cpuPerRequest),
					ms(median(rs, func(r result) float64 { return r.Wrk.P50 })),
					ms(median(rs, func(r result) float64 { return r.Wrk.P99 })),
					ratio, p99ratio, num(lo), num(hi), busy)
			}
		}
	}
	fmt.Fprintln(w)
	if notes["1"] {
		fmt.Fprintln(w, "¹ The edge's plain-HTTP listener only redirects to HTTPS, so it has no plain-HTTP row for this workload; compare its HTTPS row. Plain-HTTP rows of the peers show what TLS costs them.")
	}
	if notes["2"] {
		fmt.Fprintln(w, "² Some run of this cell had socket errors or answers of an unexpected status (see results.jsonl): do not trust it.")
	}
	if notes["3"] {
		fmt.Fprintln(w, "³ The load generator's core was at least 90 % busy: wrk (h2load, loadgen) may be the limit, so req/s is a lower bound and latency includes client queueing; CPU per request still holds.")
	}
	if notes["4"] {
		fmt.Fprintln(w, "⁴ In some run of this cell other processes on the machine used at least 5 % of a core, or the hypervisor (steal) or the kernel's memory-management threads (kdamond) took 5 % of a core: expect noise.")
	}
	if notes["5"] {
		fmt.Fprintln(w, "⁵ The edge ran a GC cycle during that many of this cell's runs (its heap grows with the other workloads' allocations: HTTP/2, HTTP/3); a cycle's marking shares the one core with the requests.")
	}
	if discarded > 0 {
		fmt.Fprintf(w, "%d of the %d runs kept are re-runs: %d runs were discarded because the hypervisor took more than STEAL_MAX %% of a core during them, or the kernel's memory-management threads (kdamond) more than MM_MAX %% (bench/README.md).\n",
			reruns, runs, discarded)
	}
	if aligned > 0 {
		fmt.Fprintf(w, "%d of the %d runs started as a burst of the kernel's DAMON (kdamond, every ~5 s) ended, so that the next one, about 5 s later, falls outside them (DAMON_ALIGN; mm_cpu in results.jsonl says where one did not).\n", aligned, runs)
	}
	fmt.Fprintln(w, "Ratios are medians of per-round ratios (each round runs every server once, alternating order); edge ÷ peer p99 below 1.00 means the edge's p99 is lower (better). CPU µs/req: the server's own processes' CPU time during a run ÷ its requests, median over rounds.")
}

// metric is a figure of a run compared by a target.
type metric struct {
	name string
	of   func(result) float64
	// lowerWins: less is better (CPU per request, p99). A target's ratio
	// of such a metric is other ÷ edge, unless the target bounds it from
	// above (p99: edge ÷ other, at most the limit).
	lowerWins bool
	format    func(float64) string
}

var (
	reqRate = metric{"req/s", result.rps, false, num}
	cpuReq  = metric{"CPU per request", result.cpuPerRequest, true, func(v float64) string { return fmt.Sprintf("%.1f µs", v) }}
	p99     = metric{"p99", func(r result) float64 { return r.Wrk.P99 }, true, func(v float64) string { return ms(v) + " ms" }}
)

// target is one speed target (bench/README.md), or a comparison shown
// without one (limit 0): a metric of the edge on one cell against another
// cell (a peer on the same protocol, or the edge on another).
type target struct {
	what       string // the comparison, in words
	workload   string
	proto      string // the edge's
	peer       string // server of the other cell
	peerProto  string // protocol of the other cell
	m          metric
	limit      float64 // the ratio's bound; 0: no target
	atMost     bool    // the ratio must be at most limit (p99)
	ratioWords string  // how the ratio is taken
}

// targets are the edge's speed targets, over the protocols browsers speak
// (bench/README.md "Targets and results"). Ratios are taken so that above
// 1 the edge is ahead, except p99 (edge ÷ peer, at most the limit): req/s
// edge ÷ peer, CPU per request peer ÷ edge.
var targets = []target{
	{"cached page, HTTPS (wrk)", "page4k", "https", "nginx", "https", reqRate, 1.2, false, "edge ÷ nginx"},
	{"cached page, HTTPS (wrk)", "page4k", "https", "nginx", "https", cpuReq, 1.2, false, "nginx ÷ edge"},
	{"cached page, HTTPS (wrk)", "page4k", "https", "nginx", "https", p99, 1.2, true, "edge ÷ nginx"},
	{"cached page, HTTPS (wrk)", "page4k", "https", "caddy", "https", reqRate, 2.0, false, "edge ÷ Caddy"},
	{"cached page, HTTP/2 (h2load)", "page4k", "h2load", "nginx", "h2load", reqRate, 1.2, false, "edge ÷ nginx"},
	{"cached page, HTTP/2 (h2load)", "page4k", "h2load", "nginx", "h2load", cpuReq, 1.2, false, "nginx ÷ edge"},
	{"cached page, HTTP/2 (h2load) against the edge's HTTP/1.1 (h2load --h1)", "page4k", "h2load", "edge", "h2load-h1", cpuReq, 1.0, false, "HTTP/1.1 ÷ HTTP/2"},
	{"cached page, HTTP/2 (h2load) against the edge's HTTP/1.1 (h2load --h1)", "page4k", "h2load", "edge", "h2load-h1", reqRate, 0, false, "HTTP/2 ÷ HTTP/1.1"},
	{"cached page, HTTP/2 (h2load) against the edge's HTTPS (wrk)", "page4k", "h2load", "edge", "https", cpuReq, 0, false, "HTTPS ÷ HTTP/2"},
	{"cached page, HTTP/2 (h2load)", "page4k", "h2load", "caddy", "h2load", reqRate, 0, false, "edge ÷ Caddy"},
	{"cached page, HTTP/2 (h2load)", "page4k", "h2load", "caddy", "h2load", cpuReq, 0, false, "Caddy ÷ edge"},
	{"forwarding, HTTPS (wrk)", "proxy", "https", "nginx", "https", reqRate, 1.0, false, "edge ÷ nginx"},
	{"forwarding, HTTPS (wrk)", "proxy", "https", "nginx", "https", cpuReq, 1.0, false, "nginx ÷ edge"},
	{"cached page, HTTP/3 (loadgen)", "page4k", "h3", "caddy", "h3", reqRate, 0, false, "edge ÷ Caddy"},
	{"cached page, HTTP/3 (loadgen)", "page4k", "h3", "caddy", "h3", cpuReq, 0, false, "Caddy ÷ edge"},
	{"cached page, HTTP/3 against the edge's HTTP/2 (loadgen)", "page4k", "h3", "edge", "h2", cpuReq, 0, false, "HTTP/2 ÷ HTTP/3"},
	{"forwarding, HTTP/3 (loadgen)", "proxy", "h3", "caddy", "h3", reqRate, 0, false, "edge ÷ Caddy"},
	{"forwarding, HTTP/3 (loadgen)", "proxy", "h3", "caddy", "h3", cpuReq, 0, false, "Caddy ÷ edge"},
}

// ratio is the target's median of per-round ratios, oriented as its
// ratioWords say, and the number of rounds paired.
func (t target) ratio(edge, other []result) (float64, int) {
	if t.m.lowerWins && !t.atMost {
		return medianRatio(other, edge, t.m.of), pairs(edge, other)
	}
	return medianRatio(edge, other, t.m.of), pairs(edge, other)
}

// printTargets prints the speed targets (bench/README.md) measured in
// cells, with their verdicts, and the edge's CPU per request on the
// cached page over each protocol measured.
func printTargets(w io.Writer, cells map[cellKey][]result) {
	header := false
	for _, t := range targets {
		edge := cells[cellKey{t.workload, t.proto, "edge"}]
		other := cells[cellKey{t.workload, t.peerProto, t.peer}]
		if len(edge) == 0 || len(other) == 0 {
			continue
		}
		if !header {
			fmt.Fprintln(w)
			fmt.Fprintln(w, "Targets: medians of per-round ratios, taken so that above 1.00 the edge is ahead (p99: at most the limit); CPU per request is the server's own CPU time ÷ its requests.")
			fmt.Fprintln(w)
			fmt.Fprintln(w, "| comparison | metric | edge | other | ratio | median | target | rounds | |")
			fmt.Fprintln(w, "|---|---|---:|---:|---|---:|---|---:|---|")
			header = true
		}
		got, n := t.ratio(edge, other)
		bound, verdict, shown := "—", "no target", fmt.Sprintf("%.2f", got)
		if t.limit > 0 {
			cmp := ">="
			if t.atMost {
				cmp = "<="
			}
			bound = fmt.Sprintf("%s %.1f", cmp, t.limit)
			verdict = "met"
			if t.atMost && got > t.limit || !t.atMost && got < t.limit {
				verdict = "MISSED"
			}
		}
		if got == 0 { // a figure older results lack
			shown, verdict = "—", "not measured"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %d | %s |\n", t.what, t.m.name,
			t.m.format(median(edge, t.m.of)), t.m.format(median(other, t.m.of)), t.ratioWords, shown, bound, n, verdict)
	}
	var costs []string
	for _, p := range protos {
		if rs := cells[cellKey{"page4k", p, "edge"}]; len(rs) > 0 {
			costs = append(costs, fmt.Sprintf("%s %.1f µs", protoTitles[p], median(rs, result.cpuPerRequest)))
		}
	}
	if len(costs) > 1 {
		fmt.Fprintf(w, "\nThe edge's CPU per request on the cached page (medians over rounds): %s.\n", strings.Join(costs, ", "))
	}
}

// pairs counts the rounds in which both edge and peer ran.
func pairs(edge, peer []result) int {
	rounds := map[int]bool{}
	for _, r := range edge {
		rounds[r.Round] = true
	}
	n := 0
	for _, p := range peer {
		if rounds[p.Round] {
			n++
		}
	}
	return n
}

// edgeCell returns the edge's runs to compare a peer's (workload, proto)
// with: the same proto, or for a workload the edge serves only over HTTPS,
// none for the plain-HTTP peers.
func edgeCell(cells map[cellKey][]result, workload, proto string) []result {
	return cells[cellKey{workload, proto, "edge"}]
}

// medianRatio is the median over rounds of f(edge)/f(peer), pairing runs of
// the same round; a pair where either figure is missing (0) is left out,
// and with none left it is 0.
func medianRatio(edge, peer []result, f func(result) float64) float64 {
	byRound := map[int]result{}
	for _, r := range edge {
		byRound[r.Round] = r
	}
	var ratios []float64
	for _, p := range peer {
		if e, ok := byRound[p.Round]; ok && f(p) > 0 && f(e) > 0 {
			ratios = append(ratios, f(e)/f(p))
		}
	}
	return medianOf(ratios)
}

func median(rs []result, f func(result) float64) float64 {
	vs := make([]float64, 0, len(rs))
	for _, r := range rs {
		vs = append(vs, f(r))
	}
	return medianOf(vs)
}

func medianOf(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	vs = slices.Clone(vs)
	slices.Sort(vs)
	if len(vs)%2 == 1 {
		return vs[len(vs)/2]
	}
	return (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
}

func minMax(rs []result, f func(result) float64) (lo, hi float64) {
	for i, r := range rs {
		v := f(r)
		if i == 0 || v < lo {
			lo = v
		}
		if i == 0 || v > hi {
			hi = v
		}
	}
	return lo, hi
}

// num formats a rate with thousands separators.
func num(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// ms formats microseconds as milliseconds.
func ms(us float64) string {
	switch {
	case us >= 10000:
		return fmt.Sprintf("%.1f", us/1000)
	case us >= 1000:
		return fmt.Sprintf("%.2f", us/1000)
	default:
		return fmt.Sprintf("%.3f", us/1000)
	}
}
