package edge

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/clock"
)

// The shared cache end to end: origin (net/http on a loopback socket) ->
// edge (real listener, HTTP/1.1 over TLS) -> client, with the edge's clock
// fake so that freshness moves only when a test says. Each test is named by
// the RFC section it checks; the cache's own unit tests are in cache/.

// scriptOrigin answers each path with the handler a test set for it and
// records what it was asked.
type scriptOrigin struct {
	srv   *httptest.Server
	clock *clock.Fake
	mu    sync.Mutex
	h     map[string]http.HandlerFunc
	seen  []*http.Request // method, path and header of every request
	hits  atomic.Int64
}

func newScriptOrigin(t *testing.T, c *clock.Fake) *scriptOrigin {
	o := &scriptOrigin{clock: c, h: map[string]http.HandlerFunc{}}
	o.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.hits.Add(1)
		o.mu.Lock()
		o.seen = append(o.seen, &http.Request{Method: r.Method, URL: r.URL, Header: r.Header.Clone()})
		h := o.h[r.URL.Path]
		o.mu.Unlock()
		// The origin's Date comes from the test's clock, so ages are exact.
		w.Header().Set("Date", c.Now().Format(http.TimeFormat))
		if h == nil {
			http.NotFound(w, r)
			return
		}
		h(w, r)
	}))
	t.Cleanup(o.srv.Close)
	return o
}

func (o *scriptOrigin) handle(path string, h http.HandlerFunc) {
	o.mu.Lock()
	o.h[path] = h
	o.mu.Unlock()
}

// last returns the last request the origin saw.
func (o *scriptOrigin) last() *http.Request {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.seen) == 0 {
		return nil
	}
	return o.seen[len(o.seen)-1]
}

