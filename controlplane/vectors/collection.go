package vectors

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/svcplatform/platform/controlplane/vectors/filter"
	"github.com/svcplatform/platform/controlplane/vectors/index"
)

// column is one metadata index held in memory: each slot's indexed value,
// whether the slot was written after the index existed, and a posting list
// per value (postings.go).
type column struct {
	def     indexDef
	path    []string
	vals    []filter.Value
	covered []bool
	post    postings
}

// coll is a loaded collection. Writers hold wmu for the whole write (file
// then memory) and mu for the memory part; queries hold mu for reading.
type coll struct {
	rec  record
	path string
	f    *file

	wmu sync.Mutex
	mu  sync.RWMutex
	st  *index.Store
	g   *index.HNSW // nil until the collection reaches the graph threshold
	ids []string
	// slotOf maps a live id to its slot.
	slotOf map[string]int32
	// nsOf is each slot's namespace number; 0 is no namespace.
	nsOf   []uint32
	nsNum  map[string]uint32
	nsName []string
	// nsSlots lists each namespace's slots, ascending, by number.
	nsSlots [][]int32
	cols    []*column
	seq     int64
	closed  bool
}

func newColl(rec record, path string, f *file) (*coll, error) {
	m, err := index.ParseMetric(rec.Metric)
	if err != nil {
		return nil, err
	}
	return &coll{rec: rec, path: path, f: f, st: index.NewStore(rec.Dims, m), slotOf: map[string]int32{},
		nsNum: map[string]uint32{"": 0}, nsName: []string{""}, nsSlots: [][]int32{nil}}, nil
}

// load reads the file into memory: the index is rebuilt from the stored
// vectors.
func (c *coll) load(ctx context.Context) error {
	defs, err := c.f.indexes(ctx)
	if err != nil {
		return fmt.Errorf("vectors: load %s: %w", c.rec.ID, err)
	}
	for _, d := range defs {
		c.addColumn(d)
	}
	if c.seq, err = c.f.seq(ctx); err != nil {
		return fmt.Errorf("vectors: load %s: %w", c.rec.ID, err)
	}
	err = c.f.each(ctx, func(r row) error {
		p, ok := c.st.Prepare(r.Values)
		if !ok || len(p) != c.rec.Dims {
			return nil // never written so: skipped rather than failing the collection
		}
		c.add(r, p, decodeMeta(r.Metadata, len(c.cols) > 0))
		return nil
	})
	if err != nil {
		return fmt.Errorf("vectors: load %s: %w", c.rec.ID, err)
	}
	return nil
}

func decodeMeta(s string, need bool) map[string]any {
	if !need || s == "" {
		return nil
	}
	var m map[string]any
	json.Unmarshal([]byte(s), &m)
	return m
}

func (c *coll) addColumn(d indexDef) *column {
	col := &column{def: d, path: splitPath(d.Property), post: postings{}}
	col.vals = make([]filter.Value, c.st.Slots())
	col.covered = make([]bool, c.st.Slots())
	c.cols = append(c.cols, col)
	return col
}

// indexedValue is what an index of type typ holds for a field of meta.
func indexedValue(meta map[string]any, path []string, typ filter.Kind) filter.Value {
	v, ok := filter.Lookup(meta, path)
	if !ok || v == nil {
		return filter.Value{Kind: filter.Null}
	}
	switch x := v.(type) {
	case string:
		if typ == filter.String {
			return filter.Str(x)
		}
	case float64:
		if typ == filter.Number {
			return filter.Value{Kind: filter.Number, N: x}
		}
	case bool:
		if typ == filter.Bool {
			return filter.Value{Kind: filter.Bool, B: x}
		}
	}
	return filter.Value{Kind: filter.Other}
}

// add puts a prepared vector in memory, replacing the id's previous slot.
// The caller holds mu for writing (or owns c exclusively while loading).
func (c *coll) add(r row, prepared []float32, meta map[string]any) {
	if old, ok := c.slotOf[r.ID]; ok {
		c.st.Kill(old)
	}
	slot := c.st.Add(prepared)
	c.ids = append(c.ids, r.ID)
	c.slotOf[r.ID] = slot
	ns, ok := c.nsNum[r.Namespace]
	if !ok {
		ns = uint32(len(c.nsNum))
		c.nsNum[r.Namespace] = ns
		c.nsName = append(c.nsName, r.Namespace)
		c.nsSlots = append(c.nsSlots, nil)
	}
	c.nsOf = append(c.nsOf, ns)
	c.nsSlots[ns] = append(c.nsSlots[ns], slot)
	for _, col := range c.cols {
		covered := r.Seq > col.def.Since
		var v filter.Value
		if covered {
			v = indexedValue(meta, col.path, col.def.Type)
			col.post.add(v, slot)
		}
		col.vals = append(col.vals, v)
		col.covered = append(col.covered, covered)
	}
}

// remove drops live ids from memory; the caller holds mu for writing.
func (c *coll) remove(ids []string) {
	for _, id := range ids {
		if slot, ok := c.slotOf[id]; ok {
			c.st.Kill(slot)
			delete(c.slotOf, id)
		}
	}
}

// count is the number of live vectors.
func (c *coll) count() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.st.Live()
}

// indexDefs returns the metadata indexes.
func (c *coll) indexDefs() []indexDef {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]indexDef, len(c.cols))
	for i, col := range c.cols {
		out[i] = col.def
	}
	return out
}

// column returns the index on property, or nil.
func (c *coll) column(property string) *column {
	for _, col := range c.cols {
		if col.def.Property == property {
			return col
		}
	}
	return nil
}

// compactMin is the dead slot count from which a collection is compacted
// (when dead slots also outnumber live ones).
const compactMin = 1024

// maybeCompact rebuilds the in-memory store without dead slots once they
// outnumber the live ones (replaced and deleted vectors leave dead slots);
// the graph is dropped and the indexer builds it again while queries scan.
// The caller holds mu for writing.
func (c *coll) maybeCompact() bool {
	dead := c.st.Slots() - c.st.Live()
	if dead < compactMin || dead < c.st.Live() {
		return false
	}
	old := c.st
	st := index.NewStore(old.Dims(), old.Metric())
	live := old.Live()
	ids := make([]string, 0, live)
	nsOf := make([]uint32, 0, live)
	cols := make([]*column, len(c.cols))
	for i, col := range c.cols {
		cols[i] = &column{def: col.def, path: col.path, vals: make([]filter.Value, 0, live), covered: make([]bool, 0, live), post: postings{}}
	}
	nsSlots := make([][]int32, len(c.nsSlots))
	slotOf := make(map[string]int32, live)
	for slot := int32(0); int(slot) < old.Slots(); slot++ {
		if !old.Alive(slot) {
			continue
		}
		ns := st.Add(old.Vector(slot))
		ids = append(ids, c.ids[slot])
		slotOf[c.ids[slot]] = ns
		nsOf = append(nsOf, c.nsOf[slot])
		nsSlots[c.nsOf[slot]] = append(nsSlots[c.nsOf[slot]], ns)
		for i, col := range c.cols {
			cols[i].vals = append(cols[i].vals, col.vals[slot])
			cols[i].covered = append(cols[i].covered, col.covered[slot])
			if col.covered[slot] {
				cols[i].post.add(col.vals[slot], ns)
			}
		}
	}
	c.st, c.ids, c.slotOf, c.nsOf, c.nsSlots, c.cols, c.g = st, ids, slotOf, nsOf, nsSlots, cols, nil
	return true
}
