package supervise

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/svcplatform/platform/runtime/sandbox"
)

// TestBwrapIsolation runs the example app under bubblewrap and checks what
// it may not do: read the data directory (or see its path), reach a
// control-plane port, write outside its directory and /tmp, run as root.
func TestBwrapIsolation(t *testing.T) {
	dataDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dataDir, "platform.db"), []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	box := &sandbox.Bwrap{Hide: []string{dataDir}, MemoryBytes: 256 << 20}
	if err := box.Provision(); errors.Is(err, sandbox.ErrUnavailable) {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI: bubblewrap isolation unavailable: %v", err)
		}
		t.Skipf("runtime/sandbox: bubblewrap isolation unavailable here: %v (apt-get install bubblewrap; run as root)", err)
	} else if err != nil {
		t.Fatal(err)
	}
	controlPlane, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer controlPlane.Close()
	go func() {
		for {
			c, err := controlPlane.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()

	_, controlPlanePort, _ := net.SplitHostPort(controlPlane.Addr().String())
	s, _ := newSupervisor(t, testConfig(), box)
	d := appDeployment(t, "dpl_box", map[string]string{"API_TOKEN": "s3cret"})
	if err := s.Activate(context.Background(), d); err != nil {
		logs, _ := s.Log("dpl_box")
		t.Fatalf("activate: %v\n%+v", err, logs)
	}
	tests := []struct {
		name       string
		path       string
		wantStatus int
		wantBody   string
	}{
		{"reached through its network namespace, with its variables", "/env?k=SERVICE_PROJECT_ID", 200, "prj_1"},
		{"variables", "/env?k=API_TOKEN", 200, "s3cret"},
		{"data directory", "/read?path=" + filepath.Join(dataDir, "platform.db"), 403, ""},
		{"host secrets", "/read?path=/etc/shadow", 403, ""},
		{"control-plane port", "/dial?addr=" + controlPlane.Addr().String(), 403, ""},
		{"the host's loopback through the outbound gateway", "/dial?addr=10.0.2.2:" + controlPlanePort, 403, ""},
		{"cloud metadata", "/dial?addr=169.254.169.254:80", 403, ""},
		{"write outside its directory", "/write?path=/usr/x", 403, ""},
		{"write the root", "/write?path=/x", 403, ""},
		{"write /etc", "/write?path=/etc/x", 403, ""},
		{"write /dev", "/write?path=/dev/x", 403, ""},
		{"the data directory's path does not exist", "/stat?path=" + dataDir, 403, ""},
		{"write its directory", "/write?path=/app/state", 200, "written"},
		{"write its private tmp", "/write?path=/tmp/x", 200, "written"},
	}
	if !box.Status().Outbound {
		tests = append(tests, struct {
			name       string
			path       string
			wantStatus int
			wantBody   string
		}{"no internet without outbound network", "/dial?addr=1.1.1.1:443", 403, ""})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := get(t, s, "dpl_box", tc.path)
			if code != tc.wantStatus || (tc.wantBody != "" && body != tc.wantBody) {
				t.Fatalf("got %d %q, want %d %q", code, body, tc.wantStatus, tc.wantBody)
			}
		})
	}
	t.Run("runs as its own unprivileged uid", func(t *testing.T) {
		_, body := get(t, s, "dpl_box", "/id")
		uid, _ := strconv.Atoi(strings.TrimPrefix(strings.Fields(body)[0], "uid="))
		if uid < sandbox.DefaultUIDBase {
			t.Fatalf("app runs as %q", body)
		}
	})
	t.Run("the written file is in the deployment directory", func(t *testing.T) {
		if _, err := os.Stat(filepath.Join(d.Dir, "state")); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("memory limit", func(t *testing.T) {
		addr, _ := s.Addr("dpl_box")
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = c.Write([]byte("GET /alloc HTTP/1.1\r\nHost: app\r\nConnection: close\r\n\r\n"))
		buf := make([]byte, 512)
		_, _ = c.Read(buf) // the app dies: the connection closes
		c.Close()
		st := waitStatus(t, s, "dpl_box", "a restart after the allocation failed", func(st Status) bool { return st.Restarts >= 1 && st.State == StateHealthy })
		if box.Status().Cgroups != "" {
			// The cgroup's limit: the kernel kills it, and says why.
			logs, _ := s.Log("dpl_box")
			if !strings.Contains(st.LastExit, "out of memory: killed by the kernel at its memory limit of 256 MiB") ||
				!slices.ContainsFunc(logs, func(l LogLine) bool { return l.Stream == "platform" && strings.Contains(l.Text, "out of memory") }) {
				t.Fatalf("last exit %q, want the cgroup's out-of-memory kill, logged", st.LastExit)
			}
		} else if !strings.HasPrefix(st.LastExit, "exited with status 2") {
			t.Fatalf("last exit %q, want the Go runtime's out-of-memory exit (RLIMIT_DATA)", st.LastExit)
		}
	})
}
