package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/internal/freeport"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	a, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// testOptions are serve's options for a test: every listener on a port
// the test chose (freeport, or 0 for the kernel's pick), none on a default
// (`make run` may be using those on the same machine).
func testOptions(t *testing.T, extra ...string) options {
	var o options
	args := []string{"--data", t.TempDir(), "--api-addr", freeAddr(t), "--admin-addr", freeAddr(t),
		"--http-addr", "127.0.0.1:0", "--https-addr", "127.0.0.1:0", "--rtmp-addr", freeAddr(t), "--rtmps-addr", freeAddr(t),
		"--bootstrap-key", "ci-bootstrap-key-0123456789abcdef"}
	if err := o.parse("serve", append(args, extra...)); err != nil {
		t.Fatal(err)
	}
	return o
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// errDefaultPort is what runTest returns instead of starting a command
// that would listen on a default address.
var errDefaultPort = errors.New("a listener is on its default address")

// runTest is run for tests: it refuses (t.Errorf, safe from any goroutine)
// to start a command with any of its listeners (listenersOf, which
// TestListenersOf holds to every *-addr flag) at its default address, so
// tests bind only ports they chose.
func runTest(t *testing.T, ctx context.Context, cmd string, o options, log *slog.Logger, out io.Writer) error {
	t.Helper()
	defaults := map[string]string{}
	for _, d := range o.defs() {
		defaults[d.name] = d.def
	}
	for _, l := range listenersOf(cmd, o) {
		if l.addr == defaults[l.flag] {
			t.Errorf("%s: --%s is its default %s: tests give every listener a port they chose (freeport)", cmd, l.flag, l.addr)
			return errDefaultPort
		}
	}
	if out == nil {
		out = io.Discard
	}
	return run(ctx, cmd, o, log, out)
}

func TestServeAnswersWithBootstrapKey(t *testing.T) {
	o := testOptions(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runTest(t, ctx, "serve", o, quiet, nil) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}()
	var resp *http.Response
	var err error
	for i := 0; i < 100; i++ {
		req, _ := http.NewRequest("GET", "http://"+o.apiAddr+"/api/workspace", nil)
		req.Header.Set("Authorization", "Bearer "+o.bootstrapKey)
		if resp, err = http.DefaultClient.Do(req); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("workspace: %v %v", resp, err)
	}
	resp.Body.Close()
	waitReady(t, o.adminAddr)
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		r, err := http.Get("http://" + o.adminAddr + path)
		if err != nil || r.StatusCode != 200 {
			t.Fatalf("%s: %v %v", path, r, err)
		}
		r.Body.Close()
	}
}

func TestServeRefusesClearly(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o600)
	for _, tc := range []struct {
		name string
		edit func(*options)
		want string
	}{
		{"port in use", func(o *options) { o.apiAddr = busy.Addr().String() }, "api address"},
		{"data dir is a file", func(o *options) { o.data = file }, "data directory"},
		{"unknown plan", func(o *options) { o.plan = "platinum" }, "unknown plan"},
		{"short bootstrap key", func(o *options) { o.bootstrapKey = "short" }, "bootstrap-key"},
		{"https port in use", func(o *options) { o.httpsAddr = busy.Addr().String() }, "https address"},
		{"bad trusted proxy", func(o *options) { o.trustedProxies = "10.0.0.0/8,bogus" }, "trusted proxy"},
		{"bad cache size", func(o *options) { o.cacheBytes = "lots" }, "cache-bytes"},
		{"bad app sandbox", func(o *options) { o.appSandbox = "docker" }, "app-sandbox"},
		{"bad app idle timeout", func(o *options) { o.appIdle = "soon" }, "app-idle-timeout"},
		{"app CPU too small", func(o *options) { o.appCPUMillis = "5" }, "app-cpu-millis"},
		{"app memory too small", func(o *options) { o.appMemory = "1024" }, "app-memory-bytes"},
		{"bad app cgroups mode", func(o *options) { o.appCgroups = "maybe" }, "app-cgroups"},
		{"bad app outbound mode", func(o *options) { o.appOutbound = "yes" }, "app-outbound"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := testOptions(t)
			tc.edit(&o)
			err := runTest(t, context.Background(), "serve", o, quiet, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("err = %v, want one line containing %q", err, tc.want)
			}
		})
	}
}

func TestFlagsReadEnvironment(t *testing.T) {
	t.Setenv("PLATFORM_API_ADDR", "127.0.0.1:1234")
	t.Setenv("PLATFORM_GEOIP", "")
	os.Unsetenv("PLATFORM_GEOIP") // restored by t.Setenv's cleanup
	var o options
	if err := o.parse("serve", nil); err != nil || o.apiAddr != "127.0.0.1:1234" || o.geoip != "./data/geo/country.mmdb" {
		t.Fatalf("%+v %v", o, err)
	}
	if err := o.parse("serve", []string{"--api-addr", "127.0.0.1:9", "extra"}); err == nil {
		t.Fatal("a stray argument was accepted")
	}
}
