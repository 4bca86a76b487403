package projects

import (
	"net/http"

	"github.com/svcplatform/platform/controlplane/api"
)

// Handlers serve /api/projects and /api/projects/{id}/env.
type Handlers struct{ S *Service }

// ProjectAnswer wraps one project.
type ProjectAnswer struct {
	Project Project `json:"project"`
}

// ProjectList is the answer of GET /api/projects.
type ProjectList struct {
	Projects []Project `json:"projects"`
}

// Create answers POST /api/projects.
func (h Handlers) Create(w http.ResponseWriter, r *http.Request) error {
	var req CreateRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	p, err := h.S.Create(r.Context(), api.PrincipalFrom(r.Context()), req)
	return api.Reply(w, http.StatusCreated, ProjectAnswer{Project: p}, err)
}

// List answers GET /api/projects.
func (h Handlers) List(w http.ResponseWriter, r *http.Request) error {
	ps, err := h.S.List(r.Context(), api.PrincipalFrom(r.Context()))
	return api.Reply(w, http.StatusOK, ProjectList{Projects: ps}, err)
}

// Read answers GET /api/projects/{id}.
func (h Handlers) Read(w http.ResponseWriter, r *http.Request) error {
	d, err := h.S.Read(r.Context(), api.PrincipalFrom(r.Context()).WorkspaceID, r.PathValue("id"))
	return api.Reply(w, http.StatusOK, d, err)
}

// Update answers PATCH /api/projects/{id}.
func (h Handlers) Update(w http.ResponseWriter, r *http.Request) error {
	var req UpdateRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	p, err := h.S.Update(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), req)
	return api.Reply(w, http.StatusOK, ProjectAnswer{Project: p}, err)
}

// Delete answers DELETE /api/projects/{id}.
func (h Handlers) Delete(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	return api.Reply(w, http.StatusOK, api.Deleted{ID: id, Deleted: true}, h.S.Delete(r.Context(), api.PrincipalFrom(r.Context()), id))
}

// SetEnv answers POST /api/projects/{id}/env (201 when created, 200 when replaced).
func (h Handlers) SetEnv(w http.ResponseWriter, r *http.Request) error {
	var req EnvRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	out, err := h.S.SetEnv(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), req)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if out.Created {
		status = http.StatusCreated
	}
	api.WriteJSON(w, status, out)
	return nil
}

// ListEnv answers GET /api/projects/{id}/env.
func (h Handlers) ListEnv(w http.ResponseWriter, r *http.Request) error {
	out, err := h.S.Env(r.Context(), api.PrincipalFrom(r.Context()).WorkspaceID, r.PathValue("id"))
	return api.Reply(w, http.StatusOK, out, err)
}

// PatchEnv answers PATCH /api/projects/{id}/env/{envId}.
func (h Handlers) PatchEnv(w http.ResponseWriter, r *http.Request) error {
	var req EnvPatch
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	out, err := h.S.PatchEnv(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), r.PathValue("envId"), req)
	return api.Reply(w, http.StatusOK, out, err)
}

// DeleteEnv answers DELETE /api/projects/{id}/env/{envId}.
func (h Handlers) DeleteEnv(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("envId")
	return api.Reply(w, http.StatusOK, api.Deleted{ID: id, Deleted: true}, h.S.DeleteEnv(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), id))
}
