package media

import (
	"net/http"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
)

// Handlers serve the media endpoints.
type Handlers struct{ S *Service }

// AssetAnswer wraps one asset.
type AssetAnswer struct {
	Asset Asset `json:"asset"`
}

// AssetList is the answer of GET /api/projects/{id}/media.
type AssetList struct {
	Assets []Asset `json:"assets"`
}

// UploadAnswer is the answer of POST /api/media/{id}/upload.
type UploadAnswer struct {
	Asset     Asset     `json:"asset"`
	UploadURL string    `json:"uploadUrl"`
	ExpiresAt time.Time `json:"uploadUrlExpiresAt"`
}

// ReceivedAnswer is the answer of a completed upload.
type ReceivedAnswer struct {
	// ID is the video's asset id.
	ID       string `json:"id"`
	Status   string `json:"status"`
	Received bool   `json:"received"`
}

// Create answers POST /api/projects/{id}/media.
func (h Handlers) Create(w http.ResponseWriter, r *http.Request) error {
	var req CreateRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	c, err := h.S.Create(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), req)
	return api.Reply(w, http.StatusCreated, c, err)
}

// List answers GET /api/projects/{id}/media.
func (h Handlers) List(w http.ResponseWriter, r *http.Request) error {
	as, err := h.S.List(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"))
	return api.Reply(w, http.StatusOK, AssetList{Assets: as}, err)
}

// Get answers GET /api/media/{id}.
func (h Handlers) Get(w http.ResponseWriter, r *http.Request) error {
	a, err := h.S.Get(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"))
	return api.Reply(w, http.StatusOK, AssetAnswer{Asset: a}, err)
}

// NewUpload answers POST /api/media/{id}/upload.
func (h Handlers) NewUpload(w http.ResponseWriter, r *http.Request) error {
	a, u, err := h.S.NewUploadURL(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"))
	return api.Reply(w, http.StatusOK, UploadAnswer{Asset: a, UploadURL: u.URL, ExpiresAt: u.ExpiresAt}, err)
}

// Action answers PATCH /api/media/{id}.
func (h Handlers) Action(w http.ResponseWriter, r *http.Request) error {
	var req ActionRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	a, err := h.S.Action(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), req)
	return api.Reply(w, http.StatusOK, AssetAnswer{Asset: a}, err)
}

// Upload answers POST /media/uploads/{token}: the one-time upload URL.
func (h Handlers) Upload(w http.ResponseWriter, r *http.Request) error {
	id, err := h.S.Receive(r.Context(), r.PathValue("token"), r)
	if err != nil {
		return err
	}
	api.WriteJSON(w, http.StatusCreated, ReceivedAnswer{ID: id, Received: true, Status: StatusProcessing})
	return nil
}

// Play answers GET /media/{id}/{file...}: HLS playlists, segments and posters.
func (h Handlers) Play(w http.ResponseWriter, r *http.Request) error {
	return h.S.servePlayback(w, r, r.PathValue("id"), r.PathValue("file"))
}

// Hook answers POST /media/live/hooks/{secret}/{event}: the RTMP server's callbacks.
func (h Handlers) Hook(w http.ResponseWriter, r *http.Request) error {
	return h.S.Hook(w, r, r.PathValue("secret"), r.PathValue("event"))
}
