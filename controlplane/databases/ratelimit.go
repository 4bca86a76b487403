package databases

import (
	"sync"
	"time"
)

// limiter is the workspace query rate limit: a sliding log of the times of
// the last n admitted requests per workspace. A request is admitted when
// fewer than n were admitted in the window before it; otherwise it may
// retry when the oldest of them leaves the window. It is exact (no bursts
// at window edges) and costs n timestamps per active workspace.
type limiter struct {
	mu sync.Mutex
	n  int
	w  time.Duration
	m  map[string]*ring
	// swept is when idle workspaces were last dropped.
	swept time.Time
}

// ring holds the admission times of a workspace, oldest at head.
type ring struct {
	at   []int64 // unix nanoseconds
	head int
	size int
}

func newLimiter() *limiter { return &limiter{m: map[string]*ring{}} }

// allow admits one request of workspace at now under a limit of n per w,
// or says how long to wait.
func (l *limiter) allow(workspace string, now time.Time, n int, w time.Duration) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n != l.n || w != l.w {
		l.n, l.w, l.m = n, w, map[string]*ring{}
	}
	t := now.UnixNano()
	if now.Sub(l.swept) > w {
		l.sweep(t)
		l.swept = now
	}
	r := l.m[workspace]
	if r == nil {
		r = &ring{at: make([]int64, n)}
		l.m[workspace] = r
	}
	if r.size < n {
		r.at[(r.head+r.size)%n] = t
		r.size++
		return true, 0
	}
	oldest := r.at[r.head]
	if wait := time.Duration(oldest + int64(w) - t); wait > 0 {
		return false, wait
	}
	r.at[r.head] = t
	r.head = (r.head + 1) % n
	return true, 0
}

// sweep drops workspaces whose newest request left the window.
func (l *limiter) sweep(t int64) {
	for ws, r := range l.m {
		if r.size == 0 || r.at[(r.head+r.size-1)%l.n]+int64(l.w) <= t {
			delete(l.m, ws)
		}
	}
}
