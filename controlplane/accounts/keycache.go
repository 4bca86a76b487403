package accounts

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/store"
)

// Key cache limits. Every API request authenticates by key; a verified key
// is kept in memory for KeyCacheTTL so that a burst of requests costs one
// database look-up, not one each. A revocation, a member's role change or
// removal and a project's deletion drop the affected entries at once, on
// this replica directly and on every other one through KeyChannel.
const (
	// KeyCacheTTL is how long a verified key is trusted without looking
	// at the database again (the bound on staleness should a notification
	// be lost with no reconnect noticed).
	KeyCacheTTL = 30 * time.Second
	// KeyCacheSize bounds the cached keys; past it the oldest half goes.
	KeyCacheSize = 10_000
	// KeyChannel is the store notification channel key invalidations are
	// broadcast on (store.Notifier: LISTEN/NOTIFY on PostgreSQL).
	KeyChannel = "accounts_keys"
)

// Invalidation payloads on KeyChannel: a kind letter, a colon, an id; "*"
// drops everything (store.Reconnected, the empty payload, does too).
const (
	invKey     = "k:" // one key revoked
	invMember  = "m:" // a member's role changed or the member was removed
	invProject = "p:" // a project's keys revoked
	invAll     = "*"
)

// keyCache holds verified key credentials by secret hash.
type keyCache struct {
	mu      sync.Mutex
	ttl     time.Duration
	max     int
	on      bool   // true while invalidations are received
	gen     uint64 // bumped by every invalidation
	entries map[[sha256.Size]byte]cachedKey

	hits, misses, drops uint64
}

type cachedKey struct {
	c  KeyCredential
	at time.Time
}

// newKeyCache returns a cache that keeps nothing until enabled.
func newKeyCache(ttl time.Duration, max int) *keyCache {
	return &keyCache{ttl: ttl, max: max, entries: map[[sha256.Size]byte]cachedKey{}}
}

// get returns the cached credential for hash, fresh at now, and the
// generation to pass to put after a database look-up.
func (c *keyCache) get(hash [sha256.Size]byte, now time.Time) (KeyCredential, bool, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.on {
		return KeyCredential{}, false, c.gen
	}
	e, ok := c.entries[hash]
	if ok && now.Sub(e.at) < c.ttl && !now.Before(e.at) {
		c.hits++
		return e.c, true, c.gen
	}
	if ok {
		delete(c.entries, hash)
	}
	c.misses++
	return KeyCredential{}, false, c.gen
}

// put caches cred unless an invalidation happened since gen was read
// (the look-up may have raced with it and read the old state).
func (c *keyCache) put(hash [sha256.Size]byte, cred KeyCredential, gen uint64, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.on || gen != c.gen {
		return
	}
	if len(c.entries) >= c.max {
		c.evict()
	}
	c.entries[hash] = cachedKey{c: cred, at: now}
}

// evict drops the older half of the entries.
func (c *keyCache) evict() {
	var sum int64
	for _, e := range c.entries {
		sum += e.at.UnixNano() / int64(len(c.entries))
	}
	for h, e := range c.entries {
		if e.at.UnixNano() <= sum {
			delete(c.entries, h)
		}
	}
	if len(c.entries) >= c.max { // all equally old
		clear(c.entries)
	}
}

// invalidate applies one invalidation payload.
func (c *keyCache) invalidate(payload string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.drops++
	var match func(KeyCredential) bool
	switch {
	case strings.HasPrefix(payload, invKey):
		id := payload[len(invKey):]
		match = func(k KeyCredential) bool { return k.ID == id }
	case strings.HasPrefix(payload, invMember):
		id := payload[len(invMember):]
		match = func(k KeyCredential) bool { return k.MemberID == id }
	case strings.HasPrefix(payload, invProject):
		id := payload[len(invProject):]
		match = func(k KeyCredential) bool { return k.ProjectID == id }
	default: // invAll, store.Reconnected, anything unknown
		clear(c.entries)
		return
	}
	for h, e := range c.entries {
		if match(e.c) {
			delete(c.entries, h)
		}
	}
}

