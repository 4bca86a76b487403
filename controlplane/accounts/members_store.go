package accounts

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/store"
)

// Members: listing, inviting, accepting an invitation and changing a
// member's role or status.

// MemberRecord is a new member as stored, with their invitation.
type MemberRecord struct {
	// Member gives id, e-mail, name, role, status and creation time.
	Member
	// WorkspaceID owns the member.
	WorkspaceID string
	// InviteHash is auth.HashSecret of the invitation or setup token.
	InviteHash []byte
	// InviteExpires ends the invitation.
	InviteExpires time.Time
	// PersonID is the member's person ("" while invited).
	PersonID string
}

// Acceptance is a redeemed invitation.
type Acceptance struct {
	// InviteHash is auth.HashSecret of the presented token.
	InviteHash []byte
	// PasswordHash is the member's new password hash.
	PasswordHash string
	// Name replaces the member's name when not empty.
	Name string
	// At is when the password was set.
	At time.Time
}

// PersonState is what accepting an invitation knows of the person it joins.
type PersonState struct {
	// Exists is false when accepting makes a new person.
	Exists bool
	// Own is true when the member already belongs to the person (the
	// owner's setup token).
	Own bool
	// PasswordHash is the person's password hash ("" when none is set).
	PasswordHash string
}

// memberCols are a member's columns, selected FROM memberFrom: the
// credentials' state is the person's (none while invited).
const memberCols = `m.id, m.email, m.name, m.role, m.status, coalesce(p.totp_enabled, 0), coalesce(p.email_verified, 0),
	coalesce(p.password_hash, '') <> '', m.created_at`

// memberFrom joins each member to their person.
const memberFrom = ` FROM members m LEFT JOIN people p ON p.id = m.person_id`

// personOf selects the person of member ?.
const personOf = `(SELECT person_id FROM members WHERE id = ?)`

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

