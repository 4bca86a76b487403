package accounts

import (
	"net"
	"net/http"

	"github.com/svcplatform/platform/controlplane/api"
)

// WorkspaceList is the answer of GET /api/workspaces.
type WorkspaceList struct {
	Workspaces []Membership `json:"workspaces"`
}

// ListWorkspaces answers GET /api/workspaces: the caller's workspaces with
// their role in each (a key: its own workspace only).
func (h Handlers) ListWorkspaces(w http.ResponseWriter, r *http.Request) error {
	ms, err := h.S.Workspaces(r.Context(), api.PrincipalFrom(r.Context()))
	return api.Reply(w, http.StatusOK, WorkspaceList{Workspaces: ms}, err)
}

// MembershipAnswer wraps one membership.
type MembershipAnswer struct {
	Membership Membership `json:"membership"`
}

// CreateWorkspace answers POST /api/workspaces.
func (h Handlers) CreateWorkspace(w http.ResponseWriter, r *http.Request) error {
	var req CreateWorkspaceRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	m, err := h.S.CreateWorkspace(r.Context(), api.PrincipalFrom(r.Context()), req)
	return api.Reply(w, http.StatusCreated, MembershipAnswer{Membership: m}, err)
}

// SwitchWorkspace answers POST /api/session/workspace.
func (h Handlers) SwitchWorkspace(w http.ResponseWriter, r *http.Request) error {
	var req SwitchRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	out, err := h.S.SwitchWorkspace(r.Context(), api.PrincipalFrom(r.Context()), req)
	return api.Reply(w, http.StatusOK, out, err)
}

// SignUp answers POST /api/signup (no credentials): 202 whether or not
// the e-mail already had an account.
func (h Handlers) SignUp(w http.ResponseWriter, r *http.Request) error {
	var req SignUpRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	out, err := h.S.SignUp(r.Context(), req, host)
	return api.Reply(w, http.StatusAccepted, out, err)
}

// LeaveWorkspace answers POST /api/workspace/leave: the session moves to
// another workspace of the person, or ends (the cookie is cleared).
func (h Handlers) LeaveWorkspace(w http.ResponseWriter, r *http.Request) error {
	out, err := h.S.LeaveWorkspace(r.Context(), api.PrincipalFrom(r.Context()))
	if err != nil {
		return err
	}
	if out.WorkspaceID == "" {
		http.SetCookie(w, ClearSessionCookie())
	}
	api.WriteJSON(w, http.StatusOK, out)
	return nil
}

// DeleteWorkspace answers DELETE /api/workspace {confirm}.
func (h Handlers) DeleteWorkspace(w http.ResponseWriter, r *http.Request) error {
	var req DeleteRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	out, err := h.S.DeleteWorkspace(r.Context(), api.PrincipalFrom(r.Context()), req)
	if err != nil {
		return err
	}
	if out.WorkspaceID == "" {
		http.SetCookie(w, ClearSessionCookie())
	}
	api.WriteJSON(w, http.StatusOK, out)
	return nil
}
