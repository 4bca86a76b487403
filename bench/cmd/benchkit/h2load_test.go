package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// h2loadOut is h2load 1.52's output of a run (-D 2 --warm-up-time 1,
// -c 64 -m 10 against nginx), with proto, the requests line and the
// status line filled in by the tests.
const h2loadOut = `starting benchmark...
spawning thread #0: 64 total client(s). Timing-based test with 1s of warm-up time and 2s of main duration for measurements.
TLS Protocol: TLSv1.3
Cipher: TLS_AES_128_GCM_SHA256
Server Temp Key: X25519 253 bits
Application protocol: PROTO
Warm-up phase is over for thread #0.
Main benchmark duration is started for thread #0.
Main benchmark duration is over for thread #0. Stopping all clients.
Stopped all clients for thread #0

finished in 2.12s, 30672.00 req/s, 123.53MB/s
REQUESTS
STATUS
traffic: 257.76MB (270276224) total, 6.65MB (6976000) headers (space savings 39.11%), 250.00MB (262144000) data
                     min         max         mean         sd        +/- sd
time for request:       87us     58.48ms     13.68ms      8.69ms    84.54%
time for connect:     2.96ms     61.03ms     55.42ms     14.11ms    92.19%
time to 1st byte:    57.40ms     75.43ms     70.18ms      4.13ms    82.81%
req/s           :     583.16      612.67      592.76        8.26    65.63%
`

func h2loadOutput(proto, requests, status string) string {
	return strings.NewReplacer("PROTO", proto, "REQUESTS", requests, "STATUS", status).Replace(h2loadOut)
}

const (
	okRequests = "requests: 61344 total, 61984 started, 61344 done, 61344 succeeded, 0 failed, 0 errored, 0 timeout"
	okStatus   = "status codes: 61344 2xx, 0 3xx, 0 4xx, 0 5xx"
)

func TestParseH2load(t *testing.T) {
	for _, tc := range []struct {
		name    string
		out     string
		want    h2loadSummary
		wantErr string
	}{
		{"h2", h2loadOutput("h2", okRequests, okStatus), h2loadSummary{Protocol: "h2", Rate: 30672, Duration: 2120 * time.Millisecond,
			Done: 61344, Status: [4]int64{61344, 0, 0, 0}, Bytes: 270276224, DataBytes: 262144000}, ""},
		{"refused and reset", h2loadOutput("http/1.1", "requests: 100 total, 110 started, 100 done, 0 succeeded, 100 failed, 3 errored, 1 timeout",
			"status codes: 0 2xx, 0 3xx, 97 4xx, 0 5xx"), h2loadSummary{Protocol: "http/1.1", Rate: 30672, Duration: 2120 * time.Millisecond,
			Done: 100, Failed: 100, Errored: 3, Timeout: 1, Status: [4]int64{0, 0, 97, 0}, Bytes: 270276224, DataBytes: 262144000}, ""},
		{"no summary", "starting benchmark...\nNo protocol negotiated. Fallback behaviour may be activated\n", h2loadSummary{}, "no summary"},
		{"bad requests line", h2loadOutput("h2", "requests: many total", okStatus), h2loadSummary{}, "requests: many total"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseH2load(strings.NewReader(tc.out))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one naming %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("summary\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestRunH2load: the BENCHJSON line of a run, its request rate h2load's
// own (requests ÷ the main duration, not the wall time), its percentiles
// from the per-request log; -check's status and body size; a protocol
// other than the one asked for refused.
func TestRunH2load(t *testing.T) {
	dir := t.TempDir()
	writeLog := func(name string, lines ...string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var lines []string
	for i := 1; i <= 1000; i++ { // durations 1..1000 µs
		lines = append(lines, "1795833783955859\t200\t"+itoa(i))
	}
	runLog := writeLog("run.log", lines...)
	checkLog := writeLog("check.log", "1795833783892906\t200\t279")

	for _, tc := range []struct {
		name    string
		args    []string
		out     string
		want    string // in the output
		wantErr string
	}{
		{"run", []string{"-log", runLog}, h2loadOutput("h2", okRequests, okStatus),
			`BENCHJSON {"requests":61344,"duration_us":2000000,"bytes":270276224,"connect":0,"read":0,"write":0,"status":0,"timeout":0,"p50":500,"p90":900,"p99":990,"p999":999,"max":1000}`, ""},
		{"run refused", []string{"-proto", "http/1.1"}, h2loadOutput("http/1.1", "requests: 100 total, 100 started, 100 done, 0 succeeded, 100 failed, 2 errored, 0 timeout",
			"status codes: 0 2xx, 0 3xx, 98 4xx, 0 5xx"), `"read":2,"write":0,"status":98,"timeout":0,`, ""},
		{"check", []string{"-check", "-log", checkLog}, h2loadOutput("h2", "requests: 1 total, 1 started, 1 done, 1 succeeded, 0 failed, 0 errored, 0 timeout",
			"status codes: 1 2xx, 0 3xx, 0 4xx, 0 5xx"), "200 262144000\n", ""},
		{"check without a log", []string{"-check"}, h2loadOutput("h2", "requests: 1 total, 1 started, 1 done, 1 succeeded, 0 failed, 0 errored, 0 timeout",
			"status codes: 1 2xx, 0 3xx, 0 4xx, 0 5xx"), "", "want one of each"},
		{"HTTP/1.1 where HTTP/2 is asked", nil, h2loadOutput("http/1.1", okRequests, okStatus), "", `negotiated "http/1.1", not "h2"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			err := runH2load(tc.args, strings.NewReader(tc.out), &b)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one naming %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), tc.want) {
				t.Errorf("output %q lacks %q", b.String(), tc.want)
			}
			if line, ok := strings.CutPrefix(b.String(), "BENCHJSON "); ok {
				var r result
				if err := json.Unmarshal([]byte(`{"wrk":`+line+`}`), &r); err != nil {
					t.Fatalf("the table cannot read %q: %v", line, err)
				}
			}
		})
	}
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}
