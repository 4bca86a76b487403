package security

import (
	"net/http"

	"github.com/svcplatform/platform/controlplane/api"
)

// Handlers serve GET /api/security/overview.
type Handlers struct{ S *Service }

// Overview answers GET /api/security/overview.
func (h Handlers) Overview(w http.ResponseWriter, r *http.Request) error {
	o, err := h.S.Overview(r.Context(), api.PrincipalFrom(r.Context()).WorkspaceID)
	return api.Reply(w, http.StatusOK, o, err)
}
