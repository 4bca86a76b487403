package cache

import (
	"bufio"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// t0 is the test epoch; Date fields in tests are derived from it.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// httpDate formats t0+d as an IMF-fixdate.
func httpDate(d time.Duration) string {
	return string(fasthttp.AppendHTTPDate(nil, t0.Add(d)))
}

// clock is an injectable clock for the cache.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: t0} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// newReq parses a request from its request line ("GET /a") and header lines.
// Host defaults to example.com.
func newReq(t testing.TB, line string, headers ...string) *fasthttp.Request {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "%s HTTP/1.1\r\n", line)
	host := false
	for _, h := range headers {
		if strings.HasPrefix(strings.ToLower(h), "host:") {
			host = true
		}
		b.WriteString(h + "\r\n")
	}
	if !host {
		b.WriteString("Host: example.com\r\n")
	}
	b.WriteString("\r\n")
	req := new(fasthttp.Request)
	if err := req.Read(bufio.NewReader(strings.NewReader(b.String()))); err != nil {
		t.Fatalf("read request %q: %v", b.String(), err)
	}
	return req
}

// newResp parses a response with the given status, body and header lines,
// as the edge's origin client would receive it.
func newResp(t testing.TB, status int, body string, headers ...string) *fasthttp.Response {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\n", status, fasthttp.StatusMessage(status))
	for _, h := range headers {
		b.WriteString(h + "\r\n")
	}
	if status != 304 && status != 204 {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", len(body))
	}
	b.WriteString("\r\n")
	if status != 304 && status != 204 {
		b.WriteString(body)
	}
	resp := new(fasthttp.Response)
	if err := resp.Read(bufio.NewReader(strings.NewReader(b.String()))); err != nil {
		t.Fatalf("read response %q: %v", b.String(), err)
	}
	return resp
}

// newCache returns a cache on clk, closed when the test ends.
func newCache(t testing.TB, cfg Config, clk *clock) *Cache {
	t.Helper()
	var now func() time.Time
	if clk != nil {
		now = clk.Now
	}
	c, err := New(cfg, now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}
