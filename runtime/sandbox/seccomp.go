package sandbox

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/net/bpf"
)

// The seccomp filter Bwrap installs (bwrap --seccomp) before the app's
// first instruction: a deny list in the spirit of Docker's default
// profile. Denied system calls fail with EPERM (clone3 with ENOSYS, so C
// libraries fall back to clone, whose flags the filter can read); every
// other call is allowed. It is a classic BPF program assembled in Go (no
// libseccomp, no cgo) for x86_64 and aarch64; a call made under any other
// architecture's convention (i386 int 0x80 on x86_64, the x32 ABI, arm32
// on aarch64) kills the process, since its numbers differ and would slip
// past the list.

// Values from linux/seccomp.h and linux/audit.h.
const (
	seccompRetKillProcess = 0x80000000
	seccompRetErrno       = 0x00050000
	seccompRetAllow       = 0x7fff0000

	auditArchX8664   = 0xc000003e
	auditArchAArch64 = 0xc00000b7

	// x32 system calls on x86_64 have this bit set in their number.
	x32SyscallBit = 0x40000000

	errnoEPERM  = 1
	errnoENOSYS = 38

	// nsCloneFlags are clone/unshare flags that create namespaces:
	// CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
	// CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET; unshare also takes
	// CLONE_NEWTIME (0x80, a signal number for clone).
	nsCloneFlags   = 0x7e020000
	nsUnshareFlags = nsCloneFlags | 0x80
)

// Offsets in struct seccomp_data (native byte order).
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16 // low 32 bits on little-endian machines
)

// deniedSyscall is a system call the filter refuses, by number on each
// architecture (-1: the architecture has no such call).
type deniedSyscall struct {
	name           string
	x8664, aarch64 int
}

// deniedSyscalls, and why: loading kernel code or modules (kexec_load,
// kexec_file_load, init_module, finit_module, delete_module, bpf,
// create_module, get_kernel_syms, query_module); changing what the
// sandbox sees (mount, umount2, pivot_root, the new mount API: fsopen,
// fsconfig, fsmount, fspick, move_mount, open_tree, mount_setattr;
// setns); the machine itself (reboot, swapon, swapoff, settimeofday,
// clock_settime, clock_adjtime, adjtimex, acct, quotactl, quotactl_fd,
// nfsservctl, ioperm, iopl, vhangup, syslog); reading or writing other
// processes (ptrace, process_vm_readv, process_vm_writev, kcmp,
// process_madvise); the kernel keyring, not namespaced (add_key,
// request_key, keyctl); common exploit helpers (userfaultfd,
// perf_event_open, io_uring_setup/enter/register, open_by_handle_at and
// name_to_handle_at, which bypass mount boundaries, lookup_dcookie,
// fanotify_init); obsolete calls (uselib, ustat, sysfs, _sysctl). unshare
// and clone are refused only with namespace flags; clone3 answers ENOSYS.
// NUMA policy calls (mbind, set_mempolicy, move_pages) and personality
// stay allowed.
var deniedSyscalls = []deniedSyscall{
	{"acct", 163, 89},
	{"add_key", 248, 217},
	{"adjtimex", 159, 171},
	{"bpf", 321, 280},
	{"clock_adjtime", 305, 266},
	{"clock_settime", 227, 112},
	{"create_module", 174, -1},
	{"delete_module", 176, 106},
	{"fanotify_init", 300, 262},
	{"finit_module", 313, 273},
	{"fsconfig", 431, 431},
	{"fsmount", 432, 432},
	{"fsopen", 430, 430},
	{"fspick", 433, 433},
	{"get_kernel_syms", 177, -1},
	{"init_module", 175, 105},
	{"io_uring_enter", 426, 426},
	{"io_uring_register", 427, 427},
	{"io_uring_setup", 425, 425},
	{"ioperm", 173, -1},
	{"iopl", 172, -1},
	{"kcmp", 312, 272},
	{"kexec_file_load", 320, 294},
	{"kexec_load", 246, 104},
	{"keyctl", 250, 219},
	{"lookup_dcookie", 212, 18},
	{"mount", 165, 40},
	{"mount_setattr", 442, 442},
	{"move_mount", 429, 429},
	{"name_to_handle_at", 303, 264},
	{"nfsservctl", 180, 42},
	{"open_by_handle_at", 304, 265},
	{"open_tree", 428, 428},
	{"perf_event_open", 298, 241},
	{"pivot_root", 155, 41},
	{"process_madvise", 440, 440},
	{"process_vm_readv", 310, 270},
	{"process_vm_writev", 311, 271},
	{"ptrace", 101, 117},
	{"query_module", 178, -1},
	{"quotactl", 179, 60},
	{"quotactl_fd", 443, 443},
	{"reboot", 169, 142},
	{"request_key", 249, 218},
	{"setns", 308, 268},
	{"settimeofday", 164, 170},
	{"swapoff", 168, 225},
	{"swapon", 167, 224},
	{"syslog", 103, 116},
	{"_sysctl", 156, -1},
	{"sysfs", 139, -1},
	{"umount2", 166, 39},
	{"uselib", 134, -1},
	{"userfaultfd", 323, 282},
	{"ustat", 136, -1},
	{"vhangup", 153, 58},
}

