package cache

import (
	"bytes"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/dgraph-io/ristretto/v2"
)

// Cache is the edge's response cache: static-site entries and RFC 9111
// shared-cache entries under one memory bound. It is safe for concurrent
// use. Writes are asynchronous (ristretto batches them): a value set is
// visible to Get shortly after, at once after [Cache.Wait].
type Cache struct {
	cfg   Config
	now   func() time.Time
	rc    *ristretto.Cache[uint64, *item]
	hash  func([]byte) uint64
	epoch atomic.Uint64 // generations of Vary indexes
	stats stats
}

// kind is the kind of a stored item.
type kind uint8

const (
	kindStatic kind = iota // a StaticEntry
	kindShared             // a SharedEntry
	kindVary               // a Vary index of the shared cache
)

// item is the value stored in ristretto: the full encoded key, to tell hash
// collisions apart, and one of the entry kinds.
type item struct {
	kind   kind
	key    []byte
	cost   int64
	static *StaticEntry
	shared *SharedEntry
	vary   *varyIndex
}

// metricKind is the kind label of an item.
func (it *item) metricKind() int {
	if it.kind == kindStatic {
		return labelStatic
	}
	return labelShared
}

// entryOverhead approximates the memory of an entry beyond its byte slices:
// the entry struct, the item, and ristretto's bookkeeping.
const entryOverhead = 256

// New returns a cache bounded by cfg (provisioned and validated) that reads
// time from now, time.Now when nil. Close it when done.
func New(cfg Config, now func() time.Time) (*Cache, error) {
	cfg.Provision()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if now == nil {
		now = time.Now
	}
	c := &Cache{cfg: cfg, now: now, hash: xxhash.Sum64}
	// About 10 counters per entry the cache could hold at 4 KiB per entry
	// (ristretto's recommendation), at least 1024.
	counters := max(cfg.MaxBytes/4096*10, 1024)
	rc, err := ristretto.NewCache(&ristretto.Config[uint64, *item]{
		NumCounters:        counters,
		MaxCost:            cfg.MaxBytes,
		BufferItems:        64,
		IgnoreInternalCost: true,
		OnEvict:            c.onEvict,
		OnReject:           c.onReject,
		OnExit:             c.onExit,
	})
	if err != nil {
		return nil, fmt.Errorf("cache: ristretto: %w", err)
	}
	c.rc = rc
	return c, nil
}

// Close releases the cache's goroutines and drops every entry.
func (c *Cache) Close() { c.rc.Close() }

// Wait blocks until every earlier write is applied. Production code does not
// need it; tests do, because ristretto applies writes asynchronously.
func (c *Cache) Wait() { c.rc.Wait() }

// MaxEntryBytes is the provisioned Config.MaxEntryBytes: the edge can skip
// buffering a response it could not cache anyway.
func (c *Cache) MaxEntryBytes() int64 { return c.cfg.MaxEntryBytes }

// get returns the item stored under key, or nil when there is none or the
// stored one has another key (a hash collision). It does not allocate.
func (c *Cache) get(key []byte, k kind) *item {
	it, ok := c.rc.Get(c.hash(key))
	if !ok || it == nil || it.kind != k || !bytes.Equal(it.key, key) {
		return nil
	}
	return it
}

// set stores it under its key for ttl (no expiry when 0). It reports false
// when ristretto dropped the write.
func (c *Cache) set(it *item, ttl time.Duration) bool {
	c.account(it, 1)
	if !c.rc.SetWithTTL(c.hash(it.key), it, it.cost, ttl) {
		c.account(it, -1)
		return false
	}
	return true
}

// del removes the item stored under key if it has that key.
func (c *Cache) del(key []byte) {
	h := c.hash(key)
	if it, ok := c.rc.Get(h); ok && it != nil && bytes.Equal(it.key, key) {
		c.rc.Del(h)
	}
}

// account adds (sign 1) or removes (sign -1) an item from the stored bytes
// and entries gauges. Every item set is removed exactly once, through
// ristretto's OnExit, whether replaced, deleted, evicted, expired or
// rejected.
func (c *Cache) account(it *item, sign int64) {
	k := it.metricKind()
	c.stats.bytes[k].Add(sign * it.cost)
	if it.kind != kindVary {
		c.stats.entries[k].Add(sign)
	}
}

func (c *Cache) onExit(it *item) {
	if it != nil {
		c.account(it, -1)
	}
}

func (c *Cache) onEvict(ri *ristretto.Item[*item]) {
	if ri.Value == nil {
		return
	}
	reason := evictCapacity
	if !ri.Expiration.IsZero() && !ri.Expiration.After(time.Now()) {
		reason = evictExpired
	}
	c.stats.evictions[ri.Value.metricKind()][reason].Add(1)
}

func (c *Cache) onReject(ri *ristretto.Item[*item]) {
	if ri.Value != nil {
		c.stats.evictions[ri.Value.metricKind()][evictRejected].Add(1)
	}
}
