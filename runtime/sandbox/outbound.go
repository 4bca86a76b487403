package sandbox

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Outbound network for sandboxed apps: slirp4netns (Debian package
// slirp4netns) gives the app's network namespace a tap device routed
// through user-mode TCP/IP in a helper process on the host (10.0.2.100/24,
// gateway 10.0.2.2, DNS forwarder 10.0.2.3). --disable-host-loopback stops
// the gateway from reaching the host's 127.0.0.1; the ranges below get
// "prohibit" routes inside the namespace (connect fails with EACCES),
// installed before the app runs. The app has no capability in its
// namespace, so it cannot change them.

// slirpGateway is slirp4netns's gateway: the host, seen from the app.
var slirpGateway = netip.MustParsePrefix("10.0.2.2/32")

// privateRanges are refused unless private networks are allowed: the
// IPv4 ranges netguard refuses (RFC 1918, shared, "this network",
// reserved, multicast, benchmarking, IETF assignments) and the
// documentation ranges. slirp4netns's own 10.0.2.0/24 stays reachable
// (a longer prefix wins): only its DNS forwarder answers there.
var privateRanges = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("192.88.99.0/24"),
	netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("224.0.0.0/4"),
	netip.MustParsePrefix("240.0.0.0/4"),
}

// alwaysBlocked are refused whatever the operator allows: link-local,
// which holds the cloud metadata address 169.254.169.254, and the slirp
// gateway, which is the host.
var alwaysBlocked = []netip.Prefix{
	netip.MustParsePrefix("169.254.0.0/16"),
	slirpGateway,
}

// blockedRanges returns the prefixes to prohibit in an app's namespace.
func blockedRanges(allowPrivate bool) []netip.Prefix {
	if allowPrivate {
		return alwaysBlocked
	}
	return append(append([]netip.Prefix{}, alwaysBlocked...), privateRanges...)
}

// resolvConf is the app's /etc/resolv.conf with outbound network: the
// host's resolver is usually on loopback or a private address, both out
// of reach; slirp4netns forwards 10.0.2.3 to it.
const resolvConf = "nameserver 10.0.2.3\noptions edns0\n"

// routeMessage builds an RTM_NEWROUTE request that prohibits dst in the
// main table.
func routeMessage(dst netip.Prefix, seq uint32) []byte {
	addr := dst.Addr().As4()
	const attrLen = unix.SizeofRtAttr + 4
	total := unix.SizeofNlMsghdr + unix.SizeofRtMsg + attrLen
	b := make([]byte, 0, total)
	ne := binary.NativeEndian
	b = ne.AppendUint32(b, uint32(total))
	b = ne.AppendUint16(b, unix.RTM_NEWROUTE)
	b = ne.AppendUint16(b, unix.NLM_F_REQUEST|unix.NLM_F_ACK|unix.NLM_F_CREATE|unix.NLM_F_EXCL)
	b = ne.AppendUint32(b, seq)
	b = ne.AppendUint32(b, 0)
	b = append(b, unix.AF_INET, byte(dst.Bits()), 0, 0, unix.RT_TABLE_MAIN, unix.RTPROT_STATIC, unix.RT_SCOPE_UNIVERSE, unix.RTN_PROHIBIT)
	b = ne.AppendUint32(b, 0) // rtm_flags
	b = ne.AppendUint16(b, attrLen)
	b = ne.AppendUint16(b, unix.RTA_DST)
	return append(b, addr[:]...)
}

// awaitLoopback waits until bwrap has brought the namespace's loopback up
// (it does so over netlink before it blocks on --block-fd; changing the
// namespace's routes at the same moment makes its request fail).
func awaitLoopback(ns *os.File, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var up bool
		err := inNamespace(ns, func() error {
			lo, err := net.InterfaceByName("lo")
			if err != nil {
				return err
			}
			up = lo.Flags&net.FlagUp != 0
			return nil
		})
		if err != nil {
			return fmt.Errorf("sandbox: the app's loopback: %w", err)
		}
		if up {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("sandbox: bwrap did not bring the app's loopback up")
		}
		time.Sleep(2 * time.Millisecond) // bwrap is setting its namespace up
	}
}

