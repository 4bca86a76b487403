package placement_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/placement"
	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

// secret is the test replicas' shared forwarding secret.
var secret = bytes.Repeat([]byte{7}, 32)

// node is a replica: a registry, a forwarder and an HTTP server whose
// handler routes /r/{id} and otherwise echoes the body with its own name.
type node struct {
	name string
	db   *store.DB
	reg  *placement.Registry
	fwd  *placement.Forwarder
	srv  *httptest.Server
	clk  *clock.Fake
	// served counts requests this node executed itself.
	served atomic.Int64
}

func startNode(t testing.TB, dsn, name string, clk *clock.Fake) *node {
	t.Helper()
	n := &node{name: name, clk: clk}
	n.srv = httptest.NewUnstartedServer(http.HandlerFunc(n.serve))
	n.db, n.reg = newNode(t, dsn, clk, name, "http://"+n.srv.Listener.Addr().String())
	var err error
	if n.fwd, err = placement.NewForwarder(n.reg, secret, quiet); err != nil {
		t.Fatal(err)
	}
	n.srv.Start()
	t.Cleanup(n.srv.Close)
	return n
}

// maxBody is the test API's request body limit (as api.Route.MaxBody).
const maxBody = 8 << 20

func (n *node) serve(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	id := strings.TrimPrefix(r.URL.Path, "/r/")
	done, err := n.fwd.Route(w, r, placement.KindDatabase, id)
	if err != nil {
		api.WriteError(w, r, quiet, err)
		return
	}
	if done {
		return
	}
	n.served.Add(1)
	if id == "db_cut" { // the owner dies half-way through its answer
		w.Header().Set("Content-Length", "100")
		w.WriteHeader(http.StatusOK)
		w.Write([]byte(`{"partial":`))
		http.NewResponseController(w).Flush()
		panic(http.ErrAbortHandler)
	}
	if id == "db_crash" { // the owner dies mid-request
		c, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			c.Close()
		}
		return
	}
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("X-Served", n.name)
	w.Header().Set("X-Host-Seen", r.Host)
	w.WriteHeader(http.StatusTeapot)
	fmt.Fprintf(w, "%s %s %s?%s %d", n.name, r.Method, r.URL.Path, r.URL.RawQuery, len(body))
}

func send(t *testing.T, n *node, method, path string, body []byte, header http.Header) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, n.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp, string(out)
}

