package deploys

import (
	"net/http"

	"github.com/svcplatform/platform/controlplane/api"
)

// Handlers serve deploys and deployment reads.
type Handlers struct{ S *Service }

// DeploymentAnswer wraps one deployment.
type DeploymentAnswer struct {
	Deployment Deployment `json:"deployment"`
}

// Deploy answers POST /api/repos/{id}/deploy: 202 with the deployment in
// state deploying; follow it at GET /api/deployments/{id}.
func (h Handlers) Deploy(w http.ResponseWriter, r *http.Request) error {
	var req DeployRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	d, err := h.S.Deploy(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), req)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/api/deployments/"+d.ID)
	api.WriteJSON(w, http.StatusAccepted, DeploymentAnswer{Deployment: d})
	return nil
}

// Redeploy answers POST /api/projects/{id}/deploy: does what the project's
// deployAction says.
func (h Handlers) Redeploy(w http.ResponseWriter, r *http.Request) error {
	d, err := h.S.Redeploy(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"))
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/api/deployments/"+d.ID)
	api.WriteJSON(w, http.StatusAccepted, DeploymentAnswer{Deployment: d})
	return nil
}

// List answers GET /api/projects/{id}/deployments.
func (h Handlers) List(w http.ResponseWriter, r *http.Request) error {
	out, err := h.S.List(r.Context(), api.PrincipalFrom(r.Context()).WorkspaceID, r.PathValue("id"))
	return api.Reply(w, http.StatusOK, out, err)
}

// Get answers GET /api/deployments/{id}: the deployment, its log and files.
func (h Handlers) Get(w http.ResponseWriter, r *http.Request) error {
	out, err := h.S.Get(r.Context(), api.PrincipalFrom(r.Context()).WorkspaceID, r.PathValue("id"))
	return api.Reply(w, http.StatusOK, out, err)
}
