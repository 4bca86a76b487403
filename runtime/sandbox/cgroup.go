package sandbox

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Cgroup versions, as Status reports them.
const (
	CgroupNone = ""
	CgroupV1   = "v1"
	CgroupV2   = "v2"
)

// cgroupParent is the directory created under the platform's own cgroup
// (in each hierarchy) that holds one cgroup per running app.
const cgroupParent = "platform-apps"

// cfsPeriod is the CPU bandwidth period, in microseconds: CPUMillis
// thousandths of a core may run per period (v1 cpu.cfs_quota_us, v2
// cpu.max).
const cfsPeriod = 100000

// ErrNoCgroups is wrapped when no usable cgroup hierarchy with the cpu and
// memory controllers is found: limits fall back to prlimit.
var ErrNoCgroups = errors.New("sandbox: no usable cgroup hierarchy")

// v1Controllers are the cgroup v1 hierarchies an app joins: cpu and memory
// are required, pids and cpuacct (accounting only) are used when mounted.
var v1Controllers = []string{"cpu", "memory", "pids", "cpuacct"}

// cgroupHost is where the platform creates per-app cgroups.
type cgroupHost struct {
	version string
	// dirs maps a controller to its platform-apps directory (v1), or ""
	// to the single platform-apps directory (v2).
	dirs map[string]string
	// mounts maps a v1 controller to its hierarchy's mount point and the
	// hierarchy path of that mount's root, to find a thread's own cgroup.
	mounts map[string]mountRoot
}

type mountRoot struct{ dir, root string }

// cgroupLimits are what one app's cgroup enforces.
type cgroupLimits struct {
	CPUMillis   int
	MemoryBytes int64
	Tasks       int
}

// detectCgroups finds the platform's own cgroups from /proc/self/mountinfo
// and /proc/self/cgroup (their contents). A v1 (or hybrid) host with the
// cpu and memory hierarchies is v1; otherwise a cgroup2 mount whose own
// cgroup offers cpu and memory is v2.
func detectCgroups(mountinfo, self []byte) (*cgroupHost, error) {
	own := map[string]string{} // controller ("" for v2) -> path
	for _, line := range strings.Split(string(self), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			own[""] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			own[c] = parts[2]
		}
	}
	v1 := map[string]mountRoot{}
	var v2 *mountRoot
	for _, line := range strings.Split(string(mountinfo), "\n") {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		left, right, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		lf, rf := strings.Fields(left), strings.Fields(right)
		if len(lf) < 5 || len(rf) < 3 {
			continue
		}
		m := mountRoot{dir: unescapeMount(lf[4]), root: unescapeMount(lf[3])}
		switch rf[0] {
		case "cgroup":
			for _, opt := range strings.Split(rf[2], ",") {
				if slices.Contains(v1Controllers, opt) {
					if _, seen := v1[opt]; !seen {
						v1[opt] = m
					}
				}
			}
		case "cgroup2":
			if v2 == nil {
				v2 = &m
			}
		}
	}
	join := func(m mountRoot, path string) (string, bool) {
		rel, ok := strings.CutPrefix(path, m.root)
		if !ok {
			return "", false // our cgroup is outside what this mount shows
		}
		return filepath.Join(m.dir, rel), true
	}
	if _, ok := v1["cpu"]; ok {
		if _, ok := v1["memory"]; ok {
			h := &cgroupHost{version: CgroupV1, dirs: map[string]string{}, mounts: map[string]mountRoot{}}
			for c, m := range v1 {
				path, ok := own[c]
				if !ok {
					continue
				}
				dir, ok := join(m, path)
				if !ok {
					if c == "cpu" || c == "memory" {
						return nil, fmt.Errorf("%w: own %s cgroup %s is not under the mount %s", ErrNoCgroups, c, path, m.dir)
					}
					continue
				}
				h.dirs[c] = filepath.Join(dir, cgroupParent)
				h.mounts[c] = m
			}
			if h.dirs["cpu"] == "" || h.dirs["memory"] == "" {
				return nil, fmt.Errorf("%w: cgroup v1 is mounted but this process is in no cpu or memory cgroup", ErrNoCgroups)
			}
			return h, nil
		}
	}
	if v2 != nil {
		path, ok := own[""]
		if !ok {
			return nil, fmt.Errorf("%w: cgroup2 is mounted but this process has no unified cgroup", ErrNoCgroups)
		}
		dir, ok := join(*v2, path)
		if !ok {
			return nil, fmt.Errorf("%w: own cgroup %s is not under the cgroup2 mount %s", ErrNoCgroups, path, v2.dir)
		}
		ctrl, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrNoCgroups, err)
		}
		have := strings.Fields(string(ctrl))
		if !slices.Contains(have, "cpu") || !slices.Contains(have, "memory") {
			return nil, fmt.Errorf("%w: cgroup2 %s offers %q, not cpu and memory (delegate them to the platform)", ErrNoCgroups, dir, have)
		}
		return &cgroupHost{version: CgroupV2, dirs: map[string]string{"": filepath.Join(dir, cgroupParent)}}, nil
	}
	return nil, fmt.Errorf("%w: neither cgroup v1 cpu and memory hierarchies nor cgroup2 are mounted", ErrNoCgroups)
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// systemCgroups detects the cgroups of the running process and prepares
// the platform-apps directories.
func systemCgroups() (*cgroupHost, error) {
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoCgroups, err)
	}
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoCgroups, err)
	}
	h, err := detectCgroups(mi, self)
	if err != nil {
		return nil, err
	}
	if err := h.prepare(os.Getpid()); err != nil {
		return nil, err
	}
	return h, nil
}

