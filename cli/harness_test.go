package cli_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/cli"
	"github.com/svcplatform/platform/controlplane/cptest"
	"github.com/svcplatform/platform/edge"
)

// harness is a control plane with a real edge syncing from it, and the
// CLI run in-process against the API as a user would run it.
type harness struct {
	t   *testing.T
	env *cptest.Env
	// api is the address the CLI is given.
	api string
	// config is the CLI's config directory (credentials.json).
	config string
	// vars is the CLI's environment.
	vars   map[string]string
	client *http.Client
	ed     *edge.Edge
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	env := cptest.New(t)
	tok, err := env.CP.EdgeSync().EnsureLocalToken(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ed, err := edge.New(edge.Config{HTTPAddr: "-", HTTPSAddr: "127.0.0.1:0", AppsDomain: "apps.test", DataDir: t.TempDir(),
		ControlPlane: env.Server.URL, Token: tok, Logger: slog.New(slog.DiscardHandler), SyncWait: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := ed.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ed.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("edge: %v", err)
		}
	})
	addr := ed.HTTPSAddr().String()
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: ed.CA().Pool()},
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
	}}
	return &harness{t: t, env: env, api: env.Server.URL, config: filepath.Join(t.TempDir(), "config", "platform"), vars: map[string]string{}, client: hc, ed: ed}
}

// result is one run of the CLI.
type result struct {
	code           int
	stdout, stderr string
}

// run runs the CLI in dir with stdin.
func (h *harness) run(dir, stdin string, args ...string) result {
	return h.runEnv(dir, stdin, nil, args...)
}

func (h *harness) runEnv(dir, stdin string, edit func(*cli.Env), args ...string) result {
	h.t.Helper()
	var out, errb bytes.Buffer
	e := &cli.Env{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb, ConfigDir: h.config, Dir: dir,
		Getenv: func(k string) string { return h.vars[k] }, FollowEvery: 10 * time.Millisecond}
	if edit != nil {
		edit(e)
	}
	code := cli.Run(context.Background(), e, args)
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// login stores the owner's key.
func (h *harness) login() {
	h.t.Helper()
	if r := h.run(h.t.TempDir(), "", "login", "--api", h.api, "--key", cptest.OwnerKey); r.code != 0 {
		h.t.Fatalf("login: %+v", r)
	}
}

// get fetches https://host/path through the edge once it has synced the
// control plane's latest configuration.
func (h *harness) get(rawURL string) (int, []byte) {
	h.t.Helper()
	h.synced()
	resp, err := h.client.Get(rawURL)
	if err != nil {
		h.t.Fatalf("GET %s: %v", rawURL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// synced waits until the edge holds the control plane's latest
// configuration.
func (h *harness) synced() {
	h.t.Helper()
	want := h.env.CP.EdgeSync().Version()
	deadline := time.Now().Add(15 * time.Second)
	for !h.ed.Ready() || h.ed.Version() < want {
		if time.Now().After(deadline) {
			h.t.Fatalf("edge at version %d, control plane at %d", h.ed.Version(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// write makes files under dir (parents included).
func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// deployResult decodes deploy --json.
func deployResult(t *testing.T, r result) cli.DeployResult {
	t.Helper()
	var d cli.DeployResult
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
		t.Fatalf("--json printed %q: %v (stderr %s)", r.stdout, err, r.stderr)
	}
	return d
}
