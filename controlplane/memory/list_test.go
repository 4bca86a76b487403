package memory

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

// TestListPaging: 2,500 keys under three prefixes (and keys around the
// prefixes' byte bounds) are listed by prefix page by page, with every
// page size, in byte order, each key exactly once; expired keys are left
// out of pages without breaking the cursor.
func TestListPaging(t *testing.T) { eachEngine(t, testListPaging) }

func testListPaging(t *testing.T, e pgtest.Engine) {
	f := newFixture(t, e, Config{Limits: map[plans.Name]Limits{plans.Hobby: {StoresPerProject: 3, KeysPerStore: plans.Unlimited, BytesPerStore: plans.Unlimited}}})
	st := f.create("kv")
	var all []string
	for i := range 2500 {
		prefix := []string{"user/", "session/", "user:"}[i%3]
		all = append(all, prefix+fmt.Sprintf("%05d", i))
	}
	// Keys near the bounds of "user/": "user0" is the first key after
	// every "user/..." key; "user." is just before; "user/\U0010FFFF" is
	// the largest character under the prefix.
	all = append(all, "user", "user.", "user0", "user/\U0010ffff", "user/é", "usera")
	for start := 0; start < len(all); start += MaxBulkKeys {
		var es []map[string]any
		for _, k := range all[start:min(start+MaxBulkKeys, len(all))] {
			e := map[string]any{"key": k, "value": k}
			if strings.HasSuffix(k, "7") {
				e["ttlSeconds"] = 5 // expired by the time it is listed
			}
			es = append(es, e)
		}
		f.must(http.StatusOK, "dev", "PUT", "/api/memory/"+st.ID+"/bulk", map[string]any{"entries": es})
	}
	f.clk.Advance(5 * time.Second)
	live := func(prefix string) []string {
		var out []string
		for _, k := range all {
			if strings.HasPrefix(k, prefix) && !strings.HasSuffix(k, "7") {
				out = append(out, k)
			}
		}
		slices.Sort(out) // Go compares strings bytewise, as the store does
		return out
	}
	for _, c := range []struct {
		prefix string
		limit  int
	}{
		{"", 1000},
		{"", 0}, // the default, 100
		{"user/", 7},
		{"user/", 1000},
		{"user", 333},
		{"session/", 1},
		{"user:", 250},
		{"user/\U0010ffff", 10},
		{"nothing", 10},
	} {
		t.Run(fmt.Sprintf("prefix %q limit %d", c.prefix, c.limit), func(t *testing.T) {
			want := live(c.prefix)
			var got []string
			cursor, pages := "", 0
			for {
				q := url.Values{}
				if c.prefix != "" {
					q.Set("prefix", c.prefix)
				}
				if c.limit != 0 {
					q.Set("limit", strconv.Itoa(c.limit))
				}
				if cursor != "" {
					q.Set("cursor", cursor)
				}
				var page KeyPage
				f.must(http.StatusOK, "viewer", "GET", "/api/memory/"+st.ID+"/keys?"+q.Encode(), nil).Decode(t, &page)
				pages++
				limit := c.limit
				if limit == 0 {
					limit = DefaultListLimit
				}
				if len(page.Keys) > limit || page.ListComplete == (page.Cursor != "") {
					t.Fatalf("page %d: %d keys, cursor %q, complete %v", pages, len(page.Keys), page.Cursor, page.ListComplete)
				}
				for _, k := range page.Keys {
					if k.Bytes != int64(len(k.Key)) {
						t.Fatalf("%s: bytes %d", k.Key, k.Bytes)
					}
					got = append(got, k.Key)
				}
				if page.ListComplete {
					break
				}
				cursor = page.Cursor
			}
			if !slices.Equal(got, want) {
				t.Fatalf("listed %d keys, want %d; first difference at %d", len(got), len(want), firstDiff(got, want))
			}
			if wantPages := max(1, (len(want)+limitOr(c.limit)-1)/limitOr(c.limit)); pages > wantPages+1 {
				t.Fatalf("%d pages for %d keys", pages, len(want))
			}
		})
	}
}

func limitOr(n int) int {
	if n == 0 {
		return DefaultListLimit
	}
	return n
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
