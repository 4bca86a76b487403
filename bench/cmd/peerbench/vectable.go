package main

import (
	"fmt"
	"sort"
	"strings"
)

// vectorTable prints the vector search comparison: builds, the recall-
// versus-speed sweep on one core and on all, the engines at matched recall,
// filtered queries, and the targets. Ratios are platform ÷ peer, medians of
// per-round ratios (above 1.00 the platform is ahead; for build time below
// 1.00 it is).
func vectorTable(runs []vecRun, order []string, efs []int, target float64, d *vecData, cores int, versions map[string]any) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### Vector search: %d x %d cosine, %d queries, recall@%d\n\n", d.n, d.dims, d.nq, d.k)
	if len(versions) > 0 {
		keys := make([]string, 0, len(versions))
		for k := range versions {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var vs []string
		for _, k := range keys {
			vs = append(vs, fmt.Sprintf("%s %v", k, versions[k]))
		}
		fmt.Fprintf(&b, "Peers: %s. ", strings.Join(vs, ", "))
	}
	fmt.Fprintf(&b, "Every engine: M 16, efConstruction 200, built with %d threads. q/s: queries per second of wall time; q/CPU-s: queries per CPU-second of the engine's process (holds on a busy machine). Ratios are platform ÷ peer, medians of per-round ratios.\n\n", cores)

	pick := func(kind, engine string, threads, ef int) []vecRun {
		var out []vecRun
		for _, r := range runs {
			if r.Kind == kind && r.Engine == engine && (threads == 0 || r.Threads == threads) && r.Ef == ef {
				out = append(out, r)
			}
		}
		return out
	}
	field := func(rs []vecRun, f func(vecRun) float64) float64 {
		xs := make([]float64, len(rs))
		for i, r := range rs {
			xs[i] = f(r)
		}
		return median(xs)
	}
	// perRound is the median over rounds of f(platform's run) ÷ f(peer's).
	perRound := func(ps, qs []vecRun, f func(vecRun) float64) float64 {
		byRound := map[int]vecRun{}
		for _, q := range qs {
			byRound[q.Round] = q
		}
		var xs []float64
		for _, p := range ps {
			if q, ok := byRound[p.Round]; ok && f(q) > 0 {
				xs = append(xs, f(p)/f(q))
			}
		}
		return median(xs)
	}
	qps, qpc := vecRun.qps, vecRun.qpc

	b.WriteString("| build | wall s | CPU s | wall platform ÷ engine | CPU platform ÷ engine |\n|---|---:|---:|---:|---:|\n")
	pb := pick("build", "platform", 0, 0)
	for _, e := range order {
		rs := pick("build", e, 0, 0)
		if len(rs) == 0 {
			continue
		}
		ratio, cratio := "", ""
		if e != "platform" && len(pb) > 0 {
			ratio = fmt.Sprintf("%.2f", pb[0].WallS/rs[0].WallS)
			cratio = fmt.Sprintf("%.2f", pb[0].CPUS/rs[0].CPUS)
		}
		fmt.Fprintf(&b, "| %s | %.1f | %.1f | %s | %s |\n", e, rs[0].WallS, rs[0].CPUS, ratio, cratio)
	}
	b.WriteString("\n")

	type matched struct {
		ef  int
		rec float64
	}
	match := map[int]map[string]matched{}
	for _, threads := range []int{1, cores} {
		name := "one core"
		if threads > 1 {
			name = fmt.Sprintf("all %d cores", threads)
		}
		fmt.Fprintf(&b, "Recall versus speed, %s:\n\n", name)
		b.WriteString("| ef | engine | recall@10 | q/s | q/CPU-s | q/s platform ÷ engine | q/CPU-s platform ÷ engine |\n|---:|---|---:|---:|---:|---:|---:|\n")
		match[threads] = map[string]matched{}
		for _, ef := range efs {
			ps := pick("query", "platform", threads, ef)
			for _, e := range order {
				rs := pick("query", e, threads, ef)
				if len(rs) == 0 {
					continue
				}
				rec := field(rs, func(r vecRun) float64 { return r.Recall })
				if m, ok := match[threads][e]; !ok && rec >= target {
					match[threads][e] = matched{ef, rec}
				} else if ok {
					_ = m
				}
				r1, r2 := "", ""
				if e != "platform" && len(ps) > 0 {
					r1 = fmt.Sprintf("%.2f", perRound(ps, rs, qps))
					r2 = fmt.Sprintf("%.2f", perRound(ps, rs, qpc))
				}
				fmt.Fprintf(&b, "| %d | %s | %.3f | %.0f | %.0f | %s | %s |\n", ef, e, rec, field(rs, qps), field(rs, qpc), r1, r2)
			}
		}
		b.WriteString("\n")
	}

	fmt.Fprintf(&b, "At matched recall (each engine at the smallest ef of the sweep reaching recall@10 %.2f):\n\n", target)
	b.WriteString("| cores | engine | ef | recall@10 | q/s | q/CPU-s | q/s platform ÷ engine | q/CPU-s platform ÷ engine |\n|---:|---|---:|---:|---:|---:|---:|---:|\n")
	targets := []string{}
	for _, threads := range []int{1, cores} {
		pm, pok := match[threads]["platform"]
		for _, e := range order {
			m, ok := match[threads][e]
			if !ok {
				fmt.Fprintf(&b, "| %d | %s | – | below %.2f at every ef | | | | |\n", threads, e, target)
				continue
			}
			rs := pick("query", e, threads, m.ef)
			r1, r2 := "", ""
			if e != "platform" && pok {
				ps := pick("query", "platform", threads, pm.ef)
				x1, x2 := perRound(ps, rs, qps), perRound(ps, rs, qpc)
				r1, r2 = fmt.Sprintf("%.2f", x1), fmt.Sprintf("%.2f", x2)
				if e == "hnswlib" && threads == 1 {
					targets = append(targets, fmt.Sprintf("| recall@10 >= %.2f at >= 1.0x hnswlib's q/s, one core | %s q/s, %s q/CPU-s | %s |", target, r1, r2, verdict(x2 >= 1.0)))
				}
			}
			fmt.Fprintf(&b, "| %d | %s | %d | %.3f | %.0f | %.0f | %s | %s |\n", threads, e, m.ef, m.rec, field(rs, qps), field(rs, qpc), r1, r2)
		}
	}
	b.WriteString("\n")

	b.WriteString("Filtered queries, 1 % of the vectors accepted (the true top 10 of those is the ground truth):\n\n")
	b.WriteString("| cores | engine | how | recall@10 | q/s | q/CPU-s | q/s platform ÷ engine | q/CPU-s platform ÷ engine |\n|---:|---|---|---:|---:|---:|---:|---:|\n")
	for _, threads := range []int{1, cores} {
		ps := pick("filtered", "platform", threads, 0)
		for _, e := range order {
			rs := pick("filtered", e, threads, 0)
			if len(rs) == 0 {
				continue
			}
			rec := field(rs, func(r vecRun) float64 { return r.Recall })
			r1, r2 := "", ""
			if e != "platform" && len(ps) > 0 {
				r1 = fmt.Sprintf("%.2f", perRound(ps, rs, qps))
				r2 = fmt.Sprintf("%.2f", perRound(ps, rs, qpc))
			}
			if e == "platform" && threads == 1 {
				targets = append(targets, fmt.Sprintf("| filtered (1 %%) recall@10 >= 0.95 | %.3f | %s |", rec, verdict(rec >= 0.95)))
			}
			fmt.Fprintf(&b, "| %d | %s | %s | %.3f | %.0f | %.0f | %s | %s |\n", threads, e, rs[0].How, rec, field(rs, qps), field(rs, qpc), r1, r2)
		}
	}
	b.WriteString("\n")
	if hb := pick("build", "hnswlib", 0, 0); len(hb) > 0 && len(pb) > 0 {
		x := pb[0].WallS / hb[0].WallS
		targets = append(targets, fmt.Sprintf("| build time <= 1.5x hnswlib's | %.2f (CPU %.2f) | %s |", x, pb[0].CPUS/hb[0].CPUS, verdict(x <= 1.5)))
	}
	if len(targets) > 0 {
		b.WriteString("| target | platform ÷ hnswlib | |\n|---|---:|---|\n")
		b.WriteString(strings.Join(targets, "\n") + "\n\n")
	}
	return b.String()
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "**not met**"
}
