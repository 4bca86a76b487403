package accounts

import (
	"net"
	"net/http"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
)

// Handlers serve /api/workspace, /api/keys, /api/members, /api/session and
// /api/account.
type Handlers struct {
	S *Service
	// ProjectExists checks projectId of a new key.
	ProjectExists ProjectChecker
}

// WhoAmI is the answer of GET /api/workspace.
type WhoAmI struct {
	Workspace Workspace `json:"workspace"`
	You       You       `json:"you"`
}

// You describes the caller.
type You struct {
	MemberID  string    `json:"memberId"`
	Role      auth.Role `json:"role"`
	Via       string    `json:"via"` // key kind, or session
	KeyPrefix string    `json:"keyPrefix,omitempty"`
	ProjectID string    `json:"projectId,omitempty"`
	// EmailVerified tells whether the caller's member has verified their e-mail.
	EmailVerified bool `json:"emailVerified"`
}

// GetWorkspace answers GET /api/workspace.
func (h Handlers) GetWorkspace(w http.ResponseWriter, r *http.Request) error {
	p := api.PrincipalFrom(r.Context())
	ws, err := h.S.Workspace(r.Context(), p.WorkspaceID)
	if err != nil {
		return err
	}
	you := You{MemberID: p.MemberID, Role: p.Role, Via: p.KeyKind(), KeyPrefix: p.KeyPrefix, ProjectID: p.ProjectID}
	if p.MemberID != "" {
		m, err := h.S.Member(r.Context(), p.WorkspaceID, p.MemberID)
		if err != nil {
			return err
		}
		you.EmailVerified = m.EmailVerified
	}
	return api.Reply(w, http.StatusOK, WhoAmI{Workspace: ws, You: you}, nil)
}

// KeyList is the answer of GET /api/keys.
type KeyList struct {
	Keys []Key `json:"keys"`
}

// ListKeys answers GET /api/keys.
func (h Handlers) ListKeys(w http.ResponseWriter, r *http.Request) error {
	keys, err := h.S.ListKeys(r.Context(), api.PrincipalFrom(r.Context()))
	return api.Reply(w, http.StatusOK, KeyList{Keys: keys}, err)
}

// CreateKey answers POST /api/keys.
func (h Handlers) CreateKey(w http.ResponseWriter, r *http.Request) error {
	var req CreateKeyRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	out, err := h.S.CreateKey(r.Context(), api.PrincipalFrom(r.Context()), req, h.ProjectExists)
	return api.Reply(w, http.StatusCreated, out, err)
}

// KeyAnswer wraps one key.
type KeyAnswer struct {
	Key Key `json:"key"`
}

// RevokeKey answers DELETE /api/keys/{id}.
func (h Handlers) RevokeKey(w http.ResponseWriter, r *http.Request) error {
	k, err := h.S.RevokeKey(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"))
	return api.Reply(w, http.StatusOK, KeyAnswer{Key: k}, err)
}

// MemberList is the answer of GET /api/members.
type MemberList struct {
	Members []Member `json:"members"`
}

// ListMembers answers GET /api/members.
func (h Handlers) ListMembers(w http.ResponseWriter, r *http.Request) error {
	ms, err := h.S.Members(r.Context(), api.PrincipalFrom(r.Context()).WorkspaceID)
	return api.Reply(w, http.StatusOK, MemberList{Members: ms}, err)
}

// Invite answers POST /api/members.
func (h Handlers) Invite(w http.ResponseWriter, r *http.Request) error {
	var req InviteRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	inv, err := h.S.Invite(r.Context(), api.PrincipalFrom(r.Context()), req)
	return api.Reply(w, http.StatusCreated, inv, err)
}

// MemberAnswer wraps one member.
type MemberAnswer struct {
	Member Member `json:"member"`
}

// Accept answers POST /api/members/accept (no credentials: the token is one).
func (h Handlers) Accept(w http.ResponseWriter, r *http.Request) error {
	var req AcceptRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	m, err := h.S.Accept(r.Context(), req)
	return api.Reply(w, http.StatusOK, MemberAnswer{Member: m}, err)
}

// UpdateMember answers PATCH /api/members/{id}.
func (h Handlers) UpdateMember(w http.ResponseWriter, r *http.Request) error {
	var req UpdateMemberRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	m, err := h.S.UpdateMember(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), req)
	return api.Reply(w, http.StatusOK, MemberAnswer{Member: m}, err)
}

