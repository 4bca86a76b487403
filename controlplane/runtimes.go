package controlplane

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/deploys"
	"github.com/svcplatform/platform/runtime/engine"
	"github.com/svcplatform/platform/runtime/sandbox"
	"github.com/svcplatform/platform/runtime/supervise"
	"github.com/svcplatform/platform/runtime/wasm"
)

// Sandboxes the runtime can run apps and worker programs in.
const (
	// SandboxBwrap runs each program under bubblewrap with its own uid,
	// outbound network only (slirp4netns, when installed), only its
	// directory writable, a seccomp filter, and CPU and memory limits in a
	// cgroup of its own (runtime/README.md "Isolation"). Needs root, bwrap
	// and prlimit.
	SandboxBwrap = "bwrap"
	// SandboxNone runs programs as plain children of the platform:
	// development and tests only, it isolates nothing.
	SandboxNone = "none"
)

// RuntimeConfig configures the runtime that runs what users deploy: server
// apps and worker programs (run in the manifest) and WASI functions
// (module). Sandbox "" disables it: such deploys answer 503
// runtime_unavailable, external origins still deploy.
type RuntimeConfig struct {
	// Sandbox is bwrap, none or "" (no runtime).
	Sandbox string `json:"sandbox"`
	// Dir holds one directory per running app (the materialised commit).
	// It must be outside the data directory; default <data>.runtime.
	Dir string `json:"dir"`
	// IdleTimeout stops an app without connections for that long (scale
	// to zero; the next request wakes it); 0 is 15 minutes, negative never.
	IdleTimeout time.Duration `json:"idleTimeout"`
	// MemoryBytes bounds each sandboxed app's memory (bwrap; 512 MiB when
	// 0): all of it in its cgroup, or RLIMIT_DATA without cgroups.
	MemoryBytes int64 `json:"memoryBytes"`
	// CPUMillis bounds each sandboxed app's CPU in thousandths of a core
	// (bwrap with cgroups; 1000, one core, when 0).
	CPUMillis int `json:"cpuMillis"`
	// Cgroups and Outbound are auto (""), on or off (sandbox.ModeAuto,
	// ModeOn, ModeOff): per-app cgroups for the limits, and outbound
	// network for sandboxed apps (auto: when slirp4netns is installed).
	Cgroups  string `json:"cgroups"`
	Outbound string `json:"outbound"`
	// AllowPrivateNetworks lets sandboxed apps reach private networks
	// (the platform's --allow-private-networks); never the host's
	// loopback or the cloud metadata address.
	AllowPrivateNetworks bool `json:"allowPrivateNetworks"`
	// FunctionTimeout and FunctionMemoryBytes bound each function call
	// (10 s and 128 MiB when 0).
	FunctionTimeout     time.Duration `json:"functionTimeout"`
	FunctionMemoryBytes int64         `json:"functionMemoryBytes"`
	// Supervise overrides the supervisor's other timings (tests).
	Supervise supervise.Config `json:"supervise"`
	// APIURL is the platform's API as the platform itself reaches it
	// (http://127.0.0.1:7070): apps and worker programs reach it at
	// PLATFORM_API_URL (under bwrap http://127.0.0.1:7070 inside their own
	// network namespace, forwarded here, /api/ only); "" gives them none.
	APIURL string `json:"apiUrl"`
	// ReapEvery is how often idle apps and drained deployments are
	// stopped (the supervisor's ReapInterval, 5 s, when 0; negative: never,
	// for tests that reap explicitly).
	ReapEvery time.Duration `json:"reapEvery"`
}

// errRuntimeDir refuses a runtime directory inside the data directory.
var errRuntimeDir = errors.New("controlplane: runtime directory")

// newRuntime builds the runtime deploys runs apps, workers and functions
// with; a nil runtime when rc.Sandbox is empty. dataDir is hidden from
// sandboxed apps. Its reaper runs in Run; Close stops it and every program
// it runs, after deploys (closers run in reverse order).
func (cp *ControlPlane) newRuntime(ctx context.Context, rc RuntimeConfig, dataDir string, clk clock.Clock, log *slog.Logger) (deploys.Runtime, sandbox.Sandbox, error) {
	if rc.Sandbox == "" {
		return nil, nil, nil
	}
	data, err := filepath.Abs(dataDir)
	if err != nil {
		return nil, nil, fmt.Errorf("controlplane: data directory: %w", err)
	}
	dir := rc.Dir
	if dir == "" {
		// A sibling of the data directory named after it ("data" ->
		// "data.runtime"): outside it, and never a source directory.
		dir = data + ".runtime"
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, nil, fmt.Errorf("%w: %w", errRuntimeDir, err)
	}
	if rel, err := filepath.Rel(data, dir); err == nil && (rel == "." || filepath.IsLocal(rel)) {
		return nil, nil, fmt.Errorf("%w %s is inside the data directory %s: apps would be placed next to the platform's keys; choose a directory outside it", errRuntimeDir, dir, data)
	}
	var box sandbox.Sandbox
	switch rc.Sandbox {
	case SandboxNone:
		box = sandbox.None{}
	case SandboxBwrap:
		b := &sandbox.Bwrap{MemoryBytes: rc.MemoryBytes, CPUMillis: rc.CPUMillis, Hide: []string{data},
			Cgroups: rc.Cgroups, Outbound: rc.Outbound, AllowPrivateNetworks: rc.AllowPrivateNetworks}
		if err := b.Provision(); err != nil {
			return nil, nil, fmt.Errorf("controlplane: app sandbox: %w", err)
		}
		logIsolation(log, b.Status())
		box = b
	default:
		return nil, nil, fmt.Errorf("controlplane: app sandbox %q is not bwrap or none", rc.Sandbox)
	}
	sc := rc.Supervise
	if rc.IdleTimeout != 0 {
		sc.IdleTimeout = rc.IdleTimeout
	}
	eng, err := engine.New(ctx, engine.Config{Dir: dir, Supervise: sc,
		Wasm: wasm.Config{Timeout: rc.FunctionTimeout, MemoryLimitBytes: rc.FunctionMemoryBytes, CacheDir: filepath.Join(dir, ".wasm-cache")}},
		box, clk, log)
	if err != nil {
		return nil, nil, err
	}
	eng.SetAPI(rc.APIURL)
	cp.onClose(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return eng.Close(ctx)
	})
	if rc.ReapEvery >= 0 {
		cp.onRun("runtime reaper", func(ctx context.Context) error { eng.Run(ctx, rc.ReapEvery); return nil })
	}
	log.Info("runtime ready", "sandbox", box.Name(), "dir", dir)
	return eng, box, nil
}

// logIsolation says what the bwrap sandbox enforces here, and warns about
// what it falls back from.
func logIsolation(log *slog.Logger, st sandbox.Isolation) {
	log.Info("app sandbox isolation", "cgroups", st.Cgroups, "outbound", st.Outbound,
		"allowPrivateNetworks", st.AllowPrivateNetworks, "seccomp", st.Seccomp)
	if st.Cgroups == "" {
		log.Warn("app sandbox: no per-app cgroups: memory is bounded by RLIMIT_DATA only and CPU is not bounded",
			"reason", st.CgroupsWhy)
	}
	if !st.Outbound {
		log.Warn("app sandbox: apps get no outbound network", "reason", st.OutboundWhy)
	}
}