func insertMember(ctx context.Context, tx *sql.Tx, m MemberRecord) error {
	if m.InviteHash == nil {
		m.InviteHash = []byte{}
	}
	expires := ""
	if !m.InviteExpires.IsZero() {
		expires = store.FormatTime(m.InviteExpires)
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO members(id, workspace_id, email, name, role, status, invite_hash, invite_expires, created_at, person_id)
		VALUES (?,?,?,?,?,?,?,?,?,?)`, m.ID, m.WorkspaceID, m.Email, m.Name, m.Role.String(), m.Status,
		m.InviteHash, expires, store.FormatTime(m.CreatedAt), m.PersonID)
	return err
}

// otherOwners counts, inside tx, the workspace's active owners other than member.
func otherOwners(ctx context.Context, tx *sql.Tx, workspace, member string) func() (int, error) {
	return func() (int, error) {
		var n int
		err := tx.QueryRowContext(ctx, `SELECT count(*) FROM members WHERE workspace_id = ? AND role = 'owner' AND status = 'active' AND id <> ?`,
			workspace, member).Scan(&n)
		return n, err
	}
}

// Members implements Store.
func (s *SQLStore) Members(ctx context.Context, workspace string) ([]Member, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+memberCols+memberFrom+` WHERE m.workspace_id = ? ORDER BY m.created_at`, workspace)
	if err != nil {
		return nil, fmt.Errorf("accounts: members: %w", err)
	}
	out, err := store.AppendRows([]Member{}, rows, scanMember)
	if err != nil {
		return nil, fmt.Errorf("accounts: members: %w", err)
	}
	return out, nil
}

// Member implements Store.
func (s *SQLStore) Member(ctx context.Context, workspace, id string) (Member, error) {
	m, err := scanMember(s.db.QueryRowContext(ctx, `SELECT `+memberCols+memberFrom+` WHERE m.workspace_id = ? AND m.id = ?`, workspace, id))
	if errors.Is(err, sql.ErrNoRows) {
		return m, api.NotFound("member")
	}
	return m, err
}

// CreateMember implements Store.
func (s *SQLStore) CreateMember(ctx context.Context, m MemberRecord, ev audit.Event) error {
	return s.db.Tx(ctx, func(tx *sql.Tx) error {
		err := insertMember(ctx, tx, m)
		if store.IsUniqueViolation(err) {
			return api.Conflict("member_exists", "%s is already a member or invited", m.Email)
		}
		if err != nil {
			return err
		}
		return s.audit.Record(ctx, tx, ev)
	})
}

// AcceptInvitation implements Store.
func (s *SQLStore) AcceptInvitation(ctx context.Context, a Acceptance, check func(time.Time, PersonState) (bool, error), ev func(string, Member) audit.Event) (Member, error) {
	var m Member
	err := s.db.Tx(ctx, func(tx *sql.Tx) error {
		var id, ws, expires, email, personID string
		err := tx.QueryRowContext(ctx, `SELECT id, workspace_id, invite_expires, email, person_id FROM members WHERE invite_hash = ?`, a.InviteHash).
			Scan(&id, &ws, &expires, &email, &personID)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		// The person: the member's own (the owner's setup token), or the
		// one with the invitation's e-mail, or a new one.
		var existingHash string
		own := personID != ""
		q := `SELECT id, password_hash FROM people WHERE id = ?`
		arg := personID
		if personID == "" {
			q, arg = `SELECT id, password_hash FROM people WHERE email = ?`, strings.ToLower(email)
		}
		err = tx.QueryRowContext(ctx, q, arg).Scan(&personID, &existingHash)
		exists := err == nil
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		setPassword, err := check(store.ParseTime(expires), PersonState{Exists: exists, Own: own, PasswordHash: existingHash})
		if err != nil {
			return err
		}
		if !exists {
			personID = "per_" + strings.TrimPrefix(id, "mem_")
			if err := insertPerson(ctx, tx, Person{ID: personID, Email: strings.ToLower(email), Name: a.Name, CreatedAt: a.At}); err != nil {
				return err
			}
		}
		if setPassword {
			if _, err := tx.ExecContext(ctx, `UPDATE people SET password_hash = ?, password_set_at = ? WHERE id = ?`,
				a.PasswordHash, store.FormatTime(a.At), personID); err != nil {
				return err
			}
		}
		set := `UPDATE members SET status = 'active', person_id = ?, invite_hash = '', invite_expires = ''`
		args := []any{personID}
		if a.Name != "" {
			set += `, name = ?`
			args = append(args, a.Name)
		}
		if _, err := tx.ExecContext(ctx, set+` WHERE id = ?`, append(args, id)...); err != nil {
			if store.IsUniqueViolation(err) {
				return api.Conflict("member_exists", "%s is already a member of this workspace", email)
			}
			return err
		}
		if m, err = scanMember(tx.QueryRowContext(ctx, `SELECT `+memberCols+memberFrom+` WHERE m.id = ?`, id)); err != nil {
			return err
		}
		return s.audit.Record(ctx, tx, ev(ws, m))
	})
	return m, err
}

// UpdateMember implements Store.
func (s *SQLStore) UpdateMember(ctx context.Context, workspace, id string, apply func(*Member, func() (int, error)) (bool, error), ev func(Member) audit.Event) (Member, error) {
	var m Member
	err := s.db.Tx(ctx, func(tx *sql.Tx) error {
		var err error
		m, err = scanMember(tx.QueryRowContext(ctx, `SELECT `+memberCols+memberFrom+` WHERE m.workspace_id = ? AND m.id = ?`, workspace, id))
		if errors.Is(err, sql.ErrNoRows) {
			return api.NotFound("member")
		}
		if err != nil {
			return err
		}
		changed, err := apply(&m, otherOwners(ctx, tx, workspace, id))
		if err != nil || !changed {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE members SET role = ? WHERE id = ?`, m.Role.String(), id); err != nil {
			return err
		}
		if err := notifyKeys(ctx, s.db, tx, invMember+id); err != nil {
			return err
		}
		return s.audit.Record(ctx, tx, ev(m))
	})
	return m, err
}
