package edge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/textproto"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
	"github.com/svcplatform/platform/rules"
)

// mixedSnapshot is a static site (www), an app (app) forwarding to origin,
// and a Shield deny list for 198.51.100.0/24.
func mixedSnapshot(t *testing.T, blobDir, origin string) *snapshot.Snapshot {
	s := staticSnapshot(t, blobDir, staticSite{host: "www.apps.test", files: map[string]string{"index.html": "<h1>home</h1>"}})
	s.Sites = append(s.Sites, appSnapshot(map[string]string{"app.apps.test": origin}).Sites...)
	sh := rules.DefaultSettings()
	sh.DenyIPs = []string{"198.51.100.0/24"}
	s.Workspaces[0].Shield = sh
	return s
}

func newMixedEdge(t *testing.T, origin string, opts ...func(*Config)) *liveEdge {
	blobDir := filepath.Join(t.TempDir(), "blobs")
	return newLiveEdge(t, mixedSnapshot(t, blobDir, origin), append([]func(*Config){func(c *Config) { c.BlobDir = blobDir }}, opts...)...)
}

// TestHTTP2 is issue 12's HTTP/2 over TLS: ALPN offers h2, and h2 requests
// go through the same handler chain as HTTP/1.1: Shield, the static cache,
// forwarding, security headers, counts.
func TestHTTP2(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, s-maxage=60")
		fmt.Fprintf(w, "app %s %s", r.Method, r.URL.Path)
	}))
	t.Cleanup(origin.Close)
	le := newMixedEdge(t, origin.URL)
	c := le.h2Client()
	get := func(host, path, xff string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", "https://"+host+path, nil)
		if xff != "" {
			req.Header.Set("X-Forwarded-For", xff)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	before := metricValue(le.metrics.requests[kindStatic][1])
	for _, tc := range []struct {
		name, host, path, xff string
		status                int
		body, xcache          string
	}{
		{"static miss", "www.apps.test", "/", "", 200, "<h1>home</h1>", "MISS"},
		{"static hit", "www.apps.test", "/", "", 200, "<h1>home</h1>", "HIT"},
		{"app", "app.apps.test", "/p", "", 200, "app GET /p", "MISS"},
		{"app cached", "app.apps.test", "/p", "", 200, "app GET /p", "HIT"},
		{"shield deny list", "www.apps.test", "/", "198.51.100.7", 403, "", ""},
		{"unknown host", "nope.apps.test", "/", "", 404, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "static hit" {
				le.cache.Wait()
			}
			resp, body := get(tc.host, tc.path, tc.xff)
			if resp.ProtoMajor != 2 || resp.TLS == nil || resp.TLS.NegotiatedProtocol != "h2" {
				t.Fatalf("proto %s, ALPN %v: want HTTP/2", resp.Proto, resp.TLS)
			}
			if resp.StatusCode != tc.status || tc.body != "" && body != tc.body {
				t.Fatalf("%d %q, want %d %q", resp.StatusCode, body, tc.status, tc.body)
			}
			if tc.xcache != "" && resp.Header.Get("X-Cache") != tc.xcache {
				t.Errorf("X-Cache %q, want %q", resp.Header.Get("X-Cache"), tc.xcache)
			}
			if resp.Header.Get("Strict-Transport-Security") == "" || resp.Header.Get("X-Content-Type-Options") != "nosniff" ||
				!strings.HasPrefix(resp.Header.Get("Alt-Svc"), `h3=":`) {
				t.Errorf("security headers: %v", resp.Header)
			}
		})
	}
	if got := metricValue(le.metrics.requests[kindStatic][1]) - before; got < 2 {
		t.Errorf("static 2xx counted %v times over HTTP/2, want 2", got)
	}
	// HTTP/1.1 clients still get HTTP/1.1 (fasthttp).
	resp, err := le.client.Get("https://www.apps.test/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.ProtoMajor != 1 {
		t.Fatalf("HTTP/1.1 client got %s", resp.Proto)
	}
	// Many concurrent streams on one connection, with request bodies.
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Go(func() {
			body := bytes.Repeat([]byte{byte('a' + i)}, 100<<10)
			resp, err := c.Post("https://app.apps.test/up", "application/octet-stream", bytes.NewReader(body))
			if err != nil {
				errs <- err
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || string(b) != "app POST /up" {
				errs <- fmt.Errorf("%d %q", resp.StatusCode, b)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestHTTP2Curl asks with curl --http2 when curl is installed.
func TestHTTP2Curl(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl is not installed")
	}
	le := newMixedEdge(t, "http://127.0.0.1:1")
	_, port, _ := net.SplitHostPort(le.https)
	out, err := exec.Command(curl, "-sS", "--http2", "--cacert", le.CACertPath(), "--resolve", "www.apps.test:"+port+":127.0.0.1",
		"-o", "/dev/null", "-w", "%{http_version} %{http_code}", "https://www.apps.test:"+port+"/").CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "not support") || strings.Contains(string(out), "nsupported") {
			t.Skipf("curl without HTTP/2: %s", out)
		}
		t.Fatalf("curl: %v: %s", err, out)
	}
	if string(out) != "2 200" {
		t.Fatalf("curl --http2: %q, want \"2 200\"", out)
	}
}

// wsOrigin is an app origin that echoes WebSocket messages.
func wsOrigin(t *testing.T) (*httptest.Server, *sync.WaitGroup) {
	var handlers sync.WaitGroup
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/nows" {
			http.Error(w, "no websockets here", http.StatusBadRequest)
			return
		}
		handlers.Add(1)
		defer handlers.Done()
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		for {
			typ, msg, err := c.Read(r.Context())
			if err != nil {
				return
			}
			if err := c.Write(r.Context(), typ, append([]byte("echo "+r.Header.Get("X-Real-IP")+": "), msg...)); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &handlers
}

func (le *liveEdge) wsDial(ctx context.Context, path, xff string) (*websocket.Conn, *http.Response, error) {
	h := http.Header{}
	if xff != "" {
		h.Set("X-Forwarded-For", xff)
	}
	return websocket.Dial(ctx, "wss://app.apps.test"+path, &websocket.DialOptions{HTTPClient: le.client, HTTPHeader: h})
}

// TestWebSocket is issue 12's upgrades: a WebSocket to an app goes
// through Shield, is spliced both ways, counted, and closed when idle.
func TestWebSocket(t *testing.T) {
	origin, _ := wsOrigin(t)
	le := newMixedEdge(t, origin.URL, func(c *Config) { c.UpgradeIdleTimeout = 300 * time.Millisecond })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	t.Run("echo", func(t *testing.T) {
		c, resp, err := le.wsDial(ctx, "/ws", "203.0.113.5")
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		if resp.StatusCode != 101 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		for i := range 5 {
			msg := strings.Repeat(fmt.Sprint(i), 1+i*7000) // up to 28 KB, under the origin's 32 KiB read limit
			if err := c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
				t.Fatal(err)
			}
			_, got, err := c.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != "echo 203.0.113.5: "+msg {
				t.Fatalf("message %d: %.60q", i, got)
			}
		}
		if n := metricValue(le.metrics.upgradesOpen); n != 1 {
			t.Errorf("open upgraded connections %v, want 1", n)
		}
		c.Close(websocket.StatusNormalClosure, "bye")
	})

	t.Run("shield first", func(t *testing.T) {
		// Apps get Shield's country rule, before the origin is asked.
		blobDir := filepath.Join(t.TempDir(), "blobs")
		snap := mixedSnapshot(t, blobDir, origin.URL)
		snap.Workspaces[0].Shield.BlockedCountries = []string{"US"}
		blocked := newLiveEdge(t, snap, func(c *Config) { c.BlobDir = blobDir })
		_, resp, err := blocked.wsDial(ctx, "/ws", "203.0.113.5")
		if err == nil || resp == nil || resp.StatusCode != 403 {
			t.Fatalf("blocked country: %v %v, want 403", resp, err)
		}
		if n := metricValue(blocked.metrics.upgrades[0]); n != 0 {
			t.Fatalf("a refused upgrade was spliced (%v)", n)
		}
	})

	t.Run("origin declines", func(t *testing.T) {
		_, resp, err := le.wsDial(ctx, "/nows", "")
		if err == nil || resp == nil || resp.StatusCode != 400 {
			t.Fatalf("declined: %v %v, want the origin's 400", resp, err)
		}
	})

	t.Run("idle limit", func(t *testing.T) {
		c, _, err := le.wsDial(ctx, "/ws", "")
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		start := time.Now()
		rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
		defer rcancel()
		_, _, err = c.Read(rctx) // nothing is sent: the edge closes it after 300 ms idle
		if err == nil || rctx.Err() != nil {
			t.Fatalf("idle connection not closed by the edge: %v after %v", err, time.Since(start))
		}
	})

	if n := metricValue(le.metrics.upgrades[0]); n != 2 {
		t.Errorf("spliced upgrades counted %v, want 2", n)
	}
	if n := metricValue(le.metrics.upgrades[1]); n != 1 {
		t.Errorf("refused upgrades counted %v, want 1", n)
	}
}

// TestGracefulShutdown: stopping the edge lets a request in flight finish
// while new connections are refused.
func TestGracefulShutdown(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-release
		fmt.Fprint(w, "finished")
	}))
	t.Cleanup(origin.Close)
	le := newMixedEdge(t, origin.URL)
	for _, c := range []struct {
		name   string
		client *http.Client
	}{{"h1", le.client}} {
		type result struct {
			status int
			body   string
			err    error
		}
		res := make(chan result, 1)
		go func() {
			resp, err := c.client.Get("https://app.apps.test/slow")
			if err != nil {
				res <- result{err: err}
				return
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			res <- result{resp.StatusCode, string(b), err}
		}()
		<-started
		go le.stop()
		// New connections are refused once the listener is closed.
		deadline := time.Now().Add(10 * time.Second)
		for {
			conn, err := net.Dial("tcp", le.https)
			if err != nil {
				break
			}
			conn.Close()
			if time.Now().After(deadline) {
				t.Fatal("the listener still accepts during shutdown")
			}
			time.Sleep(5 * time.Millisecond)
		}
		close(release)
		r := <-res
		if r.err != nil || r.status != 200 || r.body != "finished" {
			t.Fatalf("%s: in-flight request: %d %q %v", c.name, r.status, r.body, r.err)
		}
	}
	le.stop()
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestAccessLog: one JSON line per request with the fields of issue 12,
// for every protocol; nothing a request sends can break a line.
func TestAccessLog(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "app") }))
	t.Cleanup(origin.Close)
	var buf syncBuffer
	le := newMixedEdge(t, origin.URL, func(c *Config) { c.AccessLog, c.AccessLogWriter = "-", &buf })
	for _, r := range []struct {
		client      *http.Client
		host, path  string
		xff, agent  string
		wantStatus  int
		wantProto   string
		wantCache   string
		wantShield  string
		wantUpMilli bool
	}{
		{le.client, "www.apps.test", "/?q=\"x\"", "203.0.113.1", "a\"b", 200, "h1", "MISS", "allow", false},
		{le.h2Client(), "app.apps.test", "/api", "203.0.113.2", "", 200, "h2", "MISS", "allow", true},
		{le.client, "www.apps.test", "/", "198.51.100.3", "", 403, "h1", "-", "refuse", false},
	} {
		req, _ := http.NewRequest("GET", "https://"+r.host+r.path, nil)
		req.Header.Set("X-Forwarded-For", r.xff)
		resp, err := r.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	le.stop() // flushes
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3:\n%s", len(lines), buf.String())
	}
	type line struct {
		Time, Proto, Host, Method, Path, Client, Country, Shield, Rule, Cache string
		Status                                                                int
		Bytes                                                                 int64
		UpstreamMS                                                            float64 `json:"upstream_ms"`
		DurationMS                                                            float64 `json:"duration_ms"`
	}
	want := []line{
		{Proto: "h1", Host: "www.apps.test", Method: "GET", Path: `/?q="x"`, Client: "203.0.113.1", Country: "US", Shield: "allow", Rule: "none", Cache: "MISS", Status: 200, Bytes: 13},
		{Proto: "h2", Host: "app.apps.test", Method: "GET", Path: "/api", Client: "203.0.113.2", Country: "US", Shield: "allow", Rule: "none", Cache: "MISS", Status: 200, Bytes: 3},
		{Proto: "h1", Host: "www.apps.test", Method: "GET", Path: "/", Client: "198.51.100.3", Country: "US", Shield: "refuse", Rule: "denyList", Cache: "-", Status: 403},
	}
	for i, l := range lines {
		var got line
		if err := json.Unmarshal([]byte(l), &got); err != nil {
			t.Fatalf("line %d %q: %v", i, l, err)
		}
		if _, err := time.Parse(time.RFC3339Nano, got.Time); err != nil {
			t.Errorf("line %d time %q", i, got.Time)
		}
		if i == 1 && got.UpstreamMS <= 0 {
			t.Errorf("line %d: upstream_ms %v for a forward", i, got.UpstreamMS)
		}
		got.Time, got.UpstreamMS, got.DurationMS = "", 0, 0
		if i == 2 {
			got.Bytes = 0
		}
		if got != want[i] {
			t.Errorf("line %d:\n got %+v\nwant %+v", i, got, want[i])
		}
	}
}

