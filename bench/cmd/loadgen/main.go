// Command loadgen is the HTTP/2 and HTTP/3 load generator of bench/run.sh,
// for the rows wrk cannot drive (wrk speaks HTTP/1.1 only). It keeps -c
// requests in flight for -d over -conns connections (HTTP/2 over TLS with
// net/http's client, HTTP/3 with quic-go's), then prints one line in the
// format of bench/wrk.lua's, so `benchkit table` reads both alike:
//
//	BENCHJSON {"requests":…,"duration_us":…,"p50":…,"p99":…,…}
//
// Latencies are measured from sending a request to reading the end of its
// body, in microseconds, every one kept (no sampling). Certificates are not
// verified (like wrk); the TLS server name is the Host header's.
//
//	loadgen -proto h2|h3 [-c 64] [-conns 8] [-d 3s] [-timeout 10s] [-H 'Name: value']... URL
//	loadgen -proto h2|h3 -check [-H ...] URL   # one request: prints "status bytes"
//
// Debian's h2load (nghttp2-client) drives HTTP/2 too, but reports no
// latency percentiles and is built without HTTP/3, so both protocols use
// this one tool and their rows compare like with like.
package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
)

// headers collects repeated -H flags.
type headers []string

func (h *headers) String() string     { return strings.Join(*h, ", ") }
func (h *headers) Set(v string) error { *h = append(*h, v); return nil }

