package edge

import (
	"fmt"
	"net"
	"syscall"
)

// Read order: which waiting connection the edge serves first.
//
// Go parks a goroutine reading an empty socket in the runtime's network
// poller, and when the run queue empties the scheduler collects every
// socket that became readable since the last poll (one epoll_wait) and
// queues their goroutines. It queues them in the reverse of the order the
// kernel reported them (runtime.netpoll builds its list with gList.push,
// which prepends), so within each batch the connection whose request came
// in last is served first and the one that has waited longest is served
// last. On a saturated core that batch is the whole set of busy
// connections (25 of 64 at the median under workload 1), and the order
// decides who waits: the mean is the same, but the oldest request waits
// for the whole batch twice over, which is the tail. nginx's event loop
// serves the same epoll batch in order.
//
// With ReadOrder "arrival" (Linux; opt-in, --read-order arrival), client
// connections do not wait in the runtime's poller. arrivalWaker keeps an
// epoll instance of its own (edge-triggered, one registration per
// connection at accept); a connection whose read finds nothing parks on
// its own channel; one goroutine, woken by the runtime's poller when that
// epoll instance has events, takes them in the kernel's order (the order
// the requests arrived) and readies the waiting connections in that order.
// Go's scheduler runs the goroutine readied last first (it takes the run
// queue's "next" slot), so the waker then readies a parked goroutine of its
// own, which takes that slot and does nothing: the connections run strictly
// in arrival order (TestArrivalOrder).
//
// Why it is not the default (edge/README.md, "Tail"): the edge built with a
// Go runtime patched to keep epoll's order moved workload 1's p99 from
// 1.52x nginx's to 1.13x in one quiet 11-round run (0.73x its own, lower in
// 11 rounds of 11) but only 0.68x in a noisier one; this waker, which gets
// the same order from outside the runtime, made 0.89-0.98x the requests
// per second of the runtime's order (every packet now wakes two epoll
// instances; BenchmarkReadOrder: +5% per request) and its p99 was 0.86-1.37x
// the runtime order's in six runs on this shared 2-vCPU machine, where
// wrk's own p99 moves 2-3x between rounds. It stays, tested, for
// measurements with the load generator on another machine.
const (
	ReadOrderArrival = "arrival"
	ReadOrderRuntime = "runtime"
)

// checkReadOrder validates Config.ReadOrder ("" means runtime).
func checkReadOrder(s string) error {
	switch s {
	case "", ReadOrderArrival, ReadOrderRuntime:
		return nil
	}
	return fmt.Errorf("readOrder %q: want %q or %q", s, ReadOrderArrival, ReadOrderRuntime)
}

// arrivalListener wraps each accepted connection with the waker.
type arrivalListener struct {
	net.Listener
	w *arrivalWaker
}

// orderedListener returns ln with its connections served in arrival order
// by w, or ln itself without a waker.
func orderedListener(ln net.Listener, w *arrivalWaker) net.Listener {
	if w == nil {
		return ln
	}
	return arrivalListener{ln, w}
}

// Accept returns the next connection, registered with the waker.
func (l arrivalListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return l.w.wrap(c), nil
}

// netConner is a connection wrapping another (tls.Conn, countedConn).
type netConner interface{ NetConn() net.Conn }

// rawConnOf returns the socket under c's wrappers, if it has one.
func rawConnOf(c net.Conn) (syscall.RawConn, bool) {
	for range 8 {
		if sc, ok := c.(syscall.Conn); ok {
			rc, err := sc.SyscallConn()
			return rc, err == nil
		}
		nc, ok := c.(netConner)
		if !ok {
			return nil, false
		}
		c = nc.NetConn()
	}
	return nil, false
}