// prepare creates the platform-apps directories and removes empty
// leftovers of a previous run. On v2 it enables the cpu, memory and pids
// controllers for them; a v2 cgroup that holds processes cannot enable
// controllers for its children (the "no internal processes" rule), so the
// platform's own process (pid) is first moved into a sibling leaf,
// <own>/platform, as container runtimes do.
func (h *cgroupHost) prepare(pid int) error {
	for _, dir := range h.dirs {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("%w: create %s: %w", ErrNoCgroups, dir, err)
		}
		if ents, err := os.ReadDir(dir); err == nil {
			for _, e := range ents {
				if e.IsDir() && leftover(e.Name()) {
					_ = os.Remove(filepath.Join(dir, e.Name())) // empty ones only
				}
			}
		}
	}
	if h.version != CgroupV2 {
		return nil
	}
	apps := h.dirs[""]
	own := filepath.Dir(apps)
	avail, err := os.ReadFile(filepath.Join(own, "cgroup.controllers"))
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNoCgroups, err)
	}
	var want []string
	for _, c := range []string{"cpu", "memory", "pids"} {
		if slices.Contains(strings.Fields(string(avail)), c) {
			want = append(want, "+"+c)
		}
	}
	enable := strings.Join(want, " ")
	if err := writeFile(filepath.Join(own, "cgroup.subtree_control"), enable); err != nil {
		if !errors.Is(err, syscall.EBUSY) {
			return fmt.Errorf("%w: %w", ErrNoCgroups, err)
		}
		leaf := filepath.Join(own, "platform")
		if err := os.MkdirAll(leaf, 0o755); err != nil {
			return fmt.Errorf("%w: %w", ErrNoCgroups, err)
		}
		if err := writeFile(filepath.Join(leaf, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
			return fmt.Errorf("%w: move the platform into %s: %w", ErrNoCgroups, leaf, err)
		}
		if err := writeFile(filepath.Join(own, "cgroup.subtree_control"), enable); err != nil {
			return fmt.Errorf("%w: %w", ErrNoCgroups, err)
		}
	}
	if err := writeFile(filepath.Join(apps, "cgroup.subtree_control"), enable); err != nil {
		return fmt.Errorf("%w: %w", ErrNoCgroups, err)
	}
	return nil
}

// writeFile writes one value to a cgroup file (which exists: no create).
func writeFile(path, value string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %q to %s: %w", value, path, err)
	}
	return nil
}

// cgroup is one app instance's cgroup (a directory per v1 hierarchy, or
// one v2 directory).
type cgroup struct {
	host *cgroupHost
	dirs map[string]string // controller -> directory (v2: "" only)
}

