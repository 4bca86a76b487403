package ratelimit

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcplatform/platform/controlplane/clock"
)

// SweepEvery is how often (by the limiter's clock) keys whose tat is past
// are dropped: the memory map and the store's table stay as large as the
// set of recently busy keys.
const SweepEvery = time.Minute

// Memory is the in-process limiter: one control plane owns the budgets.
type Memory struct {
	clk clock.Clock
	m   *metrics

	mu    sync.Mutex
	tat   map[Key]int64 // unix nanoseconds
	logs  map[Key]*wlog // Window limits
	swept int64
}

// wlog is a Window limit's log of one key: when each admitted unit leaves
// the window, oldest first.
type wlog struct{ until []int64 }

// trim drops the units that left the window at now.
func (w *wlog) trim(now int64) {
	i := 0
	for i < len(w.until) && w.until[i] <= now {
		i++
	}
	w.until = w.until[i:]
}

// NewMemory returns an empty in-memory limiter reading time from clk.
func NewMemory(clk clock.Clock) *Memory {
	return &Memory{clk: clk, m: newMetrics("memory"), tat: map[Key]int64{}, logs: map[Key]*wlog{}}
}

// Allow implements Limiter.
func (l *Memory) Allow(_ context.Context, k Key, lim Limit, cost int64) (Decision, error) {
	unlimited, err := check(k, lim, cost)
	if err != nil {
		return Decision{}, err
	}
	if unlimited {
		d := Decision{Allowed: true}
		l.m.count(k.Bucket, d)
		return d, nil
	}
	now := l.clk.Now().UnixNano()
	l.mu.Lock()
	if now-l.swept >= int64(SweepEvery) {
		for key, at := range l.tat {
			if at <= now {
				delete(l.tat, key)
			}
		}
		for key, w := range l.logs {
			if w.trim(now); len(w.until) == 0 {
				delete(l.logs, key)
			}
		}
		l.swept = now
	}
	var ok bool
	var wait time.Duration
	if lim.Window {
		w := l.logs[k]
		if w == nil {
			w = &wlog{}
			l.logs[k] = w
		}
		w.trim(now)
		if ok, wait = windowDecide(w.until, now, lim, cost); ok {
			for range cost {
				w.until = append(w.until, now+int64(lim.Per))
			}
		}
	} else {
		var tat int64
		if tat, ok, wait = gcra(l.tat[k], now, lim, cost); ok {
			l.tat[k] = tat
		}
	}
	l.mu.Unlock()
	d := Decision{Allowed: ok, RetryAfter: wait}
	l.m.count(k.Bucket, d)
	return d, nil
}

// Refund implements Limiter.
func (l *Memory) Refund(_ context.Context, k Key, lim Limit, cost int64) error {
	unlimited, err := check(k, lim, cost)
	if err != nil || unlimited {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if lim.Window {
		if w := l.logs[k]; w != nil {
			w.until = w.until[:max(len(w.until)-int(cost), 0)]
		}
		return nil
	}
	if tat, ok := l.tat[k]; ok {
		l.tat[k] = tat - cost*lim.interval()
	}
	return nil
}

// Len is how many keys the limiter holds (for tests and the sweep).
func (l *Memory) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.tat) + len(l.logs)
}

// Collectors implements Limiter.
func (l *Memory) Collectors() []prometheus.Collector { return l.m.collectors() }
