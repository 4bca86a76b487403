package memory

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
	"github.com/svcplatform/platform/controlplane/usage"
)

// TestAttention: a store at 80% of the plan's keys or bytes is a warning,
// at the cap a critical item; each cap of each store is its own item, and
// another workspace's stores never show.
func TestAttention(t *testing.T) { eachEngine(t, testAttention) }

func testAttention(t *testing.T, e pgtest.Engine) {
	f := newFixture(t, e, Config{Limits: map[plans.Name]Limits{plans.Hobby: {StoresPerProject: 3, KeysPerStore: 5, BytesPerStore: 100}}})
	ctx := context.Background()
	a, b := f.create("a"), f.create("b")
	f.create("empty")
	put := func(store, key, value string) {
		f.must(http.StatusOK, "dev", "PUT", "/api/memory/"+store+"/keys/"+key, value)
	}
	items := func() []usage.Item {
		t.Helper()
		out, err := f.svc.Attention(ctx, "ws_a")
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if got := items(); len(got) != 0 {
		t.Fatalf("empty stores: %+v", got)
	}
	// a: 4 of 5 keys (80%), few bytes: one warning on keys.
	for _, k := range []string{"k1", "k2", "k3", "k4"} {
		put(a.ID, k, "v")
	}
	// b: one key of 90 bytes with its name (at least 80 of 100 bytes).
	put(b.ID, "big", strings.Repeat("x", 85))

	cases := []struct {
		name     string
		store    Store
		severity usage.Severity
		word     string
	}{
		{"a near its keys", a, usage.Warning, "keys"},
		{"b near its bytes", b, usage.Warning, "bytes"},
	}
	check := func(got []usage.Item) {
		t.Helper()
		if len(got) != len(cases) {
			t.Fatalf("items %+v, want %d", got, len(cases))
		}
		for i, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				it := got[i]
				if it.Kind != usage.KindPlanLimit || it.Severity != c.severity || it.ProjectID != "prj_a" ||
					!strings.Contains(it.Reason, "memory store "+c.store.Name) || !strings.Contains(it.Reason, c.word) ||
					it.Link.API != "/api/memory/"+c.store.ID {
					t.Errorf("item %+v", it)
				}
			})
		}
	}
	check(items())
	// a at its key cap: critical, and says writes are refused.
	put(a.ID, "k5", "v")
	cases[0] = struct {
		name     string
		store    Store
		severity usage.Severity
		word     string
	}{"a at its keys", a, usage.Critical, "refused"}
	check(items())
	if got, _ := f.svc.Attention(ctx, "ws_b"); len(got) != 0 {
		t.Errorf("another workspace sees %+v", got)
	}
	// Deleting keys clears the item.
	f.must(http.StatusOK, "dev", "DELETE", "/api/memory/"+b.ID+"/keys/big", nil)
	if got := items(); len(got) != 1 || got[0].Link.API != "/api/memory/"+a.ID {
		t.Errorf("after delete: %+v", got)
	}
}
