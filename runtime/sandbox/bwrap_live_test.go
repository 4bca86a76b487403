package sandbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The live tests run the example app (runtime/testdata/app) under a real
// Bwrap. They skip, naming the Debian package, when a tool is missing, and
// fail instead when CI is set.

var (
	liveOnce sync.Once
	liveBin  string
	liveBase string
	liveErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if liveBase != "" {
		_ = os.RemoveAll(liveBase)
	}
	os.Exit(code)
}

// need skips (or, under CI, fails) the test with why.
func need(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("CI: %s", why)
	}
	t.Skip(why)
}

// liveBwrap provisions a Bwrap for the live tests; mutate adjusts it
// before Provision.
func liveBwrap(t *testing.T, mutate func(*Bwrap)) *Bwrap {
	t.Helper()
	b := &Bwrap{MemoryBytes: 128 << 20}
	if mutate != nil {
		mutate(b)
	}
	if err := b.Provision(); errors.Is(err, ErrUnavailable) {
		need(t, fmt.Sprintf("runtime/sandbox: %v (apt-get install bubblewrap util-linux slirp4netns; run as root)", err))
	} else if err != nil {
		t.Fatal(err)
	}
	return b
}

// liveDir is a deployment directory holding the example app as ./app,
// under a 0711 directory (apps' uids pass through it).
func liveDir(t *testing.T) string {
	t.Helper()
	liveOnce.Do(func() {
		liveBase, liveErr = os.MkdirTemp("", "sandbox-live-")
		if liveErr != nil {
			return
		}
		if liveErr = os.Chmod(liveBase, 0o711); liveErr != nil {
			return
		}
		liveBin = filepath.Join(liveBase, "app")
		cmd := exec.Command("go", "build", "-o", liveBin, "../testdata/app")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			liveErr = fmt.Errorf("go build: %v: %s", err, out)
		}
	})
	if liveErr != nil {
		t.Fatal(liveErr)
	}
	src, err := os.ReadFile(liveBin)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(liveBase, "dpl-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.WriteFile(filepath.Join(dir, "app"), src, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// liveApp is one started program.
type liveApp struct {
	p      *Prepared
	exited chan struct{}
	err    error  // set before exited closes
	note   string // ExitNote, read before exited closes
	out    *lockedBuffer
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startLive prepares and starts argv (relative to a fresh deployment
// directory) and stops it at the end of the test.
func startLive(t *testing.T, b *Bwrap, id string, listen bool, argv ...string) *liveApp {
	t.Helper()
	return startLiveIn(t, b, liveDir(t), id, listen, argv...)
}

// startLiveIn is startLive in dir, a deployment directory from liveDir.
func startLiveIn(t *testing.T, b *Bwrap, dir, id string, listen bool, argv ...string) *liveApp {
	t.Helper()
	p, err := b.Prepare(App{ID: id, Dir: dir, Argv: argv, Env: []string{"SERVICE_PROJECT_ID=prj_live"}, Listen: listen})
	if err != nil {
		t.Fatal(err)
	}
	a := &liveApp{p: p, exited: make(chan struct{}), out: &lockedBuffer{}}
	p.Cmd.Stdout, p.Cmd.Stderr = a.out, a.out
	p.Cmd.WaitDelay = 2 * time.Second
	if err := p.Start(); err != nil {
		p.Release()
		t.Fatal(err)
	}
	go func() {
		a.err = p.Cmd.Wait()
		if p.ExitNote != nil {
			a.note = p.ExitNote()
		}
		close(a.exited)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGKILL)
		<-a.exited
		p.Release()
	})
	if err := p.Started(); err != nil {
		t.Fatalf("started: %v; output %s", err, a.out)
	}
	return a
}

// get asks the app for path through its namespace, waiting (on the
// app's answers, bounded) for it to listen.
func (a *liveApp) get(t *testing.T, path string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		c, err := a.p.Dial(ctx)
		if err == nil {
			req, _ := http.NewRequest("GET", "http://app"+path, nil)
			req.Close = true
			if err = req.Write(c); err == nil {
				var resp *http.Response
				resp, err = http.ReadResponse(bufio.NewReader(c), req)
				if err == nil {
					body, _ := io.ReadAll(resp.Body)
					c.Close()
					return resp.StatusCode, string(body)
				}
			}
			c.Close()
		}
		select {
		case <-a.exited:
			t.Fatalf("app exited (%v): %s", a.err, a.out)
		case <-ctx.Done():
			t.Fatalf("GET %s: %v", path, err)
		case <-time.After(20 * time.Millisecond): // the app is not listening yet
		}
	}
}

// hostAddress returns a non-loopback IPv4 address of this machine.
func hostAddress(t *testing.T) net.IP {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return n.IP.To4()
		}
	}
	t.Skip("this machine has no non-loopback IPv4 address")
	return nil
}

