package edge

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// TestFileGuard tries to reach private files by every spelling a second
// decoder, a Windows file system or a sloppy normalizer might accept; each
// gets the site's 404 page. /.well-known/ stays public.
func TestFileGuard(t *testing.T) {
	h := newHarness(t)
	s := h.newSite("guarded")
	s.deploy(map[string]string{
		"index.html": "<h1>home</h1>", "404.html": "<h1>nothing here</h1>",
		".env": "SECRET=1", ".git/config": "[core]", "certs/server.key": "KEY", "keys/id_rsa": "KEY",
		".well-known/security.txt": "Contact: x", "a/index.html": "<h1>a</h1>",
	})
	before := testCounterValue(h.edge.metrics.guarded)
	for _, p := range []string{
		"/.env", "/.ENV", "/%2eenv", "/%2Eenv", "/%252eenv", "/%25252eenv", "/.env.", "/.env%20", "/.env%00.html", "/.env;.html",
		"/.git/config", "/.GIT/config", "/%2egit/config", "/a/../.git/config", "/a/..%2f.git/config", "/a/%2e%2e/.env",
		"/certs/server.key", "/certs/server.KEY", "/certs/server.key.bak", "/certs/server.key~", "/certs%2fserver.key",
		"/keys/id_rsa", "/keys/ID_RSA", "/keys/id_rsa.pub", "/keys/id_rsa%3a%3a$DATA", "/keys/id_rsa::$DATA",
		"/%u002eenv", "/%c0%ae%c0%aeenv", "/a/%5c..%5c.env", "/.htpasswd", "/backup/db.pem.old",
	} {
		r := h.raw(s.host, p)
		if r.status != 404 || (r.body != "<h1>nothing here</h1>" && !strings.Contains(r.body, "404")) {
			t.Errorf("GET %s: %d %q", p, r.status, short(r.body))
		}
	}
	if got := testCounterValue(h.edge.metrics.guarded) - before; got < 25 {
		t.Errorf("file guard counted %v refusals, want the guard (not a missing file) to answer", got)
	}
	for _, p := range []string{"/.well-known/security.txt", "/a/", "/"} {
		if r := h.get(s.host, p); r.status != 200 {
			t.Errorf("GET %s: %d", p, r.status)
		}
	}
}

// TestStaticCache checks the static cache: a hit, expiry at the pinned TTL,
// a deploy (and a rollback) never serving old bytes, and a disabled CDN
// keeping nothing.
func TestStaticCache(t *testing.T) {
	h := newHarness(t)
	s := h.newSite("news")
	s.deploy(map[string]string{"index.html": "<h1>v1</h1>"})
	xcache := func(want, body string) {
		t.Helper()
		r := h.get(s.host, "/")
		if r.header.Get("X-Cache") != want || r.body != body {
			t.Fatalf("X-Cache %q body %q, want %q %q", r.header.Get("X-Cache"), r.body, want, body)
		}
		h.edge.cache.Wait()
	}
	xcache("MISS", "<h1>v1</h1>")
	xcache("HIT", "<h1>v1</h1>")
	if r := h.get(s.host, "/"); r.header.Get("Cache-Control") != "public, max-age=3600" || r.header.Get("Age") == "" {
		t.Errorf("headers: %v", r.header)
	}
	h.env.Clock.Advance(3599 * time.Second)
	xcache("HIT", "<h1>v1</h1>")
	h.env.Clock.Advance(2 * time.Second)
	xcache("MISS", "<h1>v1</h1>")
	xcache("HIT", "<h1>v1</h1>")

	s.deploy(map[string]string{"index.html": "<h1>v2</h1>"})
	xcache("MISS", "<h1>v2</h1>")
	xcache("HIT", "<h1>v2</h1>")

	// CDN settings reach a site on its next deploy.
	h.env.Owner.Must(200, "PUT", "/api/services/cdn", map[string]any{"enabled": true, "cacheTtlSeconds": 60})
	s.deploy(map[string]string{"index.html": "<h1>v3</h1>"})
	if r := h.get(s.host, "/"); r.header.Get("Cache-Control") != "public, max-age=60" || r.body != "<h1>v3</h1>" {
		t.Errorf("ttl 60: %v %q", r.header, r.body)
	}
	h.env.Owner.Must(200, "PUT", "/api/services/cdn", map[string]any{"enabled": false})
	s.deploy(map[string]string{"index.html": "<h1>v4</h1>"})
	for range 3 {
		r := h.get(s.host, "/")
		if r.header.Get("X-Cache") != "MISS" || r.header.Get("Cache-Control") != "no-cache" || r.body != "<h1>v4</h1>" {
			t.Fatalf("CDN disabled: %v %q", r.header, r.body)
		}
		h.edge.cache.Wait()
	}
	if r := h.get(s.host, "/", "If-None-Match: "+h.get(s.host, "/").header.Get("ETag")); r.status != 304 {
		t.Errorf("CDN disabled still revalidates: %d", r.status)
	}
}

