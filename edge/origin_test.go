package edge

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/svcplatform/platform/internal/freeport"
	"github.com/svcplatform/platform/internal/netguard"
)

// keepAliveOrigin is an app origin (net/http) with a keep-alive timeout
// that reports every connection it closes, so tests wait on that signal.
type keepAliveOrigin struct {
	srv    *httptest.Server
	closed chan struct{}
	hits   atomic.Int64
}

func newKeepAliveOrigin(t *testing.T, idle time.Duration) *keepAliveOrigin {
	o := &keepAliveOrigin{closed: make(chan struct{}, 64)}
	o.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.hits.Add(1)
		h := sha256.New()
		n, _ := io.Copy(h, r.Body)
		fmt.Fprintf(w, "%s %d %x", r.Method, n, h.Sum(nil))
	}))
	o.srv.Config.IdleTimeout = idle
	o.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			o.closed <- struct{}{}
		}
	}
	o.srv.Start()
	t.Cleanup(o.srv.Close)
	return o
}

// waitClosed waits until the origin has closed (or seen closed) a
// connection, at most within.
func (o *keepAliveOrigin) waitClosed(t *testing.T, within time.Duration) {
	t.Helper()
	select {
	case <-o.closed:
	case <-time.After(within):
		t.Fatalf("no origin connection closed within %v", within)
	}
}

func (le *liveEdge) send(method, host, path string, body []byte) (int, string) {
	le.t.Helper()
	req, err := http.NewRequest(method, "https://"+host+path, bytes.NewReader(body))
	if err != nil {
		le.t.Fatal(err)
	}
	if body == nil {
		req.Body = nil
	}
	resp, err := le.client.Do(req)
	if err != nil {
		le.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func wantEcho(t *testing.T, status int, got, method string, body []byte) {
	t.Helper()
	sum := sha256.Sum256(body)
	want := fmt.Sprintf("%s %d %x", method, len(body), sum)
	if status != 200 || got != want {
		t.Fatalf("got %d %q, want 200 %q", status, got, want)
	}
}

// TestOriginClosedIdleConnection is issue 11 item 2: an origin whose
// keep-alive timeout (here 150 ms, for gunicorn's 2 s) is shorter than the
// edge's closes a pooled connection; the next request, a POST too, must
// not get 502 "server closed connection before returning the first
// response byte": the closed connection is found before reuse and the
// request goes on a fresh one, reaching the origin exactly once.
func TestOriginClosedIdleConnection(t *testing.T) {
	o := newKeepAliveOrigin(t, 150*time.Millisecond)
	le := newLiveEdge(t, appSnapshot(map[string]string{"app.apps.test": o.srv.URL}),
		func(c *Config) { c.OriginKeepAlive = time.Minute })
	small := []byte("name=value")
	large := bytes.Repeat([]byte("0123456789abcdef"), 200<<10/16) // streamed (past the 64 KiB buffered body)
	for _, tc := range []struct {
		name, method string
		body         []byte
	}{
		{"GET", "GET", nil},
		{"POST small body", "POST", small},
		{"POST streamed body", "POST", large},
		{"PATCH", "PATCH", small},
		{"DELETE", "DELETE", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, got := le.send(tc.method, "app.apps.test", "/x", tc.body)
			wantEcho(t, st, got, tc.method, tc.body)
			o.waitClosed(t, 5*time.Second) // the origin closed the idle connection
			before := o.hits.Load()
			st, got = le.send(tc.method, "app.apps.test", "/x", tc.body)
			wantEcho(t, st, got, tc.method, tc.body)
			if n := o.hits.Load() - before; n != 1 {
				t.Fatalf("origin saw the request %d times, want once", n)
			}
		})
	}
}

// TestOriginKeepAliveShorterThanOrigin: with an origin keeping idle
// connections 5 s (Node.js's default), the edge closes its idle connection
// first (here after 100 ms; by default DefaultOriginKeepAlive, 4 s).
func TestOriginKeepAliveShorterThanOrigin(t *testing.T) {
	if DefaultOriginKeepAlive >= 5*time.Second {
		t.Fatalf("DefaultOriginKeepAlive %v is not below the common 5 s origin keep-alive", DefaultOriginKeepAlive)
	}
	o := newKeepAliveOrigin(t, 5*time.Second)
	le := newLiveEdge(t, appSnapshot(map[string]string{"app.apps.test": o.srv.URL}),
		func(c *Config) { c.OriginKeepAlive = 100 * time.Millisecond })
	st, got := le.send("POST", "app.apps.test", "/", []byte("a"))
	wantEcho(t, st, got, "POST", []byte("a"))
	o.waitClosed(t, 3*time.Second) // well before the origin's own 5 s
	st, got = le.send("POST", "app.apps.test", "/", []byte("b"))
	wantEcho(t, st, got, "POST", []byte("b"))
}

// TestOriginPOSTNotSentTwice: an origin that reads a request and closes the
// connection without answering may have acted on it, so a POST is not sent
// again (502), while a GET is retried.
func TestOriginPOSTNotSentTwice(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var hits atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				io.Copy(io.Discard, req.Body)
				hits.Add(1)
			}()
		}
	}()
	le := newLiveEdge(t, appSnapshot(map[string]string{"app.apps.test": "http://" + ln.Addr().String()}))
	for _, tc := range []struct {
		method   string
		minHits  int64
		maxHits  int64
		wantCode int
	}{
		{"POST", 1, 1, 502},
		{"GET", 2, 5, 502},
	} {
		t.Run(tc.method, func(t *testing.T) {
			hits.Store(0)
			st, _ := le.send(tc.method, "app.apps.test", "/", nil)
			if st != tc.wantCode || hits.Load() < tc.minHits || hits.Load() > tc.maxHits {
				t.Fatalf("status %d, origin hits %d; want %d and %d..%d hits", st, hits.Load(), tc.wantCode, tc.minHits, tc.maxHits)
			}
		})
	}
}