// create makes the app's cgroup named name and sets its limits.
func (h *cgroupHost) create(name string, l cgroupLimits) (*cgroup, error) {
	c := &cgroup{host: h, dirs: map[string]string{}}
	made := map[string]bool{} // co-mounted controllers (cpu,cpuacct) share a directory
	for ctl, parent := range h.dirs {
		dir := filepath.Join(parent, name)
		c.dirs[ctl] = dir
		if made[dir] {
			continue
		}
		if err := os.Mkdir(dir, 0o755); err != nil {
			delete(c.dirs, ctl)
			c.remove()
			return nil, fmt.Errorf("sandbox: cgroup %s: %w", dir, err)
		}
		made[dir] = true
	}
	if err := c.apply(l); err != nil {
		c.remove()
		return nil, err
	}
	return c, nil
}

// apply writes the limits into the cgroup's files.
func (c *cgroup) apply(l cgroupLimits) error {
	h := c.host
	quota := int64(l.CPUMillis) * cfsPeriod / 1000
	mem := strconv.FormatInt(l.MemoryBytes, 10)
	type setting struct {
		ctl, file, value string
		optional         bool
	}
	var set []setting
	if h.version == CgroupV2 {
		set = []setting{
			{"", "cpu.max", fmt.Sprintf("%d %d", quota, cfsPeriod), false},
			{"", "memory.max", mem, false},
			{"", "memory.swap.max", "0", true},
			{"", "memory.oom.group", "1", true},
			{"", "pids.max", strconv.Itoa(l.Tasks), true},
		}
	} else {
		set = []setting{
			{"cpu", "cpu.cfs_period_us", strconv.Itoa(cfsPeriod), false},
			{"cpu", "cpu.cfs_quota_us", strconv.FormatInt(quota, 10), false},
			{"memory", "memory.limit_in_bytes", mem, false},
			{"memory", "memory.memsw.limit_in_bytes", mem, true},
			{"memory", "memory.swappiness", "0", true},
			{"pids", "pids.max", strconv.Itoa(l.Tasks), true},
		}
	}
	for _, s := range set {
		dir, ok := c.dirs[s.ctl]
		if !ok {
			continue
		}
		path := filepath.Join(dir, s.file)
		if s.optional {
			if _, err := os.Stat(path); err != nil {
				continue
			}
		}
		if err := writeFile(path, s.value); err != nil {
			return fmt.Errorf("sandbox: cgroup limit: %w", err)
		}
	}
	return nil
}

