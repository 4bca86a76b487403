package vectors

import "github.com/svcplatform/platform/controlplane/vectors/filter"

// postings maps each value a metadata index holds to the slots holding it,
// ascending: an equality or $in filter ranks only those slots instead of
// testing every slot. A slot is listed once per index (it holds one value),
// only when the index covers it, and never for a value of another type than
// the index's (filter.Other equals nothing). Replaced and deleted slots stay
// listed until the collection is compacted, as they stay in the store: the
// search skips dead slots, so the lists hold at most every slot the store
// holds, 4 bytes each per index, plus one map entry per distinct value.
type postings map[filter.Value][]int32

// postKey is v as a map key: only the field of its kind set, so values
// equal under the filter's comparison are one key (+0 and -0 are one key
// too, as Go compares map keys with ==).
func postKey(v filter.Value) (filter.Value, bool) {
	switch v.Kind {
	case filter.Null:
		return filter.Value{Kind: filter.Null}, true
	case filter.String:
		return filter.Value{Kind: filter.String, S: v.S}, true
	case filter.Number:
		return filter.Value{Kind: filter.Number, N: v.N}, true
	case filter.Bool:
		return filter.Value{Kind: filter.Bool, B: v.B}, true
	}
	return filter.Value{}, false
}

// add lists slot under v.
func (p postings) add(v filter.Value, slot int32) {
	if k, ok := postKey(v); ok {
		p[k] = append(p[k], slot)
	}
}

// postingsShare is the largest share of the slots (1/postingsShare) a
// filtered query ranks through posting lists: every candidate is then bounded
// and re-ranked on one core, while the scan tests every slot but splits
// the work across the cores; beyond it the scan answers as soon.
const postingsShare = 8

// candidates is the shortest list of slots that every vector the query
// can match is in: a namespace's slots, or the union of the posting
// lists of one equality or $in clause. ok is false when no list narrows the
// search to at most slots/postingsShare (or none applies: ranges, $ne,
// $nin), and the query scans every slot. The lists may hold dead slots and
// slots other clauses refuse: the caller still tests each. The answer may
// alias the lists; it is read under the collection's read lock.
func (c *coll) candidates(ns *string, cp *compiled) ([]int32, bool) {
	limit := c.st.Slots() / postingsShare
	var best [][]int32
	bestN := limit + 1
	if ns != nil {
		if num, ok := c.nsNum[*ns]; ok && len(c.nsSlots[num]) < bestN {
			best, bestN = [][]int32{c.nsSlots[num]}, len(c.nsSlots[num])
		}
	}
	if cp != nil {
		for i, cl := range cp.clauses {
			lists, n, ok := cp.cols[i].post.lists(cl.Conds)
			if ok && n < bestN {
				best, bestN = lists, n
			}
		}
	}
	switch {
	case bestN > limit:
		return nil, false
	case len(best) == 1:
		return best[0], true
	}
	out := make([]int32, 0, bestN)
	for _, l := range best {
		out = append(out, l...)
	}
	return out, true
}

// lists returns the posting lists a clause's matches are all in, and
// their total length, when its condition is $eq or $in; each value once,
// so no slot is listed twice.
func (p postings) lists(conds []filter.Cond) ([][]int32, int, bool) {
	if len(conds) != 1 {
		return nil, 0, false
	}
	var vals []filter.Value
	switch cd := conds[0]; cd.Op {
	case filter.Eq:
		vals = []filter.Value{cd.V}
	case filter.In:
		vals = cd.Set
	default:
		return nil, 0, false
	}
	var out [][]int32
	var keys []filter.Value
	n := 0
next:
	for _, v := range vals {
		k, ok := postKey(v)
		if !ok {
			continue
		}
		for _, seen := range keys {
			if seen == k {
				continue next
			}
		}
		keys = append(keys, k)
		if l := p[k]; len(l) > 0 {
			out = append(out, l)
			n += len(l)
		}
	}
	return out, n, true
}
