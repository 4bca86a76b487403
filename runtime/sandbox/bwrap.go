package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Defaults of Bwrap's zero fields.
const (
	DefaultUIDBase     = 200000
	DefaultUIDCount    = 10000
	DefaultMemoryBytes = 512 << 20
	DefaultTasks       = 256
	DefaultOpenFiles   = 1024
	DefaultTmpBytes    = 64 << 20
	// AppPort is the port every sandboxed app listens on: each app has its
	// own network namespace, so they never collide.
	AppPort = 8080
)

// roPaths are bound read-only from the host when they exist: the system's
// programs and libraries and the few files in /etc a runtime needs
// (certificates, name resolution, time zones). Nothing else of the host is
// visible: no data directory, no home directories, no other app.
var roPaths = []string{
	"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
	"/etc/alternatives", "/etc/ssl", "/etc/ca-certificates", "/etc/pki",
	"/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/localtime",
	"/etc/passwd", "/etc/group", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
	"/etc/mime.types", "/etc/os-release",
}

// Modes of Bwrap.Cgroups and Bwrap.Outbound.
const (
	// ModeAuto uses the feature when this machine offers it (the zero value).
	ModeAuto = "auto"
	// ModeOn requires it: Provision fails without it.
	ModeOn = "on"
	// ModeOff never uses it.
	ModeOff = "off"
)

// Defaults of Bwrap's zero fields (continued).
const (
	// DefaultCPUMillis is one core.
	DefaultCPUMillis = 1000
	// networkTimeout bounds the start of an app's outbound network.
	networkTimeout = 10 * time.Second
)

// Bwrap runs each program under bubblewrap (Debian package bubblewrap):
//
//   - its own user, pid, ipc, uts, cgroup and network namespaces; the
//     network namespace holds a loopback interface and, with outbound
//     network, a slirp4netns tap that reaches the internet but neither
//     the host's loopback nor (unless AllowPrivateNetworks) private
//     ranges, never the cloud metadata address; the platform reaches its
//     PORT by opening the connection inside that namespace (setns);
//   - a read-only root holding read-only system directories (roPaths),
//     a private /proc, a read-only /dev (its device nodes work), a
//     private /tmp bounded by TmpBytes and its deployment directory at
//     /app: those two are the only writable places; nothing else of the
//     host (Hide);
//   - a uid of its own (UIDBase+n, one per running app) when the platform
//     runs as root, so apps cannot signal or read each other;
//   - a seccomp filter refusing kernel-facing system calls (seccomp.go);
//   - a cgroup of its own (cgroup v1 or v2, under the platform's own
//     cgroup in platform-apps/) bounding CPU (CPUMillis), all its memory
//     (MemoryBytes, no swap) and tasks; the program is born inside it.
//     Without usable cgroups (Cgroups auto) memory falls back to
//     RLIMIT_DATA and CPU is not bounded (Status says so);
//   - limits through prlimit: processes and threads of its uid (Tasks),
//     open files, no core dumps.
//
// It needs root (for setns into the app's network namespace and the uid
// switch), bwrap and prlimit; Provision reports ErrUnavailable otherwise.
type Bwrap struct {
	// BwrapPath is the bwrap binary; default found in PATH.
	BwrapPath string `json:"bwrapPath,omitempty"`
	// PrlimitPath is util-linux's prlimit; default found in PATH.
	PrlimitPath string `json:"prlimitPath,omitempty"`
	// Slirp4netnsPath is slirp4netns, for outbound network; default
	// found in PATH.
	Slirp4netnsPath string `json:"slirp4netnsPath,omitempty"`
	// UIDBase and UIDCount give the range of uids (and gids) handed to
	// apps, one per running program.
	UIDBase  int `json:"uidBase,omitempty"`
	UIDCount int `json:"uidCount,omitempty"`
	// MemoryBytes bounds the program's memory: all of it (anonymous, page
	// cache, tmpfs, kernel memory charged to it; no swap) in its cgroup,
	// or, without cgroups, RLIMIT_DATA (heap and private writable
	// mappings; RLIMIT_AS is not used: Go, Node and JVM runtimes reserve
	// far more address space than they use and fail to start under it).
	MemoryBytes int64 `json:"memoryBytes,omitempty"`
	// CPUMillis bounds the program's CPU time, in thousandths of a core
	// (1000: one core, 250: a quarter), through its cgroup's CPU
	// bandwidth (quota per 100 ms period). Unbounded without cgroups.
	CPUMillis int `json:"cpuMillis,omitempty"`
	// Tasks bounds processes and threads (cgroup pids.max and
	// RLIMIT_NPROC of the app's uid).
	Tasks int `json:"tasks,omitempty"`
	// TmpBytes is the size of the app's private /tmp (a tmpfs in memory).
	TmpBytes int64 `json:"tmpBytes,omitempty"`
	// OpenFiles bounds open file descriptors (RLIMIT_NOFILE).
	OpenFiles int `json:"openFiles,omitempty"`
	// Hide lists host directories an app must not see (the platform's
	// data directory). One under a bound path (a system directory, the
	// deployment directory) is covered by an empty read-only tmpfs; any
	// other is not mounted, so its path does not exist in the sandbox.
	// A deployment directory inside one is still mounted at /app (only
	// it shows).
	Hide []string `json:"hide,omitempty"`
	// Cgroups is auto (""), on or off: whether limits use a cgroup per
	// app.
	Cgroups string `json:"cgroups,omitempty"`
	// Outbound is auto (""; on when slirp4netns is installed), on or off:
	// whether apps reach the internet.
	Outbound string `json:"outbound,omitempty"`
	// AllowPrivateNetworks lets apps reach private, shared and reserved
	// ranges (the host's non-loopback addresses among them; tests and
	// local development, --allow-private-networks). The host's loopback
	// and link-local addresses (cloud metadata) stay out of reach.
	AllowPrivateNetworks bool `json:"allowPrivateNetworks,omitempty"`
	// NoSeccomp turns the seccomp filter off (debugging only).
	NoSeccomp bool `json:"noSeccomp,omitempty"`

	mu   sync.Mutex
	used map[int]bool

	cg          *cgroupHost // nil: prlimit only
	cgWhy       error
	outbound    bool
	outboundWhy string
	filter      []byte // nil: no seccomp
}