// listenAccepting listens on addr and accepts (and closes) connections
// until the test ends.
func listenAccepting(t *testing.T, addr string) string {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return l.Addr().String()
}

func TestBwrapRestartsCleanly(t *testing.T) {
	b := liveBwrap(t, nil)
	for i := range 3 {
		a := startLive(t, b, "dpl_again", true, "./app")
		if code, body := a.get(t, "/env?k=SERVICE_PROJECT_ID"); code != 200 || body != "prj_live" {
			t.Fatalf("run %d: %d %q", i, code, body)
		}
		_ = a.p.Cmd.Process.Kill()
		<-a.exited
		a.p.Release()
	}
}

// waitStats polls the app's cgroup counters (the kernel's, not a wall
// clock) until cond holds, bounded.
func (a *liveApp) waitStats(t *testing.T, what string, cond func(CgroupStats) bool) CgroupStats {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		st := a.p.Stats()
		if cond(st) {
			return st
		}
		select {
		case <-a.exited:
			t.Fatalf("app exited (%v) waiting for %s: %s", a.err, what, a.out)
		case <-deadline:
			t.Fatalf("waiting for %s; last %+v", what, st)
		case <-time.After(50 * time.Millisecond): // polling the kernel's counters
		}
	}
}

func TestBwrapCPULimit(t *testing.T) {
	const millis = 200 // a fifth of a core
	b := liveBwrap(t, func(b *Bwrap) { b.CPUMillis = millis })
	if b.Status().Cgroups == "" {
		need(t, "no usable cgroups here: "+b.Status().CgroupsWhy)
	}
	a := startLive(t, b, "dpl_burn", false, "./app", "burn")
	// Over 30 CPU periods with work, a burner on every core uses its
	// whole quota and waits (is throttled) in many of them: in most on an
	// idle machine, in fewer when other processes take the cores, since a
	// period in which the burner did not run its quota's worth is not
	// throttled. The ceiling below holds either way.
	st := a.waitStats(t, "30 CPU periods", func(s CgroupStats) bool { return s.Periods >= 30 })
	quota := time.Duration(millis) * cfsPeriod * time.Microsecond / 1000
	t.Logf("%+v (quota %v per period)", st, quota)
	if st.Throttled < 3 {
		t.Fatalf("throttled in %d of %d periods: the quota does not bind", st.Throttled, st.Periods)
	}
	if st.CPU != 0 { // v1 without the cpuacct hierarchy has no usage
		// Each period allows at most the quota (plus the period in
		// progress), and each throttled period used it all.
		if limit := time.Duration(st.Periods+2) * quota * 11 / 10; st.CPU > limit {
			t.Fatalf("used %v in %d periods, above %v", st.CPU, st.Periods, limit)
		}
		if floor := time.Duration(st.Throttled) * quota * 9 / 10; st.CPU < floor {
			t.Fatalf("used %v in %d throttled periods, below %v", st.CPU, st.Throttled, floor)
		}
	}
}

func TestBwrapMemoryLimit(t *testing.T) {
	b := liveBwrap(t, func(b *Bwrap) { b.MemoryBytes = 64 << 20 })
	if b.Status().Cgroups == "" {
		need(t, "no usable cgroups here: "+b.Status().CgroupsWhy)
	}
	a := startLive(t, b, "dpl_hog", true, "./app")
	if code, _ := a.get(t, "/health"); code != 200 {
		t.Fatalf("health %d", code)
	}
	c, err := a.p.Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	_, _ = c.Write([]byte("GET /alloc HTTP/1.1\r\nHost: app\r\nConnection: close\r\n\r\n"))
	<-a.exited
	c.Close()
	// bwrap reports its child's death by SIGKILL as status 128+9.
	var ee *exec.ExitError
	if !errors.As(a.err, &ee) || (ee.ExitCode() != 128+9 && ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL) {
		t.Fatalf("exit %v, want killed by SIGKILL", a.err)
	}
	if !strings.Contains(a.note, "out of memory") || !strings.Contains(a.note, "64 MiB") {
		t.Fatalf("exit note %q", a.note)
	}
}

func TestBwrapSeccomp(t *testing.T) {
	tests := []struct {
		name    string
		seccomp bool
		want    map[string]string
	}{
		{"filtered", true, map[string]string{
			"ptrace": "errno 1", "mount": "errno 1", "unshare": "errno 1", "clone-newuser": "errno 1", "exec": "ok"}},
		// Without the filter the same calls fail for other reasons (no
		// such process; a multi-threaded process cannot unshare its
		// user namespace), which shows the filter is what refuses them.
		{"unfiltered", false, map[string]string{"ptrace": "errno 3", "unshare": "errno 22", "exec": "ok"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := liveBwrap(t, func(b *Bwrap) { b.NoSeccomp = !tc.seccomp; b.Outbound = ModeOff })
			if b.Status().Seccomp != tc.seccomp {
				t.Fatalf("status %+v", b.Status())
			}
			a := startLive(t, b, "dpl_sys", true, "./app")
			for call, want := range tc.want {
				if code, body := a.get(t, "/syscall?name="+call); code != 200 || body != want {
					t.Errorf("%s: %d %q, want %q", call, code, body, want)
				}
			}
		})
	}
}

