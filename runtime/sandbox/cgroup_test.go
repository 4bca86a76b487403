package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// fakeCgroupFS lays out cgroup mounts under a temporary root: files the
// kernel would provide exist, empty, so writes to them can be read back.
func fakeCgroupFS(t *testing.T, dirs map[string][]string) string {
	t.Helper()
	root := t.TempDir()
	for dir, files := range dirs {
		d := filepath.Join(root, dir)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			name, content, _ := strings.Cut(f, "=")
			if err := os.WriteFile(filepath.Join(d, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return root
}

func readBack(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestDetectCgroups(t *testing.T) {
	root := fakeCgroupFS(t, map[string][]string{
		"v2own/svc": {"cgroup.controllers=cpuset cpu io memory pids"},
		"v2none":    {"cgroup.controllers=hugetlb"},
	})
	// This machine's layout: v1 hierarchies (cpu and cpuacct apart) plus
	// an empty unified hierarchy; memory in a nested cgroup.
	hybrid := strings.Join([]string{
		"30 25 0:27 / " + root + "/cpu rw,relatime - cgroup cgroup rw,cpu",
		"31 25 0:28 / " + root + "/cpuacct rw,relatime - cgroup cgroup rw,cpuacct",
		"32 25 0:29 / " + root + "/memory rw,relatime - cgroup cgroup rw,memory",
		"33 25 0:30 / " + root + "/pids rw,relatime - cgroup cgroup rw,pids",
		"34 25 0:31 / " + root + "/unified rw,relatime - cgroup2 cgroup2 rw",
	}, "\n")
	hybridSelf := "8:pids:/\n4:memory:/process_api/abc\n2:cpuacct:/\n1:cpu:/\n0::/\n"
	tests := []struct {
		name      string
		mountinfo string
		self      string
		version   string
		dirs      map[string]string
		err       string
	}{
		{"v1 hybrid", hybrid, hybridSelf, CgroupV1, map[string]string{
			"cpu":     root + "/cpu/platform-apps",
			"cpuacct": root + "/cpuacct/platform-apps",
			"memory":  root + "/memory/process_api/abc/platform-apps",
			"pids":    root + "/pids/platform-apps",
		}, ""},
		{"v1 co-mounted cpu,cpuacct in a container (mount root is its cgroup)",
			"40 25 0:27 /docker/x " + root + "/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n" +
				"41 25 0:29 /docker/x " + root + "/memory rw - cgroup cgroup rw,memory",
			"3:cpu,cpuacct:/docker/x/sub\n4:memory:/docker/x\n", CgroupV1, map[string]string{
				"cpu":     root + "/cpu,cpuacct/sub/platform-apps",
				"cpuacct": root + "/cpu,cpuacct/sub/platform-apps",
				"memory":  root + "/memory/platform-apps",
			}, ""},
		{"v2 unified", "50 25 0:40 / " + root + "/v2own rw - cgroup2 cgroup2 rw", "0::/svc\n", CgroupV2,
			map[string]string{"": root + "/v2own/svc/platform-apps"}, ""},
		{"v2 with an escaped mount point", "50 25 0:40 / " + strings.ReplaceAll(root, "/", `\057`) + "/v2own rw - cgroup2 cgroup2 rw", "0::/svc\n", CgroupV2,
			map[string]string{"": root + "/v2own/svc/platform-apps"}, ""},
		{"v2 without cpu and memory", "50 25 0:40 / " + root + "/v2none rw - cgroup2 cgroup2 rw", "0::/\n", "", nil, "not cpu and memory"},
		{"nothing mounted", "20 1 0:1 / / rw - ext4 /dev/sda rw", "0::/\n", "", nil, "neither"},
		{"v1 without our cpu cgroup", hybrid, "4:memory:/x\n", "", nil, "no cpu or memory cgroup"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, err := detectCgroups([]byte(tc.mountinfo), []byte(tc.self))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrNoCgroups) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if h.version != tc.version || len(h.dirs) != len(tc.dirs) {
				t.Fatalf("got %s %v", h.version, h.dirs)
			}
			for c, d := range tc.dirs {
				if h.dirs[c] != d {
					t.Errorf("%s: %s, want %s", c, h.dirs[c], d)
				}
			}
		})
	}
}

func TestCgroupLimitsWritten(t *testing.T) {
	limits := cgroupLimits{CPUMillis: 250, MemoryBytes: 64 << 20, Tasks: 32}
	t.Run("v1", func(t *testing.T) {
		root := t.TempDir()
		h := &cgroupHost{version: CgroupV1, dirs: map[string]string{
			"cpu": filepath.Join(root, "cpu"), "memory": filepath.Join(root, "memory"), "pids": filepath.Join(root, "pids")}}
		if err := h.prepare(0); err != nil {
			t.Fatal(err)
		}
		// The kernel creates a new cgroup's files; mkdir in a plain
		// directory does not, so the test lays the app's out itself.
		for ctl, files := range map[string][]string{
			"cpu":    {"cpu.cfs_period_us", "cpu.cfs_quota_us"},
			"memory": {"memory.limit_in_bytes", "memory.memsw.limit_in_bytes"},
			"pids":   {"pids.max"},
		} {
			d := filepath.Join(h.dirs[ctl], "app")
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
			for _, f := range files {
				if err := os.WriteFile(filepath.Join(d, f), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		c := &cgroup{host: h, dirs: map[string]string{}}
		for ctl, parent := range h.dirs {
			c.dirs[ctl] = filepath.Join(parent, "app")
		}
		if err := c.apply(limits); err != nil {
			t.Fatal(err)
		}
		for path, want := range map[string]string{
			"cpu/app/cpu.cfs_period_us":              "100000",
			"cpu/app/cpu.cfs_quota_us":               "25000",
			"memory/app/memory.limit_in_bytes":       "67108864",
			"memory/app/memory.memsw.limit_in_bytes": "67108864",
			"pids/app/pids.max":                      "32",
		} {
			if got := readBack(t, filepath.Join(root, path)); got != want {
				t.Errorf("%s = %q, want %q", path, got, want)
			}
		}
	})
	t.Run("v2", func(t *testing.T) {
		root := fakeCgroupFS(t, map[string][]string{
			"own":                   {"cgroup.subtree_control", "cgroup.controllers=cpuset cpu io memory hugetlb pids rdma"},
			"own/platform-apps":     {"cgroup.subtree_control"},
			"own/platform-apps/app": {"cpu.max", "memory.max", "memory.swap.max", "pids.max"},
		})
		h := &cgroupHost{version: CgroupV2, dirs: map[string]string{"": filepath.Join(root, "own", "platform-apps")}}
		if err := h.prepare(0); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"own/cgroup.subtree_control", "own/platform-apps/cgroup.subtree_control"} {
			if got := readBack(t, filepath.Join(root, p)); got != "+cpu +memory +pids" {
				t.Errorf("%s = %q", p, got)
			}
		}
		c := &cgroup{host: h, dirs: map[string]string{"": filepath.Join(root, "own", "platform-apps", "app")}}
		if err := c.apply(limits); err != nil {
			t.Fatal(err)
		}
		for file, want := range map[string]string{"cpu.max": "25000 100000", "memory.max": "67108864", "memory.swap.max": "0", "pids.max": "32"} {
			if got := readBack(t, filepath.Join(root, "own", "platform-apps", "app", file)); got != want {
				t.Errorf("%s = %q, want %q", file, got, want)
			}
		}
	})
}

func TestCgroupStats(t *testing.T) {
	t.Run("v1", func(t *testing.T) {
		root := fakeCgroupFS(t, map[string][]string{
			"cpu":     {"cpu.stat=nr_periods 40\nnr_throttled 30\nthrottled_time 123\n"},
			"cpuacct": {"cpuacct.usage=500000000\n"},
			"memory":  {"memory.usage_in_bytes=1048576\n", "memory.oom_control=oom_kill_disable 0\nunder_oom 0\noom_kill 2\n"},
		})
		c := &cgroup{host: &cgroupHost{version: CgroupV1}, dirs: map[string]string{
			"cpu": filepath.Join(root, "cpu"), "cpuacct": filepath.Join(root, "cpuacct"), "memory": filepath.Join(root, "memory")}}
		want := CgroupStats{CPU: 500 * time.Millisecond, Periods: 40, Throttled: 30, Memory: 1 << 20, OOMKills: 2}
		if got := c.stats(); got != want {
			t.Fatalf("%+v, want %+v", got, want)
		}
	})
	t.Run("v2", func(t *testing.T) {
		root := fakeCgroupFS(t, map[string][]string{
			"app": {"cpu.stat=usage_usec 250000\nuser_usec 1\nnr_periods 10\nnr_throttled 4\n", "memory.current=4096\n",
				"memory.events=low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n"},
		})
		c := &cgroup{host: &cgroupHost{version: CgroupV2}, dirs: map[string]string{"": filepath.Join(root, "app")}}
		want := CgroupStats{CPU: 250 * time.Millisecond, Periods: 10, Throttled: 4, Memory: 4096, OOMKills: 1}
		if got := c.stats(); got != want {
			t.Fatalf("%+v, want %+v", got, want)
		}
	})
}

func TestCgroupName(t *testing.T) {
	a, b := cgroupName("dpl_1/../x y"), cgroupName("dpl_1/../x y")
	if a == b || strings.ContainsAny(a, "/ ") || !strings.HasPrefix(a, "dpl_1____x_y.") {
		t.Fatalf("%q %q", a, b)
	}
	if long := cgroupName(strings.Repeat("x", 300)); len(long) > 100 {
		t.Fatalf("%d bytes", len(long))
	}
	for name, want := range map[string]bool{
		a:                   false, // ours: this process runs
		"dpl_1.999999999.3": true,  // no such process
		"dpl_1":             false, // not one of ours
		"dpl.x.1":           false,
	} {
		if got := leftover(name); got != want {
			t.Errorf("leftover(%q) = %v", name, got)
		}
	}
}

// TestBwrapFallsBackToPrlimit: without cgroups the memory bound is
// RLIMIT_DATA and Status says why.
func TestBwrapFallsBackToPrlimit(t *testing.T) {
	b := liveBwrap(t, func(b *Bwrap) { b.Cgroups = ModeOff; b.Outbound = ModeOff })
	st := b.Status()
	if st.Cgroups != "" || !strings.Contains(st.CgroupsWhy, "turned off") {
		t.Fatalf("%+v", st)
	}
	p, err := b.Prepare(App{ID: "d", Dir: liveDir(t), Argv: []string{"./app"}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	if !slices.Contains(p.Cmd.Args, "--data=134217728") || p.Stats != nil {
		t.Fatalf("args %v", p.Cmd.Args)
	}
}

// TestCgroupCreateCoMounted: cpu and cpuacct mounted together share one
// directory, made once; a failure leaves nothing behind.
func TestCgroupCreateCoMounted(t *testing.T) {
	root := t.TempDir()
	both := filepath.Join(root, "cpu,cpuacct", "platform-apps")
	h := &cgroupHost{version: CgroupV1, dirs: map[string]string{"cpu": both, "cpuacct": both, "memory": filepath.Join(root, "memory", "platform-apps")}}
	if err := h.prepare(0); err != nil {
		t.Fatal(err)
	}
	// A plain directory lacks the kernel's files: the limits cannot be
	// written, which must be the error (not "file exists").
	_, err := h.create("app", cgroupLimits{CPUMillis: 1000, MemoryBytes: 1 << 30, Tasks: 8})
	if err == nil || !strings.Contains(err.Error(), "cgroup limit") {
		t.Fatalf("err %v", err)
	}
	for _, d := range []string{both, h.dirs["memory"]} {
		if ents, _ := os.ReadDir(d); len(ents) != 0 {
			t.Fatalf("%s keeps %v", d, ents)
		}
	}
}