// fixed answers status with header fields and body.
func fixed(status int, body string, kv ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(kv); i += 2 {
			w.Header().Set(kv[i], kv[i+1])
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

type sharedEdge struct {
	*liveEdge
	origin *scriptOrigin
	clock  *clock.Fake
}

// newSharedEdge starts an origin and an edge with a fake clock serving
// app.apps.test from it.
func newSharedEdge(t *testing.T, opts ...func(*Config)) *sharedEdge {
	t.Helper()
	c := clock.NewFake(time.Now().Truncate(time.Second))
	o := newScriptOrigin(t, c)
	le := newLiveEdge(t, appSnapshot(map[string]string{"app.apps.test": o.srv.URL}),
		append([]func(*Config){func(cfg *Config) { cfg.Now = c.Now }}, opts...)...)
	return &sharedEdge{liveEdge: le, origin: o, clock: c}
}

type reply struct {
	status int
	header http.Header
	body   string
}

// do sends a request to app.apps.test with header fields kv and waits for
// the cache to apply what the edge stored.
func (se *sharedEdge) do(method, path string, kv ...string) reply {
	se.t.Helper()
	req, err := http.NewRequest(method, "https://app.apps.test"+path, nil)
	if err != nil {
		se.t.Fatal(err)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		req.Header.Set(kv[i], kv[i+1])
	}
	resp, err := se.client.Do(req)
	if err != nil {
		se.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		se.t.Fatal(err)
	}
	se.cache.Wait()
	return reply{resp.StatusCode, resp.Header, string(b)}
}

func (se *sharedEdge) get(path string, kv ...string) reply { return se.do("GET", path, kv...) }

// want checks status, X-Cache and body.
func (r reply) want(t *testing.T, status int, xcache, body string) {
	t.Helper()
	if r.status != status || r.header.Get("X-Cache") != xcache || r.body != body {
		t.Fatalf("got %d X-Cache %q body %q, want %d %q %q", r.status, r.header.Get("X-Cache"), r.body, status, xcache, body)
	}
}

// TestRFC9110_13_2_2_ConditionalAnsweredFromStore: a visitor's own
// If-None-Match or If-Modified-Since matching a stored response gets 304
// from the cache, with the stored validators and no content.
func TestRFC9110_13_2_2_ConditionalAnsweredFromStore(t *testing.T) {
	se := newSharedEdge(t)
	lm := se.clock.Now().Add(-time.Hour).Format(http.TimeFormat)
	se.origin.handle("/c", fixed(200, "cached", "Cache-Control", "max-age=60", "ETag", `"v1"`, "Last-Modified", lm))
	se.get("/c").want(t, 200, "MISS", "cached")
	for _, tc := range []struct {
		name   string
		kv     []string
		status int
		body   string
	}{
		{"If-None-Match match", []string{"If-None-Match", `"x", "v1"`}, 304, ""},
		{"If-None-Match weak match", []string{"If-None-Match", `W/"v1"`}, 304, ""},
		{"If-None-Match other", []string{"If-None-Match", `"v2"`}, 200, "cached"},
		{"If-Modified-Since equal", []string{"If-Modified-Since", lm}, 304, ""},
		{"If-Modified-Since before", []string{"If-Modified-Since", se.clock.Now().Add(-2 * time.Hour).Format(http.TimeFormat)}, 200, "cached"},
		{"If-None-Match wins over If-Modified-Since", []string{"If-None-Match", `"v2"`, "If-Modified-Since", lm}, 200, "cached"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := se.get("/c", tc.kv...)
			r.want(t, tc.status, "HIT", tc.body)
			if r.header.Get("ETag") != `"v1"` {
				t.Errorf("ETag %q", r.header.Get("ETag"))
			}
		})
	}
	if n := se.origin.hits.Load(); n != 1 {
		t.Errorf("origin asked %d times, want once", n)
	}
}

// TestRFC9110_14_RangeFromStoredResponse: a Range request on a stored
// complete 200 is cut from it: 206 with Content-Range, 416 for an
// unsatisfiable range, the whole 200 when If-Range does not match.
func TestRFC9110_14_RangeFromStoredResponse(t *testing.T) {
	se := newSharedEdge(t)
	se.origin.handle("/r", fixed(200, "0123456789", "Cache-Control", "max-age=60", "ETag", `"r1"`, "Content-Type", "text/plain"))
	se.get("/r").want(t, 200, "MISS", "0123456789")
	for _, tc := range []struct {
		name         string
		kv           []string
		status       int
		body, crange string
	}{
		{"§14.4 single range", []string{"Range", "bytes=2-5"}, 206, "2345", "bytes 2-5/10"},
		{"§14.1.2 suffix", []string{"Range", "bytes=-3"}, 206, "789", "bytes 7-9/10"},
		{"§15.5.17 unsatisfiable", []string{"Range", "bytes=20-"}, 416, "", "bytes */10"},
		{"§13.1.5 If-Range match", []string{"Range", "bytes=0-0", "If-Range", `"r1"`}, 206, "0", "bytes 0-0/10"},
		{"§13.1.5 If-Range other", []string{"Range", "bytes=0-0", "If-Range", `"r0"`}, 200, "0123456789", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := se.get("/r", tc.kv...)
			r.want(t, tc.status, "HIT", tc.body)
			if got := r.header.Get("Content-Range"); got != tc.crange {
				t.Errorf("Content-Range %q, want %q", got, tc.crange)
			}
		})
	}
}

// TestRFC9110_6_6_1_DateForwardedUnchanged: the origin's Date reaches the
// client unchanged on a miss and on later hits; Age counts the time since.
func TestRFC9110_6_6_1_DateForwardedUnchanged(t *testing.T) {
	se := newSharedEdge(t)
	date := se.clock.Now().Add(-5 * time.Second).Format(http.TimeFormat)
	se.origin.handle("/d", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Date", date)
		w.Header().Set("Cache-Control", "max-age=600")
		io.WriteString(w, "dated")
	})
	se.origin.handle("/nodate", func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Date"] = nil // net/http then sends none
		w.Header().Set("Cache-Control", "no-store")
		io.WriteString(w, "undated")
	})
	r := se.get("/d")
	r.want(t, 200, "MISS", "dated")
	if r.header.Get("Date") != date {
		t.Fatalf("miss: Date %q, want the origin's %q", r.header.Get("Date"), date)
	}
	se.clock.Advance(10 * time.Second)
	r = se.get("/d")
	r.want(t, 200, "HIT", "dated")
	if r.header.Get("Date") != date || r.header.Get("Age") != "15" {
		t.Fatalf("hit: Date %q Age %q, want %q and 15", r.header.Get("Date"), r.header.Get("Age"), date)
	}
	r = se.get("/nodate")
	if want := se.clock.Now().Format(http.TimeFormat); r.header.Get("Date") != want {
		t.Fatalf("origin without Date: Date %q, want the time received %q", r.header.Get("Date"), want)
	}
}

