package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// runUpstream serves a fake OpenAI-compatible vendor on loopback: POST
// /v1/chat/completions answers a fixed completion at once, or, streamed,
// its first chunk at once, then after -gap the other -chunks and [DONE],
// flushing each; usage is reported in the plain answer, and in a last
// chunk of a stream when stream_options.include_usage asks for it (as
// OpenAI does). GET /v1/models lists the
// model. It answers any model and key, and stops on SIGINT or SIGTERM.
func runUpstream(args []string) error {
	fs := flag.NewFlagSet("upstream", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address (loopback)")
	chunks := fs.Int("chunks", 20, "chunks of a streamed answer after the first")
	gap := fs.Duration("gap", 50*time.Millisecond, "wait after a stream's first chunk: a gateway that buffers shows it in its first byte")
	fs.Parse(args)
	host, _, err := net.SplitHostPort(*addr)
	if err != nil || !net.ParseIP(host).IsLoopback() {
		return fmt.Errorf("-addr %q: a loopback address is required", *addr)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	fmt.Println(ln.Addr().String())
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[{"id":"bench-model","object":"model","created":0,"owned_by":"bench"}]}`)
	})
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model         string `json:"model"`
			Stream        bool   `json:"stream"`
			StreamOptions *struct {
				IncludeUsage bool `json:"include_usage"`
			} `json:"stream_options"`
		}
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
			http.Error(w, `{"error":{"message":"bad json","type":"invalid_request_error"}}`, 400)
			return
		}
		model, _ := json.Marshal(req.Model)
		if !req.Stream {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":"chatcmpl-bench","object":"chat.completion","created":1700000000,"model":%s,"choices":[{"index":0,"message":{"role":"assistant","content":"%s"},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":%d,"total_tokens":%d}}`,
				model, answerText(*chunks+1), *chunks+1, *chunks+13)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		rc := http.NewResponseController(w)
		chunk := func(content, finish string) {
			fin := "null"
			if finish != "" {
				fin = `"` + finish + `"`
			}
			fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":%s,\"choices\":[{\"index\":0,\"delta\":{\"content\":\"%s\"},\"finish_reason\":%s}]}\n\n", model, content, fin)
			rc.Flush()
		}
		chunk("tok0 ", "")
		select {
		case <-time.After(*gap):
		case <-r.Context().Done():
			return
		}
		for i := 1; i <= *chunks; i++ {
			fin := ""
			if i == *chunks {
				fin = "stop"
			}
			chunk("tok"+strconv.Itoa(i)+" ", fin)
		}
		if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
			fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":%s,\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":%d,\"total_tokens\":%d}}\n\n", model, *chunks+1, *chunks+13)
		}
		io.WriteString(w, "data: [DONE]\n\n")
		rc.Flush()
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func answerText(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString("tok" + strconv.Itoa(i) + " ")
	}
	return b.String()
}

// aiTarget is one way to the upstream: direct, or through a gateway.
type aiTarget struct {
	name   string
	url    string // the chat completions URL
	header http.Header
	pid    int // the gateway's process (CPU time), 0 for direct
	model  string
}

// aiRun is one line of ai.jsonl: one run of requests through one target.
type aiRun struct {
	Round    int     `json:"round"`
	Target   string  `json:"target"`
	Mode     string  `json:"mode"` // plain, stream
	Requests int     `json:"requests"`
	Errors   int     `json:"errors"`
	P50      float64 `json:"p50_us"` // whole answer
	P99      float64 `json:"p99_us"`
	FirstP50 float64 `json:"first_p50_us,omitempty"` // first content piece (stream)
	FirstP99 float64 `json:"first_p99_us,omitempty"`
	CPUus    float64 `json:"cpu_us_per_request"` // the gateway process's CPU per request
	HeaderMs float64 `json:"gateway_header_ms_p50,omitempty"`
	Buffered int     `json:"buffered"` // streams whose first piece came after the upstream's gap
}

