package supervise

import (
	"context"
	"io"
	"net"
)

// accept serves the front listener until it is closed.
func (i *instance) accept() {
	for {
		c, err := i.front.Accept()
		if err != nil {
			return
		}
		go i.serveConn(c)
	}
}

// serveConn wakes the app if needed and splices the connection to it.
// While the connection is open the app counts as active: it is neither
// stopped for idleness nor cut short by the drain.
func (i *instance) serveConn(c net.Conn) {
	defer c.Close()
	i.connDelta(1)
	defer i.connDelta(-1)
	ctx := context.Background()
	if err := i.wake(ctx); err != nil {
		i.logf("connection refused: %v", err)
		return
	}
	i.mu.Lock()
	dial := i.dial
	i.mu.Unlock()
	if dial == nil {
		return
	}
	be, err := dial(ctx)
	if err != nil {
		i.logf("connection to the app failed: %v", err)
		return
	}
	defer be.Close()
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(be, c)
		closeWrite(be)
		close(done)
	}()
	_, _ = io.Copy(c, be)
	closeWrite(c)
	<-done
}

func (i *instance) connDelta(d int) {
	i.mu.Lock()
	i.active += d
	i.lastActive = i.s.clk.Now()
	i.mu.Unlock()
	i.s.notify()
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
}
