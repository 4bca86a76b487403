package rules

import (
	"cmp"
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Counters counts, per site or function, rule, verdict and UTC day, the
// requests Shield refused or would have refused, for the edge to flush to
// the control plane ("what the rules caught"; the spec allows the counts to
// be close rather than exact). It is safe for concurrent use. Once a key has
// been seen, Add does not allocate: Drain resets counts in place and forgets
// a key only after it has stayed at zero for counterIdleDrains drains.
//
// The zero value is not ready; use NewCounters.
type Counters struct {
	seed   maphash.Seed
	shards [counterShards]counterShard
}

const (
	counterShards = 16
	// counterIdleDrains is how many drains in a row a key must count
	// nothing before it is forgotten.
	counterIdleDrains = 60
)

type counterShard struct {
	mu sync.RWMutex
	m  map[counterKey]*counterCell
	_  [32]byte // keep shards on separate cache lines
}

type counterKey struct {
	id      string
	day     int32 // days since 1970-01-01 UTC
	rule    Rule
	verdict Verdict
}

type counterCell struct {
	n    atomic.Uint64
	idle uint8 // drains in a row with nothing counted; guarded by the shard's write lock
}

// Count is one drained counter.
type Count struct {
	// ID is the site or function id given to Add.
	ID string `json:"id"`
	// Rule is the rule that refused or would have refused.
	Rule Rule `json:"rule"`
	// Verdict is Refuse, or WouldRefuse under logOnly.
	Verdict Verdict `json:"verdict"`
	// Day is the UTC day, "2006-01-02".
	Day string `json:"day"`
	// N is how many requests were counted since the last drain.
	N uint64 `json:"n"`
}

// NewCounters returns an empty counter set.
func NewCounters() *Counters {
	c := &Counters{seed: maphash.MakeSeed()}
	for i := range c.shards {
		c.shards[i].m = make(map[counterKey]*counterCell)
	}
	return c
}

// Add counts one request for id (a site or function id) that rule refused
// (verdict Refuse) or would have refused (WouldRefuse) at now.
func (c *Counters) Add(id string, rule Rule, verdict Verdict, now time.Time) {
	k := counterKey{id: id, day: utcDay(now), rule: rule, verdict: verdict}
	sh := &c.shards[maphash.String(c.seed, id)%counterShards]
	sh.mu.RLock()
	if cell := sh.m[k]; cell != nil {
		cell.n.Add(1) // under the read lock, so Drain cannot forget the cell meanwhile
		sh.mu.RUnlock()
		return
	}
	sh.mu.RUnlock()
	sh.mu.Lock()
	cell := sh.m[k]
	if cell == nil {
		cell = &counterCell{}
		sh.m[k] = cell
	}
	cell.n.Add(1)
	sh.mu.Unlock()
}

// AddDecision counts d for id when d.Count is set (a refusal or would-be
// refusal of a static site or function), and does nothing otherwise.
func (c *Counters) AddDecision(id string, d Decision, now time.Time) {
	if d.Count && d.Verdict != Allow {
		c.Add(id, d.Rule, d.Verdict, now)
	}
}

// Drain returns every non-zero count since the last drain, sorted by ID, day,
// rule and verdict, and resets them to zero. Counts added while Drain runs
// are in this drain or the next, never lost.
func (c *Counters) Drain() []Count {
	var out []Count
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		for k, cell := range sh.m {
			n := cell.n.Swap(0)
			if n == 0 {
				if cell.idle++; cell.idle >= counterIdleDrains {
					delete(sh.m, k)
				}
				continue
			}
			cell.idle = 0
			out = append(out, Count{ID: k.id, Rule: k.rule, Verdict: k.verdict, Day: dayString(k.day), N: n})
		}
		sh.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b Count) int {
		return cmp.Or(cmp.Compare(a.ID, b.ID), cmp.Compare(a.Day, b.Day),
			cmp.Compare(a.Rule, b.Rule), cmp.Compare(a.Verdict, b.Verdict))
	})
	return out
}

func utcDay(t time.Time) int32 {
	s := t.Unix()
	d := s / 86400
	if s < 0 && s%86400 != 0 {
		d--
	}
	return int32(d)
}

func dayString(d int32) string {
	return time.Unix(int64(d)*86400, 0).UTC().Format(time.DateOnly)
}
