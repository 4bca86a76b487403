package edge

import (
	"os"
	"runtime"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"sync"
)

// The GC headroom is the least the heap may grow past the live heap before
// the next garbage collection: the heap goal is max(2 x live, live +
// headroom) instead of Go's 2 x live alone. The edge uses the cache's
// memory bound (Config.Cache.MaxBytes, 256 MiB by default): a goal that
// never exceeds what the same edge reaches with its cache full (2 x (cache
// + the rest)), so an edge with a cold cache uses at most the memory a warm
// one would, and a warm one keeps Go's default exactly.
//
// Why (edge/README.md, "Tail"): Go's TLS allocates 32 bytes on every record
// it reads (crypto/tls readFromUntil's atLeastReader escapes), so a busy edge
// makes about 2 MB/s of garbage at 60,000 requests/s however allocation-free
// its own path is. With a small live heap (~30 MB, most of it the country
// and deny-list tables) GOGC=100 then collects every ~15 s, and on one core
// each collection's ~40 ms of marking delays the requests it overlaps by up
// to 4 ms: a runtime/trace of workload 1 put 1.3 % of 2 s of requests inside
// a collection, with a server-side p99 of 3.8 ms against 1.1 ms outside.
// With 256 MiB of headroom that load collects every ~2 minutes.

// maxGCPercent bounds the percentage the tuner sets (a near-empty heap would
// otherwise ask for thousands).
const maxGCPercent = 2000

var gcTunerOnce sync.Once

// startGCTuner applies headroom for the rest of the process, once, unless
// the operator set GOGC or GOMEMLIMIT (their setting stands: GOGC=100 keeps
// Go's default). After every collection it sets the
// GC percentage from the live heap the collection measured. It starts no
// goroutine: a finalizer, re-armed each cycle, runs it on the runtime's
// finalizer goroutine once per collection.
func startGCTuner(headroom int64) {
	if headroom <= 0 {
		return
	}
	gcTunerOnce.Do(func() {
		if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
			return
		}
		t := &gcTuner{headroom: uint64(headroom), last: 100, sample: newGCTunerSample(), set: debug.SetGCPercent}
		t.start()
	})
}

// gcTuner sets the GC percentage after each collection.
type gcTuner struct {
	headroom uint64
	last     int
	sample   []rtmetrics.Sample
	set      func(percent int) (previous int) // debug.SetGCPercent
}

func newGCTunerSample() []rtmetrics.Sample {
	return []rtmetrics.Sample{{Name: "/gc/heap/live:bytes"}}
}

// sentinel is an object whose finalizer runs after the collection that
// found it unreachable; each run arms a new one for the next collection.
type sentinel struct{ _ [16]byte }

// start tunes from the last collection's live heap (New loaded the tables
// then), not only after the next collection, and arms the hook for every
// collection after.
func (t *gcTuner) start() {
	t.tune()
	t.arm()
}

func (t *gcTuner) arm() {
	runtime.SetFinalizer(&sentinel{}, func(*sentinel) {
		t.tune()
		t.arm()
	})
}

// tune reads the live heap of the last collection and sets the percentage
// when it moved by more than a tenth (SetGCPercent stops the world briefly).
func (t *gcTuner) tune() {
	rtmetrics.Read(t.sample)
	if t.sample[0].Value.Kind() != rtmetrics.KindUint64 {
		return
	}
	p := gcPercentFor(t.sample[0].Value.Uint64(), t.headroom)
	if d := p - t.last; d*10 > t.last || -d*10 > t.last {
		t.set(p)
		t.last = p
	}
}

// gcPercentFor is the GC percentage that gives a heap of live bytes at least
// headroom bytes of growth before the next collection: never below Go's
// default 100, never above maxGCPercent.
func gcPercentFor(live, headroom uint64) int {
	if live == 0 {
		return maxGCPercent
	}
	p := headroom * 100 / live
	switch {
	case p < 100:
		return 100
	case p > maxGCPercent:
		return maxGCPercent
	}
	return int(p)
}