func runAI(args []string) error {
	fs := flag.NewFlagSet("ai", flag.ExitOnError)
	out := fs.String("out", "", "results folder (ai.jsonl, ai.md)")
	direct := fs.String("direct", "", "the fake upstream's chat completions URL")
	platform := fs.String("platform", "", "the platform's compatible chat URL (…/api/ai/v1/chat/completions)")
	platformKey := fs.String("platform-key", "", "the platform's workspace key")
	platformModel := fs.String("platform-model", "llama-3.1-8b-instruct", "the model asked of the platform (its provider points at the fake upstream)")
	platformPID := fs.Int("platform-pid", 0, "the platform's process")
	portkey := fs.String("portkey", "", "Portkey's chat URL (…/v1/chat/completions)")
	portkeyPID := fs.Int("portkey-pid", 0, "Portkey's process")
	upstreamBase := fs.String("upstream-base", "", "the fake upstream's base URL as Portkey's custom host (…/v1)")
	requests := fs.Int("requests", 300, "requests of each run, one at a time")
	rounds := fs.Int("rounds", 5, "rounds, alternating the targets' order")
	gap := fs.Duration("gap", 50*time.Millisecond, "the upstream's gap after a stream's first chunk (upstream -gap)")
	fs.Parse(args)
	if *out == "" || *direct == "" {
		return errors.New("-out and -direct are required")
	}
	os.MkdirAll(*out, 0o755)
	targets := []aiTarget{{name: "direct", url: *direct, header: http.Header{}, model: "bench-model"}}
	if *platform != "" {
		targets = append(targets, aiTarget{name: "platform", url: *platform, pid: *platformPID, model: *platformModel,
			header: http.Header{"Authorization": {"Bearer " + *platformKey}}})
	}
	if *portkey != "" {
		targets = append(targets, aiTarget{name: "portkey", url: *portkey, pid: *portkeyPID, model: "bench-model",
			header: http.Header{"Authorization": {"Bearer sk-bench"}, "X-Portkey-Provider": {"openai"}, "X-Portkey-Custom-Host": {*upstreamBase}}})
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4, DisableCompression: true}, Timeout: 30 * time.Second}
	// A target that fails its check on one mode is left out of that mode
	// (and said so under the table); the direct path must pass both.
	skip := map[string]string{}
	for _, t := range targets {
		for _, mode := range []string{"plain", "stream"} {
			if err := aiCheck(client, t, mode); err != nil {
				if t.name == "direct" {
					return fmt.Errorf("%s %s: %w", t.name, mode, err)
				}
				logf("ai: %s %s left out: %v", t.name, mode, err)
				skip[t.name+" "+mode] = err.Error()
			}
		}
	}
	jf, err := os.Create(filepath.Join(*out, "ai.jsonl"))
	if err != nil {
		return err
	}
	defer jf.Close()
	var runs []aiRun
	for round := 1; round <= *rounds; round++ {
		ts := slices.Clone(targets)
		if round%2 == 0 {
			slices.Reverse(ts)
		}
		logf("ai: round %d of %d", round, *rounds)
		for _, mode := range []string{"plain", "stream"} {
			for _, t := range ts {
				if skip[t.name+" "+mode] != "" {
					continue
				}
				aiLoad(client, t, mode, *requests/10, *gap) // warm-up
				r := aiLoad(client, t, mode, *requests, *gap)
				r.Round = round
				runs = append(runs, r)
				b, _ := json.Marshal(r)
				jf.Write(append(b, '\n'))
			}
		}
	}
	table := aiTable(runs, targets, *requests, *gap)
	for _, t := range targets {
		for _, mode := range []string{"plain", "stream"} {
			if e := skip[t.name+" "+mode]; e != "" {
				table += fmt.Sprintf("%s %s was left out: its check request failed: %.300s\n\n", t.name, mode, strings.TrimSpace(e))
			}
		}
	}
	fmt.Print(table)
	return os.WriteFile(filepath.Join(*out, "ai.md"), []byte(table), 0o644)
}

func aiBody(t aiTarget, stream bool) []byte {
	b, _ := json.Marshal(map[string]any{"model": t.model, "stream": stream, "max_tokens": 64,
		"messages": []any{map[string]any{"role": "user", "content": "Say a few words about benchmarks."}}})
	return b
}