// start starts cmd with its first process already inside the cgroup, so
// no instruction of it runs outside the limits. v2: clone3 with
// CLONE_INTO_CGROUP (SysProcAttr.UseCgroupFD). v1 has no such flag but
// moves single threads: the calling thread, locked, joins the app's
// cgroups (their tasks files), forks the child (which inherits the forking
// thread's cgroups), and returns to its own; should the way back fail, the
// thread stays locked and Go ends it with the goroutine.
func (c *cgroup) start(cmd *exec.Cmd) error {
	if c.host.version == CgroupV2 {
		fd, err := unix.Open(c.dirs[""], unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("sandbox: open cgroup: %w", err)
		}
		defer unix.Close(fd)
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = fd
		return cmd.Start()
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		tid := strconv.Itoa(unix.Gettid())
		back, err := c.threadCgroups()
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		moved := []string{}
		returnHome := func() bool {
			ok := true
			for _, ctl := range moved {
				if writeFile(filepath.Join(back[ctl], "tasks"), tid) != nil {
					ok = false
				}
			}
			return ok
		}
		for ctl, dir := range c.dirs {
			if err := writeFile(filepath.Join(dir, "tasks"), tid); err != nil {
				if returnHome() {
					runtime.UnlockOSThread()
				}
				errc <- fmt.Errorf("sandbox: join cgroup: %w", err)
				return
			}
			moved = append(moved, ctl)
		}
		err = cmd.Start()
		if returnHome() {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	return <-errc
}

// threadCgroups returns the directory of the calling thread's cgroup in
// each hierarchy the app joins (v1).
func (c *cgroup) threadCgroups() (map[string]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/cgroup", unix.Gettid()))
	if err != nil {
		return nil, fmt.Errorf("sandbox: own cgroup: %w", err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, ctl := range strings.Split(parts[1], ",") {
			m, ok := c.host.mounts[ctl]
			if !ok {
				continue
			}
			rel, ok := strings.CutPrefix(parts[2], m.root)
			if !ok {
				return nil, fmt.Errorf("sandbox: own %s cgroup %s is outside its mount", ctl, parts[2])
			}
			out[ctl] = filepath.Join(m.dir, rel)
		}
	}
	for ctl := range c.dirs {
		if out[ctl] == "" {
			return nil, fmt.Errorf("sandbox: no own %s cgroup", ctl)
		}
	}
	return out, nil
}

// CgroupStats are an app cgroup's counters.
type CgroupStats struct {
	// CPU is the CPU time used (v1 only with the cpuacct hierarchy).
	CPU time.Duration
	// Periods counts CPU bandwidth periods in which the app had work;
	// Throttled those in which it used its whole quota and waited.
	Periods, Throttled int64
	// Memory is the memory charged now; OOMKills the processes the
	// kernel killed at the memory limit.
	Memory   int64
	OOMKills int64
}

// stats reads the cgroup's counters; a missing file leaves its field 0.
func (c *cgroup) stats() CgroupStats {
	var s CgroupStats
	kv := func(dir, file string) map[string]int64 {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			return nil
		}
		m := map[string]int64{}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) == 2 {
				n, _ := strconv.ParseInt(f[1], 10, 64)
				m[f[0]] = n
			}
		}
		return m
	}
	one := func(dir, file string) int64 {
		b, _ := os.ReadFile(filepath.Join(dir, file))
		n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		return n
	}
	if c.host.version == CgroupV2 {
		dir := c.dirs[""]
		cpu := kv(dir, "cpu.stat")
		s.CPU = time.Duration(cpu["usage_usec"]) * time.Microsecond
		s.Periods, s.Throttled = cpu["nr_periods"], cpu["nr_throttled"]
		s.Memory = one(dir, "memory.current")
		s.OOMKills = kv(dir, "memory.events")["oom_kill"]
		return s
	}
	cpu := kv(c.dirs["cpu"], "cpu.stat")
	s.Periods, s.Throttled = cpu["nr_periods"], cpu["nr_throttled"]
	if d, ok := c.dirs["cpuacct"]; ok {
		s.CPU = time.Duration(one(d, "cpuacct.usage"))
	}
	s.Memory = one(c.dirs["memory"], "memory.usage_in_bytes")
	s.OOMKills = kv(c.dirs["memory"], "memory.oom_control")["oom_kill"]
	return s
}

// remove kills what is left in the cgroup and removes it; a cgroup whose
// last processes are still exiting is retried for up to a second.
func (c *cgroup) remove() {
	for _, dir := range c.dirs {
		if c.host.version == CgroupV2 {
			_ = writeFile(filepath.Join(dir, "cgroup.kill"), "1")
		}
		for try := 0; ; try++ {
			if b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs")); err == nil {
				for _, f := range strings.Fields(string(b)) {
					if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
						_ = syscall.Kill(pid, syscall.SIGKILL)
					}
				}
			}
			err := os.Remove(dir)
			if err == nil || errors.Is(err, os.ErrNotExist) || try >= 100 || !errors.Is(err, syscall.EBUSY) {
				break
			}
			time.Sleep(10 * time.Millisecond) // the killed processes are being reaped
		}
	}
}

// cgroupSeq numbers the cgroups this process creates.
var cgroupSeq atomic.Uint64

// leftover reports whether a cgroup named by cgroupName belongs to a
// process that no longer runs (another platform may share the parent).
func leftover(name string) bool {
	parts := strings.Split(name, ".")
	if len(parts) < 3 {
		return false
	}
	pid, err := strconv.Atoi(parts[len(parts)-2])
	if err != nil || pid <= 0 {
		return false
	}
	_, err = os.Stat("/proc/" + strconv.Itoa(pid))
	return errors.Is(err, os.ErrNotExist)
}

// cgroupName makes a cgroup directory name from a deployment id, unique
// on the machine: the platform's pid and a sequence number follow it.
func cgroupName(id string) string {
	clean := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			return r
		}
		return '_'
	}, id)
	if len(clean) > 64 {
		clean = clean[:64]
	}
	return fmt.Sprintf("%s.%d.%d", clean, os.Getpid(), cgroupSeq.Add(1))
}
