package media

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/runtime/sandbox"
)

// jobSandbox provisions the processing sandbox as production does
// (JobSandbox of the apps' Bwrap), or skips naming what is missing (fails
// under CI).
func jobSandbox(t *testing.T) sandbox.Sandbox {
	t.Helper()
	needTools(t, "ffmpeg", "ffprobe", "bwrap", "prlimit")
	apps := &sandbox.Bwrap{}
	err := apps.Provision()
	if errors.Is(err, sandbox.ErrUnavailable) {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI: %v", err)
		}
		t.Skipf("%v (apt-get install bubblewrap util-linux; run as root)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	box, err := JobSandbox(apps)
	if err != nil {
		t.Fatal(err)
	}
	return box
}

// sandboxEnv is the area processing in box, its work directory outside the
// (private, 0700) data directory.
func sandboxEnv(t *testing.T, box sandbox.Sandbox) *env {
	t.Helper()
	root := t.TempDir()
	if err := os.Chmod(filepath.Dir(root), 0o711); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, 0o711); err != nil {
		t.Fatal(err)
	}
	return newEnvWith(t, plans.Pro, Config{NoWorkers: true, WorkDir: filepath.Join(root, "media-work")}, box)
}

// TestSandboxedRun runs a program as the processing sandbox runs ffmpeg and
// looks at what it can do: not root, no network but loopback, the data
// directory and other jobs out of sight, only its job directory writable.
func TestSandboxedRun(t *testing.T) {
	box := jobSandbox(t)
	e := sandboxEnv(t, box)
	secret := filepath.Join(e.svc.cfg.Dir, "assets", "med_other", sourceFile)
	os.MkdirAll(filepath.Dir(secret), 0o755)
	os.WriteFile(secret, []byte("another tenant's video"), 0o644)
	other := filepath.Join(e.svc.cfg.WorkDir, "med_other")
	os.MkdirAll(other, 0o755)
	os.WriteFile(filepath.Join(other, sourceFile), []byte("another job"), 0o644)
	dir := filepath.Join(e.svc.cfg.WorkDir, "med_probe")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf(`echo "uid $(id -u)"
for f in %[1]s %[2]s %[3]s /etc/shadow; do cat "$f" >/dev/null 2>&1 && echo "read $f"; done
awk -F: 'NR>2 {gsub(/ /, "", $1); print "iface " $1}' /proc/net/dev
echo mine > own && echo "wrote own"
for d in /usr /etc /; do f="$d/.media-sandbox-probe-$$"; touch "$f" 2>/dev/null && rm -f "$f" && echo "wrote $d"; done
true`, secret, filepath.Join(other, sourceFile), e.Dir)
	var out, errb bytes.Buffer
	if err := (sandboxRunner{box: box, id: "med_probe"}).Run(context.Background(), dir, []string{"/bin/sh", "-c", script}, &out, &errb); err != nil {
		t.Fatalf("run: %v: %s", err, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	t.Logf("the sandboxed program said %q", lines)
	for _, tc := range []struct {
		name string
		ok   func(l string) bool
	}{
		{"not root", func(l string) bool { return !strings.HasPrefix(l, "uid ") || l != "uid 0" }},
		{"reads nothing outside its job", func(l string) bool { return !strings.HasPrefix(l, "read ") }},
		{"no network interface but loopback", func(l string) bool { return !strings.HasPrefix(l, "iface ") || l == "iface lo" }},
		{"writes nothing outside its job", func(l string) bool { return !strings.HasPrefix(l, "wrote /") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, l := range lines {
				if !tc.ok(l) {
					t.Fatalf("%q (all: %q)", l, lines)
				}
			}
		})
	}
	if !strings.Contains(out.String(), "uid ") || !strings.Contains(out.String(), "wrote own") {
		t.Fatalf("the program did not run as expected: %q %s", out.String(), errb.String())
	}
	if b, err := os.ReadFile(filepath.Join(dir, "own")); err != nil || string(b) != "mine\n" {
		t.Fatalf("job directory not writable: %q %v", b, err)
	}
}

// TestProcessInSandbox processes a video with ffprobe and ffmpeg in the
// sandbox: it becomes ready and plays, its files are the platform's, the
// job directory is gone; a playlist naming a host file is refused.
func TestProcessInSandbox(t *testing.T) {
	box := jobSandbox(t)
	e := sandboxEnv(t, box)
	dir := t.TempDir()
	playlist := filepath.Join(dir, "passwd.m3u8")
	os.WriteFile(playlist, []byte("#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:10,\n/etc/passwd\n#EXT-X-ENDLIST\n"), 0o644)
	for _, tc := range []struct {
		name, file, status, code string
	}{
		{"video", clip(t, dir), StatusReady, ""},
		{"playlist of a host file", playlist, StatusFailed, FailFormat},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, up := e.createVideo(tc.name)
			if r := e.upload(up, "file", tc.file); r.Status != 201 {
				t.Fatalf("upload: %d %s", r.Status, r.Body)
			}
			if err := e.svc.Process(context.Background(), id); err != nil {
				t.Fatal(err)
			}
			a := e.asset(id)
			if a.Status != tc.status || (tc.code != "" && (a.Failure == nil || a.Failure.Code != tc.code)) {
				t.Fatalf("asset %+v %+v", a, a.Failure)
			}
			if _, err := os.Stat(e.svc.jobDir(id)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("job directory left: %v", err)
			}
			if tc.status != StatusReady {
				return
			}
			e.must(200, "", "GET", a.PlaybackURL, nil)
			e.must(200, "", "GET", a.PosterURL, nil)
			filepath.Walk(e.svc.assetDir(id), func(p string, fi os.FileInfo, err error) error {
				if err != nil {
					t.Fatal(err)
				}
				if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != os.Getuid() {
					t.Fatalf("%s owned by uid %d", p, st.Uid)
				}
				return nil
			})
		})
	}
}

// TestSandboxNeedsWorkDir: a sandbox without a work directory is a
// configuration error, not a silent fallback to the data directory.
func TestSandboxNeedsWorkDir(t *testing.T) {
	_, err := New(Config{Dir: t.TempDir(), PublicBaseURL: "http://x", NoWorkers: true},
		Deps{Sandbox: &sandbox.Bwrap{}})
	if err == nil || !strings.Contains(err.Error(), "WorkDir") {
		t.Fatalf("New = %v, want the missing work directory named", err)
	}
}
