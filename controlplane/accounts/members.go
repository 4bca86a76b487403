package accounts

import (
	"context"
	"errors"
	"fmt"
	"net/mail"
	"strings"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/internal/passhash"
)

// Member is a person in a workspace.
type Member struct {
	ID            string    `json:"id"`
	Email         string    `json:"email"`
	Name          string    `json:"name"`
	Role          auth.Role `json:"role"`
	Status        string    `json:"status"` // invited or active
	TwoFactor     bool      `json:"twoFactor"`
	EmailVerified bool      `json:"emailVerified"`
	HasPassword   bool      `json:"hasPassword"`
	CreatedAt     time.Time `json:"createdAt"`
}

// Members lists the workspace's members.
func (s *Service) Members(ctx context.Context, workspace string) ([]Member, error) {
	return s.store.Members(ctx, workspace)
}

// Member returns one member of the workspace.
func (s *Service) Member(ctx context.Context, workspace, id string) (Member, error) {
	return s.store.Member(ctx, workspace, id)
}

// InviteRequest is the body of POST /api/members.
type InviteRequest struct {
	Email string    `json:"email"`
	Name  string    `json:"name,omitempty"`
	Role  auth.Role `json:"role"`
}

// Invitation is the answer of an invite: the token is shown once and is
// what the invitee sends to POST /api/members/accept with a password.
type Invitation struct {
	Member    Member    `json:"member"`
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expiresAt"`
	// Mailed tells whether the invitation was also mailed to the invitee.
	Mailed bool `json:"mailed"`
}

func normalizeEmail(s string) (string, error) {
	s = strings.TrimSpace(s)
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s || len(s) > 254 {
		return "", api.Invalid("email %q is not an e-mail address", s)
	}
	return strings.ToLower(s), nil
}

// checkGrant refuses role changes the caller may not make: only an owner
// grants or takes away the owner role.
func checkGrant(p *auth.Principal, from, to auth.Role) error {
	if (to == auth.Owner || from == auth.Owner) && p.Role < auth.Owner {
		return api.Forbidden("insufficient_role", "only an owner can grant or remove the owner role")
	}
	return nil
}

// Invite adds an invited member and returns the one-time invitation token.
func (s *Service) Invite(ctx context.Context, p *auth.Principal, req InviteRequest) (Invitation, error) {
	email, err := normalizeEmail(req.Email)
	if err != nil {
		return Invitation{}, err
	}
	if req.Role == auth.RoleNone {
		return Invitation{}, api.Invalid("role is required: viewer, developer, admin or owner")
	}
	if err := checkGrant(p, auth.RoleNone, req.Role); err != nil {
		return Invitation{}, err
	}
	if len(req.Name) > 100 {
		return Invitation{}, api.Invalid("name is at most 100 characters")
	}
	now := s.clock.Now()
	token := "svcinv_" + auth.RandomString(40)
	inv := Invitation{Token: token, ExpiresAt: now.Add(InvitationLifetime),
		Member: Member{ID: store.NewID("mem"), Email: email, Name: strings.TrimSpace(req.Name), Role: req.Role, Status: "invited", CreatedAt: now}}
	err = s.store.CreateMember(ctx, MemberRecord{Member: inv.Member, WorkspaceID: p.WorkspaceID, InviteHash: auth.HashSecret(token), InviteExpires: inv.ExpiresAt},
		audit.Event{Workspace: p.WorkspaceID, Actor: p, Action: "member.invite", Category: audit.CategoryMember,
			TargetType: "member", TargetID: inv.Member.ID, Summary: fmt.Sprintf("invited %s as %s", email, req.Role)})
	if err != nil {
		return Invitation{}, err
	}
	inv.Mailed = s.mailInvitation(ctx, p.WorkspaceID, inv)
	return inv, nil
}

// mailInvitation sends the invitation to the invitee through the
// platform's mailer and tells whether it went; a failure leaves the
// invitation valid (the inviter has the token).
func (s *Service) mailInvitation(ctx context.Context, workspace string, inv Invitation) bool {
	s.mu.Lock()
	mailer := s.mailer
	s.mu.Unlock()
	if mailer == nil {
		return false
	}
	name := workspace
	if w, err := s.store.Workspace(ctx, workspace); err == nil {
		name = w.Name
	}
	msg := Message{To: inv.Member.Email, Subject: "You are invited to the workspace " + name,
		Body: "You are invited to join the workspace " + name + " as " + inv.Member.Role.String() + ".\r\n\r\n" +
			"Your invitation token, valid until " + inv.ExpiresAt.UTC().Format(time.RFC1123) + " and once:\r\n\r\n    " + inv.Token + "\r\n\r\n" +
			"Accept it with POST /api/members/accept {\"token\": \"<token>\", \"password\": \"<password>\"}. " +
			"If you already have an account with this e-mail, send its current password: the workspace is added to it.\r\n" +
			"If you did not expect it, ignore this message.\r\n"}
	if err := mailer.Send(ctx, msg); err != nil {
		s.log.Warn("accounts: invitation mail not sent", "workspace", workspace, "member", inv.Member.ID, "err", err)
		return false
	}
	return true
}

