//go:build !linux

package edge

import "net"

// arrivalWaker needs epoll: elsewhere connections are read in the runtime's
// order (tail_order.go).
type arrivalWaker struct{}

func newArrivalWaker(string) *arrivalWaker { return nil }

func (w *arrivalWaker) close() {}

func (w *arrivalWaker) wrap(c net.Conn) net.Conn { return c }