// Isolation says what a provisioned Bwrap enforces (for the startup log
// and the README's table).
type Isolation struct {
	// Cgroups is v1 or v2, or "" when limits fall back to prlimit
	// (RLIMIT_DATA for memory, no CPU bound); CgroupsWhy says why.
	Cgroups    string `json:"cgroups"`
	CgroupsWhy string `json:"cgroupsWhy,omitempty"`
	// Outbound says whether apps reach the internet; OutboundWhy why not.
	Outbound             bool   `json:"outbound"`
	OutboundWhy          string `json:"outboundWhy,omitempty"`
	AllowPrivateNetworks bool   `json:"allowPrivateNetworks"`
	Seccomp              bool   `json:"seccomp"`
}

var _ Sandbox = (*Bwrap)(nil)

// Name implements Sandbox.
func (b *Bwrap) Name() string { return "bwrap" }

// Status reports what Provision found and enabled.
func (b *Bwrap) Status() Isolation {
	st := Isolation{Outbound: b.outbound, OutboundWhy: b.outboundWhy,
		AllowPrivateNetworks: b.AllowPrivateNetworks && b.outbound, Seccomp: b.filter != nil}
	if b.cg != nil {
		st.Cgroups = b.cg.version
	} else if b.cgWhy != nil {
		st.CgroupsWhy = b.cgWhy.Error()
	}
	return st
}

