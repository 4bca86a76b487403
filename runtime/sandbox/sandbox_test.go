package sandbox

import (
	"os"
	"path/filepath"
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

func TestNoneRefusesEscapingCommand(t *testing.T) {
	if _, err := (None{}).Prepare(App{ID: "d", Dir: t.TempDir(), Argv: []string{"../x"}}); err == nil {
		t.Fatal("a command outside the directory was accepted")
	}
}
