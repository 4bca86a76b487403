package edge

// The order in which a saturated edge serves its waiting connections.
//
// Go parks a goroutine reading an empty socket in the runtime's network
// poller, and when the run queue empties the scheduler collects every
// socket that became readable since the last poll (one epoll_wait) and
// queues their goroutines. Go's runtime queues them in the reverse of the
// order the kernel reported them (runtime.netpoll builds its list with
// gList.push, which prepends), so within each batch the connection whose
// request came in last is served first and the one that has waited longest
// is served last. On a saturated core that batch is most of the busy
// connections (22 of 64 at the median under workload 1), and the order
// decides who waits: the mean is the same, but the oldest request waits for
// the whole batch, which is the tail. nginx's event loop serves the same
// epoll batch in order.
//
// make build patches that one loop (build/netpollfifo: an overlay of
// runtime/netpoll_epoll.go that walks the events backwards, checked against
// the toolchain's source, so the list comes out in epoll's order) and sets
// netpollOrder. Under workload 1 the patched build's p90 is nginx's and its
// p99 0.73-0.90x the stock build's (edge/README.md, "Tail"). A binary built
// with plain go build serves in the runtime's order and says so at start.

// netpollOrderEpoll is netpollOrder in a binary built by make build.
const netpollOrderEpoll = "epoll"

// netpollOrder is set by the linker (-X, from build/netpollfifo) when the
// runtime's poller was patched to serve in epoll's order; empty otherwise.
var netpollOrder string

// netpollOrderName reports the order the runtime's poller serves ready
// connections in: "epoll" (oldest first, make build) or "runtime" (Go's
// own, newest first within a batch).
func netpollOrderName() string {
	if netpollOrder == netpollOrderEpoll {
		return netpollOrderEpoll
	}
	return "runtime"
}