func errorObject(t *testing.T, body string) map[string]any {
	t.Helper()
	var e struct {
		Error map[string]any `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error == nil {
		t.Fatalf("not an error body: %q", body)
	}
	return e.Error
}

func TestForwarder(t *testing.T) {
	for _, e := range pgtest.Engines() {
		t.Run(e.Name, func(t *testing.T) {
			dsn := e.DSN(t)
			start := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
			a := startNode(t, dsn, "node-a", clock.NewFake(start))
			b := startNode(t, dsn, "node-b", clock.NewFake(start))
			assign(t, a.db, a.reg, "db_a")
			assign(t, a.db, a.reg, "db_crash")
			assign(t, a.db, a.reg, "db_cut")

			t.Run("owner serves its own", func(t *testing.T) {
				resp, body := send(t, a, "POST", "/r/db_a", []byte("x"), nil)
				if resp.StatusCode != http.StatusTeapot || !strings.HasPrefix(body, "node-a POST") || resp.Header.Get(placement.HeaderNode) != "" {
					t.Fatalf("%d %q %v", resp.StatusCode, body, resp.Header)
				}
			})
			t.Run("forwarded with body, status, headers and query", func(t *testing.T) {
				big := bytes.Repeat([]byte("0123456789"), 400_000) // 4 MB, streamed
				resp, body := send(t, b, "POST", "/r/db_a?x=1&y=%2F", big, http.Header{"Authorization": {"Bearer k"}})
				want := fmt.Sprintf("node-a POST /r/db_a?x=1&y=%%2F %d", len(big))
				if resp.StatusCode != http.StatusTeapot || body != want {
					t.Fatalf("%d %q, want 418 %q", resp.StatusCode, body, want)
				}
				if resp.Header.Get("X-Served") != "node-a" || resp.Header.Get(placement.HeaderNode) != "node-a" {
					t.Fatalf("headers %v", resp.Header)
				}
				if host := resp.Header.Get("X-Host-Seen"); host != strings.TrimPrefix(b.srv.URL, "http://") {
					t.Fatalf("owner saw Host %q, want the client's %q", host, b.srv.URL)
				}
				if b.served.Load() != 0 {
					t.Fatalf("node-b served %d requests itself", b.served.Load())
				}
			})
			t.Run("a body past the forwarding node's limit", func(t *testing.T) {
				resp, body := send(t, b, "POST", "/r/db_a", make([]byte, maxBody+1), nil)
				if resp.StatusCode != http.StatusRequestEntityTooLarge || errorObject(t, body)["code"] != "body_too_large" {
					t.Fatalf("%d %s", resp.StatusCode, body)
				}
			})
			t.Run("unplaced runs where it lands", func(t *testing.T) {
				resp, body := send(t, b, "GET", "/r/db_old", nil, nil)
				if resp.StatusCode != http.StatusTeapot || !strings.HasPrefix(body, "node-b") {
					t.Fatalf("%d %q", resp.StatusCode, body)
				}
			})

			refusals := []struct {
				name   string
				on     *node
				header http.Header
				status int
				code   string
			}{
				{"client forges the header", b, http.Header{placement.HeaderForward: {"node-a AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}}, http.StatusForbidden, "forward_refused"},
				{"client sends garbage", b, http.Header{placement.HeaderForward: {"x"}}, http.StatusForbidden, "forward_refused"},
				{"header twice", a, http.Header{placement.HeaderForward: {b.fwd.Sign("GET", "/r/db_a"), b.fwd.Sign("GET", "/r/db_a")}}, http.StatusForbidden, "forward_refused"},
				{"header for another path", a, http.Header{placement.HeaderForward: {b.fwd.Sign("GET", "/r/db_other")}}, http.StatusForbidden, "forward_refused"},
				{"header for another method", a, http.Header{placement.HeaderForward: {b.fwd.Sign("DELETE", "/r/db_a")}}, http.StatusForbidden, "forward_refused"},
				// A verified forward that reaches a node that is not the
				// owner (a stale view of placement) is never forwarded again.
				{"loop", b, http.Header{placement.HeaderForward: {a.fwd.Sign("GET", "/r/db_a")}}, http.StatusServiceUnavailable, "forward_loop"},
			}
			for _, tc := range refusals {
				t.Run(tc.name, func(t *testing.T) {
					before := a.served.Load()
					resp, body := send(t, tc.on, "GET", "/r/db_a", nil, tc.header)
					if resp.StatusCode != tc.status || errorObject(t, body)["code"] != tc.code {
						t.Fatalf("%d %s, want %d %s", resp.StatusCode, body, tc.status, tc.code)
					}
					if a.served.Load() != before {
						t.Fatal("the owner ran a refused request")
					}
				})
			}
			t.Run("a peer's header verifies on the owner", func(t *testing.T) {
				resp, body := send(t, a, "GET", "/r/db_a", nil, http.Header{placement.HeaderForward: {b.fwd.Sign("GET", "/r/db_a")}})
				if resp.StatusCode != http.StatusTeapot || !strings.HasPrefix(body, "node-a") {
					t.Fatalf("%d %q", resp.StatusCode, body)
				}
			})

			t.Run("owner fails mid-request", func(t *testing.T) {
				resp, body := send(t, b, "POST", "/r/db_crash", []byte("x"), nil)
				obj := errorObject(t, body)
				if resp.StatusCode != http.StatusBadGateway || obj["code"] != "database_unavailable" || obj["reason"] != "owner_failed" || obj["node"] != "node-a" {
					t.Fatalf("%d %s", resp.StatusCode, body)
				}
			})
			t.Run("owner dies mid-answer: the client's answer is aborted", func(t *testing.T) {
				resp, err := http.Get(b.srv.URL + "/r/db_cut")
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				if _, err := io.ReadAll(resp.Body); err == nil {
					t.Fatal("a truncated answer read as complete")
				}
			})
			t.Run("owner dies mid-answer: an in-process caller gets the truncated bytes, no panic", func(t *testing.T) {
				// The context of a served request, as agents' runs inherit.
				ctx := context.WithValue(context.Background(), http.ServerContextKey, b.srv.Config)
				req := httptest.NewRequestWithContext(ctx, "GET", "/r/db_cut", nil)
				status, body, err := api.ServeInProcess(http.HandlerFunc(b.serve), req, 1<<20)
				if err != nil || status != http.StatusOK || json.Valid(body) {
					t.Fatalf("%d %q %v", status, body, err)
				}
			})
			t.Run("owner stale", func(t *testing.T) {
				b.clk.Advance(3 * time.Hour)
				defer b.clk.Advance(-3 * time.Hour)
				before := a.served.Load()
				resp, body := send(t, b, "GET", "/r/db_a", nil, nil)
				obj := errorObject(t, body)
				if resp.StatusCode != http.StatusServiceUnavailable || obj["code"] != "database_unavailable" || obj["reason"] != "owner_stale" || obj["node"] != "node-a" {
					t.Fatalf("%d %s", resp.StatusCode, body)
				}
				if resp.Header.Get("Retry-After") == "" || a.served.Load() != before {
					t.Fatalf("Retry-After %q, owner served %d", resp.Header.Get("Retry-After"), a.served.Load()-before)
				}
			})
			t.Run("owner down", func(t *testing.T) {
				a.srv.Close()
				before := b.served.Load()
				resp, body := send(t, b, "POST", "/r/db_a", []byte(`{"sql":"insert"}`), nil)
				obj := errorObject(t, body)
				if resp.StatusCode != http.StatusServiceUnavailable || obj["code"] != "database_unavailable" || obj["reason"] != "owner_unreachable" || obj["node"] != "node-a" {
					t.Fatalf("%d %s", resp.StatusCode, body)
				}
				if resp.Header.Get("Retry-After") == "" {
					t.Fatal("no Retry-After")
				}
				if b.served.Load() != before {
					t.Fatal("node-b ran node-a's database itself")
				}
			})
		})
	}
}

func TestSecret(t *testing.T) {
	if _, err := placement.DeriveSecret([]byte("short")); !errors.Is(err, placement.ErrBadSecret) {
		t.Fatalf("short seal key: %v", err)
	}
	key := bytes.Repeat([]byte{1}, 32)
	s1, err := placement.DeriveSecret(key)
	if err != nil {
		t.Fatal(err)
	}
	s2, _ := placement.DeriveSecret(key)
	if !bytes.Equal(s1, s2) || bytes.Equal(s1, key) || len(s1) != 32 {
		t.Fatal("derivation is not a stable, separate 32-byte key")
	}
	if _, err := placement.NewForwarder(nil, []byte("short"), nil); !errors.Is(err, placement.ErrBadSecret) {
		t.Fatalf("short secret: %v", err)
	}
}

func TestParseForward(t *testing.T) {
	good := "node-a " + strings.Repeat("A", 43)
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{good, true},
		{"", false},
		{"node-a", false},
		{"Node-A " + strings.Repeat("A", 43), false},
		{"node-a " + strings.Repeat("A", 42), false},
		{"node-a " + strings.Repeat("A", 44), false},
		{"node-a " + strings.Repeat("+", 43), false},
		{"node-a  " + strings.Repeat("A", 43), false},
		{"node-a " + strings.Repeat("A", 39) + "\r\nAA", false}, // the decoder skips CR LF
	} {
		t.Run(tc.in, func(t *testing.T) {
			_, _, err := placement.ParseForward(tc.in)
			if (err == nil) != tc.ok {
				t.Fatalf("ParseForward(%q) = %v", tc.in, err)
			}
		})
	}
}

func FuzzParseForward(f *testing.F) {
	f.Add("node-a " + strings.Repeat("A", 43))
	f.Add("x y")
	f.Add("")
	f.Fuzz(func(t *testing.T, v string) {
		from, mac, err := placement.ParseForward(v)
		if err != nil {
			return
		}
		if !placement.ValidNodeID(from) || len(mac) != 32 {
			t.Fatalf("accepted %q: %q %d", v, from, len(mac))
		}
	})
}