// RemoveMember answers DELETE /api/members/{id}.
func (h Handlers) RemoveMember(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	return api.Reply(w, http.StatusOK, api.Deleted{ID: id, Deleted: true}, h.S.RemoveMember(r.Context(), api.PrincipalFrom(r.Context()), id))
}

// SignIn answers POST /api/session.
func (h Handlers) SignIn(w http.ResponseWriter, r *http.Request) error {
	var req SignInRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	si, err := h.S.SignIn(r.Context(), req, host)
	if err != nil {
		return err
	}
	http.SetCookie(w, SessionCookie(si))
	api.WriteJSON(w, http.StatusOK, si)
	return nil
}

// SessionInfo is the answer of GET /api/session.
type SessionInfo struct {
	Member       Member `json:"member"`
	WorkspaceID  string `json:"workspaceId"`
	SecondFactor bool   `json:"secondFactor"`
}

// GetSession answers GET /api/session.
func (h Handlers) GetSession(w http.ResponseWriter, r *http.Request) error {
	p := api.PrincipalFrom(r.Context())
	if !p.Session {
		return api.E(api.KindNotFound, "no_session", "this request carries an API key, not a dashboard session")
	}
	m, err := h.S.Member(r.Context(), p.WorkspaceID, p.MemberID)
	return api.Reply(w, http.StatusOK, SessionInfo{Member: m, WorkspaceID: p.WorkspaceID, SecondFactor: p.SecondFactor}, err)
}

// SignOut answers DELETE /api/session.
func (h Handlers) SignOut(w http.ResponseWriter, r *http.Request) error {
	if err := h.S.SignOut(r); err != nil {
		return err
	}
	http.SetCookie(w, ClearSessionCookie())
	api.WriteJSON(w, http.StatusOK, map[string]bool{"signedOut": true})
	return nil
}

// ChangePassword answers PUT /api/account/password.
func (h Handlers) ChangePassword(w http.ResponseWriter, r *http.Request) error {
	var req PasswordRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	return api.Reply(w, http.StatusOK, map[string]bool{"changed": true}, h.S.ChangePassword(r.Context(), api.PrincipalFrom(r.Context()), req))
}

// StartTOTP answers POST /api/account/totp.
func (h Handlers) StartTOTP(w http.ResponseWriter, r *http.Request) error {
	e, err := h.S.StartTOTP(r.Context(), api.PrincipalFrom(r.Context()))
	return api.Reply(w, http.StatusOK, e, err)
}

// TOTPState is the answer of confirming or removing two-factor.
type TOTPState struct {
	TwoFactor bool `json:"twoFactor"`
}

// ConfirmTOTP answers POST /api/account/totp/confirm.
func (h Handlers) ConfirmTOTP(w http.ResponseWriter, r *http.Request) error {
	var req CodeRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	return api.Reply(w, http.StatusOK, TOTPState{TwoFactor: true}, h.S.ConfirmTOTP(r.Context(), api.PrincipalFrom(r.Context()), req.Code))
}

// DisableTOTP answers DELETE /api/account/totp.
func (h Handlers) DisableTOTP(w http.ResponseWriter, r *http.Request) error {
	var req CodeRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	return api.Reply(w, http.StatusOK, TOTPState{TwoFactor: false}, h.S.DisableTOTP(r.Context(), api.PrincipalFrom(r.Context()), req.Code))
}

// RequestEmailVerification answers POST /api/account/email/verification:
// a verification token is mailed to the caller.
func (h Handlers) RequestEmailVerification(w http.ResponseWriter, r *http.Request) error {
	out, err := h.S.RequestEmailVerification(r.Context(), api.PrincipalFrom(r.Context()))
	return api.Reply(w, http.StatusAccepted, out, err)
}

// VerifyEmail answers POST /api/account/email/verify {token} (no
// credentials: the token is one).
func (h Handlers) VerifyEmail(w http.ResponseWriter, r *http.Request) error {
	var req VerifyRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	m, err := h.S.VerifyEmail(r.Context(), req)
	return api.Reply(w, http.StatusOK, MemberAnswer{Member: m}, err)
}
