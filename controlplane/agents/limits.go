package agents

import (
	"sync"
	"time"
)

// window counts events per key over a sliding window (the rate limits of
// runs, events and chat messages).
type window struct {
	span time.Duration
	mu   sync.Mutex
	m    map[string][]time.Time
}

func newWindow(span time.Duration) *window { return &window{span: span, m: map[string][]time.Time{}} }

// take records an event for key at now unless limit events already fall in
// the window; it returns whether it did and, when not, how long until a
// slot frees.
func (w *window) take(key string, limit int, now time.Time) (bool, time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	ts := w.m[key]
	cut := 0
	for cut < len(ts) && !ts[cut].After(now.Add(-w.span)) {
		cut++
	}
	ts = ts[cut:]
	if len(ts) >= limit {
		w.m[key] = ts
		return false, ts[0].Add(w.span).Sub(now)
	}
	w.m[key] = append(ts, now)
	if len(w.m) > 10_000 {
		w.sweep(now)
	}
	return true, 0
}

// give back returns the last slot taken for key (a start refused after the
// rate check took a slot).
func (w *window) giveBack(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if ts := w.m[key]; len(ts) > 0 {
		w.m[key] = ts[:len(ts)-1]
	}
}

// sweep drops keys whose events all left the window.
func (w *window) sweep(now time.Time) {
	for k, ts := range w.m {
		if len(ts) == 0 || !ts[len(ts)-1].After(now.Add(-w.span)) {
			delete(w.m, k)
		}
	}
}

func retrySeconds(d time.Duration) int {
	s := int((d + time.Second - 1) / time.Second)
	return max(s, 1)
}