// TestRFC9213_3_CDNCacheControlNotForwarded: CDN-Cache-Control directs
// this cache ahead of Cache-Control (§2.2) and never reaches the client.
func TestRFC9213_3_CDNCacheControlNotForwarded(t *testing.T) {
	se := newSharedEdge(t)
	se.origin.handle("/cdn", fixed(200, "edge only", "Cache-Control", "no-store", "CDN-Cache-Control", "max-age=60"))
	se.origin.handle("/private", fixed(200, "private", "Cache-Control", "max-age=60", "CDN-Cache-Control", "private"))
	for i, xc := range []string{"MISS", "HIT"} {
		r := se.get("/cdn")
		r.want(t, 200, xc, "edge only")
		if v, ok := r.header["Cdn-Cache-Control"]; ok {
			t.Fatalf("request %d: CDN-Cache-Control %q forwarded to the client", i, v)
		}
		if r.header.Get("Cache-Control") != "no-store" {
			t.Fatalf("request %d: Cache-Control %q, want the origin's", i, r.header.Get("Cache-Control"))
		}
	}
	for range 2 {
		r := se.get("/private")
		r.want(t, 200, "MISS", "private")
		if _, ok := r.header["Cdn-Cache-Control"]; ok {
			t.Fatal("CDN-Cache-Control forwarded")
		}
	}
}

// TestRFC5861_3_StaleWhileRevalidate: within stale-while-revalidate the
// stale response is served at once (X-Cache STALE) and one background
// request revalidates it; a 304 makes it fresh again, a 200 replaces it.
// Concurrent stale requests start one refresh.
func TestRFC5861_3_StaleWhileRevalidate(t *testing.T) {
	se := newSharedEdge(t)
	var version atomic.Int64
	version.Store(1)
	gate := make(chan struct{}) // holds the first refresh until the stale requests are answered
	se.origin.handle("/swr", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("If-None-Match") != "" {
			<-gate
		}
		etag := fmt.Sprintf(`"v%d"`, version.Load())
		w.Header().Set("Cache-Control", "max-age=10, stale-while-revalidate=60")
		w.Header().Set("ETag", etag)
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(304)
			return
		}
		fmt.Fprintf(w, "body %s", etag)
	})
	refreshes := func(i int) float64 { return testCounterValue(se.metrics.refreshes[i]) }

	se.get("/swr").want(t, 200, "MISS", `body "v1"`)
	se.clock.Advance(20 * time.Second) // stale by 10 s, within the 60 s allowance
	hits := se.origin.hits.Load()

	// Concurrent stale requests: all served stale, one refresh.
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			req, _ := http.NewRequest("GET", "https://app.apps.test/swr", nil)
			resp, err := se.client.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || resp.Header.Get("X-Cache") != "STALE" || string(b) != `body "v1"` {
				t.Errorf("stale request: %d %q %q", resp.StatusCode, resp.Header.Get("X-Cache"), b)
			}
		})
	}
	wg.Wait()
	close(gate)
	se.refresher.wait()
	se.cache.Wait()
	if n := se.origin.hits.Load() - hits; n != 1 {
		t.Fatalf("origin asked %d times for 8 stale requests, want one background refresh", n)
	}
	if inm := se.origin.last().Header.Get("If-None-Match"); inm != `"v1"` {
		t.Fatalf("refresh If-None-Match %q, want the stored ETag", inm)
	}
	if refreshes(refreshRevalidated) != 1 {
		t.Fatalf("refreshes revalidated %v, want 1", refreshes(refreshRevalidated))
	}
	r := se.get("/swr") // the 304 made it fresh again
	r.want(t, 200, "HIT", `body "v1"`)
	if r.header.Get("Age") != "0" {
		t.Errorf("Age %q after revalidation, want 0", r.header.Get("Age"))
	}

	// A changed resource: the refresh's 200 replaces the stored response.
	version.Store(2)
	se.clock.Advance(15 * time.Second)
	se.get("/swr").want(t, 200, "STALE", `body "v1"`)
	se.refresher.wait()
	se.cache.Wait()
	se.get("/swr").want(t, 200, "HIT", `body "v2"`)
	if refreshes(refreshStored) != 1 {
		t.Fatalf("refreshes stored %v, want 1", refreshes(refreshStored))
	}

	// A HEAD request refreshes with a GET (only GET responses are stored).
	version.Store(3)
	se.clock.Advance(15 * time.Second)
	if r := se.do("HEAD", "/swr"); r.status != 200 || r.header.Get("X-Cache") != "STALE" {
		t.Fatalf("HEAD: %d %q", r.status, r.header.Get("X-Cache"))
	}
	se.refresher.wait()
	se.cache.Wait()
	if m := se.origin.last().Method; m != "GET" {
		t.Fatalf("refresh method %s, want GET", m)
	}
	se.get("/swr").want(t, 200, "HIT", `body "v3"`)

	// Past the allowance: revalidated before use, not served stale.
	se.clock.Advance(200 * time.Second)
	se.get("/swr").want(t, 200, "REVALIDATED", `body "v3"`)
}

