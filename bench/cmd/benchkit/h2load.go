package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// h2load: the HTTP/2 rows measured by h2load (Debian nghttp2-client), a
// client made for HTTP/2, and the edge's HTTP/1.1 row at the same number
// of requests in flight (h2load --h1). h2load prints a summary, not JSON;
// runH2load turns that summary and its per-request log (--log-file) into
// the BENCHJSON line of bench/wrk.lua, so `benchkit table` reads every
// load tool alike.
//
// The summary lines read (h2load 1.52):
//
//	Application protocol: h2
//	finished in 3.00s, 71062.33 req/s, 290.10MB/s
//	requests: 213187 total, 213827 started, 213187 done, 213187 succeeded, 0 failed, 0 errored, 0 timeout
//	status codes: 213187 2xx, 0 3xx, 0 4xx, 0 5xx
//	traffic: 870.29MB (912563136) total, 3.97MB (4163472) headers (space savings 95.03%), 832.76MB (873213952) data
//
// and the log has one line per request: its start (µs since the epoch),
// its status and its duration (µs, to the end of the response).

// h2loadSummary is what runH2load reads of h2load's summary.
type h2loadSummary struct {
	Protocol  string        // ALPN, "h2" or "http/1.1"
	Rate      float64       // req/s: requests done ÷ the main duration (-D)
	Duration  time.Duration // "finished in": wall time, stopping included
	Done      int64         // requests completed
	Failed    int64         // completed with a status of 400 or more, or reset
	Errored   int64         // not completed: connection errors
	Timeout   int64         // not completed in time
	Status    [4]int64      // 2xx, 3xx, 4xx, 5xx
	Bytes     int64         // all received, headers and frames included
	DataBytes int64         // response bodies
}

// parseH2load reads h2load's summary from r.
func parseH2load(r io.Reader) (h2loadSummary, error) {
	var s h2loadSummary
	var seen int
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		var err error
		switch {
		case strings.HasPrefix(line, "Application protocol:"):
			s.Protocol = strings.TrimSpace(strings.TrimPrefix(line, "Application protocol:"))
		case strings.HasPrefix(line, "finished in "):
			f := strings.Fields(strings.TrimPrefix(line, "finished in "))
			if len(f) < 3 || f[2] != "req/s," {
				return s, fmt.Errorf("h2load: %q: want the duration and the rate", line)
			}
			if s.Duration, err = time.ParseDuration(strings.TrimSuffix(f[0], ",")); err == nil {
				s.Rate, err = strconv.ParseFloat(f[1], 64)
			}
			seen |= 1
		case strings.HasPrefix(line, "requests:"):
			var total, started int64
			_, err = fmt.Sscanf(line, "requests: %d total, %d started, %d done, %d succeeded, %d failed, %d errored, %d timeout",
				&total, &started, &s.Done, new(int64), &s.Failed, &s.Errored, &s.Timeout)
			seen |= 2
		case strings.HasPrefix(line, "status codes:"):
			_, err = fmt.Sscanf(line, "status codes: %d 2xx, %d 3xx, %d 4xx, %d 5xx", &s.Status[0], &s.Status[1], &s.Status[2], &s.Status[3])
			seen |= 4
		case strings.HasPrefix(line, "traffic:"):
			s.Bytes, s.DataBytes, err = parseTraffic(line)
			seen |= 8
		}
		if err != nil {
			return s, fmt.Errorf("h2load: %q: %w", line, err)
		}
	}
	if err := sc.Err(); err != nil {
		return s, err
	}
	if seen != 15 {
		return s, errors.New("h2load: no summary (finished, requests, status codes, traffic) in its output: did it run?")
	}
	return s, nil
}

// parseTraffic reads the exact counts in parentheses of h2load's traffic
// line: the first is the total, the last the data.
func parseTraffic(line string) (total, data int64, err error) {
	var counts []int64
	for rest := line; ; {
		i := strings.IndexByte(rest, '(')
		if i < 0 {
			break
		}
		j := strings.IndexByte(rest[i:], ')')
		if j < 0 {
			break
		}
		if n, err := strconv.ParseInt(rest[i+1:i+j], 10, 64); err == nil {
			counts = append(counts, n)
		}
		rest = rest[i+j+1:]
	}
	if len(counts) < 2 {
		return 0, 0, errors.New("want the total and the data in parentheses")
	}
	return counts[0], counts[len(counts)-1], nil
}

