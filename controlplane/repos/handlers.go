package repos

import (
	"mime"
	"mime/multipart"
	"net/http"
	"strconv"

	"github.com/svcplatform/platform/controlplane/api"
)

// Handlers serve /api/repos.
type Handlers struct{ S *Service }

// RepoAnswer wraps one repo.
type RepoAnswer struct {
	Repo Repo `json:"repo"`
}

// RepoList is the answer of GET /api/repos.
type RepoList struct {
	Repos []Repo `json:"repos"`
}

// CommitAnswer is the answer of a push.
type CommitAnswer struct {
	RepoID string `json:"repoId"`
	Commit Commit `json:"commit"`
}

// Create answers POST /api/repos.
func (h Handlers) Create(w http.ResponseWriter, r *http.Request) error {
	var req CreateRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	repo, err := h.S.Create(r.Context(), api.PrincipalFrom(r.Context()), req)
	return api.Reply(w, http.StatusCreated, RepoAnswer{Repo: repo}, err)
}

// List answers GET /api/repos.
func (h Handlers) List(w http.ResponseWriter, r *http.Request) error {
	rs, err := h.S.List(r.Context(), api.PrincipalFrom(r.Context()).WorkspaceID)
	return api.Reply(w, http.StatusOK, RepoList{Repos: rs}, err)
}

// Read answers GET /api/repos/{id}.
func (h Handlers) Read(w http.ResponseWriter, r *http.Request) error {
	d, err := h.S.Read(r.Context(), api.PrincipalFrom(r.Context()).WorkspaceID, r.PathValue("id"))
	return api.Reply(w, http.StatusOK, d, err)
}

// Delete answers DELETE /api/repos/{id}.
func (h Handlers) Delete(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	return api.Reply(w, http.StatusOK, api.Deleted{ID: id, Deleted: true}, h.S.Delete(r.Context(), api.PrincipalFrom(r.Context()), id))
}

// Push answers POST /api/repos/{id}/commits. The Content-Type picks the
// form: a tar archive (IsArchiveType) with the message in ?message= or the
// X-Commit-Message header; multipart/form-data with a manifest part and an
// optional archive part; anything else is the JSON body.
func (h Handlers) Push(w http.ResponseWriter, r *http.Request) error {
	pr, id := api.PrincipalFrom(r.Context()), r.PathValue("id")
	mediaType, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	var c Commit
	var err error
	switch {
	case IsArchiveType(mediaType):
		var msg string
		if msg, err = archiveMessage(r.URL.Query(), r.Header.Get(HeaderMessage)); err != nil {
			return err
		}
		c, err = h.S.PushArchive(r.Context(), pr, id, msg, r.Body)
	case mediaType == "multipart/form-data":
		if params["boundary"] == "" {
			return api.Invalid("multipart/form-data needs a boundary parameter")
		}
		c, err = h.S.PushManifest(r.Context(), pr, id, multipart.NewReader(r.Body, params["boundary"]))
	default:
		var req PushRequest
		if err := api.Decode(r, &req, false); err != nil {
			return err
		}
		c, err = h.S.Push(r.Context(), pr, id, req)
	}
	return api.Reply(w, http.StatusCreated, CommitAnswer{RepoID: id, Commit: c}, err)
}

// Missing answers POST /api/repos/{id}/blobs/missing.
func (h Handlers) Missing(w http.ResponseWriter, r *http.Request) error {
	var req MissingRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	out, err := h.S.Missing(r.Context(), api.PrincipalFrom(r.Context()).WorkspaceID, r.PathValue("id"), req)
	return api.Reply(w, http.StatusOK, out, err)
}

// CommitParam reads the optional commit query parameter (0 when absent).
func CommitParam(r *http.Request) (int, error) {
	s := r.URL.Query().Get("commit")
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, api.Invalid("commit must be a commit number (1, 2, 3 ...)")
	}
	return n, nil
}

// Files answers GET /api/repos/{id}/files: the tree, or with path= one file.
func (h Handlers) Files(w http.ResponseWriter, r *http.Request) error {
	n, err := CommitParam(r)
	if err != nil {
		return err
	}
	ws := api.PrincipalFrom(r.Context()).WorkspaceID
	if q := r.URL.Query(); q.Has("path") {
		f, err := h.S.ReadFile(r.Context(), ws, r.PathValue("id"), n, q.Get("path"))
		if err != nil {
			return err
		}
		api.WriteJSON(w, http.StatusOK, f)
		return nil
	}
	t, err := h.S.Tree(r.Context(), ws, r.PathValue("id"), n)
	return api.Reply(w, http.StatusOK, t, err)
}
