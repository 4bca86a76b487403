package memory

import (
	"net/http"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

// TestTTL: a key put with a time to live answers its expiry, is readable
// until the instant it expires and invisible from that instant on (get,
// bulk get, list) while it still counts; the sweep job registered with the
// runner then removes it and gives its room back. A put without a time to
// live clears an earlier one.
func TestTTL(t *testing.T) { eachEngine(t, testTTL) }

func testTTL(t *testing.T, e pgtest.Engine) {
	f := newFixture(t, e, Config{})
	if got := f.jobs.every[JobSweep]; got != DefaultSweepEvery {
		t.Fatalf("sweep every %v, want %v", got, DefaultSweepEvery)
	}
	st := f.create("sessions")
	f.must(http.StatusOK, "dev", "PUT", keyPath(st.ID, "session")+"?ttlSeconds=60", "s1")
	f.must(http.StatusOK, "dev", "PUT", keyPath(st.ID, "cleared")+"?ttlSeconds=60", "c1")
	f.must(http.StatusOK, "dev", "PUT", keyPath(st.ID, "cleared"), "c2") // no ttl: never expires now
	f.must(http.StatusOK, "dev", "PUT", keyPath(st.ID, "forever"), "f")
	expires := t0.Add(time.Minute)
	r := f.must(http.StatusOK, "viewer", "GET", keyPath(st.ID, "session"), nil)
	if got := r.Header.Get(HeaderExpiresAt); got != expires.Format(time.RFC3339Nano) {
		t.Fatalf("expires header %q, want %s", got, expires.Format(time.RFC3339Nano))
	}
	for _, c := range []struct {
		name    string
		at      time.Time
		visible bool
	}{
		{"just written", t0, true},
		{"a millisecond before", expires.Add(-time.Millisecond), true},
		{"the instant it expires", expires, false},
		{"later", expires.Add(time.Hour), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f.clk.Set(c.at)
			want := http.StatusNotFound
			if c.visible {
				want = http.StatusOK
			}
			f.must(want, "viewer", "GET", keyPath(st.ID, "session"), nil)
			var got BulkGetAnswer
			f.must(http.StatusOK, "viewer", "POST", "/api/memory/"+st.ID+"/bulk/get", map[string]any{"keys": []string{"session"}}).Decode(t, &got)
			if (got.Values["session"] != nil) != c.visible {
				t.Fatalf("bulk get: %+v", got.Values["session"])
			}
			var page KeyPage
			f.must(http.StatusOK, "viewer", "GET", "/api/memory/"+st.ID+"/keys", nil).Decode(t, &page)
			listed := false
			for _, k := range page.Keys {
				listed = listed || k.Key == "session"
				if k.Key == "session" && (k.ExpiresAt == nil || !k.ExpiresAt.Equal(expires)) {
					t.Fatalf("listed expiry %v", k.ExpiresAt)
				}
			}
			if listed != c.visible || len(page.Keys) != 2+boolInt(c.visible) {
				t.Fatalf("listing %+v", page.Keys)
			}
			f.must(http.StatusOK, "viewer", "GET", keyPath(st.ID, "cleared"), nil)
		})
	}
	// Expired but not yet swept: it still counts.
	if s := f.store(st.ID); s.Keys != 3 {
		t.Fatalf("before the sweep %+v", s)
	}
	f.sweep()
	if s := f.store(st.ID); s.Keys != 2 || s.Bytes != int64(len("cleared")+2+len("forever")+1) {
		t.Fatalf("after the sweep %+v", s)
	}
	if n := f.count("memory_keys"); n != 2 {
		t.Fatalf("%d rows after the sweep", n)
	}
	f.consistent(st.ID)
	// Deleting an expired key that was not swept yet says nothing was there.
	f.must(http.StatusOK, "dev", "PUT", keyPath(st.ID, "short")+"?ttlSeconds=1", "x")
	f.clk.Advance(time.Second)
	var d DeleteAnswer
	f.must(http.StatusOK, "dev", "DELETE", keyPath(st.ID, "short"), nil).Decode(t, &d)
	if d.Deleted {
		t.Fatal("deleting an expired key said it deleted")
	}
	f.consistent(st.ID)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestSweepBatches: the sweep removes many expired keys across stores in
// batches, each store's counts exact, and leaves live keys.
func TestSweepBatches(t *testing.T) { eachEngine(t, testSweepBatches) }

func testSweepBatches(t *testing.T, e pgtest.Engine) {
	f := newFixture(t, e, Config{SweepBatch: 7})
	a, b := f.create("a"), f.create("b")
	for _, st := range []Store{a, b} {
		for i := range 3 {
			var es []map[string]any
			for j := range 10 {
				k := map[string]any{"key": string(rune('a'+i)) + string(rune('a'+j)), "value": "v"}
				if (i*10+j)%3 != 0 {
					k["ttlSeconds"] = 30
				}
				es = append(es, k)
			}
			f.must(http.StatusOK, "dev", "PUT", "/api/memory/"+st.ID+"/bulk", map[string]any{"entries": es})
		}
	}
	f.clk.Advance(time.Minute)
	res, err := f.svc.Sweep(t.Context())
	if err != nil || res.Expired != 40 {
		t.Fatalf("sweep = %+v, %v; want 40 expired", res, err)
	}
	for _, st := range []Store{a, b} {
		if s := f.store(st.ID); s.Keys != 10 {
			t.Fatalf("store %s after the sweep: %+v", st.Name, s)
		}
		f.consistent(st.ID)
	}
	if res, err := f.svc.Sweep(t.Context()); err != nil || res.Expired != 0 {
		t.Fatalf("second sweep = %+v, %v", res, err)
	}
}

// TestPlanLimits: a put that would take a store past the plan's keys or
// bytes is refused whole with 402 plan_limit naming the cap and the plan
// that holds more; overwriting within the cap and deleting still work,
// and expired keys give their room back at once, before any sweep.
func TestPlanLimits(t *testing.T) { eachEngine(t, testPlanLimits) }

func testPlanLimits(t *testing.T, e pgtest.Engine) {
	f := newFixture(t, e, Config{Limits: map[plans.Name]Limits{plans.Hobby: {StoresPerProject: 3, KeysPerStore: 4, BytesPerStore: 100}}})
	st := f.create("kv")
	for _, k := range []string{"a", "b", "c"} {
		f.must(http.StatusOK, "dev", "PUT", keyPath(st.ID, k), "v")
	}
	// A bulk put of two new keys would make 5: nothing is written.
	r := f.must(http.StatusPaymentRequired, "dev", "PUT", "/api/memory/"+st.ID+"/bulk", map[string]any{"entries": []map[string]any{
		{"key": "d", "value": "v"}, {"key": "e", "value": "v"}}})
	if r.Code() != "plan_limit" || r.Field("limitName") != "keys_per_store" || r.Field("limit") != float64(4) ||
		r.Field("current") != float64(3) || r.Field("required_plan") != "pro" {
		t.Fatalf("keys cap: %s", r.Body)
	}
	f.must(http.StatusNotFound, "viewer", "GET", keyPath(st.ID, "d"), nil)
	f.must(http.StatusOK, "dev", "PUT", keyPath(st.ID, "d")+"?ttlSeconds=10", "v")
	f.must(http.StatusPaymentRequired, "dev", "PUT", keyPath(st.ID, "e"), "v")
	f.must(http.StatusOK, "dev", "PUT", keyPath(st.ID, "a"), "overwritten within the cap")
	// d expires: its room is free at once.
	f.clk.Advance(10 * time.Second)
	f.must(http.StatusOK, "dev", "PUT", keyPath(st.ID, "e"), "v")
	if s := f.store(st.ID); s.Keys != 4 {
		t.Fatalf("after the expired key gave its room: %+v", s)
	}
	f.consistent(st.ID)
	// Bytes: 100 per store; a value that would pass it is refused.
	used := f.store(st.ID).Bytes
	room := 100 - (used - int64(len("a")+len("overwritten within the cap"))) - int64(len("a")) // the most a's value may be
	r = f.must(http.StatusPaymentRequired, "dev", "PUT", keyPath(st.ID, "a"), make([]byte, room+1))
	if r.Field("limitName") != "bytes_per_store" || r.Field("current") != float64(used) {
		t.Fatalf("bytes cap: %s", r.Body)
	}
	f.must(http.StatusOK, "dev", "PUT", keyPath(st.ID, "a"), make([]byte, room)) // exactly the cap
	if s := f.store(st.ID); s.Bytes != 100 {
		t.Fatalf("at the cap: %+v", s)
	}
	f.must(http.StatusOK, "dev", "DELETE", keyPath(st.ID, "b"), nil)
	f.consistent(st.ID)
}
