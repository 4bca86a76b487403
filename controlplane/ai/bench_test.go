package ai

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/ai/provider"
	"github.com/svcplatform/platform/controlplane/ai/upstreamtest"
	"github.com/svcplatform/platform/controlplane/plans"
)

// BenchmarkOverhead measures the gateway's own cost in one run: the same
// request sent to the mock upstream directly and through the gateway
// (authentication, validation, switches, rate limit, routing, the
// reservation and the exact charge on the in-memory ledger, the upstream
// call, history buffering), plain and streamed (20 chunks). Reported:
// p50/p99 latency in µs and allocations per request; the README records
// the difference.
//
//	go test -run '^$' -bench Overhead -benchtime 2000x ./controlplane/ai/
func BenchmarkOverhead(b *testing.B) {
	// History is written as the platform writes it: once a second, in the
	// background (the tests' harness holds it for an hour instead).
	flushed := func(c *Config) { c.FlushEvery = DefaultFlushEvery }
	e := newEnv(b, envOptions{included: 1_000_000 * MicrosPerDollar, balance: 1, configure: flushed})
	// real: the same gateway on controlplane/billing's SQLite ledger (a
	// Reserve and a Settle decided in memory, committed in batches by its
	// writer), as the platform runs it.
	real := newEnv(b, envOptions{realLedger: true, balance: 1_000_000 * MicrosPerDollar, configure: flushed})
	words := strings.Repeat("word ", 20)
	e.openai.Set("gpt-4.1-mini", upstreamtest.Reply{Text: words, InputTokens: 10, OutputTokens: 20})
	real.openai.Set("gpt-4.1-mini", upstreamtest.Reply{Text: words, InputTokens: 10, OutputTokens: 20})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	direct := []byte(`{"model":"gpt-4.1-mini","messages":[{"role":"user","content":"hello"}],"max_tokens":64}`)
	directStream := []byte(`{"model":"gpt-4.1-mini","messages":[{"role":"user","content":"hello"}],"max_tokens":64,"stream":true,"stream_options":{"include_usage":true}}`)
	gateway := []byte(`{"model":"gpt-4.1-mini","prompt":"hello","max_tokens":64}`)
	gatewayStream := []byte(`{"model":"gpt-4.1-mini","prompt":"hello","max_tokens":64,"stream":true}`)
	// The fake clock moves by the plan's rate-limit interval per request
	// (100 ms on pro's 600 a minute): the workspace sends at exactly the
	// most it may, as a busy real one does. (It moved one second before,
	// ten times a real workspace's pace, which refreshed the 30-second
	// key cache every 30 requests instead of every 300.)
	interval := time.Minute / time.Duration(plans.Of(plans.Pro).AIRequestsPerMinute)
	run := func(b *testing.B, e *env, url, key string, body []byte, stream bool) {
		lat := make([]time.Duration, 0, b.N)
		b.ReportAllocs()
		cpu0 := cpuTime()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			e.Clock.Advance(interval) // the most the rate limit admits
			start := time.Now()
			req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Content-Type", "application/json")
			res, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			if stream {
				sc := bufio.NewScanner(res.Body)
				for sc.Scan() {
				}
			} else {
				io.Copy(io.Discard, res.Body)
			}
			res.Body.Close()
			if res.StatusCode != 200 {
				b.Fatalf("status %d", res.StatusCode)
			}
			lat = append(lat, time.Since(start))
		}
		b.StopTimer()
		// The process's CPU time per request (client, mock upstream,
		// gateway and its background writers and GC): less at the mercy
		// of other processes' load than latency is.
		b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	}
	// proxy is the floor of any HTTP gateway: a handler that only relays
	// the body to the mock upstream and the answer back (the second
	// loopback hop, no authentication, no JSON, no money), so that
	// gateway minus proxy is what the gateway's own work costs.
	up := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: MaxIdleUpstreamConns}}
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req, _ := http.NewRequestWithContext(r.Context(), "POST", e.openai.BaseURL()+"/chat/completions", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer sk-openai")
		req.Header.Set("Content-Type", "application/json")
		res, err := up.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer res.Body.Close()
		w.Header().Set("Content-Type", res.Header.Get("Content-Type"))
		w.WriteHeader(res.StatusCode)
		io.Copy(w, res.Body)
	}))
	defer proxy.Close()
	b.Run("direct/plain", func(b *testing.B) { run(b, e, e.openai.BaseURL()+"/chat/completions", "sk-openai", direct, false) })
	b.Run("proxy/plain", func(b *testing.B) { run(b, e, proxy.URL, "", direct, false) })
	b.Run("gateway/plain", func(b *testing.B) { run(b, e, e.srv.URL+"/api/ai/chat", ownerKey, gateway, false) })
	b.Run("gateway/plain-sqlite-ledger", func(b *testing.B) { run(b, real, real.srv.URL+"/api/ai/chat", ownerKey, gateway, false) })
	b.Run("direct/stream20", func(b *testing.B) { run(b, e, e.openai.BaseURL()+"/chat/completions", "sk-openai", directStream, true) })
	b.Run("gateway/stream20", func(b *testing.B) { run(b, e, e.srv.URL+"/api/ai/chat", ownerKey, gatewayStream, true) })
}

// BenchmarkChunk is the gateway's cost per streamed piece alone: writing one
// native delta event and one compatible chunk.
func BenchmarkChunk(b *testing.B) {
	w := &discardWriter{h: http.Header{}}
	ns := newNativeSink(w)
	cs := &compatSink{w: w, rc: http.NewResponseController(w), buf: make([]byte, 0, 512)}
	cs.Meta(Meta{ID: "air_x", Model: "gpt-4.1-mini"})
	b.Run("native", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ns.Delta(deltaOf("word "))
		}
	})
	b.Run("compatible", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			cs.Delta(deltaOf("word "))
		}
	})
}

type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardWriter) WriteHeader(int)             {}
func (d *discardWriter) Flush()                      {}

func deltaOf(s string) provider.Delta { return provider.Delta{Text: s} }