// TestConfigChangeUnderLoad deploys new versions while clients hammer the
// site over HTTPS: every request must succeed with one of the deployed
// versions, and the last one must win.
func TestConfigChangeUnderLoad(t *testing.T) {
	h := newHarness(t)
	s := h.newSite("live")
	s.deploy(map[string]string{"index.html": "v0", "style.css": "s0"})
	valid := sync.Map{}
	valid.Store("v0", true)
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var total, failed atomic.Int64
	var firstErr atomic.Value
	for range 6 {
		wg.Go(func() {
			for ctx.Err() == nil {
				resp, err := h.client.Get("https://" + s.host + "/")
				total.Add(1)
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				var b strings.Builder
				_, err = fmt.Fprint(&b, readAll(resp))
				if _, ok := valid.Load(b.String()); resp.StatusCode != 200 || !ok || err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, fmt.Sprintf("status %d body %q", resp.StatusCode, b.String()))
				}
			}
		})
	}
	for i := 1; i <= 5; i++ {
		v := fmt.Sprintf("v%d", i)
		valid.Store(v, true)
		s.deploy(map[string]string{"index.html": v, "style.css": "s" + v})
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	wg.Wait()
	if failed.Load() != 0 || total.Load() < 50 {
		t.Fatalf("%d of %d requests failed (first: %v)", failed.Load(), total.Load(), firstErr.Load())
	}
	if r := h.get(s.host, "/"); r.body != "v5" {
		t.Errorf("after the last deploy: %q", r.body)
	}
	t.Logf("%d requests, none failed", total.Load())
}

// TestControlPlaneDown keeps serving when the control plane goes away, and
// a restarted edge serves the configuration it saved.
func TestControlPlaneDown(t *testing.T) {
	h := newHarness(t)
	s := h.newSite("steady")
	s.deploy(map[string]string{"index.html": "<h1>steady</h1>"})
	h.env.Server.Close()
	if r := h.get(s.host, "/"); r.status != 200 || r.body != "<h1>steady</h1>" {
		t.Fatalf("control plane down: %d %q", r.status, r.body)
	}
	h.stop()
	h.start() // a new edge, same data directory, control plane still down
	if !h.edge.Ready() {
		t.Fatal("restarted edge not ready from its saved configuration")
	}
	if r := h.get(s.host, "/"); r.status != 200 || r.body != "<h1>steady</h1>" {
		t.Fatalf("restarted edge: %d %q", r.status, r.body)
	}
	if r, err := h.h3c.Get("https://" + s.host + "/"); err != nil || r.StatusCode != 200 {
		t.Fatalf("restarted edge over HTTP/3: %v %v", r, err)
	}
}

// TestLimits makes huge headers, slow clients and endless bodies harmless.
// ReadTimeout also bounds every TLS handshake of the test's own requests, so
// it is 1 s: short enough to see a stalled client cut off well within the
// 3 s checked, long enough for a handshake on a machine busy with -race.
func TestLimits(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.ReadTimeout, c.MaxHeaderBytes = time.Second, 8<<10 })
	s := h.newSite("limits")
	s.deploy(map[string]string{"index.html": "ok"})
	if r := h.get(s.host, "/", "X-Big: "+strings.Repeat("a", 16<<10)); r.status != 431 {
		t.Errorf("huge header: %d", r.status)
	}
	// A client that sends half a header and stalls is cut off.
	c := h.dialTLS(s.host)
	c.Write([]byte("GET / HTTP/1.1\r\nHost: " + s.host + "\r\n"))
	start := time.Now()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	var buf [512]byte
	n, err := c.Read(buf[:])
	if (err == nil && !strings.Contains(string(buf[:n]), "Connection: close")) || time.Since(start) > 3*time.Second {
		t.Errorf("slow client: read %q %v after %v", buf[:n], err, time.Since(start))
	}
	c.Close()
	if r := h.get(s.host, "/"); r.status != 200 {
		t.Errorf("after a slow client: %d", r.status)
	}
}

func readAll(resp *http.Response) string {
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// testCounterValue reads a counter without a registry.
func testCounterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	c.Write(&m)
	return m.GetCounter().GetValue()
}

// raw sends a GET with the request target exactly as given, over its own
// connection, so no client library cleans or re-encodes the path.
func (h *harness) raw(host, target string) *response {
	h.t.Helper()
	c := h.dialTLS(host)
	defer c.Close()
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", target, host)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	return read(h.t, resp, err)
}

// dialTLS opens a TLS connection to the edge for host.
func (h *harness) dialTLS(host string) *tls.Conn {
	h.t.Helper()
	c, err := tls.Dial("tcp", h.https, &tls.Config{RootCAs: h.edge.CA().Pool(), ServerName: host})
	if err != nil {
		h.t.Fatal(err)
	}
	return c
}
