package accounts

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/mail"
	"strings"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/passhash"
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

const memberCols = `id, email, name, role, status, totp_enabled, email_verified, password_hash <> '', created_at`

func scanMember(sc interface{ Scan(...any) error }) (Member, error) {
	var m Member
	var role, created string
	err := sc.Scan(&m.ID, &m.Email, &m.Name, &role, &m.Status, &m.TwoFactor, &m.EmailVerified, &m.HasPassword, &created)
	if err != nil {
		return m, err
	}
	m.Role, _ = auth.ParseRole(role)
	m.CreatedAt = store.ParseTime(created)
	return m, nil
}

// Members lists the workspace's members.
func (s *Service) Members(ctx context.Context, workspace string) ([]Member, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+memberCols+` FROM members WHERE workspace_id = ? ORDER BY created_at`, workspace)
	if err != nil {
		return nil, fmt.Errorf("accounts: members: %w", err)
	}
	defer rows.Close()
	out := []Member{}
	for rows.Next() {
		m, err := scanMember(rows)
		if err != nil {
			return nil, fmt.Errorf("accounts: members: %w", err)
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// Member returns one member of the workspace.
func (s *Service) Member(ctx context.Context, workspace, id string) (Member, error) {
	m, err := scanMember(s.db.QueryRowContext(ctx, `SELECT `+memberCols+` FROM members WHERE workspace_id = ? AND id = ?`, workspace, id))
	if errors.Is(err, sql.ErrNoRows) {
		return m, api.NotFound("member")
	}
	return m, err
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
	err = s.db.Tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO members(id, workspace_id, email, name, role, status, invite_hash, invite_expires, created_at)
			VALUES (?,?,?,?,?,'invited',?,?,?)`, inv.Member.ID, p.WorkspaceID, email, inv.Member.Name, req.Role.String(),
			auth.HashSecret(token), store.FormatTime(inv.ExpiresAt), store.FormatTime(now))
		if store.IsUniqueViolation(err) {
			return api.Conflict("member_exists", "%s is already a member or invited", email)
		}
		if err != nil {
			return err
		}
		return s.audit.Record(ctx, tx, audit.Event{Workspace: p.WorkspaceID, Actor: p, Action: "member.invite", Category: audit.CategoryMember,
			TargetType: "member", TargetID: inv.Member.ID, Summary: fmt.Sprintf("invited %s as %s", email, req.Role)})
	})
	if err != nil {
		return Invitation{}, err
	}
	return inv, nil
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

// Accept redeems an invitation or the owner's setup token: it sets the
// member's password and makes the member active. A token works once.
func (s *Service) Accept(ctx context.Context, req AcceptRequest) (Member, error) {
	if err := validPassword(req.Password); err != nil {
		return Member{}, err
	}
	if req.Token == "" || len(req.Token) > 200 {
		return Member{}, api.E(api.KindNotFound, "invalid_token", "invitation not found or expired")
	}
	hash, err := passhash.HashWith(s.params, req.Password)
	if err != nil {
		return Member{}, err
	}
	now := s.clock.Now()
	var m Member
	err = s.db.Tx(ctx, func(tx *sql.Tx) error {
		var id, ws, expires string
		err := tx.QueryRowContext(ctx, `SELECT id, workspace_id, invite_expires FROM members WHERE invite_hash = ?`, auth.HashSecret(req.Token)).
			Scan(&id, &ws, &expires)
		if errors.Is(err, sql.ErrNoRows) || (err == nil && !now.Before(store.ParseTime(expires))) {
			return api.E(api.KindNotFound, "invalid_token", "invitation not found or expired")
		}
		if err != nil {
			return err
		}
		set := `UPDATE members SET status = 'active', password_hash = ?, password_set_at = ?, invite_hash = '', invite_expires = ''`
		args := []any{hash, store.FormatTime(now)}
		if n := strings.TrimSpace(req.Name); n != "" {
			set += `, name = ?`
			args = append(args, n)
		}
		if _, err := tx.ExecContext(ctx, set+` WHERE id = ?`, append(args, id)...); err != nil {
			return err
		}
		m, err = scanMember(tx.QueryRowContext(ctx, `SELECT `+memberCols+` FROM members WHERE id = ?`, id))
		if err != nil {
			return err
		}
		return s.audit.Record(ctx, tx, audit.Event{Workspace: ws, Action: "member.accept", Category: audit.CategoryMember,
			TargetType: "member", TargetID: id, Summary: m.Email + " set a password and joined"})
	})
	return m, err
}

// UpdateMemberRequest is the body of PATCH /api/members/{id}.
type UpdateMemberRequest struct {
	Role auth.Role `json:"role"`
}

// lastOwnerGuard refuses a change that would leave the workspace without an active owner.
func lastOwnerGuard(ctx context.Context, tx *sql.Tx, workspace, memberID string) error {
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM members WHERE workspace_id = ? AND role = 'owner' AND status = 'active' AND id <> ?`,
		workspace, memberID).Scan(&n); err != nil {
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
	var m Member
	err := s.db.Tx(ctx, func(tx *sql.Tx) error {
		var err error
		m, err = scanMember(tx.QueryRowContext(ctx, `SELECT `+memberCols+` FROM members WHERE workspace_id = ? AND id = ?`, p.WorkspaceID, id))
		if errors.Is(err, sql.ErrNoRows) {
			return api.NotFound("member")
		}
		if err != nil {
			return err
		}
		if err := checkGrant(p, m.Role, req.Role); err != nil {
			return err
		}
		if m.Role == auth.Owner && req.Role != auth.Owner {
			if err := lastOwnerGuard(ctx, tx, p.WorkspaceID, id); err != nil {
				return err
			}
		}
		if m.Role == req.Role {
			return nil
		}
		from := m.Role
		m.Role = req.Role
		if _, err := tx.ExecContext(ctx, `UPDATE members SET role = ? WHERE id = ?`, req.Role.String(), id); err != nil {
			return err
		}
		return s.audit.Record(ctx, tx, audit.Event{Workspace: p.WorkspaceID, Actor: p, Action: "member.role", Category: audit.CategoryMember,
			TargetType: "member", TargetID: id, Summary: fmt.Sprintf("%s: %s -> %s", m.Email, from, req.Role)})
	})
	return m, err
}

// RemoveMember removes a member, revoking their keys and ending their sessions.
func (s *Service) RemoveMember(ctx context.Context, p *auth.Principal, id string) error {
	return s.db.Tx(ctx, func(tx *sql.Tx) error {
		m, err := scanMember(tx.QueryRowContext(ctx, `SELECT `+memberCols+` FROM members WHERE workspace_id = ? AND id = ?`, p.WorkspaceID, id))
		if errors.Is(err, sql.ErrNoRows) {
			return api.NotFound("member")
		}
		if err != nil {
			return err
		}
		if err := checkGrant(p, m.Role, auth.RoleNone); err != nil {
			return err
		}
		if m.Role == auth.Owner {
			if err := lastOwnerGuard(ctx, tx, p.WorkspaceID, id); err != nil {
				return err
			}
		}
		now := store.FormatTime(s.clock.Now())
		if _, err := tx.ExecContext(ctx, `UPDATE api_keys SET revoked_at = ? WHERE member_id = ? AND revoked_at = ''`, now, id); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM members WHERE id = ?`, id); err != nil {
			return err
		}
		return s.audit.Record(ctx, tx, audit.Event{Workspace: p.WorkspaceID, Actor: p, Action: "member.remove", Category: audit.CategoryMember,
			TargetType: "member", TargetID: id, Summary: "removed " + m.Email + "; their keys were revoked"})
	})
}
