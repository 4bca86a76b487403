//go:build !linux && !darwin && !freebsd && !netbsd && !openbsd

package forward

import "net"

// peeker cannot look at a socket without reading it here: a connection is
// taken as usable, and a request that meets a closed one is retried by the
// rules of RetryIf.
type peeker struct{}

func newPeeker(net.Conn) *peeker { return &peeker{} }

func (*peeker) peek() connState { return connIdle }
