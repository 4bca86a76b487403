//go:build linux || darwin || freebsd || netbsd || openbsd

package forward

import (
	"errors"
	"net"
	"syscall"
)

// peeker looks at an idle connection to an origin without consuming
// anything. It is made once per connection, so that a look allocates
// nothing (the raw connection and the callback are kept).
type peeker struct {
	rc    syscall.RawConn // nil: the connection cannot be looked at
	state connState
	buf   [1]byte
	fn    func(fd uintptr) bool
}

func newPeeker(c net.Conn) *peeker {
	p := &peeker{}
	if sc, ok := c.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			p.rc = rc
		}
	}
	p.fn = p.recv
	return p
}

// peek says what the connection holds: connIdle (nothing to read;
// usable), connClosed (the origin closed or reset it) or connData (bytes
// the origin sent unasked). It costs one non-blocking recv(MSG_PEEK) and
// no allocation.
func (p *peeker) peek() connState {
	if p.rc == nil {
		return connIdle
	}
	p.state = connIdle
	if err := p.rc.Read(p.fn); err != nil {
		return connClosed
	}
	return p.state
}

func (p *peeker) recv(fd uintptr) bool {
	n, _, rerr := syscall.Recvfrom(int(fd), p.buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	switch {
	case errors.Is(rerr, syscall.EAGAIN), errors.Is(rerr, syscall.EINTR):
		p.state = connIdle
	case rerr != nil, n == 0:
		p.state = connClosed
	default:
		p.state = connData
	}
	return true // never wait for readiness
}