// System calls the filter inspects or answers specially, per architecture.
var (
	sysClone   = map[uint32]uint32{auditArchX8664: 56, auditArchAArch64: 220}
	sysUnshare = map[uint32]uint32{auditArchX8664: 272, auditArchAArch64: 97}
	sysClone3  = map[uint32]uint32{auditArchX8664: 435, auditArchAArch64: 435}
)

// seccompAssembler resolves named jump targets into classic BPF skips.
type seccompAssembler struct {
	prog   []bpf.Instruction
	labels map[string]int
	fixups []seccompFixup
}

type seccompFixup struct {
	at          int
	true, false string // "" falls through
}

func (a *seccompAssembler) label(name string) { a.labels[name] = len(a.prog) }

func (a *seccompAssembler) emit(i bpf.Instruction) { a.prog = append(a.prog, i) }

// jump appends a conditional jump to the labels t and f ("": next).
func (a *seccompAssembler) jump(cond bpf.JumpTest, val uint32, t, f string) {
	a.fixups = append(a.fixups, seccompFixup{len(a.prog), t, f})
	a.emit(bpf.JumpIf{Cond: cond, Val: val})
}

func (a *seccompAssembler) resolve() ([]bpf.Instruction, error) {
	for _, fx := range a.fixups {
		j := a.prog[fx.at].(bpf.JumpIf)
		for _, side := range []struct {
			label string
			skip  *uint8
		}{{fx.true, &j.SkipTrue}, {fx.false, &j.SkipFalse}} {
			if side.label == "" {
				continue
			}
			to, ok := a.labels[side.label]
			if !ok {
				return nil, fmt.Errorf("sandbox: seccomp: unknown label %s", side.label)
			}
			d := to - fx.at - 1
			if d < 0 || d > 255 {
				return nil, fmt.Errorf("sandbox: seccomp: jump to %s out of range (%d)", side.label, d)
			}
			*side.skip = uint8(d)
		}
		a.prog[fx.at] = j
	}
	return a.prog, nil
}

// seccompProgram assembles the filter.
func seccompProgram() ([]bpf.Instruction, error) {
	a := &seccompAssembler{labels: map[string]int{}}
	a.emit(bpf.LoadAbsolute{Off: offArch, Size: 4})
	a.jump(bpf.JumpEqual, auditArchX8664, "x86_64", "")
	a.jump(bpf.JumpEqual, auditArchAArch64, "aarch64", "")
	a.emit(bpf.RetConstant{Val: seccompRetKillProcess})
	for _, arch := range []struct {
		name  string
		audit uint32
	}{{"x86_64", auditArchX8664}, {"aarch64", auditArchAArch64}} {
		p := arch.name + "."
		a.label(arch.name)
		a.emit(bpf.LoadAbsolute{Off: offNr, Size: 4})
		if arch.audit == auditArchX8664 {
			a.jump(bpf.JumpGreaterOrEqual, x32SyscallBit, p+"kill", "")
		}
		a.jump(bpf.JumpEqual, sysClone[arch.audit], p+"clone", "")
		a.jump(bpf.JumpEqual, sysUnshare[arch.audit], p+"unshare", "")
		a.jump(bpf.JumpEqual, sysClone3[arch.audit], p+"enosys", "")
		for _, d := range deniedSyscalls {
			nr := d.x8664
			if arch.audit == auditArchAArch64 {
				nr = d.aarch64
			}
			if nr >= 0 {
				a.jump(bpf.JumpEqual, uint32(nr), p+"eperm", "")
			}
		}
		a.label(p + "allow")
		a.emit(bpf.RetConstant{Val: seccompRetAllow})
		a.label(p + "clone")
		a.emit(bpf.LoadAbsolute{Off: offArg0, Size: 4})
		a.jump(bpf.JumpBitsSet, nsCloneFlags, p+"eperm", p+"allow-args")
		a.label(p + "unshare")
		a.emit(bpf.LoadAbsolute{Off: offArg0, Size: 4})
		a.jump(bpf.JumpBitsSet, nsUnshareFlags, p+"eperm", p+"allow-args")
		a.label(p + "allow-args") // jumps go forward only
		a.emit(bpf.RetConstant{Val: seccompRetAllow})
		a.label(p + "eperm")
		a.emit(bpf.RetConstant{Val: seccompRetErrno | errnoEPERM})
		a.label(p + "enosys")
		a.emit(bpf.RetConstant{Val: seccompRetErrno | errnoENOSYS})
		a.label(p + "kill")
		a.emit(bpf.RetConstant{Val: seccompRetKillProcess})
	}
	return a.resolve()
}

// seccompFilter returns the filter as the kernel takes it (an array of
// struct sock_filter in native byte order), which is what bwrap --seccomp
// reads from its file descriptor.
func seccompFilter() ([]byte, error) {
	prog, err := seccompProgram()
	if err != nil {
		return nil, err
	}
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return nil, fmt.Errorf("sandbox: seccomp: %w", err)
	}
	out := make([]byte, 0, 8*len(raw))
	for _, r := range raw {
		out = binary.NativeEndian.AppendUint16(out, r.Op)
		out = append(out, r.Jt, r.Jf)
		out = binary.NativeEndian.AppendUint32(out, r.K)
	}
	return out, nil
}
