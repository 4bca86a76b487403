package audit

import (
	"errors"
	"net/http"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
)

// FeedLength is how many rows the activity feed shows.
const FeedLength = 20

// Handlers serve the audit log and the activity feed.
type Handlers struct{ Log *Log }

// AuditPage is the answer of the audit-log listing.
type AuditPage struct {
	Entries    []Entry `json:"entries"`
	NextCursor string  `json:"nextCursor,omitempty"`
}

// List answers GET /api/orgs/{id}/audit-logs?action=&before=&limit= (admins).
func (h Handlers) List(w http.ResponseWriter, r *http.Request) error {
	p := api.PrincipalFrom(r.Context())
	if r.PathValue("id") != p.WorkspaceID {
		return api.NotFound("workspace")
	}
	limit, before, err := api.Page(r, 50, 200, "before")
	if err != nil {
		return err
	}
	rows, next, err := h.Log.List(r.Context(), Query{
		Workspace: p.WorkspaceID, Action: r.URL.Query().Get("action"), Before: before, Limit: limit,
	})
	if errors.Is(err, ErrBadCursor) {
		return api.Invalid("before is not a cursor from this listing")
	}
	if err != nil {
		return err
	}
	if rows == nil {
		rows = []Entry{}
	}
	api.WriteJSON(w, http.StatusOK, AuditPage{Entries: rows, NextCursor: next})
	return nil
}

// Feed is the answer of the activity feed.
type Feed struct {
	Activity []Entry `json:"activity"`
}

// Activity answers GET /api/activity: the newest rows, without member, key,
// billing and account rows for members below admin.
func (h Handlers) Activity(w http.ResponseWriter, r *http.Request) error {
	p := api.PrincipalFrom(r.Context())
	rows, _, err := h.Log.List(r.Context(), Query{
		Workspace: p.WorkspaceID, Limit: FeedLength, HidePrivate: p.Role < auth.Admin,
	})
	if err != nil {
		return err
	}
	if rows == nil {
		rows = []Entry{}
	}
	api.WriteJSON(w, http.StatusOK, Feed{Activity: rows})
	return nil
}
