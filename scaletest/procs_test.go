package scaletest

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/svcplatform/platform/internal/freeport"
)

// binary is the platform binary TestMain builds ("" when the build failed;
// buildErr says why).
var (
	binary   string
	buildErr error
)

// build compiles ./cmd/platform into dir.
func build(dir string) (string, error) {
	out := filepath.Join(dir, "platform")
	cmd := exec.Command("go", "build", "-o", out, "./cmd/platform")
	cmd.Dir = ".." // the module root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build ./cmd/platform: %w\n%s", err, stderr.String())
	}
	return out, nil
}

func freeAddr(t *testing.T) string {
	t.Helper()
	a, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// proc is one platform process.
type proc struct {
	name  string
	cmd   *exec.Cmd
	api   string // controlplane: host:port of the API
	admin string // host:port of /healthz, /readyz, /metrics
	https string // edge: host:port of HTTPS
	log   *lockedBuffer
	done  chan struct{} // closed when the process has exited
}

// lockedBuffer keeps a process's output for the failure message.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.b.String()
	if len(s) > 4000 {
		s = "..." + s[len(s)-4000:]
	}
	return s
}

// start runs the binary with args and env; the process is killed when t
// ends. Its output is printed if t failed.
func start(t *testing.T, name string, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, log: &lockedBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(binary, args...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("--- %s output:\n%s", name, p.log.String())
		}
	})
	return p
}

// kill9 kills p with SIGKILL and waits for it to be gone.
func (p *proc) kill9(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 %s: %v", p.name, err)
	}
	<-p.done
}

// waitFor calls f until it reports true or the deadline passes; the wait
// between calls is a poll of another process's state, bounded by d.
func waitFor(t *testing.T, d time.Duration, what string, f func() (bool, string)) time.Duration {
	t.Helper()
	begin := time.Now()
	deadline := begin.Add(d)
	last := ""
	for {
		ok, state := f()
		if ok {
			return time.Since(begin)
		}
		if state != "" {
			last = state
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s (last: %s)", what, d, last)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// ready waits for the process's /readyz.
func (p *proc) ready(t *testing.T) {
	t.Helper()
	waitFor(t, 60*time.Second, p.name+" ready", func() (bool, string) {
		select {
		case <-p.done:
			t.Fatalf("%s exited: %s", p.name, p.log.String())
		default:
		}
		r, err := http.Get("http://" + p.admin + "/readyz")
		if err != nil {
			return false, err.Error()
		}
		r.Body.Close()
		return r.StatusCode == 200, r.Status
	})
}

// client is an API client of one replica with one key.
type client struct {
	base, key string
	hc        *http.Client
}

func apiClient(p *proc, key string) *client {
	return &client{base: "http://" + p.api, key: key, hc: &http.Client{Timeout: 20 * time.Second}}
}

// do sends a request and returns the status and body (err: no answer).
func (c *client) do(method, path string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// must sends a request that has to succeed and decodes its answer into out.
func (c *client) must(t *testing.T, method, path string, body, out any) {
	t.Helper()
	code, b, err := c.do(method, path, body)
	if err != nil || code >= 300 {
		t.Fatalf("%s %s: %d %s %v", method, path, code, b, err)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
}

// edgeGet fetches https://host/ from the edge at addr as userAgent. The
// certificate is the subject of a subtest of its own; here only what is
// served counts.
func edgeGet(addr, host, userAgent string) (int, string, error) {
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true, ServerName: host},
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		}}}
	defer hc.CloseIdleConnections()
	req, err := http.NewRequest("GET", "https://"+host+"/", nil)
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("User-Agent", userAgent)
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// socketOwner reports whether process pid holds the TCP socket whose local
// port is local and remote port is remote (both on loopback): it tells which
// replica sent a request the test's server is answering.
func socketOwner(pid, local, remote int) (bool, error) {
	inode := ""
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(table)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 10 {
				continue
			}
			if hexPort(f[1]) == local && hexPort(f[2]) == remote {
				inode = f[9]
			}
		}
	}
	if inode == "" {
		return false, fmt.Errorf("no socket %d -> %d", local, remote)
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil // the process is gone
	}
	if err != nil {
		return false, err
	}
	want := "socket:[" + inode + "]"
	for _, fd := range fds {
		if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil && l == want {
			return true, nil
		}
	}
	return false, nil
}

// hexPort is the port of a /proc/net/tcp address ("0100007F:1F90").
func hexPort(addr string) int {
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		return -1
	}
	n, err := strconv.ParseInt(addr[i+1:], 16, 32)
	if err != nil {
		return -1
	}
	return int(n)
}