// stats is what bench/wrk.lua prints, latencies in microseconds.
type stats struct {
	Requests   int64 `json:"requests"`
	DurationUS int64 `json:"duration_us"`
	Bytes      int64 `json:"bytes"`
	Connect    int64 `json:"connect"`
	Read       int64 `json:"read"`
	Write      int64 `json:"write"`
	Status     int64 `json:"status"`
	Timeout    int64 `json:"timeout"`
	P50        int64 `json:"p50"`
	P90        int64 `json:"p90"`
	P99        int64 `json:"p99"`
	P999       int64 `json:"p999"`
	Max        int64 `json:"max"`
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

func run(args []string, w io.Writer) error {
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	proto := fs.String("proto", "h2", "h2 (HTTP/2 over TLS) or h3 (HTTP/3)")
	conc := fs.Int("c", 64, "requests in flight")
	conns := fs.Int("conns", 8, "connections (the requests in flight are spread over them)")
	dur := fs.Duration("d", 3*time.Second, "duration")
	timeout := fs.Duration("timeout", 10*time.Second, "timeout of one request")
	check := fs.Bool("check", false, "send one request and print its status and body size")
	var hs headers
	fs.Var(&hs, "H", "request header field 'Name: value' (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("one URL expected")
	}
	target, err := url.Parse(fs.Arg(0))
	if err != nil || target.Scheme != "https" {
		return fmt.Errorf("URL %q: an https URL expected", fs.Arg(0))
	}
	if *conc < 1 || *conns < 1 || *conns > *conc {
		return errors.New("need 1 <= -conns <= -c")
	}
	hdr, host, err := parseHeaders(hs)
	if err != nil {
		return err
	}
	if host == "" {
		host = target.Hostname()
	}
	newClient := func() (*http.Client, func(), error) { return client(*proto, host, *timeout) }
	if *check {
		c, closeFn, err := newClient()
		if err != nil {
			return err
		}
		defer closeFn()
		status, n, err := do(context.Background(), c, target, host, hdr)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%d %d\n", status, n)
		return nil
	}
	s, err := load(newClient, target, host, hdr, *conc, *conns, *dur)
	if err != nil {
		return err
	}
	b, _ := json.Marshal(s)
	fmt.Fprintf(w, "BENCHJSON %s\n", b)
	return nil
}

// parseHeaders turns "Name: value" flags into a header; Host is returned
// apart (it is the request's authority, not a field).
func parseHeaders(hs []string) (http.Header, string, error) {
	h := http.Header{}
	host := ""
	for _, f := range hs {
		name, value, ok := strings.Cut(f, ":")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if !ok || name == "" {
			return nil, "", fmt.Errorf("header %q: 'Name: value' expected", f)
		}
		if strings.EqualFold(name, "Host") {
			host = value
			continue
		}
		h.Add(name, value)
	}
	return h, host, nil
}

// client returns a client speaking only proto, its connections opened to
// the URL's address whatever the Host, and a function closing them.
func client(proto, serverName string, timeout time.Duration) (*http.Client, func(), error) {
	tc := &tls.Config{InsecureSkipVerify: true, ServerName: serverName} //nolint:gosec // a load generator, like wrk
	switch proto {
	case "h2":
		var p http.Protocols
		p.SetHTTP2(true)
		t := &http.Transport{TLSClientConfig: tc, Protocols: &p, DisableCompression: true, MaxIdleConnsPerHost: 1,
			ForceAttemptHTTP2: true, DialContext: (&net.Dialer{Timeout: timeout}).DialContext}
		return &http.Client{Transport: t, Timeout: timeout}, t.CloseIdleConnections, nil
	case "h3":
		tc.NextProtos = []string{http3.NextProtoH3}
		t := &http3.Transport{TLSClientConfig: tc, DisableCompression: true,
			QUICConfig: &quic.Config{MaxIdleTimeout: 30 * time.Second, HandshakeIdleTimeout: timeout}}
		return &http.Client{Transport: t, Timeout: timeout}, func() { t.Close() }, nil
	}
	return nil, nil, fmt.Errorf("protocol %q: h2 or h3", proto)
}

// do sends one GET and reads the body; it returns the status and the body
// size.
func do(ctx context.Context, c *http.Client, target *url.URL, host string, h http.Header) (int, int64, error) {
	req := &http.Request{Method: http.MethodGet, URL: target, Host: host, Header: h, Proto: "HTTP/2.0", ProtoMajor: 2}
	resp, err := c.Do(req.WithContext(ctx))
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, n, err
}

// load runs conc workers over conns clients for d.
func load(newClient func() (*http.Client, func(), error), target *url.URL, host string, h http.Header, conc, conns int, d time.Duration) (stats, error) {
	clients := make([]*http.Client, conns)
	for i := range clients {
		c, closeFn, err := newClient()
		if err != nil {
			return stats{}, err
		}
		defer closeFn()
		// Open the connection before the clock starts.
		if _, _, err := do(context.Background(), c, target, host, h); err != nil {
			return stats{}, fmt.Errorf("first request: %w", err)
		}
		clients[i] = c
	}
	var (
		s       stats
		bytes   atomic.Int64
		mu      sync.Mutex
		all     []int64
		wg      sync.WaitGroup
		counter [4]atomic.Int64 // status, timeout, read, connect
	)
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	start := time.Now()
	for i := range conc {
		c := clients[i%conns]
		wg.Go(func() {
			lat := make([]int64, 0, 1<<16)
			for ctx.Err() == nil {
				t0 := time.Now()
				status, n, err := do(ctx, c, target, host, h)
				if ctx.Err() != nil {
					break // cut by the end of the run: not counted
				}
				lat = append(lat, time.Since(t0).Microseconds())
				bytes.Add(n)
				var ne net.Error
				switch {
				case err == nil && status >= 400:
					counter[0].Add(1)
				case err == nil:
				case errors.As(err, &ne) && ne.Timeout():
					counter[1].Add(1)
				default:
					counter[2].Add(1)
				}
			}
			mu.Lock()
			all = append(all, lat...)
			mu.Unlock()
		})
	}
	wg.Wait()
	s.DurationUS = time.Since(start).Microseconds()
	s.Requests = int64(len(all))
	s.Bytes = bytes.Load()
	s.Status, s.Timeout, s.Read, s.Connect = counter[0].Load(), counter[1].Load(), counter[2].Load(), counter[3].Load()
	slices.Sort(all)
	pct := func(p float64) int64 {
		if len(all) == 0 {
			return 0
		}
		return all[min(len(all)-1, int(p/100*float64(len(all))))]
	}
	s.P50, s.P90, s.P99, s.P999 = pct(50), pct(90), pct(99), pct(99.9)
	if len(all) > 0 {
		s.Max = all[len(all)-1]
	}
	return s, nil
}
