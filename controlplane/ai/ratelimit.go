package ai

import (
	"sync"
	"time"
)

// Buckets of the per-workspace rate limit: chat and embeddings are counted
// apart.
const (
	bucketChat = iota
	bucketEmbeddings
)

// limiter is the per-workspace, per-minute rate limit as a generic cell
// rate algorithm: a workspace may send n requests at once and then one
// every minute/n, so no window ever holds more than n. It keeps one
// timestamp per workspace and bucket.
type limiter struct {
	mu    sync.Mutex
	tat   map[limitKey]int64 // theoretical arrival time, unix nanoseconds
	swept int64
}

type limitKey struct {
	ws     string
	bucket int
}

func newLimiter() *limiter { return &limiter{tat: map[limitKey]int64{}} }

// allow admits one request at now under n per minute, or says how long to
// wait.
func (l *limiter) allow(ws string, bucket int, now time.Time, n int) (bool, time.Duration) {
	if n <= 0 {
		return true, 0
	}
	const window = int64(time.Minute)
	interval := window / int64(n)
	t := now.UnixNano()
	k := limitKey{ws, bucket}
	l.mu.Lock()
	defer l.mu.Unlock()
	if t-l.swept > window {
		for key, at := range l.tat {
			if at <= t {
				delete(l.tat, key)
			}
		}
		l.swept = t
	}
	tat := l.tat[k]
	if tat < t {
		tat = t
	}
	if tat+interval-t > window {
		return false, time.Duration(tat + interval - t - window)
	}
	l.tat[k] = tat + interval
	return true, 0
}