// enable starts caching (invalidations arrive from now on).
func (c *keyCache) enable() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.on = c.ttl > 0 && c.max > 0
	c.gen++
	clear(c.entries)
}

// disable stops caching (invalidations no longer arrive).
func (c *keyCache) disable() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.on = false
	c.gen++
	clear(c.entries)
}

// KeyCacheStats are the key cache's counters.
type KeyCacheStats struct {
	Hits, Misses, Invalidations uint64
	Entries                     int
	Enabled                     bool
}

// KeyCacheStats returns the key cache's counters.
func (s *Service) KeyCacheStats() KeyCacheStats {
	c := s.keys
	c.mu.Lock()
	defer c.mu.Unlock()
	return KeyCacheStats{Hits: c.hits, Misses: c.misses, Invalidations: c.drops, Entries: len(c.entries), Enabled: c.on}
}

// Run keeps verified keys and workspaces' plans in memory while it
// listens for their invalidations on KeyChannel and PlanChannel, until ctx
// ends; before and after, every request reads the database.
func (s *Service) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	keys, err := s.db.Notifier().Listen(ctx, KeyChannel)
	if err != nil {
		return fmt.Errorf("accounts: key invalidations: %w", err)
	}
	plansCh, err := s.db.Notifier().Listen(ctx, PlanChannel)
	if err != nil {
		return fmt.Errorf("accounts: plan invalidations: %w", err)
	}
	s.keys.enable()
	s.plans.enable()
	// The database closed or ctx ended: nothing can tell us about
	// revocations and plan changes any more.
	defer s.keys.disable()
	defer s.plans.disable()
	for keys != nil || plansCh != nil {
		select {
		case p, ok := <-keys:
			if !ok {
				keys = nil
				s.keys.disable()
				continue
			}
			s.keys.invalidate(p)
		case id, ok := <-plansCh:
			if !ok {
				plansCh = nil
				s.plans.disable()
				continue
			}
			s.plans.drop(id)
		}
	}
	return nil
}

// notifyKeys broadcasts an invalidation in q's transaction (delivered at
// commit to every replica, this one included).
func notifyKeys(ctx context.Context, db *store.DB, q store.Querier, payload string) error {
	return db.Notifier().Notify(ctx, q, KeyChannel, payload)
}

// PlanChannel is the store notification channel a plan change is
// broadcast on, with the workspace id as payload (billing listens too).
const PlanChannel = "workspace_plans"

// PlanCacheTTL bounds how long a workspace's plan is kept in memory.
const PlanCacheTTL = time.Minute

// planCache holds workspaces' plans.
type planCache struct {
	mu  sync.Mutex
	on  bool
	gen uint64
	m   map[string]cachedPlan
}

type cachedPlan struct {
	p  plans.Name
	at time.Time
}

// newPlanCache returns a cache that keeps nothing until enabled.
func newPlanCache() *planCache { return &planCache{m: map[string]cachedPlan{}} }

// enable starts caching (plan changes arrive from now on).
func (c *planCache) enable() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.on = true
	c.gen++
	clear(c.m)
}

func (c *planCache) get(id string, now time.Time) (plans.Name, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[id]
	if !ok || !c.on || now.Sub(e.at) >= PlanCacheTTL || now.Before(e.at) {
		return "", false
	}
	return e.p, true
}

func (c *planCache) generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

func (c *planCache) put(id string, p plans.Name, gen uint64, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.on || gen != c.gen {
		return
	}
	if len(c.m) >= KeyCacheSize {
		clear(c.m)
	}
	c.m[id] = cachedPlan{p, now}
}

// drop forgets id's plan ("" or store.Reconnected: every plan).
func (c *planCache) drop(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	if id == "" {
		clear(c.m)
		return
	}
	delete(c.m, id)
}

func (c *planCache) disable() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.on = false
	c.gen++
	clear(c.m)
}
