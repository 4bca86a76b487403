package cdn

import (
	"net/http"

	"github.com/svcplatform/platform/controlplane/api"
)

// Handlers serve /api/services/cdn.
type Handlers struct{ S *Service }

// Get answers GET /api/services/cdn.
func (h Handlers) Get(w http.ResponseWriter, r *http.Request) error {
	st, err := h.S.Get(r.Context(), api.PrincipalFrom(r.Context()).WorkspaceID)
	return api.Reply(w, http.StatusOK, Answer{Settings: st}, err)
}

// Put answers PUT /api/services/cdn.
func (h Handlers) Put(w http.ResponseWriter, r *http.Request) error {
	var p Patch
	if err := api.Decode(r, &p, false); err != nil {
		return err
	}
	out, err := h.S.Update(r.Context(), api.PrincipalFrom(r.Context()), p)
	return api.Reply(w, http.StatusOK, out, err)
}