// TestOriginPrivateNetworks is issue 11 item 8 at the edge: an origin on
// loopback (the admin or API address, any internal service) is refused at
// connect time unless AllowPrivateNetworks, with the same 502 whether or
// not the port answers; a managed origin (a process the platform runs) is
// not refused.
func TestOriginPrivateNetworks(t *testing.T) {
	o := newKeepAliveOrigin(t, time.Minute)
	closedAddr, err := freeport.Addr() // nobody listens there
	if err != nil {
		t.Fatal(err)
	}
	closedURL := "http://" + closedAddr
	snap := appSnapshot(map[string]string{"open.apps.test": o.srv.URL, "closed.apps.test": closedURL,
		"name.apps.test": strings.Replace(o.srv.URL, "127.0.0.1", "localhost", 1)})
	le := newLiveEdge(t, snap, func(c *Config) { c.AllowPrivateNetworks = false })
	var bodies []string
	for _, host := range []string{"open.apps.test", "closed.apps.test", "name.apps.test"} {
		t.Run(host, func(t *testing.T) {
			st, body := le.send("GET", host, "/", nil)
			if st != 502 {
				t.Fatalf("%s: status %d %q, want 502", host, st, body)
			}
			bodies = append(bodies, body)
		})
	}
	if len(bodies) == 3 && (bodies[0] != bodies[1] || bodies[1] != bodies[2]) {
		t.Fatalf("refusals differ, revealing whether a port answers: %q", bodies)
	}
	if o.hits.Load() != 0 {
		t.Fatalf("a private origin was reached %d times", o.hits.Load())
	}
	// The same origin, managed by the platform, is reachable.
	mo, err := le.origins.get(o.srv.URL, true)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := doDirect(t, mo, "/")
	if st != 200 {
		t.Fatalf("managed origin: status %d, want 200", st)
	}
	// And an unmanaged one is refused by the dialer itself, naming the guard.
	uo, _ := le.origins.get(o.srv.URL, false)
	if _, err := doDirectErr(uo, "/"); !errors.Is(err, netguard.ErrForbiddenAddress) {
		t.Fatalf("unmanaged origin: %v, want ErrForbiddenAddress", err)
	}
}

func doDirectErr(o *origin, path string) (int, error) {
	req, resp := new(fasthttp.Request), new(fasthttp.Response)
	req.SetRequestURI(o.base + path)
	err := o.client.DoTimeout(req, resp, 5*time.Second)
	if err != nil {
		return 0, err
	}
	return resp.StatusCode(), nil
}

func doDirect(t *testing.T, o *origin, path string) (int, error) {
	t.Helper()
	st, err := doDirectErr(o, path)
	if err != nil {
		t.Fatal(err)
	}
	return st, nil
}