// AcceptRequest is the body of POST /api/members/accept.
type AcceptRequest struct {
	Token    string `json:"token"`
	Password string `json:"password"`
	Name     string `json:"name,omitempty"`
}

func validPassword(pw string) error {
	if len(pw) < MinPasswordLen || len(pw) > passhash.MaxPasswordLen {
		return api.E(api.KindInvalid, "weak_password", "password must be %d to %d characters", MinPasswordLen, passhash.MaxPasswordLen)
	}
	return nil
}

var errInvalidToken = api.E(api.KindNotFound, "invalid_token", "invitation not found or expired")

// Accept redeems an invitation or the owner's setup token and makes the
// member active. The member joins the person with the invitation's e-mail:
// a new person gets req.Password; an existing one must present their
// current password, which does not change. A token works once.
func (s *Service) Accept(ctx context.Context, req AcceptRequest) (Member, error) {
	if err := validPassword(req.Password); err != nil {
		return Member{}, err
	}
	if req.Token == "" || len(req.Token) > 200 {
		return Member{}, errInvalidToken
	}
	hash, err := passhash.HashWith(s.params, req.Password)
	if err != nil {
		return Member{}, err
	}
	now := s.clock.Now()
	m, err := s.store.AcceptInvitation(ctx, Acceptance{InviteHash: auth.HashSecret(req.Token), PasswordHash: hash, Name: strings.TrimSpace(req.Name), At: now},
		func(expires time.Time, person PersonState) (bool, error) {
			if !now.Before(expires) {
				return false, errInvalidToken
			}
			switch {
			case !person.Exists:
				return true, nil
			case person.PasswordHash != "":
				// The e-mail already has an account: joining needs its
				// password, which stays as it is. The token alone (shown to
				// whoever invited) never changes a person's password.
				if ok, _ := passhash.Verify(person.PasswordHash, req.Password); !ok {
					return false, api.Forbidden("wrong_password", "this e-mail already has an account: send its current password to join the workspace")
				}
				return false, nil
			case person.Own:
				return true, nil
			}
			return false, api.Conflict("password_not_set", "this e-mail has an account without a password yet: set it with that account's own setup token first, then accept")
		}, func(ws string, m Member) audit.Event {
			return audit.Event{Workspace: ws, Action: "member.accept", Category: audit.CategoryMember,
				TargetType: "member", TargetID: m.ID, Summary: m.Email + " joined"}
		})
	if errors.Is(err, store.ErrNotFound) {
		return Member{}, errInvalidToken
	}
	return m, err
}

// UpdateMemberRequest is the body of PATCH /api/members/{id}.
type UpdateMemberRequest struct {
	Role auth.Role `json:"role"`
}

// lastOwnerGuard refuses a change that would leave the workspace without an
// active owner; otherOwners counts the other active owners in the change's
// transaction.
func lastOwnerGuard(otherOwners func() (int, error)) error {
	n, err := otherOwners()
	if err != nil {
		return err
	}
	if n == 0 {
		return api.Conflict("last_owner", "a workspace needs an owner: make someone else owner first")
	}
	return nil
}

// UpdateMember changes a member's role.
func (s *Service) UpdateMember(ctx context.Context, p *auth.Principal, id string, req UpdateMemberRequest) (Member, error) {
	if req.Role == auth.RoleNone {
		return Member{}, api.Invalid("role is required: viewer, developer, admin or owner")
	}
	var from auth.Role
	defer s.keys.invalidate(invMember + id)
	return s.store.UpdateMember(ctx, p.WorkspaceID, id, func(m *Member, otherOwners func() (int, error)) (bool, error) {
		if err := checkGrant(p, m.Role, req.Role); err != nil {
			return false, err
		}
		if m.Role == auth.Owner && req.Role != auth.Owner {
			if err := lastOwnerGuard(otherOwners); err != nil {
				return false, err
			}
		}
		if m.Role == req.Role {
			return false, nil
		}
		from, m.Role = m.Role, req.Role
		return true, nil
	}, func(m Member) audit.Event {
		return audit.Event{Workspace: p.WorkspaceID, Actor: p, Action: "member.role", Category: audit.CategoryMember,
			TargetType: "member", TargetID: id, Summary: fmt.Sprintf("%s: %s -> %s", m.Email, from, req.Role)}
	})
}

// RemoveMember removes a member, revoking their keys and ending their sessions.
func (s *Service) RemoveMember(ctx context.Context, p *auth.Principal, id string) error {
	defer s.keys.invalidate(invMember + id)
	return s.store.RemoveMember(ctx, p.WorkspaceID, id, s.clock.Now(), func(m Member, otherOwners func() (int, error)) error {
		if err := checkGrant(p, m.Role, auth.RoleNone); err != nil {
			return err
		}
		if m.Role == auth.Owner {
			return lastOwnerGuard(otherOwners)
		}
		return nil
	}, func(m Member) audit.Event {
		return audit.Event{Workspace: p.WorkspaceID, Actor: p, Action: "member.remove", Category: audit.CategoryMember,
			TargetType: "member", TargetID: id, Summary: "removed " + m.Email + "; their keys were revoked"}
	})
}
