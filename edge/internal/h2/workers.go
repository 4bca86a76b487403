package h2

import (
	"sync"
	"time"
)

// workerIdle is how long a worker goroutine waits for work before it ends.
const workerIdle = 10 * time.Second

// workerPool runs streams' work on reused goroutines: handing a stream to
// a parked worker is a channel send, where starting a goroutine would
// allocate its closure. Workers idle for workerIdle end.
type workerPool struct {
	mu       sync.Mutex
	idle     []*worker // most recently used last
	n        int       // workers alive
	cleaning bool
}

type worker struct {
	ch   chan *stream // nil: end
	last time.Time    // when it last went idle
}

// run hands s to a worker (s.work).
func (p *workerPool) run(s *stream) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		w := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		w.ch <- s
		return
	}
	p.n++
	clean := !p.cleaning
	p.cleaning = true
	p.mu.Unlock()
	w := &worker{ch: make(chan *stream, 1)}
	go w.loop(p, s)
	if clean {
		go p.clean()
	}
}

func (w *worker) loop(p *workerPool, s *stream) {
	for s != nil {
		s.work()
		w.last = time.Now()
		p.mu.Lock()
		p.idle = append(p.idle, w)
		p.mu.Unlock()
		s = <-w.ch
	}
}

// clean ends the workers idle for workerIdle, and itself once none is
// left.
func (p *workerPool) clean() {
	t := time.NewTicker(workerIdle / 4)
	defer t.Stop()
	for range t.C {
		cutoff := time.Now().Add(-workerIdle)
		p.mu.Lock()
		i := 0
		for i < len(p.idle) && p.idle[i].last.Before(cutoff) {
			p.idle[i].ch <- nil
			p.idle[i] = nil
			i++
		}
		p.idle = append(p.idle[:0], p.idle[i:]...)
		p.n -= i
		if p.n == 0 {
			p.cleaning = false
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
	}
}
