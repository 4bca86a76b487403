package domains

import (
	"net/http"

	"github.com/svcplatform/platform/controlplane/api"
)

// Handlers serve the area's routes.
type Handlers struct{ S *Service }

// Add answers POST /api/projects/{id}/domains (201).
func (h Handlers) Add(w http.ResponseWriter, r *http.Request) error {
	var req AddDomainRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	d, err := h.S.Add(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), req)
	return api.Reply(w, http.StatusCreated, CustomDomainAnswer{Domain: d}, err)
}

// List answers GET /api/projects/{id}/domains.
func (h Handlers) List(w http.ResponseWriter, r *http.Request) error {
	l, err := h.S.List(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"))
	return api.Reply(w, http.StatusOK, l, err)
}

// Get answers GET /api/domains/{id}.
func (h Handlers) Get(w http.ResponseWriter, r *http.Request) error {
	d, err := h.S.Get(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"))
	return api.Reply(w, http.StatusOK, CustomDomainAnswer{Domain: d}, err)
}

// Verify answers POST /api/domains/{id}/verify.
func (h Handlers) Verify(w http.ResponseWriter, r *http.Request) error {
	d, err := h.S.Verify(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"))
	return api.Reply(w, http.StatusOK, CustomDomainAnswer{Domain: d}, err)
}

// Update answers PATCH /api/domains/{id}.
func (h Handlers) Update(w http.ResponseWriter, r *http.Request) error {
	var req UpdateDomainRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	d, err := h.S.Update(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), req)
	return api.Reply(w, http.StatusOK, CustomDomainAnswer{Domain: d}, err)
}

// Delete answers DELETE /api/domains/{id}.
func (h Handlers) Delete(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	err := h.S.Delete(r.Context(), api.PrincipalFrom(r.Context()), id)
	return api.Reply(w, http.StatusOK, api.Deleted{ID: id, Deleted: true}, err)
}
