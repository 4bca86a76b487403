package edge

import (
	"sync/atomic"
	"time"
)

// clockResolution is how often the coarse clock advances. Everything the
// edge reads it for (cache freshness in seconds, cookie expiry, the UTC day
// of counts, Age) needs far less precision.
const clockResolution = 50 * time.Millisecond

// coarseClock is a clock read with one atomic load instead of a clock call
// per read; a goroutine advances it every clockResolution.
type coarseClock struct {
	nanos atomic.Int64
	stop  chan struct{}
}

func newCoarseClock() *coarseClock {
	c := &coarseClock{stop: make(chan struct{})}
	c.nanos.Store(time.Now().UnixNano())
	go func() {
		t := time.NewTicker(clockResolution)
		defer t.Stop()
		for {
			select {
			case <-c.stop:
				return
			case now := <-t.C:
				c.nanos.Store(now.UnixNano())
			}
		}
	}()
	return c
}

// Now returns the time, at most clockResolution old. It does not allocate.
func (c *coarseClock) Now() time.Time { return time.Unix(0, c.nanos.Load()) }

func (c *coarseClock) Stop() { close(c.stop) }
