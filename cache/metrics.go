package cache

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Values of the kind label.
const (
	labelStatic = iota
	labelShared
	numKinds
)

var kindNames = [numKinds]string{labelStatic: "static", labelShared: "shared"}

// Values of the reason label of evictions.
const (
	evictCapacity = iota // removed to make room (ristretto OnEvict)
	evictExpired         // its TTL passed (ristretto OnEvict from the TTL sweep)
	evictRejected        // refused by the admission policy (ristretto OnReject)
	numEvictReasons
)

var evictReasonNames = [numEvictReasons]string{
	evictCapacity: "capacity",
	evictExpired:  "expired",
	evictRejected: "rejected",
}

// counter is an atomic counter padded to its own cache line, so that
// counters hit from every core do not share one.
type counter struct {
	atomic.Uint64
	_ [56]byte
}

type stats struct {
	hits      [numKinds]counter
	misses    [numKinds]counter
	evictions [numKinds][numEvictReasons]atomic.Uint64
	bytes     [numKinds]atomic.Int64
	entries   [numKinds]atomic.Int64
}

// Stats is a snapshot of one kind of the cache's counters.
type Stats struct {
	// Hits counts lookups answered from the cache.
	Hits uint64
	// Misses counts lookups that had to go to the files or the origin,
	// including revalidations.
	Misses uint64
	// Evictions counts entries removed to make room or because their TTL
	// passed, and writes refused by the admission policy.
	Evictions uint64
	// Bytes is the cost of the entries stored.
	Bytes int64
	// Entries is the number of entries stored.
	Entries int64
}

// StaticStats returns the static-site cache's counters.
func (c *Cache) StaticStats() Stats { return c.stats.snapshot(labelStatic) }

// SharedStats returns the shared cache's counters.
func (c *Cache) SharedStats() Stats { return c.stats.snapshot(labelShared) }

func (s *stats) snapshot(k int) Stats {
	st := Stats{
		Hits:    s.hits[k].Load(),
		Misses:  s.misses[k].Load(),
		Bytes:   s.bytes[k].Load(),
		Entries: s.entries[k].Load(),
	}
	for r := range s.evictions[k] {
		st.Evictions += s.evictions[k][r].Load()
	}
	return st
}

var (
	descHits = prometheus.NewDesc("platform_cache_hits_total",
		"Lookups answered from the edge cache.", []string{"kind"}, nil)
	descMisses = prometheus.NewDesc("platform_cache_misses_total",
		"Lookups not answered from the edge cache, revalidations included.", []string{"kind"}, nil)
	descEvictions = prometheus.NewDesc("platform_cache_evictions_total",
		"Entries evicted for room (capacity), by TTL (expired), or refused by admission (rejected).",
		[]string{"kind", "reason"}, nil)
	descBytes = prometheus.NewDesc("platform_cache_stored_bytes",
		"Cost of the entries stored: body, header and key bytes plus a fixed overhead.", []string{"kind"}, nil)
	descEntries = prometheus.NewDesc("platform_cache_entries",
		"Entries stored.", []string{"kind"}, nil)
)

// collector exports the cache's counters. Counting on the hot path is one
// atomic add; the Prometheus metrics are built only when scraped.
type collector struct{ s *stats }

var _ prometheus.Collector = collector{}

// Collector returns a Prometheus collector of the cache's metrics, all with
// a kind label of static or shared:
// platform_cache_hits_total, platform_cache_misses_total,
// platform_cache_evictions_total (with a reason label of capacity, expired
// or rejected), platform_cache_stored_bytes and platform_cache_entries.
func (c *Cache) Collector() prometheus.Collector { return collector{&c.stats} }

// Register registers the cache's metrics on r; nothing is registered
// globally.
func (c *Cache) Register(r prometheus.Registerer) error {
	return r.Register(c.Collector())
}

// Describe implements prometheus.Collector.
func (collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descHits
	ch <- descMisses
	ch <- descEvictions
	ch <- descBytes
	ch <- descEntries
}

// Collect implements prometheus.Collector.
func (m collector) Collect(ch chan<- prometheus.Metric) {
	for k, kn := range kindNames {
		ch <- prometheus.MustNewConstMetric(descHits, prometheus.CounterValue, float64(m.s.hits[k].Load()), kn)
		ch <- prometheus.MustNewConstMetric(descMisses, prometheus.CounterValue, float64(m.s.misses[k].Load()), kn)
		for r, rn := range evictReasonNames {
			ch <- prometheus.MustNewConstMetric(descEvictions, prometheus.CounterValue,
				float64(m.s.evictions[k][r].Load()), kn, rn)
		}
		ch <- prometheus.MustNewConstMetric(descBytes, prometheus.GaugeValue, float64(m.s.bytes[k].Load()), kn)
		ch <- prometheus.MustNewConstMetric(descEntries, prometheus.GaugeValue, float64(m.s.entries[k].Load()), kn)
	}
}
