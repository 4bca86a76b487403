package cli_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/platform/cli"
)

// lockedBuffer is a buffer a running command writes while the test reads,
// which signals each write.
type lockedBuffer struct {
	mu    sync.Mutex
	b     bytes.Buffer
	wrote chan struct{}
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, err := l.b.Write(p)
	select {
	case l.wrote <- struct{}{}:
	default:
	}
	return n, err
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestLogs prints a project's log and follows it while a second deploy
// runs.
func TestLogs(t *testing.T) {
	h := newHarness(t)
	site := filepath.Join(t.TempDir(), "logged")
	write(t, site, map[string]string{"index.html": "<h1>v1</h1>"})
	h.login()
	if r := h.run(site, "", "link", "--create"); r.code != 0 {
		t.Fatalf("link: %+v", r)
	}
	if r := h.run(site, "", "deploy"); r.code != 0 {
		t.Fatalf("deploy: %+v", r)
	}
	r := h.run(site, "", "logs")
	if r.code != 0 || !strings.Contains(r.stdout, "deploy   platform") || !strings.Contains(r.stdout, "| live at https://logged.apps.test") {
		t.Fatalf("logs: %+v", r)
	}
	if r := h.run(site, "", "logs", "--json", "--source", "deploy", "--limit", "1"); r.code != 0 || !strings.HasPrefix(r.stdout, `{"id":`) || strings.Count(r.stdout, "\n") != 1 {
		t.Fatalf("logs --json --limit 1: %+v", r)
	}
	if r := h.run(site, "", "logs", "--source", "kernel"); r.code != 1 || !strings.Contains(r.stderr, "not a log source") {
		t.Fatalf("logs --source kernel: %+v", r)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out := &lockedBuffer{wrote: make(chan struct{}, 1)}
	var errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		e := &cli.Env{Stdin: strings.NewReader(""), Stdout: out, Stderr: &errb, ConfigDir: h.config, Dir: site,
			Getenv: func(k string) string { return h.vars[k] }}
		done <- cli.Run(ctx, e, []string{"logs", "--follow", "--source", "deploy", "--limit", "1"})
	}()
	// The newest kept line comes first: the stream is open.
	for !strings.Contains(out.String(), "live at") {
		select {
		case <-out.wrote:
		case <-ctx.Done():
			t.Fatalf("logs --follow printed %q", out.String())
		}
	}
	write(t, site, map[string]string{"index.html": "<h1>v2</h1>"})
	if r := h.run(site, "", "deploy"); r.code != 0 {
		t.Fatalf("deploy 2: %+v", r)
	}
	for strings.Count(out.String(), "live at") < 2 {
		select {
		case <-out.wrote:
		case <-ctx.Done():
			t.Fatalf("logs --follow printed %q", out.String())
		}
	}
	if !strings.Contains(out.String(), "deploying commit 2") {
		t.Fatalf("followed:\n%s", out.String())
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("logs --follow ended %d: %s", code, errb.String())
	}
}
