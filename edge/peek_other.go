//go:build !linux && !darwin && !freebsd && !netbsd && !openbsd

package edge

import "net"

// peekConn cannot look at a socket without reading it here: a connection
// is taken as usable, and a request that meets a closed one is retried by
// the rules of retryOrigin.
func peekConn(net.Conn) connState { return connIdle }
