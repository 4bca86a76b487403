package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/cptest"
)

// waitReady waits for /readyz, which means "configuration loaded".
func waitReady(t *testing.T, admin string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		r, err := http.Get("http://" + admin + "/readyz")
		if err == nil {
			r.Body.Close()
			if r.StatusCode == 200 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready: %v %v", r, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// edgeClient trusts the CA in caPath and dials every host at addr.
func edgeClient(t *testing.T, caPath, addr string) *http.Client {
	t.Helper()
	pem, err := os.ReadFile(caPath)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatal("no CA in " + caPath)
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool},
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		}}}
}

// metric returns the value line of a metric from /metrics.
func metric(t *testing.T, admin, name string) string {
	t.Helper()
	r, err := http.Get("http://" + admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, name+" ") {
			return strings.TrimPrefix(l, name+" ")
		}
	}
	return ""
}

// TestServeRunsTheEdge deploys a site through `platform serve`'s API and
// fetches it over HTTPS from the in-process edge, which syncs over the API
// listener with its own edge token, trusting the CA printed at start.
func TestServeRunsTheEdge(t *testing.T) {
	o := testOptions(t)
	https := freeAddr(t)
	o.httpsAddr = https
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var logs syncBuffer
	go func() { done <- runTest(t, ctx, "serve", o, slog.New(slog.NewTextHandler(&logs, nil)), nil) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}()
	waitReady(t, o.adminAddr)
	// The API served before the edge started, so the edge found the
	// control plane at once (it waited 10 s for it and fell back before).
	if strings.Contains(logs.String(), "control plane unreachable") {
		t.Fatalf("the in-process edge could not reach the API at start:\n%s", logs.String())
	}
	api := func(method, path, body string) string {
		req, _ := http.NewRequest(method, "http://"+o.apiAddr+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+o.bootstrapKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode >= 300 {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
		}
		return string(b)
	}
	field := func(js, key string) string {
		i := strings.Index(js, `"`+key+`":"`)
		if i < 0 {
			t.Fatalf("no %s in %s", key, js)
		}
		rest := js[i+len(key)+4:]
		return rest[:strings.IndexByte(rest, '"')]
	}
	project := field(api("POST", "/api/projects", `{"name":"hello"}`), "id")
	repo := field(api("POST", "/api/repos", `{"name":"hello"}`), "id")
	api("POST", "/api/repos/"+repo+"/commits", `{"message":"m","files":[{"path":"index.html","content":"<h1>hello from serve</h1>"}]}`)
	api("POST", "/api/repos/"+repo+"/deploy", `{"projectId":"`+project+`"}`)

	// The edge serves the installation's CA, the one the control plane
	// keeps (it asked the API for it at start), written where users find it.
	resp, err := http.Get("http://" + o.apiAddr + "/api/edge/certs/ca")
	if err != nil {
		t.Fatal(err)
	}
	installation, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if onDisk, err := os.ReadFile(filepath.Join(o.data, "ca", "ca.pem")); err != nil || !bytes.Equal(bytes.TrimSpace(onDisk), bytes.TrimSpace(installation)) {
		t.Fatalf("DATA/ca/ca.pem is not the installation CA the API serves (%v)", err)
	}
	client := edgeClient(t, filepath.Join(o.data, "ca", "ca.pem"), https)
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := client.Get("https://hello.localhost/")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 && string(b) == "<h1>hello from serve</h1>" {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("site never served: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The playback host: the edge forwards a playback path to the API's
	// playback route (its JSON 404 for an asset that does not exist), with
	// a certificate of its own, and answers anything else itself.
	for _, tc := range []struct {
		path, want string
	}{
		{"/media/med_nosuchasset/master.m3u8", `"error"`},
		{"/api/projects", "not found"},
	} {
		resp, err := client.Get("https://media.localhost" + tc.path)
		if err != nil {
			t.Fatalf("playback host %s: %v", tc.path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 404 || !strings.Contains(string(b), tc.want) {
			t.Fatalf("playback host %s: %d %q, want 404 with %s", tc.path, resp.StatusCode, b, tc.want)
		}
	}
	if v := metric(t, o.adminAddr, "platform_edge_config_version"); v == "" || v == "0" {
		t.Errorf("platform_edge_config_version = %q", v)
	}
	// go test builds without make build's runtime patch (edge/netpoll.go).
	if v := metric(t, o.adminAddr, `platform_edge_netpoll_order_info{order="runtime"}`); v != "1" {
		t.Errorf("platform_edge_netpoll_order_info{order=\"runtime\"} = %q, want 1", v)
	}
	if v := metric(t, o.adminAddr, `platform_edge_requests_total{code="2xx",kind="static"}`); v == "" {
		t.Errorf("no static request counted")
	}
}

// TestEdgeCommand runs `platform edge` against a control plane on another
// socket with a minted edge token.
func TestEdgeCommand(t *testing.T) {
	env := cptest.New(t)
	tok, _, err := env.CP.EdgeSync().MintToken(context.Background(), "remote edge")
	if err != nil {
		t.Fatal(err)
	}
	var o options
	if err := o.parse("edge", []string{"--data", t.TempDir(), "--admin-addr", freeAddr(t), "--http-addr", "127.0.0.1:0",
		"--https-addr", freeAddr(t), "--apps-domain", "apps.test", "--controlplane", env.Server.URL, "--edge-token", tok}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runTest(t, ctx, "edge", o, quiet, nil) }()
	waitReady(t, o.adminAddr)
	client := edgeClient(t, filepath.Join(o.data, "ca", "ca.pem"), o.httpsAddr)
	resp, err := client.Get("https://nothing.apps.test/")
	if err != nil || resp.StatusCode != 404 {
		t.Fatalf("unknown host: %v %v", resp, err)
	}
	resp.Body.Close()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--edge-token", tok}, "--controlplane is required"},
		{[]string{"--controlplane", env.Server.URL}, "--edge-token is required"},
	} {
		var o options
		if err := o.parse("edge", append([]string{"--data", t.TempDir(), "--admin-addr", freeAddr(t), "--http-addr", "127.0.0.1:0",
			"--https-addr", "127.0.0.1:0"}, tc.args...)); err != nil {
			t.Fatal(err)
		}
		err := runTest(t, context.Background(), "edge", o, quiet, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("err = %v, want one line with %q", err, tc.want)
		}
	}
}
