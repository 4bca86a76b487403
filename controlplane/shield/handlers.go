package shield

import (
	"errors"
	"io"
	"net/http"

	"github.com/svcplatform/platform/controlplane/api"
)

// Handlers serve /api/services/shield.
type Handlers struct{ S *Service }

// MaxBody bounds a PUT body: address lists may hold 50,000 entries.
const MaxBody = 4 << 20

// PutDoc documents the PUT body for the OpenAPI document: any of the
// settings, or passwords on its own.
type PutDoc struct {
	Enabled          *bool              `json:"enabled,omitempty"`
	BlockedCountries []string           `json:"blockedCountries,omitempty"`
	DenyIPs          []string           `json:"denyIps,omitempty"`
	AllowIPs         []string           `json:"allowIps,omitempty"`
	BlockAICrawlers  *bool              `json:"blockAiCrawlers,omitempty"`
	LogOnly          *bool              `json:"logOnly,omitempty"`
	Passwords        map[string]*string `json:"passwords,omitempty"`
}

// Get answers GET /api/services/shield.
func (h Handlers) Get(w http.ResponseWriter, r *http.Request) error {
	out, err := h.S.Get(r.Context(), api.PrincipalFrom(r.Context()).WorkspaceID)
	return api.Reply(w, http.StatusOK, out, err)
}

// Put answers PUT /api/services/shield: settings merged over the saved ones,
// or {passwords: {...}} on its own.
func (h Handlers) Put(w http.ResponseWriter, r *http.Request) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return api.E(api.KindTooLarge, "body_too_large", "request body is larger than %d bytes", mbe.Limit)
		}
		return api.Invalid("reading request body: %v", err)
	}
	pr := api.PrincipalFrom(r.Context())
	pw, err := IsPasswordsBody(body)
	if err != nil {
		return err
	}
	if pw {
		var req PasswordsRequest
		if err := api.DecodeBytes(body, &req, false); err != nil {
			return err
		}
		out, err := h.S.SetPasswords(r.Context(), pr, req)
		if err != nil {
			return err
		}
		api.WriteJSON(w, http.StatusOK, out)
		return nil
	}
	out, err := h.S.Update(r.Context(), pr, body)
	return api.Reply(w, http.StatusOK, out, err)
}

// Apply answers POST /api/services/shield (Apply now).
func (h Handlers) Apply(w http.ResponseWriter, r *http.Request) error {
	out, err := h.S.ApplyNow(r.Context(), api.PrincipalFrom(r.Context()))
	return api.Reply(w, http.StatusOK, out, err)
}

// Blocks answers GET /api/services/shield/blocks?days=7|30.
func (h Handlers) Blocks(w http.ResponseWriter, r *http.Request) error {
	days, err := ParseDays(r.URL.Query().Get("days"))
	if err != nil {
		return err
	}
	out, err := h.S.Blocks(r.Context(), api.PrincipalFrom(r.Context()).WorkspaceID, days)
	return api.Reply(w, http.StatusOK, out, err)
}
