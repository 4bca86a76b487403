package memory

import (
	"bytes"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
)

// Headers of the raw-value routes.
const (
	// HeaderMetadata carries a key's metadata as compact JSON: sent with
	// a put, answered with a get (characters outside printable ASCII as
	// \u escapes).
	HeaderMetadata = "X-Memory-Metadata"
	// HeaderExpiresAt answers when a key expires (RFC 3339, UTC); absent
	// when it does not.
	HeaderExpiresAt = "X-Memory-Expires-At"
)

// Handlers serve the area's routes.
type Handlers struct{ S *Service }

// CreateStore answers POST /api/projects/{id}/memory.
func (h Handlers) CreateStore(w http.ResponseWriter, r *http.Request) error {
	var req CreateRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	st, err := h.S.CreateStore(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), req)
	return api.Reply(w, http.StatusCreated, StoreAnswer{Store: st}, err)
}

// ListStores answers GET /api/projects/{id}/memory.
func (h Handlers) ListStores(w http.ResponseWriter, r *http.Request) error {
	l, err := h.S.Stores(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"))
	return api.Reply(w, http.StatusOK, l, err)
}

// GetStore answers GET /api/memory/{id}.
func (h Handlers) GetStore(w http.ResponseWriter, r *http.Request) error {
	st, err := h.S.GetStore(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"))
	return api.Reply(w, http.StatusOK, StoreAnswer{Store: st}, err)
}

// DeleteStore answers DELETE /api/memory/{id}.
func (h Handlers) DeleteStore(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	err := h.S.DeleteStore(r.Context(), api.PrincipalFrom(r.Context()), id)
	return api.Reply(w, http.StatusOK, api.Deleted{ID: id, Deleted: true}, err)
}

// GetKey answers GET /api/memory/{id}/keys/{key...}: the value's bytes as
// application/octet-stream, its metadata and expiry in headers. The answer
// is never rendered by a browser (nosniff, a sandboxing CSP): the API's
// origin also serves the dashboard.
func (h Handlers) GetKey(w http.ResponseWriter, r *http.Request) error {
	it, err := h.S.Get(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), r.PathValue("key"))
	if err != nil {
		return err
	}
	hd := w.Header()
	hd.Set("Content-Type", "application/octet-stream")
	hd.Set("Content-Length", strconv.Itoa(len(it.Value)))
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	if it.Metadata != "" {
		hd.Set(HeaderMetadata, headerJSON(it.Metadata))
	}
	if !it.ExpiresAt.IsZero() {
		hd.Set(HeaderExpiresAt, it.ExpiresAt.Format(time.RFC3339Nano))
	}
	w.WriteHeader(http.StatusOK)
	w.Write(it.Value)
	return nil
}

// PutKey answers PUT /api/memory/{id}/keys/{key...}: the body is the value,
// as raw bytes; ?ttlSeconds= sets a time to live and the X-Memory-Metadata
// header the metadata.
func (h Handlers) PutKey(w http.ResponseWriter, r *http.Request) error {
	if err := onlyParams(r, "ttlSeconds"); err != nil {
		return err
	}
	ttl, err := parseTTL(r.URL.Query().Get("ttlSeconds"))
	if err != nil {
		return err
	}
	if r.ContentLength > MaxValueBytes {
		return errValueTooLarge(int(r.ContentLength))
	}
	value, err := readValue(r)
	if err != nil {
		return err
	}
	res, err := h.S.Put(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), r.PathValue("key"), value, ttl,
		[]byte(r.Header.Get(HeaderMetadata)))
	return api.Reply(w, http.StatusOK, res, err)
}

// readValue reads a put's body, at most MaxValueBytes (the route's limit).
func readValue(r *http.Request) ([]byte, error) {
	var buf bytes.Buffer
	if r.ContentLength > 0 {
		buf.Grow(int(r.ContentLength))
	}
	if _, err := buf.ReadFrom(r.Body); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, api.E(api.KindTooLarge, "value_too_large",
				"the value is larger than %d bytes (1 MiB), the most a value holds: split it across keys or keep it in a storage bucket", MaxValueBytes).
				With("limit", MaxValueBytes)
		}
		return nil, api.Invalid("reading the value: %v", err)
	}
	return buf.Bytes(), nil
}

// DeleteKey answers DELETE /api/memory/{id}/keys/{key...}.
func (h Handlers) DeleteKey(w http.ResponseWriter, r *http.Request) error {
	key := r.PathValue("key")
	ok, err := h.S.Delete(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), key)
	return api.Reply(w, http.StatusOK, DeleteAnswer{Key: key, Deleted: ok}, err)
}

// ListKeys answers GET /api/memory/{id}/keys?prefix=&cursor=&limit=.
func (h Handlers) ListKeys(w http.ResponseWriter, r *http.Request) error {
	if err := onlyParams(r, "prefix", "cursor", "limit"); err != nil {
		return err
	}
	limit, cursor, err := api.Page(r, DefaultListLimit, MaxListLimit, "cursor")
	if err != nil {
		return err
	}
	page, err := h.S.List(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"),
		ListQuery{Prefix: r.URL.Query().Get("prefix"), Cursor: cursor, Limit: limit})
	return api.Reply(w, http.StatusOK, page, err)
}

// BulkPut answers PUT /api/memory/{id}/bulk.
func (h Handlers) BulkPut(w http.ResponseWriter, r *http.Request) error {
	var req BulkPutRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	a, err := h.S.PutMany(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), req)
	return api.Reply(w, http.StatusOK, a, err)
}

// BulkGet answers POST /api/memory/{id}/bulk/get.
func (h Handlers) BulkGet(w http.ResponseWriter, r *http.Request) error {
	var req KeysRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	a, err := h.S.GetMany(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), req)
	return api.Reply(w, http.StatusOK, a, err)
}

// BulkDelete answers POST /api/memory/{id}/bulk/delete.
func (h Handlers) BulkDelete(w http.ResponseWriter, r *http.Request) error {
	var req KeysRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	a, err := h.S.DeleteMany(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), req)
	return api.Reply(w, http.StatusOK, a, err)
}

// onlyParams refuses query parameters other than names (a misspelt
// ttlSeconds would otherwise write a key that never expires).
func onlyParams(r *http.Request, names ...string) error {
	if r.URL.RawQuery == "" {
		return nil
	}
	for k := range r.URL.Query() {
		known := false
		for _, n := range names {
			known = known || k == n
		}
		if !known {
			return api.E(api.KindInvalid, "unknown_parameter", "unknown query parameter %q: this call takes %v", k, names).With("parameter", k)
		}
	}
	return nil
}