// prohibitRoutes installs a prohibit route per prefix in the network
// namespace ns, over a netlink socket opened inside it.
func prohibitRoutes(ns *os.File, prefixes []netip.Prefix) error {
	var fd int
	err := inNamespace(ns, func() error {
		var err error
		fd, err = unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
		return err
	})
	if err != nil {
		return fmt.Errorf("sandbox: netlink socket in the app's namespace: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("sandbox: netlink bind: %w", err)
	}
	tv := unix.Timeval{Sec: 5}
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	buf := make([]byte, 4096)
	for i, p := range prefixes {
		seq := uint32(i + 1)
		if err := unix.Sendto(fd, routeMessage(p.Masked(), seq), 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
			return fmt.Errorf("sandbox: add route %s: %w", p, err)
		}
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return fmt.Errorf("sandbox: add route %s: %w", p, err)
		}
		if err := netlinkAck(buf[:n], seq); err != nil {
			return fmt.Errorf("sandbox: add route %s: %w", p, err)
		}
	}
	return nil
}

// netlinkAck reads the NLMSG_ERROR answer to request seq.
func netlinkAck(b []byte, seq uint32) error {
	ne := binary.NativeEndian
	if len(b) < unix.SizeofNlMsghdr+4 {
		return errors.New("short netlink answer")
	}
	if typ := ne.Uint16(b[4:]); typ != unix.NLMSG_ERROR {
		return fmt.Errorf("netlink answered type %d", typ)
	}
	if got := ne.Uint32(b[8:]); got != seq {
		return fmt.Errorf("netlink answered request %d, not %d", got, seq)
	}
	if code := int32(ne.Uint32(b[unix.SizeofNlMsghdr:])); code != 0 {
		return syscall.Errno(-code)
	}
	return nil
}

// slirp is a running slirp4netns for one app.
type slirp struct {
	cmd  *exec.Cmd
	exit *os.File // closing it ends slirp4netns
	done chan struct{}
}

// startSlirp starts slirp4netns for the network namespace ns and waits
// until it has configured the tap device (bounded by timeout). start
// starts the command (inside the app's cgroup when there is one).
//
// slirp4netns is handed the namespace and the user namespace that owns
// it as open files: given a pid it would join that process's user
// namespace, and bwrap moves its child into a nested one (to switch to the
// app's uid) where joining leaves no right over the network namespace.
func startSlirp(path string, ns *os.File, timeout time.Duration, start func(*exec.Cmd) error) (*slirp, error) {
	ufd, err := unix.IoctlRetInt(int(ns.Fd()), unix.NS_GET_USERNS)
	if err != nil {
		return nil, fmt.Errorf("sandbox: owner of the app's network namespace: %w", err)
	}
	userns := os.NewFile(uintptr(ufd), "userns")
	defer userns.Close()
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("sandbox: slirp4netns pipe: %w", err)
	}
	defer readyR.Close()
	exitR, exitW, err := os.Pipe()
	if err != nil {
		readyW.Close()
		return nil, fmt.Errorf("sandbox: slirp4netns pipe: %w", err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(path, "--configure", "--mtu=65520", "--disable-host-loopback",
		"--enable-sandbox", "--enable-seccomp", "--ready-fd=3", "--exit-fd=4",
		"--netns-type=path", "--userns-path=/proc/self/fd/6", "/proc/self/fd/5", "tap0")
	cmd.ExtraFiles = []*os.File{readyW, exitR, ns, userns}
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	err = start(cmd)
	readyW.Close()
	exitR.Close()
	if err != nil {
		exitW.Close()
		return nil, fmt.Errorf("sandbox: start slirp4netns: %w", err)
	}
	s := &slirp{cmd: cmd, exit: exitW, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(s.done)
	}()
	_ = readyR.SetReadDeadline(time.Now().Add(timeout))
	one := make([]byte, 1)
	if n, err := readyR.Read(one); n != 1 {
		s.stop()
		return nil, fmt.Errorf("sandbox: slirp4netns did not configure the app's network: %v %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	return s, nil
}

// stop ends slirp4netns (its exit fd closes; SIGKILL if it lingers).
func (s *slirp) stop() {
	s.exit.Close()
	select {
	case <-s.done:
	case <-time.After(2 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}
