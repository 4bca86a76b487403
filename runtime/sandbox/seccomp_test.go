package sandbox

import (
	"encoding/binary"
	"runtime"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// seccompData lays out struct seccomp_data for x/net/bpf's VM, which loads
// words big-endian: each 32-bit field is stored big-endian at the offset
// where the kernel finds it in native (little-endian) order, the low word
// of each argument first.
func seccompData(arch, nr uint32, args ...uint64) []byte {
	b := make([]byte, 64)
	binary.BigEndian.PutUint32(b[offNr:], nr)
	binary.BigEndian.PutUint32(b[offArch:], arch)
	for i, a := range args {
		binary.BigEndian.PutUint32(b[16+8*i:], uint32(a))
		binary.BigEndian.PutUint32(b[20+8*i:], uint32(a>>32))
	}
	return b
}

// wantSeccomp is the filter's specification, written independently of
// the assembler: what the kernel should do for one call.
func wantSeccomp(arch, nr uint32, arg0 uint64) uint32 {
	if arch != auditArchX8664 && arch != auditArchAArch64 {
		return seccompRetKillProcess
	}
	if arch == auditArchX8664 && nr >= x32SyscallBit {
		return seccompRetKillProcess
	}
	switch nr {
	case sysClone[arch]:
		if uint32(arg0)&nsCloneFlags != 0 {
			return seccompRetErrno | errnoEPERM
		}
		return seccompRetAllow
	case sysUnshare[arch]:
		if uint32(arg0)&nsUnshareFlags != 0 {
			return seccompRetErrno | errnoEPERM
		}
		return seccompRetAllow
	case sysClone3[arch]:
		return seccompRetErrno | errnoENOSYS
	}
	for _, d := range deniedSyscalls {
		n := d.x8664
		if arch == auditArchAArch64 {
			n = d.aarch64
		}
		if n >= 0 && uint32(n) == nr {
			return seccompRetErrno | errnoEPERM
		}
	}
	return seccompRetAllow
}

func seccompVM(t testing.TB) *bpf.VM {
	t.Helper()
	prog, err := seccompProgram()
	if err != nil {
		t.Fatal(err)
	}
	vm, err := bpf.NewVM(prog)
	if err != nil {
		t.Fatal(err)
	}
	return vm
}

func runSeccomp(t testing.TB, vm *bpf.VM, data []byte) uint32 {
	t.Helper()
	got, err := vm.Run(data)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(got)
}

func TestSeccompFilterTable(t *testing.T) {
	vm := seccompVM(t)
	const (
		eperm  = seccompRetErrno | errnoEPERM
		enosys = seccompRetErrno | errnoENOSYS
		allow  = seccompRetAllow
		kill   = seccompRetKillProcess
	)
	tests := []struct {
		name string
		arch uint32
		nr   uint32
		arg0 uint64
		want uint32
	}{
		{"x86_64 read", auditArchX8664, 0, 0, allow},
		{"x86_64 write", auditArchX8664, 1, 0, allow},
		{"x86_64 socket", auditArchX8664, 41, 0, allow},
		{"x86_64 execve", auditArchX8664, 59, 0, allow},
		{"x86_64 ptrace", auditArchX8664, 101, 0, eperm},
		{"x86_64 mount", auditArchX8664, 165, 0, eperm},
		{"x86_64 umount2", auditArchX8664, 166, 0, eperm},
		{"x86_64 kexec_load", auditArchX8664, 246, 0, eperm},
		{"x86_64 bpf", auditArchX8664, 321, 0, eperm},
		{"x86_64 userfaultfd", auditArchX8664, 323, 0, eperm},
		{"x86_64 io_uring_setup", auditArchX8664, 425, 0, eperm},
		{"x86_64 clone, a thread", auditArchX8664, 56, unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND | unix.CLONE_THREAD, allow},
		{"x86_64 clone, fork", auditArchX8664, 56, uint64(unix.SIGCHLD), allow},
		{"x86_64 clone, new user namespace", auditArchX8664, 56, unix.CLONE_NEWUSER | uint64(unix.SIGCHLD), eperm},
		{"x86_64 clone, new net namespace", auditArchX8664, 56, unix.CLONE_NEWNET, eperm},
		{"x86_64 clone, namespace flag in the high word only", auditArchX8664, 56, 1 << 40, allow},
		{"x86_64 unshare files", auditArchX8664, 272, unix.CLONE_FILES, allow},
		{"x86_64 unshare user", auditArchX8664, 272, unix.CLONE_NEWUSER, eperm},
		{"x86_64 unshare time", auditArchX8664, 272, unix.CLONE_NEWTIME, eperm},
		{"x86_64 clone3", auditArchX8664, 435, 0, enosys},
		{"x86_64 x32 read", auditArchX8664, x32SyscallBit, 0, kill},
		{"aarch64 read", auditArchAArch64, 63, 0, allow},
		{"aarch64 ptrace", auditArchAArch64, 117, 0, eperm},
		{"aarch64 mount", auditArchAArch64, 40, 0, eperm},
		{"aarch64 101 is nanosleep, not ptrace", auditArchAArch64, 101, 0, allow},
		{"aarch64 clone, new pid namespace", auditArchAArch64, 220, unix.CLONE_NEWPID, eperm},
		{"aarch64 clone3", auditArchAArch64, 435, 0, enosys},
		{"aarch64 has no x32 range", auditArchAArch64, x32SyscallBit, 0, allow},
		{"i386 on x86_64", 0x40000003, 26, 0, kill},
		{"arm32 on aarch64", 0x40000028, 26, 0, kill},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := runSeccomp(t, vm, seccompData(tc.arch, tc.nr, tc.arg0))
			if got != tc.want {
				t.Fatalf("got %#x, want %#x", got, tc.want)
			}
			if m := wantSeccomp(tc.arch, tc.nr, tc.arg0); m != tc.want {
				t.Fatalf("model says %#x", m)
			}
		})
	}
}

