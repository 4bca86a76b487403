//go:build !linux && !darwin && !freebsd && !netbsd && !openbsd

package main

import (
	"errors"
	"syscall"
)

// reusePort is not available here (the edge refuses --reuse-port too).
func reusePort(_, _ string, _ syscall.RawConn) error {
	return errors.New("SO_REUSEPORT is not supported on this system")
}
