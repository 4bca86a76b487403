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

// Bwrap runs each program under bubblewrap (Debian package bubblewrap):
//
//   - its own user, pid, ipc, uts, cgroup and network namespaces; the
//     network namespace holds only a loopback interface, so the program
//     reaches neither the platform's listeners, nor other apps, nor the
//     internet; the platform reaches its PORT by opening the connection
//     inside that namespace (setns);
//   - a filesystem of read-only system directories (roPaths), a private
//     /tmp, /proc and /dev, and its deployment directory at /app, the only
//     writable place;
//   - a uid of its own (UIDBase+n, one per running app) when the platform
//     runs as root, so apps cannot signal or read each other;
//   - limits through prlimit: data memory (MemoryBytes), processes and
//     threads of its uid (Tasks), open files, no core dumps.
//
// It needs root (for setns into the app's network namespace and the uid
// switch), bwrap and prlimit; Provision reports ErrUnavailable otherwise.
type Bwrap struct {
	// BwrapPath is the bwrap binary; default found in PATH.
	BwrapPath string `json:"bwrapPath,omitempty"`
	// PrlimitPath is util-linux's prlimit; default found in PATH.
	PrlimitPath string `json:"prlimitPath,omitempty"`
	// UIDBase and UIDCount give the range of uids (and gids) handed to
	// apps, one per running program.
	UIDBase  int `json:"uidBase,omitempty"`
	UIDCount int `json:"uidCount,omitempty"`
	// MemoryBytes bounds the program's memory through RLIMIT_DATA (heap and
	// private writable mappings). RLIMIT_AS is not used: Go, Node and JVM
	// runtimes reserve far more address space than they use and fail to
	// start under it.
	MemoryBytes int64 `json:"memoryBytes,omitempty"`
	// Tasks bounds processes and threads of the app's uid (RLIMIT_NPROC).
	Tasks int `json:"tasks,omitempty"`
	// TmpBytes is the size of the app's private /tmp (a tmpfs in memory).
	TmpBytes int64 `json:"tmpBytes,omitempty"`
	// OpenFiles bounds open file descriptors (RLIMIT_NOFILE).
	OpenFiles int `json:"openFiles,omitempty"`
	// Hide lists host directories to cover with an empty tmpfs should they
	// lie under a bound path (the platform's data directory).
	Hide []string `json:"hide,omitempty"`

	mu   sync.Mutex
	used map[int]bool
}

var _ Sandbox = (*Bwrap)(nil)

// Name implements Sandbox.
func (b *Bwrap) Name() string { return "bwrap" }

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
	return nil
}

// Prepare implements Sandbox. The deployment directory is handed to the
// app's uid.
func (b *Bwrap) Prepare(app App) (*Prepared, error) {
	uid, err := b.takeUID()
	if err != nil {
		return nil, err
	}
	release := func() { b.freeUID(uid) }
	if err := reachable(app.Dir); err != nil {
		release()
		return nil, err
	}
	if err := chownTree(app.Dir, uid); err != nil {
		release()
		return nil, err
	}
	args := []string{
		"--data=" + strconv.FormatInt(b.MemoryBytes, 10),
		"--nproc=" + strconv.Itoa(b.Tasks),
		"--nofile=" + strconv.Itoa(b.OpenFiles),
		"--core=0",
		"--", b.BwrapPath,
		"--unshare-all", "--die-with-parent", "--new-session",
		"--uid", strconv.Itoa(uid), "--gid", strconv.Itoa(uid),
		"--hostname", "app",
		"--proc", "/proc", "--dev", "/dev",
		"--size", strconv.FormatInt(b.TmpBytes, 10), "--tmpfs", "/tmp",
	}
	for _, p := range roPaths {
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
		}
	}
	for _, h := range b.Hide {
		args = append(args, "--tmpfs", h)
	}
	args = append(args, "--bind", app.Dir, "/app", "--chdir", "/app", "--info-fd", "3", "--")
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
	env := app.Env
	if app.Listen {
		p.Port = AppPort
		env = append(env[:len(env):len(env)], "PORT="+strconv.Itoa(AppPort))
	}
	infoR, infoW, err := os.Pipe()
	if err != nil {
		release()
		return nil, fmt.Errorf("sandbox: info pipe: %w", err)
	}
	cmd := exec.Command(b.PrlimitPath, args...)
	cmd.Dir = "/"
	cmd.Env = env
	cmd.ExtraFiles = []*os.File{infoW}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid:    true,
		Pdeathsig:  syscall.SIGKILL,
		Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: []uint32{}},
	}
	p.Cmd = cmd

	var (
		nsMu sync.RWMutex // held for reading while a dial uses ns
		ns   *os.File
	)
	p.Started = func() error {
		infoW.Close()
		defer infoR.Close()
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
		return nil
	}
	p.Dial = func(ctx context.Context) (net.Conn, error) {
		nsMu.RLock()
		defer nsMu.RUnlock()
		if ns == nil {
			return nil, errors.New("sandbox: app not running")
		}
		return dialInNamespace(ctx, ns, net.JoinHostPort("127.0.0.1", strconv.Itoa(AppPort)))
	}
	p.Release = func() {
		infoW.Close()
		infoR.Close()
		nsMu.Lock()
		if ns != nil {
			ns.Close()
			ns = nil
		}
		nsMu.Unlock()
		release()
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
