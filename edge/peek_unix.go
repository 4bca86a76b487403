//go:build linux || darwin || freebsd || netbsd || openbsd

package edge

import (
	"errors"
	"net"
	"syscall"
)

// connState says what an idle connection to an origin holds, without
// consuming anything: connIdle (nothing to read; usable), connClosed (the
// origin closed or reset it) or connData (bytes the origin sent unasked).
// It costs one non-blocking recv(MSG_PEEK).
func peekConn(c net.Conn) connState {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return connIdle
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return connIdle
	}
	state := connIdle
	var buf [1]byte
	err = rc.Read(func(fd uintptr) bool {
		n, _, rerr := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case errors.Is(rerr, syscall.EAGAIN), errors.Is(rerr, syscall.EINTR):
			state = connIdle
		case rerr != nil, n == 0:
			state = connClosed
		default:
			state = connData
		}
		return true // never wait for readiness
	})
	if err != nil {
		return connClosed
	}
	return state
}
