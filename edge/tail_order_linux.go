//go:build linux

package edge

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// arrivalWaker serves parked connections in the order their data arrived
// (see tail_order.go).
type arrivalWaker struct {
	epfd int
	file *os.File        // epfd, registered with the runtime's poller
	rc   syscall.RawConn // file's
	done chan struct{}   // closed when run has returned
	stop atomic.Bool     // close was called: connections read as plain ones

	// Written by run only.
	events [256]unix.EpollEvent
	n      int
	poll   func(fd uintptr) bool
	ready  []*arrivalConn
	sink   chan struct{} // received by the sinks: parked goroutines that take the "next" slot

	mu    sync.Mutex // guards conns, gens and free
	conns []*arrivalConn
	gens  []uint32
	free  []int32
}

// newArrivalWaker returns a running waker for order "arrival", or nil (the
// runtime's order) for any other or when the system refuses an epoll
// instance.
func newArrivalWaker(order string) *arrivalWaker {
	if order != ReadOrderArrival {
		return nil
	}
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil
	}
	f := os.NewFile(uintptr(fd), "edge-arrival-epoll") // non-blocking: the runtime polls it
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil
	}
	w := &arrivalWaker{epfd: fd, file: f, rc: rc, done: make(chan struct{}), sink: make(chan struct{})}
	w.poll = w.wait
	go w.run()
	for range sinks {
		go w.sinkLoop()
	}
	return w
}

// close stops the waker: connections still open go on reading the plain
// way (they are woken so that a parked one notices).
func (w *arrivalWaker) close() {
	if w == nil || w.stop.Swap(true) {
		return
	}
	w.file.Close()
	<-w.done
	close(w.sink)
	w.mu.Lock()
	conns := append([]*arrivalConn(nil), w.conns...)
	w.mu.Unlock()
	for _, c := range conns {
		if c != nil {
			c.signal()
		}
	}
}

// run takes the events in the kernel's order and readies their
// connections in that order, until the waker is closed.
func (w *arrivalWaker) run() {
	defer close(w.done)
	for {
		if err := w.rc.Read(w.poll); err != nil {
			return
		}
		w.dispatch()
	}
}

// wait is run's raw read: it takes the pending events without blocking and
// reports false (wait for the runtime's poller) when there are none.
func (w *arrivalWaker) wait(fd uintptr) bool {
	for {
		n, err := unix.EpollWait(int(fd), w.events[:], 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			return false
		}
		w.n = n
		return true
	}
}

// sinks is how many sink goroutines wait: a dispatch that follows another
// before the scheduler ran the first's sink still finds one parked.
const sinks = 4

// dispatch readies the connections of the events taken, in order, then a
// sink, which takes the scheduler's "next" slot so that the first
// connection readied runs first (a goroutine readied by a channel send
// runs before the run queue, and pushes the one that held the slot to the
// queue's tail).
func (w *arrivalWaker) dispatch() {
	ready := w.ready[:0]
	w.mu.Lock()
	for _, ev := range w.events[:w.n] {
		slot, gen := ev.Fd, uint32(ev.Pad)
		if slot >= 0 && int(slot) < len(w.conns) && w.gens[slot] == gen && w.conns[slot] != nil {
			ready = append(ready, w.conns[slot])
		}
	}
	w.mu.Unlock()
	woke := false
	for _, c := range ready {
		woke = c.signal() || woke
	}
	if woke {
		select {
		case w.sink <- struct{}{}:
		default: // no sink parked (several dispatches in a row): the last connection runs first
		}
	}
	clear(ready)
	w.ready = ready[:0]
}

// sinkLoop is a sink: readied last by dispatch, it runs first, and parks
// again.
func (w *arrivalWaker) sinkLoop() {
	for range w.sink {
	}
}

// wrap registers c's socket with the waker, or returns c as it is when it
// has none (or the system refuses).
func (w *arrivalWaker) wrap(c net.Conn) net.Conn {
	rc, ok := rawConnOf(c)
	if !ok || w.stop.Load() {
		return c
	}
	ac := &arrivalConn{Conn: c, rc: rc, w: w, sig: make(chan struct{}, 1)}
	ac.recvFn = ac.recv
	w.mu.Lock()
	if len(w.free) > 0 {
		ac.slot = w.free[len(w.free)-1]
		w.free = w.free[:len(w.free)-1]
	} else {
		ac.slot = int32(len(w.conns))
		w.conns = append(w.conns, nil)
		w.gens = append(w.gens, 0)
	}
	w.gens[ac.slot]++
	w.conns[ac.slot] = ac
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLET, Fd: ac.slot, Pad: int32(w.gens[ac.slot])}
	w.mu.Unlock()
	var cerr error
	err := rc.Control(func(fd uintptr) { cerr = unix.EpollCtl(w.epfd, unix.EPOLL_CTL_ADD, int(fd), &ev) })
	if err != nil || cerr != nil {
		w.release(ac)
		return c
	}
	return ac
}

