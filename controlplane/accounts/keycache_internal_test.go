package accounts

import (
	"crypto/sha256"
	"testing"
	"time"
)

func TestKeyCacheBoundsAndInvalidation(t *testing.T) {
	t0 := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	h := func(i int) [sha256.Size]byte { return sha256.Sum256([]byte{byte(i)}) }
	cred := func(i int) KeyCredential {
		return KeyCredential{ID: "key_" + string(rune('a'+i)), MemberID: "mem_" + string(rune('a'+i%2)), ProjectID: map[bool]string{true: "prj_x"}[i == 3]}
	}
	c := newKeyCache(time.Minute, 4)
	_, _, gen := c.get(h(0), t0)
	if c.put(h(0), cred(0), gen, t0); len(c.entries) != 0 {
		t.Fatal("cached before enabled (nothing invalidates it)")
	}
	c.enable()
	for i := range 4 {
		_, _, gen := c.get(h(i), t0)
		c.put(h(i), cred(i), gen, t0.Add(time.Duration(i)*time.Second))
	}
	_, _, gen = c.get(h(4), t0)
	c.put(h(4), cred(4), gen, t0.Add(4*time.Second)) // full: the older half goes
	if len(c.entries) > 4 {
		t.Fatalf("%d entries, bound 4", len(c.entries))
	}
	if _, ok, _ := c.get(h(0), t0.Add(5*time.Second)); ok {
		t.Fatal("oldest entry kept past the bound")
	}
	if _, ok, _ := c.get(h(4), t0.Add(5*time.Second)); !ok {
		t.Fatal("newest entry evicted")
	}
	for _, tc := range []struct {
		name    string
		payload string
		gone    []int
		kept    []int
	}{
		{"project", "p:prj_x", []int{3}, []int{2, 4}},
		{"key", "k:key_c", []int{2}, []int{4}},
		{"member", "m:mem_a", []int{4}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.invalidate(tc.payload)
			now := t0.Add(6 * time.Second)
			for _, i := range tc.gone {
				if _, ok, _ := c.get(h(i), now); ok {
					t.Fatalf("%d still cached after %s", i, tc.payload)
				}
			}
			for _, i := range tc.kept {
				if _, ok, _ := c.get(h(i), now); !ok {
					t.Fatalf("%d dropped by %s", i, tc.payload)
				}
			}
		})
	}
	// A look-up that started before an invalidation is not cached.
	_, _, gen = c.get(h(7), t0)
	c.invalidate(invAll)
	c.put(h(7), cred(7), gen, t0)
	if _, ok, _ := c.get(h(7), t0); ok {
		t.Fatal("a look-up older than an invalidation was cached")
	}
	c.disable()
	_, _, gen = c.get(h(8), t0)
	c.put(h(8), cred(8), gen, t0)
	if _, ok, _ := c.get(h(8), t0); ok {
		t.Fatal("cached while disabled")
	}
}
