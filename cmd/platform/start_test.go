package main

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/svcplatform/platform/controlplane/store"
)

// TestListenersOf: reserve binds, and runTest checks, every address flag
// (*-addr) of serve; each command only its own; an address that is off
// is not bound.
func TestListenersOf(t *testing.T) {
	flags := func(ls []listenerFlag) []string {
		var out []string
		for _, l := range ls {
			out = append(out, l.flag)
		}
		slices.Sort(out)
		return out
	}
	var all options
	if err := all.parse("serve", nil); err != nil {
		t.Fatal(err)
	}
	all.mailBounceAddr = "127.0.0.1:2525" // off by default
	var addrFlags []string
	for _, d := range all.defs() {
		if strings.HasSuffix(d.name, "-addr") {
			addrFlags = append(addrFlags, d.name)
		}
	}
	slices.Sort(addrFlags)
	for _, tc := range []struct {
		name string
		cmd  string
		edit func(*options)
		want []string
	}{
		{"serve: every address flag", "serve", nil, addrFlags},
		{"controlplane: no edge", "controlplane", nil, []string{"admin-addr", "api-addr", "mail-bounce-addr", "rtmp-addr", "rtmps-addr"}},
		{"edge: no API, no live ingest", "edge", nil, []string{"admin-addr", "http-addr", "https-addr"}},
		{"live ingest off", "serve", func(o *options) { o.rtmpAddr = "" }, []string{"admin-addr", "api-addr", "http-addr", "https-addr", "mail-bounce-addr"}},
		{"bounce listener off", "serve", func(o *options) { o.mailBounceAddr = "" }, []string{"admin-addr", "api-addr", "http-addr", "https-addr", "rtmp-addr", "rtmps-addr"}},
		{"RTMPS off", "serve", func(o *options) { o.rtmpsAddr = "" }, []string{"admin-addr", "api-addr", "http-addr", "https-addr", "mail-bounce-addr", "rtmp-addr"}},
		{"RTMPS off with ACME", "serve", func(o *options) { o.acmeEmail = "ops@example.com" }, []string{"admin-addr", "api-addr", "http-addr", "https-addr", "mail-bounce-addr", "rtmp-addr"}},
		{"plain HTTP off", "serve", func(o *options) { o.httpAddr = "-" }, []string{"admin-addr", "api-addr", "https-addr", "mail-bounce-addr", "rtmp-addr", "rtmps-addr"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := all
			if tc.edit != nil {
				tc.edit(&o)
			}
			if got := flags(listenersOf(tc.cmd, o)); !slices.Equal(got, tc.want) {
				t.Errorf("%v, want %v", got, tc.want)
			}
		})
	}
}