// release frees ac's slot; events still queued for it are dropped (their
// generation no longer matches).
func (w *arrivalWaker) release(ac *arrivalConn) {
	w.mu.Lock()
	if w.conns[ac.slot] == ac {
		w.conns[ac.slot] = nil
		w.gens[ac.slot]++
		w.free = append(w.free, ac.slot)
	}
	w.mu.Unlock()
}

// arrivalConn is a connection whose reads wait for the waker instead of the
// runtime's poller. Writes and write deadlines are the connection's own.
// Read deadlines are kept here: a timer signals the parked reader.
type arrivalConn struct {
	net.Conn
	rc   syscall.RawConn
	w    *arrivalWaker
	slot int32
	sig  chan struct{} // one pending wake-up: data, deadline or close

	// recv's argument and results (the reading goroutine's only).
	recvFn func(fd uintptr) bool
	buf    []byte
	n      int
	err    error

	deadline  atomic.Int64 // read deadline, Unix nanoseconds; 0: none
	mu        sync.Mutex   // guards timer
	timer     *time.Timer
	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error

	parked, woke func() // tests: called before the reader parks and once it is woken
}

// signal leaves one wake-up for the reader and reports whether it was
// parked waiting for it (a send to a waiting receiver readies it).
func (c *arrivalConn) signal() bool {
	select {
	case c.sig <- struct{}{}:
		return true
	default:
		return false
	}
}

// Read reads what the socket holds; when it holds nothing, it parks until
// the waker says data came (in arrival order), the read deadline passes or
// the connection is closed.
func (c *arrivalConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		if c.closed.Load() {
			return 0, c.opErr(net.ErrClosed)
		}
		if d := c.deadline.Load(); d != 0 && time.Now().UnixNano() >= d {
			return 0, c.opErr(os.ErrDeadlineExceeded)
		}
		if c.w.stop.Load() {
			return c.plainRead(p)
		}
		c.buf = p
		err := c.rc.Read(c.recvFn)
		c.buf = nil
		if err != nil {
			return 0, c.opErr(err)
		}
		switch {
		case c.err == nil && c.n > 0:
			return c.n, nil
		case c.err == nil:
			return 0, io.EOF
		case c.err != unix.EAGAIN:
			return 0, c.opErr(os.NewSyscallError("read", c.err))
		}
		if c.parked != nil {
			c.parked()
		}
		<-c.sig
		if c.woke != nil {
			c.woke()
		}
	}
}

// recv is Read's raw read: never waits for the runtime's poller.
func (c *arrivalConn) recv(fd uintptr) bool {
	for {
		n, err := unix.Read(int(fd), c.buf)
		if err == unix.EINTR {
			continue
		}
		c.n, c.err = max(n, 0), err
		return true
	}
}

// plainRead reads through the runtime's poller, once the waker has
// stopped.
func (c *arrivalConn) plainRead(p []byte) (int, error) {
	var t time.Time
	if d := c.deadline.Load(); d != 0 {
		t = time.Unix(0, d)
	}
	if err := c.Conn.SetReadDeadline(t); err != nil {
		return 0, err
	}
	return c.Conn.Read(p)
}

func (c *arrivalConn) opErr(err error) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		err = os.ErrDeadlineExceeded
	}
	return &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}

// SetDeadline sets both deadlines.
func (c *arrivalConn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.Conn.SetWriteDeadline(t)
}

// SetReadDeadline sets the read deadline: a parked Read returns
// os.ErrDeadlineExceeded when it passes.
func (c *arrivalConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed.Load() {
		return c.opErr(net.ErrClosed)
	}
	if t.IsZero() {
		c.deadline.Store(0)
		if c.timer != nil {
			c.timer.Stop()
		}
		return nil
	}
	c.deadline.Store(max(t.UnixNano(), 1))
	d := time.Until(t)
	if c.timer == nil {
		c.timer = time.AfterFunc(d, func() { c.signal() })
	} else {
		c.timer.Reset(d)
	}
	return nil
}

// Close deregisters the socket, closes the connection and wakes a parked
// Read.
func (c *arrivalConn) Close() error {
	c.closeOnce.Do(func() {
		// Deregister before the descriptor is closed and its number reused.
		c.rc.Control(func(fd uintptr) { unix.EpollCtl(c.w.epfd, unix.EPOLL_CTL_DEL, int(fd), nil) })
		c.w.release(c)
		c.closeErr = c.Conn.Close()
		c.mu.Lock()
		c.closed.Store(true)
		if c.timer != nil {
			c.timer.Stop()
		}
		c.mu.Unlock()
		c.signal()
	})
	return c.closeErr
}

// NetConn returns the connection wrapped.
func (c *arrivalConn) NetConn() net.Conn { return c.Conn }

var _ net.Conn = (*arrivalConn)(nil)