// aiCheck sends one request and checks the answer carries the upstream's
// text (and, streamed, its [DONE]).
func aiCheck(client *http.Client, t aiTarget, mode string) error {
	req, _ := http.NewRequest("POST", t.url, bytes.NewReader(aiBody(t, mode == "stream")))
	req.Header = t.header.Clone()
	req.Header.Set("Content-Type", "application/json")
	res, err := client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 || !bytes.Contains(body, []byte("tok0 ")) || (mode == "stream" && !bytes.Contains(body, []byte("[DONE]"))) {
		return fmt.Errorf("status %d, answer %.300s", res.StatusCode, body)
	}
	return nil
}

// aiLoad sends n requests one at a time and times each: the whole answer,
// and for streams the arrival of the first content piece ("tok0").
func aiLoad(client *http.Client, t aiTarget, mode string, n int, gap time.Duration) aiRun {
	r := aiRun{Target: t.name, Mode: mode, Requests: n}
	body := aiBody(t, mode == "stream")
	var whole, first, hdr []float64
	c0 := pidCPU(t.pid)
	for range n {
		req, _ := http.NewRequest("POST", t.url, bytes.NewReader(body))
		req.Header = t.header.Clone()
		req.Header.Set("Content-Type", "application/json")
		start := time.Now()
		res, err := client.Do(req)
		if err != nil {
			r.Errors++
			continue
		}
		if v := res.Header.Get("X-Service-Gateway-Ms"); v != "" {
			if ms, err := strconv.ParseFloat(v, 64); err == nil {
				hdr = append(hdr, ms)
			}
		}
		ok := res.StatusCode == 200
		if mode == "stream" {
			br := bufio.NewReader(res.Body)
			got := false
			for {
				line, err := br.ReadSlice('\n')
				if !got && bytes.Contains(line, []byte("tok0")) {
					d := time.Since(start)
					first = append(first, float64(d.Microseconds()))
					if d >= gap {
						r.Buffered++
					}
					got = true
				}
				if err != nil {
					break
				}
			}
			ok = ok && got
		} else {
			io.Copy(io.Discard, res.Body)
		}
		res.Body.Close()
		if !ok {
			r.Errors++
			continue
		}
		whole = append(whole, float64(time.Since(start).Microseconds()))
	}
	if t.pid > 0 && n > 0 {
		r.CPUus = float64((pidCPU(t.pid) - c0).Microseconds()) / float64(n)
	}
	slices.Sort(whole)
	slices.Sort(first)
	r.P50, r.P99 = percentile(whole, 50), percentile(whole, 99)
	r.FirstP50, r.FirstP99 = percentile(first, 50), percentile(first, 99)
	r.HeaderMs = median(hdr)
	return r
}