// A first start that fails creates no owner key it never printed: a port
// in use fails before anything is made, naming the port and the flag that
// moves it; a failure after the control plane is built (the edge cannot
// start) leaves no workspace. The next start on free ports creates the
// workspace and prints its key, which works; the one after says the key
// was printed.
func TestFailedFirstStart(t *testing.T) {
	data := t.TempDir()
	freshOptions := func(t *testing.T) options {
		// No --bootstrap-key: the key is generated and printed.
		var o options
		if err := o.parse("serve", []string{"--data", data, "--api-addr", freeAddr(t), "--admin-addr", freeAddr(t),
			"--http-addr", freeAddr(t), "--https-addr", freeAddr(t), "--rtmp-addr", freeAddr(t), "--rtmps-addr", freeAddr(t)}); err != nil {
			t.Fatal(err)
		}
		return o
	}
	for _, tc := range []struct {
		name, flag string
		udp        bool
		at         func(*options) *string
		want       string
	}{
		{"api port in use", "api-addr", false, func(o *options) *string { return &o.apiAddr }, "api address "},
		{"admin port in use", "admin-addr", false, func(o *options) *string { return &o.adminAddr }, "admin address "},
		{"edge http port in use", "http-addr", false, func(o *options) *string { return &o.httpAddr }, "http address "},
		{"edge https port in use", "https-addr", false, func(o *options) *string { return &o.httpsAddr }, "https address "},
		{"edge HTTP/3 UDP port in use", "https-addr", true, func(o *options) *string { return &o.httpsAddr }, "(UDP, for HTTP/3)"},
		{"rtmp port in use", "rtmp-addr", false, func(o *options) *string { return &o.rtmpAddr }, "rtmp address "},
		{"rtmps port in use", "rtmps-addr", false, func(o *options) *string { return &o.rtmpsAddr }, "rtmps address "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := freeAddr(t)
			if tc.udp {
				pc, err := net.ListenPacket("udp", addr)
				if err != nil {
					t.Fatal(err)
				}
				defer pc.Close()
			} else {
				ln, err := net.Listen("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				defer ln.Close()
			}
			o := freshOptions(t)
			*tc.at(&o) = addr
			var out syncBuffer
			err := runTest(t, context.Background(), "serve", o, quiet, &out)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), addr) ||
				!strings.Contains(err.Error(), "--"+tc.flag) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("err = %v, want one line naming %s, %s and --%s", err, tc.want, addr, tc.flag)
			}
			if entries, _ := os.ReadDir(data); len(entries) != 0 || out.String() != "" {
				t.Fatalf("a start refused for a busy port created %v and printed %q", entries, out.String())
			}
		})
	}

	t.Run("edge fails after the control plane is built", func(t *testing.T) {
		garbage := filepath.Join(t.TempDir(), "country.mmdb")
		if err := os.WriteFile(garbage, []byte("not a country database"), 0o600); err != nil {
			t.Fatal(err)
		}
		o := freshOptions(t)
		o.geoip = garbage
		var out syncBuffer
		if err := runTest(t, context.Background(), "serve", o, quiet, &out); err == nil || !strings.Contains(err.Error(), "country database") {
			t.Fatalf("err = %v, want the edge's country database refused", err)
		}
		db, err := store.Open(context.Background(), filepath.Join(data, "platform.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM workspaces`).Scan(&n); err != nil || n != 0 || strings.Contains(out.String(), "key") {
			t.Fatalf("%d workspaces (%v) after a failed start that printed %q", n, err, out.String())
		}
	})

	start := func(t *testing.T) string {
		t.Helper()
		o := freshOptions(t)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		var out syncBuffer
		go func() { done <- runTest(t, ctx, "serve", o, quiet, &out) }()
		defer func() {
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}()
		waitReady(t, o.adminAddr) // the admin listener serves once the start is printed
		printed := out.String()
		if m := regexp.MustCompile(`owner API key \(shown once, store it now\): (\S+)`).FindStringSubmatch(printed); m != nil {
			req, _ := http.NewRequest("GET", "http://"+o.apiAddr+"/api/workspace", nil)
			req.Header.Set("Authorization", "Bearer "+m[1])
			resp, err := http.DefaultClient.Do(req)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("the printed key: %v %v", resp, err)
			}
			resp.Body.Close()
		}
		return printed
	}
	if out := start(t); !strings.Contains(out, "platform: created workspace") || !strings.Contains(out, "owner API key (shown once") {
		t.Fatalf("the first start that succeeded printed %q, want the workspace and its key", out)
	}
	if out := start(t); !strings.Contains(out, "existing data directory") || !strings.Contains(out, "platform owner-key reset") || strings.Contains(out, "shown once") {
		t.Fatalf("a later start printed %q", out)
	}
}

// TestStartGate: until the first workspace exists only the edge's calls
// reach the API; others wait (one whose client is gone gives up), and all
// pass once the gate opens.
func TestStartGate(t *testing.T) {
	var reached []string
	g := newStartGate(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached = append(reached, r.URL.Path) }))
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	serve := func(path string, ctx context.Context) {
		g.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", path, nil).WithContext(ctx))
	}
	serve("/api/edge/certs/ca", gone)
	serve("/edge/v1/config", gone)
	serve("/api/workspace", gone) // waits for the gate, until its client goes
	if !slices.Equal(reached, []string{"/api/edge/certs/ca", "/edge/v1/config"}) {
		t.Fatalf("before the gate opened: %v", reached)
	}
	g.open()
	g.open() // twice is fine
	serve("/api/workspace", context.Background())
	if !slices.Equal(reached, []string{"/api/edge/certs/ca", "/edge/v1/config", "/api/workspace"}) {
		t.Fatalf("after: %v", reached)
	}
}
