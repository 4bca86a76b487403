//go:build !linux && !darwin && !freebsd && !netbsd && !openbsd

package edge

import (
	"errors"
	"syscall"
)

// reusePort is not available here: Config.ReusePort is refused by Listen.
func reusePort(_, _ string, _ syscall.RawConn) error {
	return errors.New("SO_REUSEPORT is not supported on this system")
}

const reusePortSupported = false