// TestSeccompEveryNumber runs the filter over every system call number of
// both architectures against the model.
func TestSeccompEveryNumber(t *testing.T) {
	vm := seccompVM(t)
	for _, arch := range []uint32{auditArchX8664, auditArchAArch64} {
		for nr := uint32(0); nr < 1024; nr++ {
			for _, arg := range []uint64{0, unix.CLONE_NEWNS, unix.CLONE_VM} {
				if got, want := runSeccomp(t, vm, seccompData(arch, nr, arg)), wantSeccomp(arch, nr, arg); got != want {
					t.Fatalf("arch %#x nr %d arg %#x: got %#x, want %#x", arch, nr, arg, got, want)
				}
			}
		}
	}
}

// TestSeccompNumbersMatchThisArch checks the table against x/sys/unix on
// the architecture the test runs on.
func TestSeccompNumbersMatchThisArch(t *testing.T) {
	known := map[string]int{
		"ptrace": unix.SYS_PTRACE, "mount": unix.SYS_MOUNT, "umount2": unix.SYS_UMOUNT2,
		"setns": unix.SYS_SETNS, "bpf": unix.SYS_BPF, "keyctl": unix.SYS_KEYCTL,
		"kexec_load": unix.SYS_KEXEC_LOAD, "init_module": unix.SYS_INIT_MODULE,
		"finit_module": unix.SYS_FINIT_MODULE, "perf_event_open": unix.SYS_PERF_EVENT_OPEN,
		"userfaultfd": unix.SYS_USERFAULTFD, "process_vm_readv": unix.SYS_PROCESS_VM_READV,
		"open_by_handle_at": unix.SYS_OPEN_BY_HANDLE_AT, "reboot": unix.SYS_REBOOT,
		"swapon": unix.SYS_SWAPON, "pivot_root": unix.SYS_PIVOT_ROOT, "add_key": unix.SYS_ADD_KEY,
		"request_key": unix.SYS_REQUEST_KEY, "io_uring_setup": unix.SYS_IO_URING_SETUP,
	}
	for _, d := range deniedSyscalls {
		want, ok := known[d.name]
		if !ok {
			continue
		}
		got := d.x8664
		switch runtime.GOARCH {
		case "amd64":
		case "arm64":
			got = d.aarch64
		default:
			t.Skipf("no seccomp table for %s", runtime.GOARCH)
		}
		if got != want {
			t.Errorf("%s: table %d, unix %d", d.name, got, want)
		}
	}
	var arch uint32 = auditArchX8664
	if runtime.GOARCH == "arm64" {
		arch = auditArchAArch64
	}
	if sysClone[arch] != unix.SYS_CLONE || sysUnshare[arch] != unix.SYS_UNSHARE || sysClone3[arch] != unix.SYS_CLONE3 {
		t.Fatal("clone, unshare or clone3 numbers differ from x/sys/unix")
	}
}

func TestSeccompFilterBytes(t *testing.T) {
	b, err := seccompFilter()
	if err != nil {
		t.Fatal(err)
	}
	prog, _ := seccompProgram()
	if len(b) != 8*len(prog) || len(prog) > 4096 {
		t.Fatalf("%d bytes for %d instructions", len(b), len(prog))
	}
}

func FuzzSeccompFilter(f *testing.F) {
	f.Add(uint32(auditArchX8664), uint32(101), uint64(0))
	f.Add(uint32(auditArchAArch64), uint32(220), uint64(unix.CLONE_NEWUSER))
	f.Add(uint32(0x40000003), uint32(1), uint64(0))
	vm := seccompVM(f)
	f.Fuzz(func(t *testing.T, arch, nr uint32, arg0 uint64) {
		if got, want := runSeccomp(t, vm, seccompData(arch, nr, arg0)), wantSeccomp(arch, nr, arg0); got != want {
			t.Fatalf("arch %#x nr %d arg %#x: got %#x, want %#x", arch, nr, arg0, got, want)
		}
	})
}
