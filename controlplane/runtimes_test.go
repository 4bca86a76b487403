package controlplane

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/runtime/sandbox"
)

func TestNewRuntime(t *testing.T) {
	base := t.TempDir()
	data := filepath.Join(base, "data")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx := context.Background()
	t.Run("off", func(t *testing.T) {
		cp := &ControlPlane{}
		rt, _, err := cp.newRuntime(ctx, RuntimeConfig{}, data, clock.System{}, log)
		if err != nil || rt != nil || len(cp.loops) != 0 || cp.Close() != nil {
			t.Fatalf("%v %v", rt, err)
		}
	})
	t.Run("none, default directory beside the data directory", func(t *testing.T) {
		cp := &ControlPlane{}
		rt, _, err := cp.newRuntime(ctx, RuntimeConfig{Sandbox: SandboxNone}, data, clock.System{}, log)
		if err != nil || rt == nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(data + ".runtime"); err != nil || fi.Mode().Perm() != 0o711 {
			t.Fatalf("runtime dir: %v %v", fi, err)
		}
		// The reaper runs in Run, not at construction.
		if len(cp.loops) != 1 || cp.loops[0].name != "runtime reaper" {
			t.Fatalf("loops %v", cp.loops)
		}
		if err := cp.Close(); err != nil {
			t.Fatal(err)
		}
	})
	for _, tc := range []struct {
		name string
		rc   RuntimeConfig
		want string
	}{
		{"inside the data directory", RuntimeConfig{Sandbox: SandboxNone, Dir: filepath.Join(data, "apps")}, "inside the data directory"},
		{"the data directory itself", RuntimeConfig{Sandbox: SandboxNone, Dir: data}, "inside the data directory"},
		{"unknown sandbox", RuntimeConfig{Sandbox: "docker"}, "not bwrap or none"},
		{"unknown cgroups mode", RuntimeConfig{Sandbox: SandboxBwrap, Cgroups: "maybe"}, "not auto, on or off"},
		{"unknown outbound mode", RuntimeConfig{Sandbox: SandboxBwrap, Outbound: "yes"}, "not auto, on or off"},
		{"cpu below 1% of a core", RuntimeConfig{Sandbox: SandboxBwrap, CPUMillis: 5}, "cpu millis"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := (&ControlPlane{}).newRuntime(ctx, tc.rc, data, clock.System{}, log)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v, want %q", err, tc.want)
			}
			if strings.Contains(tc.want, "data directory") && !errors.Is(err, errRuntimeDir) {
				t.Fatalf("%v is not errRuntimeDir", err)
			}
		})
	}
}

func TestRuntimeIsolationLog(t *testing.T) {
	tests := []struct {
		name string
		st   sandbox.Isolation
		want []string
		not  []string
	}{
		{"everything", sandbox.Isolation{Cgroups: "v1", Outbound: true, Seccomp: true},
			[]string{"cgroups=v1", "outbound=true", "seccomp=true"}, []string{"WARN"}},
		{"prlimit fallback, no network", sandbox.Isolation{CgroupsWhy: "no cgroup2", OutboundWhy: "slirp4netns not found", Seccomp: true},
			[]string{"RLIMIT_DATA only and CPU is not bounded", `reason="no cgroup2"`, "no outbound network", `reason="slirp4netns not found"`}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf strings.Builder
			logIsolation(slog.New(slog.NewTextHandler(&buf, nil)), tc.st)
			for _, w := range tc.want {
				if !strings.Contains(buf.String(), w) {
					t.Errorf("log lacks %q:\n%s", w, buf.String())
				}
			}
			for _, w := range tc.not {
				if strings.Contains(buf.String(), w) {
					t.Errorf("log has %q:\n%s", w, buf.String())
				}
			}
		})
	}
}