func TestAppendJSONString(t *testing.T) {
	for _, in := range []string{"plain", `q"b\s`, "ctl\x00\x1f\x7f", "bad\xff\xfeutf8", "sep\u2028\u2029", "日本"} {
		b := appendJSONString(nil, []byte(in))
		var out string
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("%q -> %s: %v", in, b, err)
		}
		if bytes.ContainsAny(b, "\n\r") {
			t.Fatalf("%q -> %s holds a line break", in, b)
		}
	}
}

func FuzzAppendJSONString(f *testing.F) {
	f.Add([]byte("/a?b=\"c\"\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		b := appendJSONString(nil, in)
		var out string
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("%q -> %s: %v", in, b, err)
		}
		if bytes.ContainsAny(b, "\n\r") {
			t.Fatalf("line break in %s", b)
		}
	})
}

// metricValue reads a counter's or gauge's value.
func metricValue(m prometheus.Metric) float64 {
	var d dto.Metric
	if err := m.Write(&d); err != nil {
		return -1
	}
	if c := d.GetCounter(); c != nil {
		return c.GetValue()
	}
	return d.GetGauge().GetValue()
}

// TestEarlyHints is issue 12's 1xx: the preload links of an app's page
// reach the visitor in a 103 before the final answer (learnt from the
// origin's answer; fasthttp's client drops the origin's own 103), over
// HTTP/1.1 and HTTP/2; a 103 is never cached.
func TestEarlyHints(t *testing.T) {
	const link = "</app.css>; rel=preload; as=style"
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", link)
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if strings.HasPrefix(r.URL.Path, "/cached") {
			w.Header().Set("Cache-Control", "public, s-maxage=60")
		} else {
			w.Header().Set("Cache-Control", "no-store")
		}
		fmt.Fprint(w, "<h1>page</h1>")
	}))
	t.Cleanup(origin.Close)
	le := newMixedEdge(t, origin.URL)
	for _, tc := range []struct {
		name   string
		client *http.Client
		path   string
	}{{"HTTP/1.1", le.client, "/h1"}, {"HTTP/2", le.h2Client(), "/h2"}} {
		t.Run(tc.name, func(t *testing.T) {
			get := func(path string) (hints []string, xcache string) {
				t.Helper()
				trace := &httptrace.ClientTrace{Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
					if code == 103 {
						hints = append(hints, h.Values("Link")...)
					}
					return nil
				}}
				req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "GET", "https://app.apps.test"+path, nil)
				resp, err := tc.client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || string(b) != "<h1>page</h1>" || resp.Header.Get("Link") != link {
					t.Fatalf("%d %q %v", resp.StatusCode, b, resp.Header)
				}
				return hints, resp.Header.Get("X-Cache")
			}
			if hints, _ := get(tc.path); len(hints) != 0 {
				t.Fatalf("first request: hints %q before any were learnt", hints)
			}
			// The next request that goes to the origin gets the hints first.
			for range 2 {
				if hints, xc := get(tc.path); xc != "MISS" || len(hints) != 1 || hints[0] != link {
					t.Fatalf("after learning: X-Cache %q, hints %q, want [%q]", xc, hints, link)
				}
			}
			// A cached page needs no hints and gets none.
			get("/cached" + tc.path)
			le.cache.Wait()
			if hints, xc := get("/cached" + tc.path); xc != "HIT" || len(hints) != 0 {
				t.Fatalf("cache hit: X-Cache %q, hints %q", xc, hints)
			}
		})
	}
}

