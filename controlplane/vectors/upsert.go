package vectors

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strconv"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
)

// Limits of writes (the specification's, and Vectorize's where it is
// silent).
const (
	// MaxUpsert is how many vectors one upsert may carry.
	MaxUpsert = 1000
	// MaxUpsertText is how many when any of them is sent as text.
	MaxUpsertText = 100
	// MaxMetadataBytes bounds a vector's metadata (compact JSON).
	MaxMetadataBytes = 10 * 1024
	// MaxIDLen bounds a vector id (bytes).
	MaxIDLen = 64
	// MaxNamespaceLen bounds a namespace (bytes).
	MaxNamespaceLen = 64
	// MaxTextLen bounds one text to embed (characters, as the AI gateway).
	MaxTextLen = 200_000
	// MaxDeleteIDs bounds the ids of one delete.
	MaxDeleteIDs = 1000
	// MaxUpsertBody bounds an upsert body: 1,000 vectors of 1,536 values
	// written with full float precision and 10 KB of metadata each fit.
	MaxUpsertBody = 64 << 20
)

// UpsertRequest is the body of POST /api/vectors/{id}/upsert.
type UpsertRequest struct {
	Vectors []VectorInput `json:"vectors"`
}

// VectorInput is one vector to write: values or text.
type VectorInput struct {
	ID        string          `json:"id"`
	Values    *Numbers        `json:"values,omitempty"`
	Text      *string         `json:"text,omitempty"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
	Namespace string          `json:"namespace,omitempty"`
}

// MutationAnswer is the answer of an upsert or a delete: the write is
// durable and visible to queries when it is answered.
type MutationAnswer struct {
	// MutationID numbers the write within the collection.
	MutationID string `json:"mutationId"`
	// Count is how many vectors were written (or deleted).
	Count int `json:"count"`
	// IDs are the ids written (or deleted).
	IDs []string `json:"ids"`
}

// pending is a validated vector: values (nil until embedded for text).
type pending struct {
	row
	text *string
}

// decodeUpsert reads and validates an upsert body against a collection of
// dims dimensions: every refusal is a 400 naming the vector, and nothing
// is written unless every vector passes.
func decodeUpsert(body []byte, dims int) ([]pending, error) {
	var req UpsertRequest
	if err := api.DecodeBytes(body, &req, false); err != nil {
		return nil, err
	}
	n := len(req.Vectors)
	if n == 0 {
		return nil, invalid("", "vectors is empty: send at least one {id, values} or {id, text}")
	}
	if n > MaxUpsert {
		return nil, invalid("too_many_vectors", "an upsert carries at most %d vectors; got %d: split it", MaxUpsert, n)
	}
	out := make([]pending, n)
	seen := make(map[string]int, n)
	texts := 0
	for i, v := range req.Vectors {
		switch {
		case v.ID == "":
			return nil, invalid("", "vectors[%d].id is required", i)
		case len(v.ID) > MaxIDLen:
			return nil, invalid("id_too_long", "vectors[%d].id is %d bytes; at most %d", i, len(v.ID), MaxIDLen)
		case len(v.Namespace) > MaxNamespaceLen:
			return nil, invalid("namespace_too_long", "vectors[%d].namespace is %d bytes; at most %d", i, len(v.Namespace), MaxNamespaceLen)
		case v.Values != nil && v.Text != nil:
			return nil, invalid("", "vectors[%d] has both values and text: send one", i)
		case v.Values == nil && v.Text == nil:
			return nil, invalid("", "vectors[%d] needs values (%d numbers) or text", i, dims)
		}
		if j, dup := seen[v.ID]; dup {
			return nil, invalid("duplicate_id", "vectors[%d] and vectors[%d] both have id %q", j, i, v.ID)
		}
		seen[v.ID] = i
		p := pending{row: row{ID: v.ID, Namespace: v.Namespace}}
		if v.Text != nil {
			texts++
			if *v.Text == "" || len([]rune(*v.Text)) > MaxTextLen {
				return nil, invalid("", "vectors[%d].text must be 1 to %d characters", i, MaxTextLen)
			}
			p.text = v.Text
		} else {
			vals, err := parseValues(v.Values, dims, "vectors["+strconv.Itoa(i)+"]")
			if err != nil {
				return nil, err
			}
			p.Values = vals
		}
		meta, err := compactMetadata(v.Metadata, i)
		if err != nil {
			return nil, err
		}
		p.Metadata = meta
		out[i] = p
	}
	if texts > 0 && n > MaxUpsertText {
		return nil, invalid("too_many_vectors", "an upsert sending text carries at most %d vectors; got %d: split it", MaxUpsertText, n)
	}
	return out, nil
}

// parseValues checks dims finite float32 numbers.
func parseValues(nums *Numbers, dims int, what string) ([]float32, error) {
	if len(nums.vals) != dims {
		return nil, invalid("dimension_mismatch", "%s has %d values; the collection has %d dimensions", what, len(nums.vals), dims)
	}
	if nums.bad >= 0 {
		return nil, invalid("invalid_values", "%s value %d (%s) is not a finite number", what, nums.bad, nums.badText)
	}
	return nums.vals, nil
}

// compactMetadata checks a vector's metadata: absent, null or an object of
// at most MaxMetadataBytes in compact form.
func compactMetadata(raw json.RawMessage, i int) (string, error) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || string(t) == "null" {
		return "", nil
	}
	if t[0] != '{' {
		return "", invalid("", "vectors[%d].metadata must be a JSON object", i)
	}
	var b bytes.Buffer
	if err := json.Compact(&b, t); err != nil {
		return "", invalid("", "vectors[%d].metadata is not valid JSON: %v", i, err)
	}
	if b.Len() > MaxMetadataBytes {
		return "", invalid("metadata_too_large", "vectors[%d].metadata is %d bytes; at most %d (10 KB)", i, b.Len(), MaxMetadataBytes)
	}
	return b.String(), nil
}

// embeddingModel is the model whose vectors have dims values.
func embeddingModel(dims int) (string, error) {
	switch dims {
	case 384:
		return "bge-small", nil
	case 768:
		return "bge-base", nil
	case 1024:
		return "bge-large", nil
	}
	return "", invalid("no_embedding_model", "no embedding model makes %d-dimension vectors (bge-small 384, bge-base 768, bge-large 1024): send values", dims)
}

// embed turns texts into vectors through the Embedder.
func (s *Service) embed(ctx context.Context, rec record, texts []string) ([][]float32, error) {
	if s.d.Embedder == nil {
		return nil, api.E(api.KindUnavailable, "ai_unavailable", "text embedding is not available on this platform: send values")
	}
	model, err := embeddingModel(rec.Dims)
	if err != nil {
		return nil, err
	}
	out, err := s.d.Embedder.Embed(ctx, rec.Workspace, rec.Project, model, texts)
	if err != nil {
		return nil, err
	}
	if len(out) != len(texts) {
		return nil, api.E(api.KindBadGateway, "ai_provider_error", "the embedding model answered %d vectors for %d texts", len(out), len(texts))
	}
	for _, v := range out {
		if len(v) != rec.Dims {
			return nil, api.E(api.KindBadGateway, "ai_provider_error", "the embedding model answered %d dimensions, not %d", len(v), rec.Dims)
		}
	}
	return out, nil
}

// Upsert writes vectors (replacing those with the same ids): durable in
// the collection's file and visible to queries when it returns.
func (s *Service) Upsert(ctx context.Context, p *auth.Principal, id string, body []byte) (MutationAnswer, error) {
	c, err := s.load(ctx, p, id, auth.OpVectorWrite)
	if err != nil {
		return MutationAnswer{}, err
	}
	if err := s.d.Projects.RequireActive(ctx, c.rec.Project); err != nil {
		return MutationAnswer{}, err
	}
	vs, err := decodeUpsert(body, c.rec.Dims)
	if err != nil {
		return MutationAnswer{}, err
	}
	var texts []string
	var at []int
	for i, v := range vs {
		if v.text != nil {
			texts = append(texts, *v.text)
			at = append(at, i)
		}
	}
	if len(texts) > 0 {
		emb, err := s.embed(ctx, c.rec, texts)
		if err != nil {
			return MutationAnswer{}, err
		}
		for j, i := range at {
			if _, err := parseFloats(emb[j], "vectors["+strconv.Itoa(i)+"] (embedded)"); err != nil {
				return MutationAnswer{}, err
			}
			vs[i].Values = emb[j]
		}
	}
	rows := make([]row, len(vs))
	prepared := make([][]float32, len(vs))
	for i, v := range vs {
		pv, ok := c.st.Prepare(v.Values)
		if !ok {
			return MutationAnswer{}, invalid("zero_vector", "vectors[%d] is all zeros: cosine similarity needs a direction", i)
		}
		prepared[i], rows[i] = pv, v.row
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.closed {
		return MutationAnswer{}, api.E(api.KindGone, "collection_deleted", "vector collection %s was deleted", id)
	}
	seq, err := c.f.upsert(ctx, rows)
	if err != nil {
		return MutationAnswer{}, api.Internal(err)
	}
	metas := make([]map[string]any, len(rows))
	if len(c.cols) > 0 {
		for i := range rows {
			metas[i] = decodeMeta(rows[i].Metadata, true)
		}
	}
	c.mu.Lock()
	for i := range rows {
		c.add(rows[i], prepared[i], metas[i])
	}
	c.seq = seq
	c.maybeCompact()
	graph := c.g != nil || c.st.Live() >= s.cfg.GraphThreshold
	c.mu.Unlock()
	if graph {
		s.poke()
	}
	s.usage.Add(c.rec.Workspace, c.rec.Project, MetricOperations, 1, s.d.Clock.Now())
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	return MutationAnswer{MutationID: strconv.FormatInt(seq, 10), Count: len(rows), IDs: ids}, nil
}

// parseFloats checks embedded values are finite.
func parseFloats(v []float32, what string) ([]float32, error) {
	for j, x := range v {
		if math.IsInf(float64(x), 0) || math.IsNaN(float64(x)) {
			return nil, api.E(api.KindBadGateway, "ai_provider_error", "%s value %d is not a finite number", what, j)
		}
	}
	return v, nil
}

// DeleteVectors removes vectors by id.
func (s *Service) DeleteVectors(ctx context.Context, p *auth.Principal, id string, ids []string) (MutationAnswer, error) {
	switch {
	case len(ids) == 0:
		return MutationAnswer{}, invalid("", "ids is empty: name the vectors to delete")
	case len(ids) > MaxDeleteIDs:
		return MutationAnswer{}, invalid("too_many_ids", "a delete names at most %d ids; got %d", MaxDeleteIDs, len(ids))
	}
	for i, x := range ids {
		if x == "" || len(x) > MaxIDLen {
			return MutationAnswer{}, invalid("", "ids[%d] must be 1 to %d bytes", i, MaxIDLen)
		}
	}
	c, err := s.load(ctx, p, id, auth.OpVectorWrite)
	if err != nil {
		return MutationAnswer{}, err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.closed {
		return MutationAnswer{}, api.E(api.KindGone, "collection_deleted", "vector collection %s was deleted", id)
	}
	seq, n, err := c.f.delete(ctx, ids)
	if err != nil {
		return MutationAnswer{}, api.Internal(err)
	}
	c.mu.Lock()
	var gone []string
	for _, x := range ids {
		if _, ok := c.slotOf[x]; ok {
			gone = append(gone, x)
		}
	}
	c.remove(ids)
	c.seq = seq
	c.maybeCompact()
	c.mu.Unlock()
	if gone == nil {
		gone = []string{}
	}
	s.usage.Add(c.rec.Workspace, c.rec.Project, MetricOperations, 1, s.d.Clock.Now())
	return MutationAnswer{MutationID: strconv.FormatInt(seq, 10), Count: n, IDs: gone}, nil
}