// aiTable: per mode, each target's latency (medians over rounds), the
// latency each gateway adds to the direct call (gateway − direct within a
// round, then the median), and the platform's added latency ÷ Portkey's
// (median of per-round ratios; below 1.00 the platform adds less).
func aiTable(runs []aiRun, targets []aiTarget, requests int, gap time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### AI gateway: the platform and Portkey relaying to the same fake upstream on loopback\n\n")
	fmt.Fprintf(&b, "%d requests a run, one at a time (OpenAI chat completions, max_tokens 64; streamed: 21 chunks, the first at once and the rest %v later). Added: gateway − direct in the same round, median over rounds; ratio: platform's added ÷ Portkey's, median of per-round ratios (below 1.00 the platform adds less). CPU/req: the gateway process's CPU time ÷ requests (holds on a busy machine). Buffered: streams whose first piece reached the client after the upstream's gap.\n\n", requests, gap)
	by := func(target, mode string) map[int]aiRun {
		m := map[int]aiRun{}
		for _, r := range runs {
			if r.Target == target && r.Mode == mode {
				m[r.Round] = r
			}
		}
		return m
	}
	med := func(m map[int]aiRun, f func(aiRun) float64) float64 {
		var xs []float64
		for _, r := range m {
			xs = append(xs, f(r))
		}
		return median(xs)
	}
	added := func(g, d map[int]aiRun, f func(aiRun) float64) (float64, map[int]float64) {
		per := map[int]float64{}
		var xs []float64
		for round, r := range g {
			if dr, ok := d[round]; ok {
				per[round] = f(r) - f(dr)
				xs = append(xs, per[round])
			}
		}
		return median(xs), per
	}
	ratio := func(a, c map[int]float64) string {
		var xs []float64
		for round, x := range a {
			if y, ok := c[round]; ok && y > 0 {
				xs = append(xs, x/y)
			}
		}
		if len(xs) == 0 {
			return ""
		}
		return fmt.Sprintf("%.2f", median(xs))
	}
	us := func(x float64) string { return fmt.Sprintf("%.0f µs", x) }
	b.WriteString("| mode | target | p50 | p99 | first piece p50 | added p50 | added p99 | added first p50 | CPU/req | own-time header p50 | buffered | errors |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	var targetsRows []string
	for _, mode := range []string{"plain", "stream"} {
		d := by("direct", mode)
		addedP50, addedP99, addedFirst := map[string]map[int]float64{}, map[string]map[int]float64{}, map[string]map[int]float64{}
		for _, t := range targets {
			g := by(t.name, mode)
			if len(g) == 0 {
				continue
			}
			a50, a99, af := "", "", ""
			if t.name != "direct" {
				var x float64
				x, addedP50[t.name] = added(g, d, func(r aiRun) float64 { return r.P50 })
				a50 = us(x)
				x, addedP99[t.name] = added(g, d, func(r aiRun) float64 { return r.P99 })
				a99 = us(x)
				if mode == "stream" {
					x, addedFirst[t.name] = added(g, d, func(r aiRun) float64 { return r.FirstP50 })
					af = us(x)
				}
			}
			first, cpu, hdr := "", "", ""
			if mode == "stream" {
				first = us(med(g, func(r aiRun) float64 { return r.FirstP50 }))
			}
			if t.pid > 0 {
				cpu = us(med(g, func(r aiRun) float64 { return r.CPUus }))
			}
			if h := med(g, func(r aiRun) float64 { return r.HeaderMs }); h > 0 {
				hdr = fmt.Sprintf("%.3f ms", h)
			}
			buffered, errs := 0, 0
			for _, r := range g {
				buffered += r.Buffered
				errs += r.Errors
			}
			bs := ""
			if mode == "stream" {
				bs = strconv.Itoa(buffered)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d |\n", mode, t.name,
				us(med(g, func(r aiRun) float64 { return r.P50 })), us(med(g, func(r aiRun) float64 { return r.P99 })),
				first, a50, a99, af, cpu, hdr, bs, errs)
		}
		if addedP50["platform"] != nil && addedP50["portkey"] != nil {
			quarter := func(r string) string {
				x, err := strconv.ParseFloat(r, 64)
				if err != nil {
					return ""
				}
				return verdict(x <= 0.25)
			}
			r50, r99 := ratio(addedP50["platform"], addedP50["portkey"]), ratio(addedP99["platform"], addedP99["portkey"])
			targetsRows = append(targetsRows, fmt.Sprintf("| %s | added p50 <= 1/4 of Portkey's | %s | %s |", mode, r50, quarter(r50)))
			targetsRows = append(targetsRows, fmt.Sprintf("| %s | added p99 <= 1/4 of Portkey's | %s | %s |", mode, r99, quarter(r99)))
			if mode == "stream" {
				targetsRows = append(targetsRows, fmt.Sprintf("| %s | added first-piece p50 (no buffering) | %s | |", mode, ratio(addedFirst["platform"], addedFirst["portkey"])))
			}
			pc, kc := by("platform", mode), by("portkey", mode)
			cp, ck := map[int]float64{}, map[int]float64{}
			for round, r := range pc {
				cp[round] = r.CPUus
			}
			for round, r := range kc {
				ck[round] = r.CPUus
			}
			targetsRows = append(targetsRows, fmt.Sprintf("| %s | CPU per request | %s | |", mode, ratio(cp, ck)))
		}
	}
	b.WriteString("\n")
	if len(targetsRows) > 0 {
		b.WriteString("| mode | platform ÷ Portkey | ratio | |\n|---|---|---:|---|\n")
		b.WriteString(strings.Join(targetsRows, "\n") + "\n\n")
	}
	return b.String()
}