// h2loadLog reads h2load's --log-file: the status and duration (µs) of
// every request.
func h2loadLog(r io.Reader) (statuses []int, durations []float64, err error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 {
			continue
		}
		st, err1 := strconv.Atoi(f[1])
		d, err2 := strconv.ParseFloat(f[2], 64)
		if err1 != nil || err2 != nil {
			return nil, nil, fmt.Errorf("h2load log: %q: want start, status and duration", sc.Text())
		}
		statuses = append(statuses, st)
		durations = append(durations, d)
	}
	return statuses, durations, sc.Err()
}

// percentile returns the p-th percentile (0-100) of sorted vs, nearest
// rank.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p/100*float64(len(sorted)) + 0.5)
	return sorted[min(max(i-1, 0), len(sorted)-1)]
}

// h2loadStats turns a summary and the log's durations into wrk.lua's
// figures. The duration is the one h2load's rate is of (the main
// duration, -D: the requests it counts were sent within it), not the wall
// time, which includes stopping. Answers of a status of 400 or more count
// as status errors, the other failed requests (a reset stream, a
// connection error: h2load counts those among the failed too) as read
// errors, less those that timed out.
func h2loadStats(s h2loadSummary, durations []float64) wrkStats {
	bad := s.Status[2] + s.Status[3]
	dur := float64(s.Duration.Microseconds())
	if s.Rate > 0 {
		dur = math.Round(float64(s.Done) / s.Rate * 1e6)
	}
	st := wrkStats{
		Requests:   float64(s.Done),
		DurationUS: dur,
		Bytes:      float64(s.Bytes),
		Read:       float64(max(s.Failed-bad-s.Timeout, 0)),
		Status:     float64(bad),
		Timeout:    float64(s.Timeout),
	}
	sorted := slices.Clone(durations)
	slices.Sort(sorted)
	if len(sorted) > 0 {
		st.P50, st.P90, st.P99, st.P999 = percentile(sorted, 50), percentile(sorted, 90), percentile(sorted, 99), percentile(sorted, 99.9)
		st.Max = sorted[len(sorted)-1]
	}
	return st
}

// runH2load reads h2load's output on stdin and its log (-log), checks the
// protocol it negotiated (-proto), and prints the BENCHJSON line; with
// -check (one request), "status bytes" like loadgen -check.
func runH2load(args []string, stdin io.Reader, w io.Writer) error {
	fs := flag.NewFlagSet("h2load", flag.ContinueOnError)
	logPath := fs.String("log", "", "h2load's --log-file")
	proto := fs.String("proto", "h2", "the protocol h2load must have negotiated: h2 or http/1.1")
	check := fs.Bool("check", false, "one request: print its status and body size")
	if err := fs.Parse(args); err != nil {
		return err
	}
	s, err := parseH2load(stdin)
	if err != nil {
		return err
	}
	if s.Protocol != *proto {
		return fmt.Errorf("h2load negotiated %q, not %q: the server does not offer it over ALPN", s.Protocol, *proto)
	}
	var statuses []int
	var durations []float64
	if *logPath != "" {
		f, err := os.Open(*logPath)
		if err != nil {
			return err
		}
		defer f.Close()
		if statuses, durations, err = h2loadLog(f); err != nil {
			return err
		}
	}
	if *check {
		if s.Done != 1 || len(statuses) != 1 {
			return fmt.Errorf("h2load: %d requests done, %d logged; want one of each (-n 1 --log-file)", s.Done, len(statuses))
		}
		_, err := fmt.Fprintf(w, "%d %d\n", statuses[0], s.DataBytes)
		return err
	}
	b, err := json.Marshal(h2loadStats(s, durations))
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "BENCHJSON %s\n", b)
	return err
}