// TestRFC5861_3_RefreshBounded: background refreshes are bounded (a busy
// edge skips one and keeps serving stale) and end within OriginTimeout
// against an origin that never answers; stopping the edge waits for them,
// leaving no goroutine behind.
func TestRFC5861_3_RefreshBounded(t *testing.T) {
	se := newSharedEdge(t, func(c *Config) { c.OriginTimeout = 300 * time.Millisecond })
	release := make(chan struct{})
	var hang atomic.Bool
	se.origin.handle("/slow", func(w http.ResponseWriter, r *http.Request) {
		if hang.Load() {
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		w.Header().Set("Cache-Control", "max-age=1, stale-while-revalidate=600")
		w.Header().Set("ETag", `"s"`)
		io.WriteString(w, "slow")
	})
	defer close(release)
	se.get("/slow").want(t, 200, "MISS", "slow")
	hang.Store(true)

	// Every slot busy: the refresh is skipped, the answer still stale.
	for range maxRefreshes {
		se.refresher.slots <- struct{}{}
	}
	se.clock.Advance(5 * time.Second)
	se.get("/slow").want(t, 200, "STALE", "slow")
	for range maxRefreshes {
		<-se.refresher.slots
	}
	if got := testCounterValue(se.metrics.refreshes[refreshSkipped]); got != 1 {
		t.Fatalf("skipped refreshes %v, want 1", got)
	}

	// The claim lapses after cache.RefreshClaim; the next refresh hangs at
	// the origin and fails at OriginTimeout.
	se.clock.Advance(11 * time.Second)
	start := time.Now()
	se.get("/slow").want(t, 200, "STALE", "slow")
	se.stop() // waits for the refresh
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("stop took %v", d)
	}
	if got := testCounterValue(se.metrics.refreshes[refreshFailed]); got != 1 {
		t.Fatalf("failed refreshes %v, want 1", got)
	}
}

// TestRFC5861_4_StaleIfError: a stored response stands in for a 500, 502,
// 503 or 504 and for an unreachable origin within stale-if-error (the
// response's or the request's); never with must-revalidate or past the
// allowance.
func TestRFC5861_4_StaleIfError(t *testing.T) {
	se := newSharedEdge(t)
	var fail atomic.Int64 // status the origin answers with, 0: healthy
	handler := func(cc string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if s := int(fail.Load()); s != 0 {
				w.WriteHeader(s)
				io.WriteString(w, "origin error")
				return
			}
			w.Header().Set("Cache-Control", cc)
			io.WriteString(w, "good")
		}
	}
	se.origin.handle("/sie", handler("max-age=10, stale-if-error=60"))
	se.origin.handle("/mr", handler("max-age=10, stale-if-error=60, must-revalidate"))
	se.origin.handle("/plain", handler("max-age=10"))
	for _, p := range []string{"/sie", "/mr", "/plain"} {
		se.get(p).want(t, 200, "MISS", "good")
	}
	se.clock.Advance(30 * time.Second) // stale by 20 s
	before := testCounterValue(se.metrics.staleServed)
	for _, tc := range []struct {
		name, path string
		status     int // the origin's
		kv         []string
		want       int
		xcache     string
	}{
		{"500 within allowance", "/sie", 500, nil, 200, "STALE"},
		{"502", "/sie", 502, nil, 200, "STALE"},
		{"503", "/sie", 503, nil, 200, "STALE"},
		{"504", "/sie", 504, nil, 200, "STALE"},
		{"404 is an answer", "/sie", 404, nil, 404, "MISS"},
		{"§5.2.2.2 must-revalidate", "/mr", 503, nil, 503, "MISS"},
		{"no allowance", "/plain", 503, nil, 503, "MISS"},
		{"request stale-if-error", "/plain", 503, []string{"Cache-Control", "stale-if-error=60"}, 200, "STALE"},
		{"request no-cache", "/sie", 503, []string{"Cache-Control", "no-cache"}, 503, "MISS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fail.Store(int64(tc.status))
			r := se.get(tc.path, tc.kv...)
			if r.status != tc.want || r.header.Get("X-Cache") != tc.xcache {
				t.Fatalf("got %d %q %q, want %d %q", r.status, r.header.Get("X-Cache"), r.body, tc.want, tc.xcache)
			}
			if tc.xcache == "STALE" && (r.body != "good" || r.header.Get("Age") != "30") {
				t.Fatalf("stale answer: body %q Age %q", r.body, r.header.Get("Age"))
			}
		})
	}
	fail.Store(503)
	se.clock.Advance(60 * time.Second) // stale by 80 s: past the 60 s allowance
	if r := se.get("/sie"); r.status != 503 {
		t.Fatalf("past the allowance: %d %q", r.status, r.header.Get("X-Cache"))
	}
	if got := testCounterValue(se.metrics.staleServed) - before; got != 5 {
		t.Errorf("stale-on-error counted %v, want 5", got)
	}
}