// Provision fills defaults and checks that the sandbox can run here.
func (b *Bwrap) Provision() error {
	if b.UIDBase == 0 {
		b.UIDBase = DefaultUIDBase
	}
	if b.UIDCount == 0 {
		b.UIDCount = DefaultUIDCount
	}
	if b.MemoryBytes == 0 {
		b.MemoryBytes = DefaultMemoryBytes
	}
	if b.CPUMillis == 0 {
		b.CPUMillis = DefaultCPUMillis
	}
	if b.Tasks == 0 {
		b.Tasks = DefaultTasks
	}
	if b.OpenFiles == 0 {
		b.OpenFiles = DefaultOpenFiles
	}
	if b.TmpBytes == 0 {
		b.TmpBytes = DefaultTmpBytes
	}
	if b.UIDBase < 1000 || b.UIDCount < 1 || b.MemoryBytes < 16<<20 || b.Tasks < 1 || b.OpenFiles < 16 || b.TmpBytes < 0 {
		return fmt.Errorf("sandbox: bwrap: uid base must be at least 1000, memory at least 16 MiB, tasks and open files positive")
	}
	if b.CPUMillis < 10 || b.CPUMillis > 1_000_000 {
		return fmt.Errorf("sandbox: bwrap: cpu millis %d is not between 10 (1%% of a core) and 1000000", b.CPUMillis)
	}
	for _, m := range []struct{ name, v string }{{"cgroups", b.Cgroups}, {"outbound", b.Outbound}} {
		switch m.v {
		case "", ModeAuto, ModeOn, ModeOff:
		default:
			return fmt.Errorf("sandbox: bwrap: %s %q is not auto, on or off", m.name, m.v)
		}
	}
	for _, t := range []struct {
		path *string
		name string
	}{{&b.BwrapPath, "bwrap"}, {&b.PrlimitPath, "prlimit"}} {
		if *t.path == "" {
			p, err := exec.LookPath(t.name)
			if err != nil {
				return fmt.Errorf("%w: %s not found (apt-get install bubblewrap util-linux)", ErrUnavailable, t.name)
			}
			*t.path = p
		}
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: bwrap isolation needs root (to enter the app's network namespace and switch uid)", ErrUnavailable)
	}
	if !b.NoSeccomp {
		f, err := seccompFilter()
		if err != nil {
			return err
		}
		b.filter = f
	}
	b.cg, b.cgWhy = nil, nil
	if b.Cgroups == ModeOff {
		b.cgWhy = errors.New("sandbox: cgroups turned off")
	} else if h, err := systemCgroups(); err != nil {
		if b.Cgroups == ModeOn {
			return fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		b.cgWhy = err
	} else {
		b.cg = h
	}
	b.outbound, b.outboundWhy = false, ""
	switch {
	case b.Outbound == ModeOff:
		b.outboundWhy = "turned off"
	default:
		why := ""
		if b.Slirp4netnsPath == "" {
			if p, err := exec.LookPath("slirp4netns"); err == nil {
				b.Slirp4netnsPath = p
			} else {
				why = "slirp4netns not found (apt-get install slirp4netns)"
			}
		}
		if why == "" {
			if _, err := os.Stat("/dev/net/tun"); err != nil {
				why = "no /dev/net/tun"
			}
		}
		if why != "" && b.Outbound == ModeOn {
			return fmt.Errorf("%w: outbound network: %s", ErrUnavailable, why)
		}
		b.outbound, b.outboundWhy = why == "", why
	}
	return nil
}

// Prepare implements Sandbox. The deployment directory is handed to the
// app's uid.
func (b *Bwrap) Prepare(app App) (*Prepared, error) {
	uid, err := b.takeUID()
	if err != nil {
		return nil, err
	}
	var undo []func() // run in reverse on failure, and by Release
	release := func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
		undo = nil
	}
	undo = append(undo, func() { b.freeUID(uid) })
	if err := reachable(app.Dir); err != nil {
		release()
		return nil, err
	}
	if err := chownTree(app.Dir, uid); err != nil {
		release()
		return nil, err
	}
	var cg *cgroup
	if b.cg != nil {
		cg, err = b.cg.create(cgroupName(app.ID), cgroupLimits{CPUMillis: b.CPUMillis, MemoryBytes: b.MemoryBytes, Tasks: b.Tasks})
		if err != nil {
			release()
			return nil, err
		}
		undo = append(undo, cg.remove)
	}
	// Files handed to bwrap: fd 3 onwards, in this order.
	var extra, closeAfterStart []*os.File
	fdOf := func(f *os.File) string {
		extra = append(extra, f)
		return strconv.Itoa(2 + len(extra))
	}
	// pipeWith returns the read end of a pipe holding data (small: it
	// fits the pipe's buffer).
	pipeWith := func(data []byte) (*os.File, error) {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, fmt.Errorf("sandbox: pipe: %w", err)
		}
		_, err = w.Write(data)
		w.Close()
		if err != nil {
			r.Close()
			return nil, fmt.Errorf("sandbox: pipe: %w", err)
		}
		closeAfterStart = append(closeAfterStart, r)
		undo = append(undo, func() { r.Close() })
		return r, nil
	}
	infoR, infoW, err := os.Pipe()
	if err != nil {
		release()
		return nil, fmt.Errorf("sandbox: info pipe: %w", err)
	}
	undo = append(undo, func() { infoW.Close(); infoR.Close() })
	args := []string{}
	if cg == nil {
		args = append(args, "--data="+strconv.FormatInt(b.MemoryBytes, 10))
	}
	args = append(args,
		"--nproc="+strconv.Itoa(b.Tasks),
		"--nofile="+strconv.Itoa(b.OpenFiles),
		"--core=0",
		"--", b.BwrapPath,
		"--unshare-all", "--die-with-parent", "--new-session",
		"--uid", strconv.Itoa(uid), "--gid", strconv.Itoa(uid),
		"--hostname", "app",
		"--proc", "/proc", "--dev", "/dev",
		"--size", strconv.FormatInt(b.TmpBytes, 10), "--tmpfs", "/tmp",
		"--info-fd", fdOf(infoW),
	)
	outbound := b.outbound && !app.Offline
	var blockW *os.File
	if outbound || len(app.Bridges) > 0 {
		r, w, err := os.Pipe()
		if err != nil {
			release()
			return nil, fmt.Errorf("sandbox: block pipe: %w", err)
		}
		blockW = w
		closeAfterStart = append(closeAfterStart, r)
		undo = append(undo, func() { r.Close(); w.Close() })
		args = append(args, "--block-fd", fdOf(r))
	}
	if outbound {
		rc, err := pipeWith([]byte(resolvConf))
		if err != nil {
			release()
			return nil, err
		}
		args = append(args, "--ro-bind-data", fdOf(rc), "/etc/resolv.conf")
	}
	if b.filter != nil {
		f, err := pipeWith(b.filter)
		if err != nil {
			release()
			return nil, err
		}
		args = append(args, "--seccomp", fdOf(f))
	}
	var binds []bind
	for _, p := range roPaths {
		if outbound && p == "/etc/resolv.conf" {
			continue
		}
		fi, err := os.Lstat(p)
		switch {
		case err != nil:
			continue
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				continue
			}
			args = append(args, "--symlink", target, p)
		default:
			args = append(args, "--ro-bind", p, p)
			binds = append(binds, bind{src: p, dest: p})
		}
	}
	args = append(args, "--bind", app.Dir, "/app")
	binds = append(binds, bind{src: app.Dir, dest: "/app"})
	for _, h := range hiddenMounts(b.Hide, binds) {
		args = append(args, "--tmpfs", h, "--remount-ro", h)
	}
	// Last, once every mount point exists: the root (with /etc, a
	// directory of it) and /dev become read-only, so /app and the bounded
	// /tmp are the only writable places. Device nodes are mounts of their
	// own and keep working.
	args = append(args, "--remount-ro", "/dev", "--remount-ro", "/", "--chdir", "/app", "--")
	argv0 := app.Argv[0]
	if !filepath.IsAbs(argv0) && filepath.Base(argv0) != argv0 {
		if !filepath.IsLocal(argv0) {
			release()
			return nil, fmt.Errorf("sandbox: run %q leaves the deployment directory", argv0)
		}
		argv0 = "/app/" + filepath.Clean(argv0)
	}
	args = append(args, argv0)
	args = append(args, app.Argv[1:]...)

	p := &Prepared{}
	env := bridgeEnv(app.Env, app.Bridges, func(b Bridge) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(b.Port)) })
	if app.Listen {
		p.Port = AppPort
		env = append(env[:len(env):len(env)], "PORT="+strconv.Itoa(AppPort))
	}
	cmd := exec.Command(b.PrlimitPath, args...)
	cmd.Dir = "/"
	cmd.Env = env
	cmd.ExtraFiles = extra
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid:    true,
		Pdeathsig:  syscall.SIGKILL,
		Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: []uint32{}},
	}
	p.Cmd = cmd
	startIn := func(c *exec.Cmd) error {
		if cg != nil {
			return cg.start(c)
		}
		return c.Start()
	}
	p.Start = func() error {
		err := startIn(cmd)
		for _, f := range closeAfterStart {
			f.Close()
		}
		return err
	}
	if cg != nil {
		p.Stats = cg.stats
		p.ExitNote = func() string {
			if cg.stats().OOMKills > 0 {
				return fmt.Sprintf("out of memory: killed by the kernel at its memory limit of %d MiB", b.MemoryBytes>>20)
			}
			return ""
		}
	}

	var (
		nsMu    sync.RWMutex // held for reading while a dial uses ns
		ns      *os.File
		nw      *slirp
		bridges []net.Listener
	)
	p.Started = func() error {
		infoW.Close()
		var info struct {
			ChildPID int `json:"child-pid"`
		}
		if err := json.NewDecoder(infoR).Decode(&info); err != nil || info.ChildPID <= 0 {
			return fmt.Errorf("sandbox: bwrap did not report its child: %v", err)
		}
		f, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", info.ChildPID))
		if err != nil {
			return fmt.Errorf("sandbox: open the app's network namespace: %w", err)
		}
		nsMu.Lock()
		ns = f
		nsMu.Unlock()
		if blockW == nil {
			return nil
		}
		// The app is held (bwrap --block-fd) until its network is up
		// and fenced, and its bridges listen.
		if err := awaitLoopback(f, networkTimeout); err != nil {
			return err
		}
		for _, br := range app.Bridges {
			var ln net.Listener
			err := inNamespace(f, func() error {
				var err error
				ln, err = net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(br.Port)))
				return err
			})
			if err != nil {
				return fmt.Errorf("sandbox: bridge on port %d: %w", br.Port, err)
			}
			nsMu.Lock()
			bridges = append(bridges, ln)
			nsMu.Unlock()
			go br.Serve(ln)
		}
		if outbound {
			if err := prohibitRoutes(f, blockedRanges(b.AllowPrivateNetworks)); err != nil {
				return err
			}
			s, err := startSlirp(b.Slirp4netnsPath, f, networkTimeout, startIn)
			if err != nil {
				return err
			}
			nsMu.Lock()
			nw = s
			nsMu.Unlock()
		}
		if _, err := blockW.Write([]byte{1}); err != nil {
			return fmt.Errorf("sandbox: release the app: %w", err)
		}
		return blockW.Close()
	}
	p.Dial = func(ctx context.Context) (net.Conn, error) {
		nsMu.RLock()
		defer nsMu.RUnlock()
		if ns == nil {
			return nil, errors.New("sandbox: app not running")
		}
		return dialInNamespace(ctx, ns, net.JoinHostPort("127.0.0.1", strconv.Itoa(AppPort)))
	}
	var once sync.Once
	p.Release = func() {
		once.Do(func() {
			nsMu.Lock()
			for _, ln := range bridges {
				ln.Close()
			}
			bridges = nil
			if nw != nil {
				nw.stop()
				nw = nil
			}
			if ns != nil {
				ns.Close()
				ns = nil
			}
			nsMu.Unlock()
			release()
		})
	}
	return p, nil
}

