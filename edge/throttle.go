package edge

import (
	"net/netip"
	"sync"
	"time"

	"github.com/svcplatform/platform/edge/internal/listener"
)

// maxThrottled bounds the (address, site) pairs the password throttle
// remembers; when it is full, entries that have refilled are dropped, and
// if none has, the oldest half goes.
const maxThrottled = 100_000

// throttle limits site-password attempts per client address and site with
// a token bucket: burst attempts at once, then one per refill. IPv6
// clients are keyed by their /64, which one subscriber usually holds whole.
//
// An attempt is reserved (a token taken) before the slow password hash
// runs, so concurrent submissions cannot all pass a check made before any
// of them is counted; a right password then forgets the failures of that
// address on that site only, so a right password on one site does not
// buy more guesses on another. It is safe for concurrent use.
type throttle struct {
	burst  int
	refill time.Duration

	mu sync.Mutex
	m  map[throttleID]*bucket
}

// throttleID is what a bucket counts: one address (prefix) on one site.
type throttleID struct {
	addr netip.Prefix
	site string
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newThrottle(burst int, refill time.Duration) *throttle {
	return &throttle{burst: burst, refill: refill, m: make(map[throttleID]*bucket)}
}

// throttleKey is the client key of a (its IPv4 address or IPv6 /64).
func throttleKey(a netip.Addr) netip.Prefix { return listener.ClientKey(a) }

// level returns the bucket's tokens at now.
func (t *throttle) level(b *bucket, now time.Time) float64 {
	if t.refill <= 0 {
		return float64(t.burst)
	}
	return min(float64(t.burst), b.tokens+float64(now.Sub(b.at))/float64(t.refill))
}

// reserve takes one attempt for addr on site before the password is
// checked. When none is left it reports false and how long until one is.
func (t *throttle) reserve(addr netip.Addr, site string, now time.Time) (time.Duration, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := throttleID{throttleKey(addr), site}
	b := t.m[k]
	if b == nil {
		if len(t.m) >= maxThrottled {
			t.prune(now)
		}
		b = &bucket{tokens: float64(t.burst), at: now}
		t.m[k] = b
	}
	lvl := t.level(b, now)
	if lvl < 1 {
		return time.Duration((1 - lvl) * float64(t.refill)), false
	}
	b.tokens, b.at = lvl-1, now
	return 0, true
}

// succeeded forgets the failures of addr on site (and the attempt it
// reserved), and only there.
func (t *throttle) succeeded(addr netip.Addr, site string) {
	t.mu.Lock()
	delete(t.m, throttleID{throttleKey(addr), site})
	t.mu.Unlock()
}

// release gives back an attempt reserved but not checked (the check could
// not run: the form was unreadable, or every checker was busy).
func (t *throttle) release(addr netip.Addr, site string, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if b := t.m[throttleID{throttleKey(addr), site}]; b != nil {
		b.tokens, b.at = min(float64(t.burst), t.level(b, now)+1), now
	}
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