// TestRFC9111_4_2_4_StaleWhenDisconnected: when the origin cannot be
// reached, a stored response is served stale (RFC 5861 §4 within
// stale-if-error; RFC 9111 §4.2.4 without it), but not one with s-maxage
// (§5.2.2.10: proxy-revalidate) or no-cache.
func TestRFC9111_4_2_4_StaleWhenDisconnected(t *testing.T) {
	se := newSharedEdge(t)
	se.origin.handle("/sie", fixed(200, "sie", "Cache-Control", "max-age=10, stale-if-error=600"))
	se.origin.handle("/etag", fixed(200, "etag", "Cache-Control", "max-age=10", "ETag", `"e"`))
	se.origin.handle("/smax", fixed(200, "smax", "Cache-Control", "s-maxage=10", "ETag", `"s"`))
	se.origin.handle("/nocache", fixed(200, "nocache", "Cache-Control", "no-cache", "ETag", `"n"`))
	for _, p := range []string{"/sie", "/etag", "/smax", "/nocache"} {
		se.get(p)
	}
	se.clock.Advance(60 * time.Second)
	se.origin.srv.Close() // refused from now on
	for _, tc := range []struct {
		path   string
		status int
		body   string
	}{
		{"/sie", 200, "sie"},
		{"/etag", 200, "etag"},
		{"/smax", 502, ""},
		{"/nocache", 502, ""},
	} {
		t.Run(tc.path, func(t *testing.T) {
			r := se.get(tc.path)
			if r.status != tc.status || tc.status == 200 && (r.body != tc.body || r.header.Get("X-Cache") != "STALE") {
				t.Fatalf("got %d %q %q, want %d %q", r.status, r.header.Get("X-Cache"), short(r.body), tc.status, tc.body)
			}
		})
	}
}

