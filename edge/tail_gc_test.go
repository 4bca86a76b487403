package edge

import (
	"runtime"
	"sync"
	"testing"
	"time"
)

func TestGCPercentFor(t *testing.T) {
	for _, tc := range []struct {
		name           string
		live, headroom uint64
		want           int
	}{
		{"empty heap gets the cap", 0, 64 << 20, maxGCPercent},
		{"tiny heap capped", 1 << 20, 64 << 20, maxGCPercent},
		{"small heap: headroom sets the goal", 32 << 20, 64 << 20, 200},
		{"30 MB live", 30 << 20, 64 << 20, 213},
		{"heap as large as the headroom: Go's default", 64 << 20, 64 << 20, 100},
		{"warm cache: never below the default", 1 << 30, 64 << 20, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := gcPercentFor(tc.live, tc.headroom); got != tc.want {
				t.Fatalf("gcPercentFor(%d, %d) = %d, want %d", tc.live, tc.headroom, got, tc.want)
			}
		})
	}
}

// TestGCTunerSetsPercentAfterCollection runs the tuner's finalizer hook
// through real collections and checks the percentage it sets.
func TestGCTunerSetsPercentAfterCollection(t *testing.T) {
	set := make(chan int, 1)
	tu := &gcTuner{headroom: 1 << 40, last: 100, sample: newGCTunerSample(),
		set: func(p int) int { set <- p; return 100 }}
	runtime.SetFinalizer(&sentinel{}, func(*sentinel) { tu.tune() })
	for {
		runtime.GC()
		select {
		case p := <-set:
			if p != maxGCPercent {
				t.Fatalf("GC percent set = %d, want %d (a live heap far below the headroom)", p, maxGCPercent)
			}
			return
		case <-time.After(10 * time.Millisecond): // another collection, until the finalizer has run
		}
	}
}

// TestGCTunerStartsAtOnce: the percentage is set when the tuner starts,
// from the last collection, before any collection of the load.
func TestGCTunerStartsAtOnce(t *testing.T) {
	runtime.GC()      // a live heap measured
	var mu sync.Mutex // the armed hook may run on the finalizer goroutine later
	var got []int
	tu := &gcTuner{headroom: 1 << 40, last: 100, sample: newGCTunerSample(),
		set: func(p int) int { mu.Lock(); got = append(got, p); mu.Unlock(); return 100 }}
	tu.start()
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || got[0] != maxGCPercent {
		t.Fatalf("set on start: %v, want [%d]", got, maxGCPercent)
	}
}

// TestGCTunerKeepsSmallChanges: a percentage within a tenth of the one set
// is not set again (SetGCPercent stops the world).
func TestGCTunerKeepsSmallChanges(t *testing.T) {
	calls := 0
	tu := &gcTuner{headroom: 0, last: 105, sample: newGCTunerSample(), set: func(int) int { calls++; return 0 }}
	tu.tune() // headroom 0: 100, within a tenth of 105
	if calls != 0 {
		t.Fatalf("set called %d times, want 0", calls)
	}
	tu.last = 300
	tu.tune()
	if calls != 1 || tu.last != 100 {
		t.Fatalf("after a large change: %d calls, last %d; want 1 and 100", calls, tu.last)
	}
}

func BenchmarkGCTunerTune(b *testing.B) {
	tu := &gcTuner{headroom: 256 << 20, last: 100, sample: newGCTunerSample(), set: func(int) int { return 0 }}
	b.ReportAllocs()
	for b.Loop() {
		tu.tune()
	}
}
