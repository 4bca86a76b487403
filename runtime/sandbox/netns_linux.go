package sandbox

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// inNamespace runs fn on a thread locked into the network namespace ns.
// Sockets fn creates keep that namespace after the thread switches back;
// should switching back fail, the thread stays locked and Go discards it
// when the goroutine ends.
func inNamespace(ns *os.File, fn func() error) error {
	ch := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		self, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
		if err != nil {
			runtime.UnlockOSThread()
			ch <- fmt.Errorf("sandbox: own network namespace: %w", err)
			return
		}
		defer self.Close()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			ch <- fmt.Errorf("sandbox: enter the app's network namespace: %w", err)
			return
		}
		err = fn()
		if unix.Setns(int(self.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		ch <- err
	}()
	return <-ch
}

// dialInNamespace connects to addr from inside the network namespace ns.
func dialInNamespace(ctx context.Context, ns *os.File, addr string) (net.Conn, error) {
	var c net.Conn
	err := inNamespace(ns, func() error {
		var d net.Dialer
		var err error
		c, err = d.DialContext(ctx, "tcp", addr)
		return err
	})
	return c, err
}