// TestRFC9111_3_ChunkedResponsesStored: a response without Content-Length
// is stored while it streams to the first visitor, once it ended cleanly
// and within the entry bound; a cut or an oversized one is not.
func TestRFC9111_3_ChunkedResponsesStored(t *testing.T) {
	se := newSharedEdge(t, func(c *Config) { c.Cache.MaxEntryBytes = 64 << 10 })
	chunked := func(parts int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Cache-Control", "max-age=60")
			for i := range parts {
				fmt.Fprintf(w, "part %05d %s\n", i, strings.Repeat("x", 1000))
				w.(http.Flusher).Flush() // no Content-Length: chunked
			}
		}
	}
	se.origin.handle("/chunked", chunked(10))
	se.origin.handle("/large", chunked(100)) // ~100 KB, past the 64 KiB bound
	se.origin.handle("/cut", func(w http.ResponseWriter, r *http.Request) {
		conn, bw, _ := w.(http.Hijacker).Hijack()
		defer conn.Close()
		fmt.Fprintf(bw, "HTTP/1.1 200 OK\r\nCache-Control: max-age=60\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
		bw.Flush() // and no last chunk
	})
	want := chunked(10)
	rec := httptest.NewRecorder()
	want(rec, httptest.NewRequest("GET", "/", nil))
	r := se.get("/chunked")
	r.want(t, 200, "MISS", rec.Body.String())
	if r.header.Get("Content-Length") != "" {
		t.Fatalf("first answer Content-Length %q: not streamed", r.header.Get("Content-Length"))
	}
	se.get("/chunked").want(t, 200, "HIT", rec.Body.String())

	for range 2 {
		if r := se.get("/large"); r.header.Get("X-Cache") != "MISS" || len(r.body) < 100_000 {
			t.Fatalf("large: %q %d bytes", r.header.Get("X-Cache"), len(r.body))
		}
	}
	for range 2 {
		req, _ := http.NewRequest("GET", "https://app.apps.test/cut", nil)
		resp, err := se.client.Do(req)
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.Header.Get("X-Cache") != "MISS" {
				t.Fatalf("cut response X-Cache %q", resp.Header.Get("X-Cache"))
			}
		}
		if err == nil {
			t.Fatal("a cut body reached the client as complete")
		}
		se.cache.Wait()
	}
	if n := se.origin.hits.Load(); n != 1+2+2 {
		t.Fatalf("origin asked %d times, want 5 (only /chunked stored)", n)
	}
}

// TestRFC9111_4_4_InvalidationOnUnsafeMethods: a non-error response to a
// POST, PUT or DELETE invalidates the target URI and the same-origin
// Location and Content-Location URIs; an error response does not.
func TestRFC9111_4_4_InvalidationOnUnsafeMethods(t *testing.T) {
	se := newSharedEdge(t)
	for _, p := range []string{"/items", "/items/1", "/items/2", "/other"} {
		se.origin.handle(p, func(w http.ResponseWriter, r *http.Request) {
			switch r.Method {
			case "GET":
				w.Header().Set("Cache-Control", "max-age=600")
				io.WriteString(w, "get "+r.URL.Path)
			case "POST":
				w.Header().Set("Location", "/items/1")
				w.Header().Set("Content-Location", "https://app.apps.test/items/2")
				w.WriteHeader(201)
			case "PUT":
				w.WriteHeader(500)
			default:
				w.WriteHeader(204)
			}
		})
	}
	fill := func() {
		for _, p := range []string{"/items", "/items/1", "/items/2", "/other"} {
			se.get(p)
		}
	}
	state := func() string {
		var b strings.Builder
		for _, p := range []string{"/items", "/items/1", "/items/2", "/other"} {
			fmt.Fprintf(&b, "%s=%s ", p, se.get(p).header.Get("X-Cache"))
		}
		return b.String()
	}
	for _, tc := range []struct{ name, method, path, want string }{
		{"POST with Location and Content-Location", "POST", "/items", "/items=MISS /items/1=MISS /items/2=MISS /other=HIT "},
		{"DELETE", "DELETE", "/other", "/items=HIT /items/1=HIT /items/2=HIT /other=MISS "},
		{"PUT answered 500", "PUT", "/items", "/items=HIT /items/1=HIT /items/2=HIT /other=HIT "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fill()
			se.do(tc.method, tc.path)
			if got := state(); got != tc.want {
				t.Fatalf("after %s %s: %s, want %s", tc.method, tc.path, got, tc.want)
			}
		})
	}
}

// TestSharedCacheHTTP2: the same shared-cache answers over HTTP/2 (the
// bridge): a stored response with its Date, a Range cut from it, and no
// CDN-Cache-Control.
func TestSharedCacheHTTP2(t *testing.T) {
	se := newSharedEdge(t)
	se.origin.handle("/h2", fixed(200, "0123456789", "Cache-Control", "no-store", "CDN-Cache-Control", "max-age=60"))
	se.get("/h2").want(t, 200, "MISS", "0123456789")
	c := se.h2Client()
	req, _ := http.NewRequest("GET", "https://app.apps.test/h2", nil)
	req.Header.Set("Range", "bytes=1-3")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.ProtoMajor != 2 || resp.StatusCode != 206 || string(b) != "123" || resp.Header.Get("X-Cache") != "HIT" ||
		resp.Header.Get("Content-Range") != "bytes 1-3/10" || resp.Header.Get("CDN-Cache-Control") != "" {
		t.Fatalf("h2: %s %d %q %v", resp.Proto, resp.StatusCode, b, resp.Header)
	}
}
