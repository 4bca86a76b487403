package accounts

import (
	"sync"
	"time"
)

// Sign-in throttling. Three sliding-window limits count failed sign-ins;
// an attempt is refused with 429 when any limit that applies to it is
// full:
//
//   - per address and account: SignInPairLimit failures per
//     SignInPairWindow for one e-mail from one client address;
//   - per address: SignInAddrLimit failures per SignInAddrWindow from one
//     client address, whatever the e-mails (password spraying);
//   - per account: SignInAccountLimit failures per SignInAccountWindow for
//     one e-mail from addresses it has not signed in from (a guess spread
//     over many addresses). An address the account signed in from within
//     KnownAddressLifetime is exempt from this one, so an attacker elsewhere
//     cannot lock the owner out of a place they sign in from.
//
// An attempt reserves its place in every limit before the password is
// hashed, so concurrent attempts cannot all pass the check before any
// failure is recorded; a successful sign-in gives its reservations back
// and clears the failures of its address and account pair.
const (
	SignInPairLimit      = 10
	SignInPairWindow     = 15 * time.Minute
	SignInAddrLimit      = 50
	SignInAddrWindow     = 15 * time.Minute
	SignInAccountLimit   = 30
	SignInAccountWindow  = time.Hour
	KnownAddressLifetime = 30 * 24 * time.Hour
)

// maxKnownAddresses bounds the addresses remembered per account.
const maxKnownAddresses = 20

// rule is one sliding-window limit.
type rule struct {
	max    int
	window time.Duration
}

// slot is a limit an attempt is counted against: a rule and the key it
// counts under.
type slot struct {
	key  string
	rule rule
}

// attempt is one counted attempt.
type attempt struct {
	at time.Time
	id uint64
}

// throttle counts attempts per key in sliding windows.
type throttle struct {
	mu     sync.Mutex
	nextID uint64
	fails  map[string][]attempt
	// known maps an account to the addresses it signed in from and when.
	known map[string]map[string]time.Time
}

func newThrottle() *throttle {
	return &throttle{fails: map[string][]attempt{}, known: map[string]map[string]time.Time{}}
}

// reservation is an attempt's place in its limits; it stays counted as a
// failure unless released.
type reservation struct {
	t     *throttle
	id    uint64
	slots []slot
}

// reserve counts an attempt against every slot at once, or, when one of
// them is full, counts nothing and returns how long to wait.
func (t *throttle) reserve(now time.Time, slots ...slot) (*reservation, time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var wait time.Duration
	for _, s := range slots {
		list := t.prune(s, now)
		if len(list) >= s.rule.max {
			wait = max(wait, list[len(list)-s.rule.max].at.Add(s.rule.window).Sub(now))
		}
	}
	if wait > 0 {
		return nil, wait
	}
	t.nextID++
	r := &reservation{t: t, id: t.nextID, slots: slots}
	for _, s := range slots {
		t.fails[s.key] = append(t.fails[s.key], attempt{at: now, id: r.id})
	}
	t.bound()
	return r, 0
}

// release takes the attempt back out of its limits.
func (r *reservation) release() {
	t := r.t
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range r.slots {
		list := t.fails[s.key]
		for i, a := range list {
			if a.id == r.id {
				list = append(list[:i:i], list[i+1:]...)
				break
			}
		}
		if len(list) == 0 {
			delete(t.fails, s.key)
		} else {
			t.fails[s.key] = list
		}
	}
}

// reset clears key's failures.
func (t *throttle) reset(key string) {
	t.mu.Lock()
	delete(t.fails, key)
	t.mu.Unlock()
}

// remember records that account signed in from addr at now.
func (t *throttle) remember(account, addr string, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.known[account]
	if m == nil {
		m = map[string]time.Time{}
		t.known[account] = m
	}
	m[addr] = now
	for len(m) > maxKnownAddresses { // keep an account's most recent addresses
		oldest, first := "", true
		for a, at := range m {
			if first || at.Before(m[oldest]) {
				oldest, first = a, false
			}
		}
		delete(m, oldest)
	}
	if len(t.known) > 100_000 {
		for k := range t.known {
			delete(t.known, k)
			if len(t.known) <= 50_000 {
				break
			}
		}
	}
}

// isKnown reports whether account signed in from addr within
// KnownAddressLifetime.
func (t *throttle) isKnown(account, addr string, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	at, ok := t.known[account][addr]
	return ok && now.Sub(at) < KnownAddressLifetime && !now.Before(at)
}

// prune drops s's attempts older than its window and returns the rest.
func (t *throttle) prune(s slot, now time.Time) []attempt {
	list := t.fails[s.key]
	i := 0
	for i < len(list) && now.Sub(list[i].at) >= s.rule.window {
		i++
	}
	list = list[i:]
	if len(list) == 0 {
		delete(t.fails, s.key)
		return nil
	}
	t.fails[s.key] = list
	return list
}

// bound keeps memory bounded under a spray of keys.
func (t *throttle) bound() {
	if len(t.fails) <= 100_000 {
		return
	}
	for k := range t.fails {
		delete(t.fails, k)
		if len(t.fails) <= 50_000 {
			break
		}
	}
}