func TestBwrapOutbound(t *testing.T) {
	host := hostAddress(t)
	onHost := listenAccepting(t, net.JoinHostPort(host.String(), "0"))
	onLoopback := listenAccepting(t, "127.0.0.1:0")
	_, loopbackPort, _ := net.SplitHostPort(onLoopback)
	if !slices.ContainsFunc(privateRanges, func(p netip.Prefix) bool { return p.Contains(netip.AddrFrom4([4]byte(host))) }) {
		t.Logf("the host address %s is public: its refusal is not tested", host)
	}
	tests := []struct {
		name         string
		allowPrivate bool
		addr         string
		want         int
	}{
		{"a private host address", false, onHost, 403},
		{"a private host address, private networks allowed", true, onHost, 200},
		{"the host's loopback through the gateway", false, "10.0.2.2:" + loopbackPort, 403},
		{"the host's loopback through the gateway, private networks allowed", true, "10.0.2.2:" + loopbackPort, 403},
		{"the host's loopback listener at 127.0.0.1", true, onLoopback, 403},
		{"cloud metadata", true, "169.254.169.254:80", 403},
	}
	boxes := map[bool]*liveApp{}
	for _, allow := range []bool{false, true} {
		b := liveBwrap(t, func(b *Bwrap) { b.Outbound = ModeOn; b.AllowPrivateNetworks = allow })
		boxes[allow] = startLive(t, b, "dpl_net", true, "./app")
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "a private host address" && !slices.ContainsFunc(privateRanges, func(p netip.Prefix) bool { return p.Contains(netip.AddrFrom4([4]byte(host))) }) {
				t.Skip("the host address is public")
			}
			a := boxes[tc.allowPrivate]
			code, body := a.get(t, "/dial?addr="+tc.addr)
			t.Logf("%d %s", code, body)
			if code != tc.want {
				t.Fatalf("dial %s: %d %q, want %d", tc.addr, code, body, tc.want)
			}
		})
	}
}

// TestBwrapFilesystem: only /app and the bounded /tmp are writable (the
// root, /etc, /dev are not); a hidden data directory is not in the
// sandbox at all (no mount point names its path), and one inside a bound
// directory is an empty, read-only directory.
func TestBwrapFilesystem(t *testing.T) {
	dataDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dataDir, "platform.db"), []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := liveDir(t)
	inApp := filepath.Join(dir, "secret")
	if err := os.Mkdir(inApp, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(inApp, "key"), []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	b := liveBwrap(t, func(b *Bwrap) { b.Outbound = ModeOff; b.TmpBytes = 1 << 20; b.Hide = []string{dataDir, inApp} })
	a := startLiveIn(t, b, dir, "dpl_fs", true, "./app")
	tests := []struct {
		name, path string
		status     int
		want       string // in the body
		not        string // never in the body
	}{
		{"the data directory's path does not exist", "/stat?path=" + dataDir, 403, "no such file", ""},
		{"its file neither", "/read?path=" + filepath.Join(dataDir, "platform.db"), 403, "no such file", ""},
		{"no mount point names it", "/read?path=/proc/self/mountinfo", 200, "/app", dataDir},
		{"a hidden directory in the deployment directory is empty", "/read?path=/app/secret/key", 403, "no such file", ""},
		{"and read-only", "/write?path=/app/secret/x", 403, "read-only file system", ""},
		{"the root", "/write?path=/x", 403, "read-only file system", ""},
		{"/etc", "/write?path=/etc/x", 403, "read-only file system", ""},
		{"/dev", "/write?path=/dev/x", 403, "read-only file system", ""},
		{"/dev/shm", "/write?path=/dev/shm/x", 403, "read-only file system", ""},
		{"/usr", "/write?path=/usr/x", 403, "read-only file system", ""},
		{"/dev/null still takes writes", "/write?path=/dev/null", 200, "written", ""},
		{"its directory", "/write?path=/app/state", 200, "written", ""},
		{"its /tmp", "/write?path=/tmp/x", 200, "written", ""},
		{"its /tmp beyond TmpBytes", "/write?path=/tmp/big&size=2097152", 403, "no space left", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := a.get(t, tc.path)
			if code != tc.status || !strings.Contains(body, tc.want) || (tc.not != "" && strings.Contains(body, tc.not)) {
				t.Fatalf("%d %q, want %d with %q", code, body, tc.status, tc.want)
			}
		})
	}
}
