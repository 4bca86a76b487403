package edge

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/svcplatform/platform/internal/freeport"
)

// appOrigin is a test server app.
type appOrigin struct {
	srv  *httptest.Server
	hits map[string]*atomic.Int64
}

const bigSize = 6 << 20

func bigBody() []byte {
	b := make([]byte, bigSize)
	for i := range b {
		b[i] = byte(i * 7)
	}
	return b
}

func newAppOrigin(t *testing.T) *appOrigin {
	o := &appOrigin{hits: map[string]*atomic.Int64{}}
	for _, p := range []string{"/cached", "/private", "/nostore", "/revalidate", "/vary"} {
		o.hits[p] = new(atomic.Int64)
	}
	big := bigBody()
	o.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c := o.hits[r.URL.Path]; c != nil {
			c.Add(1)
		}
		if strings.HasPrefix(r.URL.Path, "/echo") {
			json.NewEncoder(w).Encode(map[string]any{"host": r.Host, "uri": r.RequestURI, "method": r.Method, "header": r.Header})
			return
		}
		switch r.URL.Path {
		case "/cached":
			w.Header().Set("Cache-Control", "public, s-maxage=60")
			fmt.Fprintf(w, "cached %d", o.hits["/cached"].Load())
		case "/private":
			w.Header().Set("Cache-Control", "private, max-age=60")
			fmt.Fprintf(w, "private %d", o.hits["/private"].Load())
		case "/nostore":
			w.Header().Set("Cache-Control", "no-store")
			fmt.Fprintf(w, "nostore %d", o.hits["/nostore"].Load())
		case "/vary":
			w.Header().Set("Cache-Control", "max-age=60")
			w.Header().Set("Vary", "Accept-Language")
			fmt.Fprintf(w, "lang=%s", r.Header.Get("Accept-Language"))
		case "/revalidate":
			w.Header().Set("Cache-Control", "no-cache")
			w.Header().Set("ETag", `"v1"`)
			if r.Header.Get("If-None-Match") == `"v1"` {
				w.WriteHeader(http.StatusNotModified)
				return
			}
			fmt.Fprint(w, "revalidated body")
		case "/upload":
			h := sha256.New()
			n, err := io.Copy(h, r.Body)
			if err != nil {
				return
			}
			fmt.Fprintf(w, "%d %x", n, h.Sum(nil))
		case "/big":
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Header().Set("Content-Length", fmt.Sprint(len(big)))
			w.Write(big)
		case "/slow":
			time.Sleep(1500 * time.Millisecond)
			fmt.Fprint(w, "too late")
		case "/hop":
			w.Header().Set("Connection", "X-Hop")
			w.Header().Set("X-Hop", "secret")
			w.Header().Set("Keep-Alive", "timeout=5")
			w.Header().Set("X-Frame-Options", "DENY")
			w.Header().Set("Set-Cookie", "a=b")
			fmt.Fprint(w, "hop")
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(o.srv.Close)
	return o
}

// TestServerApp forwards to a server app's origin: forwarding headers,
// hop-by-hop fields, the RFC 9111 shared cache, streamed bodies both ways,
// limits, and clear 502/504 pages when the origin fails.
func TestServerApp(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.OriginTimeout, c.MaxBodyBytes = 500*time.Millisecond, 8<<20 })
	o := newAppOrigin(t)
	app := h.newSite("shopapp")
	app.deployOrigin("app", o.srv.URL)

	t.Run("forwarding", func(t *testing.T) {
		r := h.get(app.host, "/echo?q=1&x=%2F", "X-Forwarded-For: 198.51.100.4", "Connection: X-Secret", "X-Secret: 1",
			"Proxy-Authorization: Basic eA==", "Cookie: s=1", "Authorization: Bearer t")
		var got struct {
			Host, URI, Method string
			Header            http.Header
		}
		if err := json.Unmarshal([]byte(r.body), &got); err != nil {
			t.Fatalf("%d %s", r.status, r.body)
		}
		if got.Host != app.host || got.URI != "/echo?q=1&x=%2F" || got.Method != "GET" {
			t.Errorf("origin saw %+v", got)
		}
		for k, want := range map[string]string{"X-Forwarded-For": "198.51.100.4, 127.0.0.1", "X-Forwarded-Proto": "https",
			"X-Forwarded-Host": app.host, "X-Real-Ip": "198.51.100.4", "Cookie": "s=1", "Authorization": "Bearer t"} {
			if g := got.Header.Get(k); g != want {
				t.Errorf("origin saw %s %q, want %q", k, g, want)
			}
		}
		for _, k := range []string{"X-Secret", "Proxy-Authorization"} {
			if g := got.Header.Get(k); g != "" {
				t.Errorf("hop-by-hop %s reached the origin: %q", k, g)
			}
		}
		// The request target reaches the origin byte for byte: no dot
		// segment resolved, no slash merged, no escape changed.
		for _, target := range []string{"/echo/a/../b?x=1", "/echo/%2e%2e/%7Euser", "/echo//double//slash", "/echo/sp%20ace?q=a%2Bb&r=%2f"} {
			r := h.get(app.host, target)
			var got struct{ URI string }
			if err := json.Unmarshal([]byte(r.body), &got); err != nil {
				t.Fatalf("%s: %d %s", target, r.status, r.body)
			}
			if got.URI != target {
				t.Errorf("origin saw target %q, want %q as sent", got.URI, target)
			}
		}
		r = h.get(app.host, "/hop")
		if r.header.Get("X-Hop") != "" || r.header.Get("Keep-Alive") != "" || r.body != "hop" {
			t.Errorf("hop-by-hop answer fields: %v", r.header)
		}
		if r.header.Get("X-Frame-Options") != "DENY" || r.header.Get("Set-Cookie") != "a=b" || r.header.Get("Strict-Transport-Security") == "" ||
			r.header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("origin fields must pass unchanged, security headers added: %v", r.header)
		}
	})

	t.Run("shared cache", func(t *testing.T) {
		for i, want := range []string{"MISS", "HIT", "HIT"} {
			r := h.get(app.host, "/cached")
			if r.header.Get("X-Cache") != want || r.body != "cached 1" {
				t.Fatalf("/cached #%d: %q %q", i, r.header.Get("X-Cache"), r.body)
			}
			h.edge.cache.Wait()
		}
		if r := h.get(app.host, "/cached"); r.header.Get("Age") == "" || r.header.Get("Cache-Control") != "public, s-maxage=60" {
			t.Errorf("stored fields: %v", r.header)
		}
		h.do("POST", app.host, "/cached", strings.NewReader("x"))
		h.edge.cache.Wait()
		if r := h.get(app.host, "/cached"); r.header.Get("X-Cache") != "MISS" {
			t.Errorf("after POST: %q", r.header.Get("X-Cache"))
		}
		for _, p := range []string{"/private", "/nostore"} {
			for range 2 {
				h.get(app.host, p)
				h.edge.cache.Wait()
			}
			if n := o.hits[p].Load(); n != 2 {
				t.Errorf("%s reached the origin %d times, want 2 (never stored)", p, n)
			}
		}
		for range 2 {
			h.get(app.host, "/cached", "Authorization: Bearer x") // public allows storing with Authorization
		}
		for _, lang := range []string{"en", "de", "en", "de"} {
			if r := h.get(app.host, "/vary", "Accept-Language: "+lang); r.body != "lang="+lang {
				t.Errorf("vary %s: %q", lang, r.body)
			}
			h.edge.cache.Wait()
		}
		if n := o.hits["/vary"].Load(); n != 2 {
			t.Errorf("/vary reached the origin %d times, want 2", n)
		}
		for i, want := range []string{"MISS", "REVALIDATED", "REVALIDATED"} {
			r := h.get(app.host, "/revalidate")
			if r.body != "revalidated body" || r.header.Get("X-Cache") != want {
				t.Errorf("/revalidate #%d: %q %q", i, r.header.Get("X-Cache"), r.body)
			}
			h.edge.cache.Wait()
		}
	})

	t.Run("bodies", func(t *testing.T) {
		up := bytes.Repeat([]byte("0123456789"), 500_000) // 5 MB, streamed
		sum := sha256.Sum256(up)
		r := h.do("POST", app.host, "/upload", bytes.NewReader(up))
		if r.status != 200 || r.body != fmt.Sprintf("%d %s", len(up), hex.EncodeToString(sum[:])) {
			t.Errorf("upload: %d %q", r.status, r.body)
		}
		// Past the 8 MB limit, chunked: the edge stops reading at the limit
		// and answers 413; the client, still writing, gets it (linger.go).
		req, _ := http.NewRequest("POST", "https://"+app.host+"/upload", io.MultiReader(bytes.NewReader(up), bytes.NewReader(up)))
		if resp, err := h.client.Do(req); err != nil || resp.StatusCode != 413 {
			t.Errorf("chunked 10 MB upload: %v %v", resp, err)
		} else {
			resp.Body.Close()
		}
		// Past the limit by Content-Length: refused before any byte of the
		// body is read.
		c := h.dialTLS(app.host)
		fmt.Fprintf(c, "POST /upload HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\nabc", app.host, 10<<20)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != 413 {
			t.Errorf("10 MB upload with Content-Length: %v %v", resp, err)
		}
		c.Close()
		r = h.get(app.host, "/big")
		if r.status != 200 || r.body != string(bigBody()) {
			t.Errorf("download: %d, %d bytes", r.status, len(r.body))
		}
		if r := h.do("HEAD", app.host, "/big", nil); r.status != 200 || r.body != "" || r.header.Get("Content-Length") != fmt.Sprint(bigSize) {
			t.Errorf("HEAD: %d %q %v", r.status, short(r.body), r.header)
		}
		resp, err = h.h3c.Get("https://" + app.host + "/big")
		if r := read(t, resp, err); r.status != 200 || len(r.body) != bigSize {
			t.Errorf("download over HTTP/3: %d, %d bytes", r.status, len(r.body))
		}
	})

	t.Run("origin failure", func(t *testing.T) {
		r := h.get(app.host, "/slow")
		if r.status != 504 || !strings.Contains(r.body, "did not answer in time") || r.header.Get("Cache-Control") != "no-store" {
			t.Errorf("slow origin: %d %q", r.status, short(r.body))
		}
		deadAddr, err := freeport.Addr() // nobody listens there
		if err != nil {
			t.Fatal(err)
		}
		dead := "http://" + deadAddr
		gone := h.newSite("goneapp")
		gone.deployOrigin("app", dead)
		r = h.get(gone.host, "/")
		if r.status != 502 || !strings.Contains(r.body, "Bad Gateway") || !strings.Contains(r.body, "could not be reached") {
			t.Errorf("dead origin: %d %q", r.status, short(r.body))
		}
		if r := h.get(app.host, "/cached"); r.status != 200 {
			t.Errorf("a failing origin affected another: %d", r.status)
		}
	})
}
