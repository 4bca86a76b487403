package databases

import (
	"errors"
	"io"
	"net/http"
	"os"

	"github.com/svcplatform/platform/controlplane/api"
)

// MaxQueryBody bounds the body of a query request: 100 values of 2 MB
// each fit in a single statement's params, base64 included, and no more.
const MaxQueryBody = 16 << 20

// Handlers serve /api/projects/{id}/databases and /api/databases/...
type Handlers struct {
	// S is the service the handlers call.
	S *Service
}

// Create answers POST /api/projects/{id}/databases.
func (h Handlers) Create(w http.ResponseWriter, r *http.Request) error {
	var req CreateRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	d, err := h.S.Create(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), req)
	if err != nil {
		return h.absolute(r, err)
	}
	d.Endpoint = h.origin(r) + d.Endpoint
	api.WriteJSON(w, http.StatusCreated, DatabaseAnswer{Database: d})
	return nil
}

// absolute gives the database an error carries (409 create_failed) the
// absolute endpoint every other answer gives.
func (h Handlers) absolute(r *http.Request, err error) error {
	var e *api.Error
	if !errors.As(err, &e) {
		return err
	}
	d, ok := e.Fields["database"].(Database)
	if !ok {
		return err
	}
	d.Endpoint = h.origin(r) + d.Endpoint
	return e.With("database", d)
}

// Get answers GET /api/databases/{id}.
func (h Handlers) Get(w http.ResponseWriter, r *http.Request) error {
	if done, err := h.route(w, r); done {
		return err
	}
	d, err := h.S.Get(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"))
	if err != nil {
		return err
	}
	d.Endpoint = h.origin(r) + d.Endpoint
	api.WriteJSON(w, http.StatusOK, DatabaseAnswer{Database: d})
	return nil
}

// Query answers POST /api/databases/{id}: {sql, params?} or {batch}.
func (h Handlers) Query(w http.ResponseWriter, r *http.Request) error {
	if done, err := h.route(w, r); done {
		return err
	}
	var req QueryRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	p, id := api.PrincipalFrom(r.Context()), r.PathValue("id")
	switch {
	case req.SQL != nil && req.Batch != nil:
		return api.Invalid("send either sql or batch, not both")
	case req.Batch != nil:
		if req.Params != nil {
			return api.Invalid("params go inside each batch item")
		}
		out, err := h.S.Batch(r.Context(), p, id, req.Batch)
		if err != nil {
			return err
		}
		writeAnswer(w, func(w io.Writer) error { _, err := out.WriteTo(w); return err })
	case req.SQL != nil:
		out, err := h.S.Exec(r.Context(), p, id, *req.SQL, req.Params)
		if err != nil {
			return err
		}
		writeAnswer(w, func(w io.Writer) error { _, err := out.WriteTo(w); return err })
	default:
		return api.Invalid("sql is required (or batch)")
	}
	// A write error means the client went away; there is no one to tell.
	return nil
}

// Retry answers PATCH /api/databases/{id} {action: retry}.
func (h Handlers) Retry(w http.ResponseWriter, r *http.Request) error {
	if done, err := h.route(w, r); done {
		return err
	}
	var req PatchRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	d, err := h.S.Retry(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), req)
	if err != nil {
		return h.absolute(r, err)
	}
	d.Endpoint = h.origin(r) + d.Endpoint
	api.WriteJSON(w, http.StatusOK, DatabaseAnswer{Database: d})
	return nil
}

// Delete answers DELETE /api/databases/{id}.
func (h Handlers) Delete(w http.ResponseWriter, r *http.Request) error {
	if done, err := h.route(w, r); done {
		return err
	}
	id := r.PathValue("id")
	return api.Reply(w, http.StatusOK, api.Deleted{ID: id, Deleted: true}, h.S.Delete(r.Context(), api.PrincipalFrom(r.Context()), id))
}

// Export answers POST /api/databases/{id}/export {bookmark?}.
func (h Handlers) Export(w http.ResponseWriter, r *http.Request) error {
	if done, err := h.route(w, r); done {
		return err
	}
	var req ExportRequest
	if err := api.Decode(r, &req, true); err != nil {
		return err
	}
	a, err := h.S.Export(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), req)
	if err != nil {
		return err
	}
	if a.Download != "" {
		a.Download = h.origin(r) + a.Download
	}
	api.WriteJSON(w, http.StatusOK, a)
	return nil
}

// Download answers GET /api/databases/{id}/export?bookmark= with the .sql
// file.
func (h Handlers) Download(w http.ResponseWriter, r *http.Request) error {
	if done, err := h.route(w, r); done {
		return err
	}
	d, err := h.S.ExportFile(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), r.URL.Query().Get("bookmark"))
	if err != nil {
		return err
	}
	f, err := os.Open(d.Path)
	if err != nil {
		return api.Internal(err)
	}
	defer f.Close()
	w.Header().Set("Content-Type", "application/sql; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="`+d.Filename+`"`)
	w.Header().Set("Cache-Control", "no-store")
	http.ServeContent(w, r, d.Filename, d.ModTime, f)
	return nil
}
