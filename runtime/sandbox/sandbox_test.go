package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestBwrapProvisionRefuses(t *testing.T) {
	tests := []struct {
		name string
		b    *Bwrap
	}{
		{"uid base in the system range", &Bwrap{UIDBase: 10}},
		{"memory below 16 MiB", &Bwrap{MemoryBytes: 1 << 20}},
		{"too few open files", &Bwrap{OpenFiles: 3}},
		{"missing bwrap", &Bwrap{BwrapPath: "", PrlimitPath: "/nonexistent"}},
		{"cpu below 1% of a core", &Bwrap{CPUMillis: 9}},
		{"unknown cgroups mode", &Bwrap{Cgroups: "v3"}},
		{"unknown outbound mode", &Bwrap{Outbound: "maybe"}},
	}
	t.Setenv("PATH", "/nonexistent")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.b.Provision(); err == nil {
				t.Fatal("Provision accepted it")
			}
		})
	}
}

func TestReachable(t *testing.T) {
	base := t.TempDir()
	closed := filepath.Join(base, "closed")
	open := filepath.Join(base, "open")
	for _, d := range []string{filepath.Join(closed, "app"), filepath.Join(open, "app")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(closed, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(base, 0o711); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(base), 0o711); err != nil {
		t.Fatal(err)
	}
	if err := reachable(filepath.Join(closed, "app")); err == nil {
		t.Fatal("a 0700 parent passed")
	}
	if err := reachable(filepath.Join(open, "app")); err != nil {
		t.Fatal(err)
	}
}

// TestHiddenMounts: a hidden directory gets a mount only where it shows
// through a bind, at its path inside the sandbox; elsewhere it gets none
// (a mount would create its host path inside the sandbox).
func TestHiddenMounts(t *testing.T) {
	base := t.TempDir()
	sys := filepath.Join(base, "usr")
	app := filepath.Join(base, "runtime", "dpl_1")
	data := filepath.Join(base, "data")
	for _, d := range []string{filepath.Join(sys, "share", "data"), filepath.Join(app, "state"), filepath.Join(data, "apps", "dpl_2")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(filepath.Join(sys, "share"), link); err != nil {
		t.Fatal(err)
	}
	binds := []bind{{src: sys, dest: "/usr"}, {src: app, dest: "/app"}}
	tests := []struct {
		name  string
		hide  []string
		binds []bind
		want  []string
	}{
		{name: "outside every bind: no mount", hide: []string{data}, binds: binds},
		{name: "missing: no mount", hide: []string{filepath.Join(base, "nope")}, binds: binds},
		{name: "under a system directory", hide: []string{filepath.Join(sys, "share", "data")}, binds: binds, want: []string{"/usr/share/data"}},
		{name: "through a symlink", hide: []string{filepath.Join(link, "data")}, binds: binds, want: []string{"/usr/share/data"}},
		{name: "under the deployment directory", hide: []string{filepath.Join(app, "state")}, binds: binds, want: []string{"/app/state"}},
		{name: "a deployment directory inside it shows, nothing else", hide: []string{data}, binds: []bind{{src: filepath.Join(data, "apps", "dpl_2"), dest: "/app"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := hiddenMounts(tc.hide, tc.binds); !slices.Equal(got, tc.want) {
				t.Fatalf("mounts %q, want %q", got, tc.want)
			}
		})
	}
}

func TestNoneRefusesEscapingCommand(t *testing.T) {
	if _, err := (None{}).Prepare(App{ID: "d", Dir: t.TempDir(), Argv: []string{"../x"}}); err == nil {
		t.Fatal("a command outside the directory was accepted")
	}
}

// TestBwrapOutboundRequired: Outbound "on" without slirp4netns is refused,
// "auto" runs without network and says why.
func TestBwrapOutboundRequired(t *testing.T) {
	bwrap, err1 := exec.LookPath("bwrap")
	prlimit, err2 := exec.LookPath("prlimit")
	if err1 != nil || err2 != nil || os.Geteuid() != 0 {
		need(t, "needs root, bwrap and prlimit (apt-get install bubblewrap util-linux)")
	}
	t.Setenv("PATH", "/nonexistent")
	on := &Bwrap{BwrapPath: bwrap, PrlimitPath: prlimit, Outbound: ModeOn}
	if err := on.Provision(); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "slirp4netns") {
		t.Fatalf("on: %v", err)
	}
	auto := &Bwrap{BwrapPath: bwrap, PrlimitPath: prlimit}
	if err := auto.Provision(); err != nil {
		t.Fatal(err)
	}
	if st := auto.Status(); st.Outbound || !strings.Contains(st.OutboundWhy, "apt-get install slirp4netns") {
		t.Fatalf("auto: %+v", st)
	}
}