func (b *Bwrap) takeUID() (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used == nil {
		b.used = map[int]bool{}
	}
	for i := 0; i < b.UIDCount; i++ {
		if !b.used[i] {
			b.used[i] = true
			return b.UIDBase + i, nil
		}
	}
	return 0, fmt.Errorf("sandbox: all %d app uids are in use", b.UIDCount)
}

func (b *Bwrap) freeUID(uid int) {
	b.mu.Lock()
	delete(b.used, uid-b.UIDBase)
	b.mu.Unlock()
}

// chownTree gives the deployment directory to the app's uid (symlinks
// themselves, never their targets).
func chownTree(dir string, uid int) error {
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, uid)
	})
	if err != nil {
		return fmt.Errorf("sandbox: hand %s to uid %d: %w", dir, uid, err)
	}
	return nil
}

// reachable checks that every directory above dir lets other users pass
// (o+x): bwrap binds it as the app's uid. Keep deployment directories
// under a 0711 directory of their own, outside the data directory.
func reachable(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("sandbox: %s: %w", dir, err)
	}
	for p := filepath.Dir(abs); ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("sandbox: %s: %w", p, err)
		}
		if fi.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("sandbox: %s is not reachable by app users (mode %v; it needs o+x, e.g. chmod 711)", p, fi.Mode().Perm())
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}
