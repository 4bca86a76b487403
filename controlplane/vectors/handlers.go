package vectors

import (
	"io"
	"net/http"

	"github.com/svcplatform/platform/controlplane/api"
)

// Handlers serve /api/projects/{id}/vectors and /api/vectors/...
type Handlers struct {
	// S is the service the handlers call.
	S *Service
}

// Create answers POST /api/projects/{id}/vectors.
func (h Handlers) Create(w http.ResponseWriter, r *http.Request) error {
	var req CreateRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	c, err := h.S.Create(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), req)
	return api.Reply(w, http.StatusCreated, CollectionAnswer{Collection: c}, err)
}

// Get answers GET /api/vectors/{id}: the collection and its vector count.
func (h Handlers) Get(w http.ResponseWriter, r *http.Request) error {
	c, err := h.S.Get(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"))
	n := c.VectorCount
	return api.Reply(w, http.StatusOK, CollectionAnswer{Collection: c, VectorCount: &n}, err)
}

// Upsert answers POST /api/vectors/{id}/upsert with 202: the vectors are
// stored and already visible to queries.
func (h Handlers) Upsert(w http.ResponseWriter, r *http.Request) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return api.DecodeReader(errReader{err}, nil, false)
	}
	a, err := h.S.Upsert(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), body)
	return api.Reply(w, http.StatusAccepted, a, err)
}

// errReader hands a body read error to api.DecodeReader, which words it.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// Query answers POST /api/vectors/{id}/query.
func (h Handlers) Query(w http.ResponseWriter, r *http.Request) error {
	var req QueryRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	a, err := h.S.Query(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), req)
	return api.Reply(w, http.StatusOK, a, err)
}

// Action answers POST /api/vectors/{id}: {action: delete, ids} or
// {action: index-metadata, propertyName, indexType}.
func (h Handlers) Action(w http.ResponseWriter, r *http.Request) error {
	var req ActionRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	p, id := api.PrincipalFrom(r.Context()), r.PathValue("id")
	switch req.Action {
	case "delete":
		if req.PropertyName != "" || req.IndexType != "" {
			return invalid("", "delete takes ids only")
		}
		a, err := h.S.DeleteVectors(r.Context(), p, id, req.IDs)
		return api.Reply(w, http.StatusOK, a, err)
	case "index-metadata":
		if req.IDs != nil {
			return invalid("", "index-metadata takes propertyName and indexType only")
		}
		c, err := h.S.IndexMetadata(r.Context(), p, id, MetadataIndex{PropertyName: req.PropertyName, IndexType: req.IndexType})
		return api.Reply(w, http.StatusOK, CollectionAnswer{Collection: c}, err)
	}
	return invalid("", "action must be delete or index-metadata, not %q", req.Action)
}

// Delete answers DELETE /api/vectors/{id}.
func (h Handlers) Delete(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	return api.Reply(w, http.StatusOK, api.Deleted{ID: id, Deleted: true}, h.S.Delete(r.Context(), api.PrincipalFrom(r.Context()), id))
}
