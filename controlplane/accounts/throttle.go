package accounts

import (
	"sync"
	"time"
)

// throttle counts failures per key in a sliding window and refuses once the
// count reaches max, telling the caller how long to wait.
type throttle struct {
	mu     sync.Mutex
	max    int
	window time.Duration
	fails  map[string][]time.Time
}

func newThrottle(max int, window time.Duration) *throttle {
	return &throttle{max: max, window: window, fails: map[string][]time.Time{}}
}

// wait returns how long key must wait before another attempt (0 for none).
func (t *throttle) wait(key string, now time.Time) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	list := t.prune(key, now)
	if len(list) < t.max {
		return 0
	}
	return list[0].Add(t.window).Sub(now)
}

func (t *throttle) fail(key string, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.fails[key] = append(t.prune(key, now), now)
	if len(t.fails) > 100_000 { // bound memory under a spray of keys
		for k := range t.fails {
			delete(t.fails, k)
			if len(t.fails) <= 50_000 {
				break
			}
		}
	}
}

func (t *throttle) reset(key string) {
	t.mu.Lock()
	delete(t.fails, key)
	t.mu.Unlock()
}

func (t *throttle) prune(key string, now time.Time) []time.Time {
	list := t.fails[key]
	i := 0
	for i < len(list) && now.Sub(list[i]) >= t.window {
		i++
	}
	list = list[i:]
	if len(list) == 0 {
		delete(t.fails, key)
		return nil
	}
	t.fails[key] = list
	return list
}