// TestGracefulReload: with ReusePort a new edge binds the same address
// while the old one serves; the old one stops, its request in flight
// finishes, and new connections go to the new one.
func TestGracefulReload(t *testing.T) {
	if !reusePortSupported {
		t.Skip("SO_REUSEPORT is not supported here")
	}
	started, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			once.Do(func() { close(started) })
			<-release
		}
		fmt.Fprint(w, "ok")
	}))
	t.Cleanup(origin.Close)
	old := newMixedEdge(t, origin.URL, func(c *Config) { c.ReusePort = true })
	type result struct {
		status int
		err    error
	}
	res := make(chan result, 1)
	go func() {
		resp, err := old.client.Get("https://app.apps.test/slow")
		if err != nil {
			res <- result{err: err}
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		res <- result{status: resp.StatusCode}
	}()
	<-started
	next := newMixedEdge(t, origin.URL, func(c *Config) { c.ReusePort, c.HTTPSAddr = true, old.https })
	var released sync.Once
	t.Cleanup(func() { released.Do(func() { close(release) }) }) // runs first: lets the old edge stop
	if next.https != old.https {
		t.Fatalf("new edge on %s, old on %s", next.https, old.https)
	}
	stopped := make(chan struct{})
	go func() { old.stop(); close(stopped) }()
	// Once the old edge no longer accepts, every fresh connection goes to
	// the new one while the old one finishes its request in flight.
	// (Connections the kernel had queued on the old listener when it closed
	// are reset unless net.ipv4.tcp_migrate_req=1: see README.)
	<-old.mux.Done()
	for i := range 20 {
		c := next.client // a new connection each time
		c.Transport.(*http.Transport).CloseIdleConnections()
		resp, err := c.Get("https://app.apps.test/fast")
		if err != nil {
			t.Fatalf("request %d during the reload: %v", i, err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("request %d during the reload: %d", i, resp.StatusCode)
		}
	}
	released.Do(func() { close(release) })
	if r := <-res; r.err != nil || r.status != 200 {
		t.Fatalf("request in flight on the old edge: %d %v", r.status, r.err)
	}
	<-stopped
}
