package vectors

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/svcplatform/platform/controlplane/plans"
)

// TestPostingsMatchBruteForce: filtered queries, whether they rank a
// posting list (or a namespace's list) or scan every slot, return exactly
// the float32 brute force over the vectors a plain Go predicate accepts,
// in order: for equality, $in (repeated values too), equality combined with
// other conditions, namespaces, values of another type than the index; after
// upserts that change metadata, deletes, a restart (the lists are rebuilt
// from the file) and a compaction. Each case also says which path it
// takes.
func TestPostingsMatchBruteForce(t *testing.T) {
	e := newEnv(t, plans.Pro)
	const dims, n = 384, 3000
	id := e.create(map[string]any{"name": "c", "dimensions": dims, "metadataIndexes": []map[string]any{
		{"propertyName": "cat", "indexType": "string"}, {"propertyName": "n", "indexType": "number"},
		{"propertyName": "flag", "indexType": "boolean"}, {"propertyName": "tag", "indexType": "string"}}})

	type doc struct {
		seed uint64
		ns   string
		meta map[string]any
	}
	model := map[string]doc{}
	metaOf := func(i, shift int) map[string]any {
		m := map[string]any{"cat": fmt.Sprint("c", (i+shift)%50), "n": float64((i + shift) % 10), "flag": i%2 == 0}
		if i%10 == 0 {
			m["tag"] = "t" // the other 90 % have no tag: null
		}
		if i%97 == 0 {
			m["cat"] = float64(5) // another type than the index's: matches no value
		}
		return m
	}
	nsOf := func(i int) string {
		if i%20 == 0 {
			return "ns3"
		}
		return fmt.Sprint("ns", i%3)
	}
	upsert := func(lo, hi, shift int, seed uint64) {
		t.Helper()
		for b := lo; b < hi; b += MaxUpsert {
			var vs []map[string]any
			for i := b; i < min(b+MaxUpsert, hi); i++ {
				d := doc{seed: seed + uint64(i), ns: nsOf(i), meta: metaOf(i, shift)}
				model[fmt.Sprint("v", i)] = d
				vs = append(vs, map[string]any{"id": fmt.Sprint("v", i), "values": vec(dims, d.seed), "namespace": d.ns, "metadata": d.meta})
			}
			body, _ := json.Marshal(map[string]any{"vectors": vs})
			if _, err := e.svc.Upsert(t.Context(), e.Owner, id, body); err != nil {
				t.Fatal(err)
			}
		}
	}
	del := func(lo, hi int) {
		t.Helper()
		for b := lo; b < hi; b += MaxDeleteIDs {
			var xs []string
			for i := b; i < min(b+MaxDeleteIDs, hi); i++ {
				xs = append(xs, fmt.Sprint("v", i))
				delete(model, fmt.Sprint("v", i))
			}
			if _, err := e.svc.DeleteVectors(t.Context(), e.Owner, id, xs); err != nil {
				t.Fatal(err)
			}
		}
	}
	str := func(m map[string]any, k string) any { return m[k] }
	tests := []struct {
		name     string
		filter   map[string]any
		ns       string
		postings bool
		want     func(m map[string]any, ns string) bool
	}{
		{"eq string", map[string]any{"cat": "c7"}, "", true,
			func(m map[string]any, _ string) bool { return str(m, "cat") == "c7" }},
		{"eq number", map[string]any{"n": 4}, "", true,
			func(m map[string]any, _ string) bool { return str(m, "n") == 4.0 }},
		{"eq zero", map[string]any{"n": 0}, "", true,
			func(m map[string]any, _ string) bool { return str(m, "n") == 0.0 }},
		{"in with a repeat", map[string]any{"cat": map[string]any{"$in": []any{"c1", "c2", "c2", "c49"}}}, "", true,
			func(m map[string]any, _ string) bool { c := str(m, "cat"); return c == "c1" || c == "c2" || c == "c49" }},
		{"in too wide scans", map[string]any{"n": map[string]any{"$in": []any{1, 2, 3}}}, "", false,
			func(m map[string]any, _ string) bool { x := str(m, "n"); return x == 1.0 || x == 2.0 || x == 3.0 }},
		{"eq with eq", map[string]any{"cat": "c3", "flag": true}, "", true,
			func(m map[string]any, _ string) bool { return str(m, "cat") == "c3" && str(m, "flag") == true }},
		{"eq with range", map[string]any{"cat": "c5", "n": map[string]any{"$gte": 3, "$lt": 8}}, "", true,
			func(m map[string]any, _ string) bool {
				x, _ := str(m, "n").(float64)
				return str(m, "cat") == "c5" && x >= 3 && x < 8
			}},
		{"eq with ne", map[string]any{"n": 6, "cat": map[string]any{"$ne": "c6"}}, "", true,
			func(m map[string]any, _ string) bool { return str(m, "n") == 6.0 && str(m, "cat") != "c6" }},
		{"wide eq scans", map[string]any{"flag": false}, "", false,
			func(m map[string]any, _ string) bool { return str(m, "flag") == false }},
		{"eq null scans", map[string]any{"tag": nil}, "", false,
			func(m map[string]any, _ string) bool { return str(m, "tag") == nil }},
		{"narrow eq null", map[string]any{"tag": nil, "cat": "c11"}, "", true,
			func(m map[string]any, _ string) bool { return str(m, "tag") == nil && str(m, "cat") == "c11" }},
		{"ne scans", map[string]any{"cat": map[string]any{"$ne": "c1"}}, "", false,
			func(m map[string]any, _ string) bool { return str(m, "cat") != "c1" }},
		{"another type matches nothing", map[string]any{"cat": "5"}, "", true,
			func(m map[string]any, _ string) bool { return false }},
		{"absent value", map[string]any{"cat": "western"}, "", true,
			func(m map[string]any, _ string) bool { return false }},
		{"small namespace", nil, "ns3", true,
			func(_ map[string]any, ns string) bool { return ns == "ns3" }},
		{"wide namespace with eq", map[string]any{"cat": "c8"}, "ns1", true,
			func(m map[string]any, ns string) bool { return ns == "ns1" && str(m, "cat") == "c8" }},
		{"wide namespace scans", nil, "ns0", false,
			func(_ map[string]any, ns string) bool { return ns == "ns0" }},
	}
	check := func(phase string) {
		t.Helper()
		e.count(id) // loads the collection
		c, err := e.svc.open(t.Context(), record{ID: id})
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range tests {
			for _, k := range []int{3, 100} {
				t.Run(fmt.Sprintf("%s/%s/k%d", phase, tc.name, k), func(t *testing.T) {
					q := vec(dims, 424242+uint64(k))
					body := map[string]any{"vector": q, "topK": k}
					var raw json.RawMessage
					if tc.filter != nil {
						body["filter"] = tc.filter
						raw, _ = json.Marshal(tc.filter)
					}
					var ns *string
					if tc.ns != "" {
						body["namespace"] = tc.ns
						ns = &tc.ns
					}
					got := ids(e.query(id, body))

					c.mu.RLock()
					cp, err := c.compileFilter(raw)
					if err != nil {
						c.mu.RUnlock()
						t.Fatal(err)
					}
					_, postings := c.candidates(ns, cp)
					pq, _ := c.st.Prepare(q)
					hits := c.st.ExactFloat(pq, k, func(slot int32) bool {
						d, ok := model[c.ids[slot]]
						return ok && tc.want(d.meta, d.ns)
					})
					want := []string{}
					for _, h := range hits {
						want = append(want, c.ids[h.Slot])
					}
					c.mu.RUnlock()
					if postings != tc.postings {
						t.Errorf("posting lists used: %v, want %v", postings, tc.postings)
					}
					if fmt.Sprint(got) != fmt.Sprint(want) {
						t.Fatalf("got %v\nwant %v", got, want)
					}
				})
			}
		}
	}
	upsert(0, n, 0, 0)
	check("fresh")
	upsert(0, 500, 7, 100000) // new values and metadata for 500 ids
	del(2500, 2800)
	check("changed")
	e.restart(true)
	check("reloaded")
	del(0, 2000) // dead slots now outnumber live ones: compacted
	c, err := e.svc.open(t.Context(), record{ID: id})
	if err != nil {
		t.Fatal(err)
	}
	c.mu.RLock()
	slots, live := c.st.Slots(), c.st.Live()
	c.mu.RUnlock()
	if slots != live {
		t.Fatalf("not compacted: %d slots, %d live", slots, live)
	}
	check("compacted")
}
