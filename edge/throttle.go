package edge

import (
	"net/netip"
	"sync"
	"time"
)

// maxThrottled bounds the addresses the password throttle remembers; when
// it is full, entries that have refilled are dropped, and if none has, the
// oldest half goes.
const maxThrottled = 100_000

// throttle limits wrong site-password attempts per client address with a
// token bucket: burst attempts at once, then one per refill. IPv6 clients
// are keyed by their /64, which one subscriber usually holds whole. It is
// safe for concurrent use.
type throttle struct {
	burst  int
	refill time.Duration

	mu sync.Mutex
	m  map[netip.Prefix]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newThrottle(burst int, refill time.Duration) *throttle {
	return &throttle{burst: burst, refill: refill, m: make(map[netip.Prefix]*bucket)}
}

func throttleKey(a netip.Addr) netip.Prefix {
	bits := 32
	if a.Is6() {
		bits = 64
	}
	p, _ := a.Prefix(bits)
	return p
}

// level returns the bucket's tokens at now.
func (t *throttle) level(b *bucket, now time.Time) float64 {
	if t.refill <= 0 {
		return float64(t.burst)
	}
	return min(float64(t.burst), b.tokens+float64(now.Sub(b.at))/float64(t.refill))
}

// allowed reports whether addr may try a password now, and if not how long
// until it may.
func (t *throttle) allowed(addr netip.Addr, now time.Time) (time.Duration, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.m[throttleKey(addr)]
	if b == nil {
		return 0, true
	}
	lvl := t.level(b, now)
	if lvl >= 1 {
		return 0, true
	}
	return time.Duration((1 - lvl) * float64(t.refill)), false
}

// failed takes one token from addr's bucket.
func (t *throttle) failed(addr netip.Addr, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := throttleKey(addr)
	b := t.m[k]
	if b == nil {
		if len(t.m) >= maxThrottled {
			t.prune(now)
		}
		b = &bucket{tokens: float64(t.burst), at: now}
		t.m[k] = b
	}
	b.tokens = max(t.level(b, now)-1, 0)
	b.at = now
}

// succeeded forgets addr's failures.
func (t *throttle) succeeded(addr netip.Addr) {
	t.mu.Lock()
	delete(t.m, throttleKey(addr))
	t.mu.Unlock()
}

// prune drops full buckets, or half of all when none is full. Called with
// the lock held.
func (t *throttle) prune(now time.Time) {
	for k, b := range t.m {
		if t.level(b, now) >= float64(t.burst) {
			delete(t.m, k)
		}
	}
	for k := range t.m {
		if len(t.m) < maxThrottled/2 {
			break
		}
		delete(t.m, k)
	}
}
