package vectors

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/vectors/filter"
	"github.com/svcplatform/platform/controlplane/vectors/index"
)

// Limits of queries.
const (
	// DefaultTopK is how many matches a query returns when it does not say.
	DefaultTopK = 5
	// MaxTopK bounds topK.
	MaxTopK = 100
	// MaxTopKFull bounds topK when values or all metadata are returned.
	MaxTopKFull = 50
)

// The returnMetadata choices.
const (
	ReturnNone    = "none"
	ReturnIndexed = "indexed"
	ReturnAll     = "all"
)

// QueryRequest is the body of POST /api/vectors/{id}/query.
type QueryRequest struct {
	Vector         *Numbers        `json:"vector,omitempty"`
	Text           *string         `json:"text,omitempty"`
	TopK           *int            `json:"topK,omitempty"`
	Filter         json.RawMessage `json:"filter,omitempty"`
	Namespace      *string         `json:"namespace,omitempty"`
	ReturnMetadata string          `json:"returnMetadata,omitempty"`
	ReturnValues   bool            `json:"returnValues,omitempty"`
}

// Match is one query result.
type Match struct {
	ID string `json:"id"`
	// Score is the cosine similarity (higher is closer), the euclidean
	// distance (lower is closer) or the negated dot product (lower is
	// closer), as Vectorize returns them.
	Score     float64        `json:"score"`
	Namespace string         `json:"namespace,omitempty"`
	Values    []float32      `json:"values,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// QueryAnswer is the answer of a query, closest first.
type QueryAnswer struct {
	Count   int     `json:"count"`
	Matches []Match `json:"matches"`
}

// compiled is a filter bound to the collection's index columns.
type compiled struct {
	clauses []filter.Clause
	cols    []*column
}

// compileFilter parses a filter and binds it to the indexes: a field
// without an index is a 400 naming it.
func (c *coll) compileFilter(raw json.RawMessage) (*compiled, error) {
	if t := strings.TrimSpace(string(raw)); t == "" || t == "null" {
		return nil, nil
	}
	f, err := filter.Parse(raw)
	if err != nil {
		var fe *filter.Error
		if errors.As(err, &fe) && fe.Field != "" {
			return nil, invalid("invalid_filter", "%s", strings.TrimPrefix(err.Error(), "filter: ")).With("field", fe.Field)
		}
		return nil, invalid("invalid_filter", "%s", strings.TrimPrefix(err.Error(), "filter: "))
	}
	cp := &compiled{clauses: f.Clauses}
	for _, cl := range f.Clauses {
		col := c.column(cl.Field)
		if col == nil {
			return nil, invalid("filter_field_not_indexed",
				"filter field %q is not indexed: create a metadata index for it ({\"action\": \"index-metadata\", \"propertyName\": %q, \"indexType\": \"string\"|\"number\"|\"boolean\"}); it covers vectors written after it exists", cl.Field, cl.Field).
				With("field", cl.Field)
		}
		for _, k := range cl.Operands() {
			if k != col.def.Type {
				return nil, invalid("filter_type_mismatch", "filter field %q is indexed as %s: compare it with a %s (or null)", cl.Field, typeName(col.def.Type), typeName(col.def.Type)).
					With("field", cl.Field)
			}
		}
		cp.cols = append(cp.cols, col)
	}
	return cp, nil
}

// accept tells whether slot meets the filter: a vector written before an
// index existed is not in it and meets no condition on its field.
func (cp *compiled) accept(slot int32) bool {
	for i, col := range cp.cols {
		if !col.covered[slot] || !cp.clauses[i].Match(col.vals[slot]) {
			return false
		}
	}
	return true
}

// Query finds the vectors closest to a vector or a text.
func (s *Service) Query(ctx context.Context, p *auth.Principal, id string, req QueryRequest) (QueryAnswer, error) {
	k := DefaultTopK
	if req.TopK != nil {
		k = *req.TopK
	}
	ret := req.ReturnMetadata
	switch ret {
	case "":
		ret = ReturnNone
	case ReturnNone, ReturnIndexed, ReturnAll:
	default:
		return QueryAnswer{}, invalid("", "returnMetadata must be all, indexed or none, not %q", ret)
	}
	switch {
	case k < 1 || k > MaxTopK:
		return QueryAnswer{}, invalid("invalid_top_k", "topK must be 1 to %d, not %d", MaxTopK, k)
	case k > MaxTopKFull && (req.ReturnValues || ret == ReturnAll):
		return QueryAnswer{}, invalid("invalid_top_k", "topK is at most %d when returning values or all metadata, not %d", MaxTopKFull, k)
	case req.Vector != nil && req.Text != nil:
		return QueryAnswer{}, invalid("", "send vector or text, not both")
	case req.Vector == nil && req.Text == nil:
		return QueryAnswer{}, invalid("", "vector or text is required")
	case req.Namespace != nil && len(*req.Namespace) > MaxNamespaceLen:
		return QueryAnswer{}, invalid("namespace_too_long", "namespace is at most %d bytes", MaxNamespaceLen)
	case req.Text != nil && (*req.Text == "" || len([]rune(*req.Text)) > MaxTextLen):
		return QueryAnswer{}, invalid("", "text must be 1 to %d characters", MaxTextLen)
	}
	c, err := s.load(ctx, p, id, auth.OpVectorRead)
	if err != nil {
		return QueryAnswer{}, err
	}
	var q []float32
	if req.Vector != nil {
		if q, err = parseValues(req.Vector, c.rec.Dims, "vector"); err != nil {
			return QueryAnswer{}, err
		}
	}
	c.mu.RLock()
	cp, err := c.compileFilter(req.Filter)
	c.mu.RUnlock()
	if err != nil {
		return QueryAnswer{}, err
	}
	if req.Text != nil {
		emb, err := s.embed(ctx, c.rec, []string{*req.Text})
		if err != nil {
			return QueryAnswer{}, err
		}
		if q, err = parseFloats(emb[0], "text (embedded)"); err != nil {
			return QueryAnswer{}, err
		}
	}
	pq, ok := c.st.Prepare(q)
	if !ok {
		return QueryAnswer{}, invalid("zero_vector", "the query vector is all zeros: cosine similarity needs a direction")
	}
	matches, live := c.search(pq, k, req.Namespace, cp, ret == ReturnIndexed)
	if req.ReturnValues || ret == ReturnAll {
		if err := c.fill(ctx, matches, req.ReturnValues, ret == ReturnAll); err != nil {
			c.mu.RLock()
			closed := c.closed
			c.mu.RUnlock()
			if closed {
				return QueryAnswer{}, api.E(api.KindGone, "collection_deleted", "vector collection %s was deleted", id)
			}
			return QueryAnswer{}, api.Internal(err)
		}
	}
	now := s.d.Clock.Now()
	s.usage.Add(c.rec.Workspace, c.rec.Project, MetricOperations, 1, now)
	s.usage.Add(c.rec.Workspace, c.rec.Project, MetricQueriedDimensions, float64(live*c.rec.Dims), now)
	return QueryAnswer{Count: len(matches), Matches: matches}, nil
}

// search ranks under the read lock. Unfiltered queries of a collection
// with a graph use it, plus an exact scan of the slots the graph does not
// cover yet; filtered and namespaced ones rank exactly, the filter before
// ranking, so they return the true top k: over the shortest posting list
// (or namespace list) when one is short enough (candidates), otherwise
// testing every slot.
func (c *coll) search(q []float32, k int, ns *string, cp *compiled, indexed bool) ([]Match, int) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	live := c.st.Live()
	var accept index.Accept
	if ns != nil {
		num, ok := c.nsNum[*ns]
		if !ok {
			return []Match{}, live
		}
		accept = func(slot int32) bool { return c.nsOf[slot] == num }
	}
	if cp != nil {
		if accept == nil {
			accept = cp.accept
		} else {
			nsAccept := accept
			accept = func(slot int32) bool { return nsAccept(slot) && cp.accept(slot) }
		}
	}
	var hits []index.Hit
	if accept == nil && c.g != nil && c.g.Covered() > 0 {
		ef := max(index.DefaultEf, 2*k)
		hits = index.Merge(k, c.g.Search(q, k, ef), c.st.ExactFrom(q, k, c.g.Covered(), nil))
	} else if cands, ok := c.candidates(ns, cp); ok {
		hits = c.st.ExactSlots(q, k, cands, accept)
	} else {
		hits = c.st.Exact(q, k, accept)
	}
	out := make([]Match, len(hits))
	for i, h := range hits {
		out[i] = Match{ID: c.ids[h.Slot], Score: c.st.Metric().Score(h.Dist), Namespace: c.nsName[c.nsOf[h.Slot]]}
		if indexed {
			out[i].Metadata = c.indexedMetadata(h.Slot)
		}
	}
	return out, live
}

// indexedMetadata is what the indexes hold for slot, as a nested object.
func (c *coll) indexedMetadata(slot int32) map[string]any {
	var m map[string]any
	for _, col := range c.cols {
		if !col.covered[slot] {
			continue
		}
		v := col.vals[slot]
		var x any
		switch v.Kind {
		case filter.String:
			x = v.S
		case filter.Number:
			x = v.N
		case filter.Bool:
			x = v.B
		default:
			continue
		}
		if m == nil {
			m = map[string]any{}
		}
		cur := m
		for i, part := range col.path {
			if i == len(col.path)-1 {
				cur[part] = x
				break
			}
			next, ok := cur[part].(map[string]any)
			if !ok {
				next = map[string]any{}
				cur[part] = next
			}
			cur = next
		}
	}
	return m
}

// fill reads stored values and full metadata of the matches from the file.
func (c *coll) fill(ctx context.Context, ms []Match, values, meta bool) error {
	ids := make([]string, len(ms))
	for i, m := range ms {
		ids[i] = m.ID
	}
	rows, err := c.f.fetch(ctx, ids)
	if err != nil {
		return err
	}
	for i := range ms {
		r, ok := rows[ms[i].ID]
		if !ok {
			continue // deleted since it was ranked
		}
		if values {
			ms[i].Values = r.Values
		}
		if meta && r.Metadata != "" {
			var m map[string]any
			if json.Unmarshal([]byte(r.Metadata), &m) == nil {
				ms[i].Metadata = m
			}
		}
	}
	return nil
}
