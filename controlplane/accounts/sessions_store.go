package accounts

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/store"
)

// Dashboard sign-in and sessions: who a sign-in may be for, and creating,
// reading and deleting sessions.

// SignInCandidate is an active member a sign-in may be for.
type SignInCandidate struct {
	MemberID     string
	WorkspaceID  string
	PasswordHash string
	TOTP         TOTP
}

// SessionRecord is a new dashboard session as stored.
type SessionRecord struct {
	ID string
	// TokenHash and CSRFHash are auth.HashSecret of the two tokens.
	TokenHash    []byte
	CSRFHash     []byte
	MemberID     string
	WorkspaceID  string
	SecondFactor bool
	CreatedAt    time.Time
	ExpiresAt    time.Time
}

// SessionCredential is what authenticating a dashboard session needs.
type SessionCredential struct {
	MemberID     string
	WorkspaceID  string
	SecondFactor bool
	CSRFHash     []byte
	ExpiresAt    time.Time
	// Role and Status are the member's current ones.
	Role   auth.Role
	Status string
	// Pending is set while the workspace waits for its owner's e-mail
	// verification.
	Pending bool
}

// SignInCandidates implements Store: the person with e-mail email and
// their active membership in workspace, or their oldest active one when
// workspace is empty.
func (s *SQLStore) SignInCandidates(ctx context.Context, email, workspace string) ([]SignInCandidate, error) {
	q := `SELECT m.id, m.workspace_id, p.password_hash, p.totp_secret, p.totp_enabled, p.totp_last_step
		FROM people p JOIN members m ON m.person_id = p.id AND m.status = 'active' WHERE p.email = ?`
	args := []any{email}
	if workspace != "" {
		q += ` AND m.workspace_id = ?`
		args = append(args, workspace)
	}
	rows, err := s.db.QueryContext(ctx, q+` ORDER BY m.created_at, m.id LIMIT 1`, args...)
	if err != nil {
		return nil, fmt.Errorf("accounts: sign in: %w", err)
	}
	out, err := store.AppendRows(nil, rows, func(sc store.RowScanner) (SignInCandidate, error) {
		var c SignInCandidate
		err := sc.Scan(&c.MemberID, &c.WorkspaceID, &c.PasswordHash, &c.TOTP.Secret, &c.TOTP.Enabled, &c.TOTP.LastStep)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("accounts: sign in: %w", err)
	}
	return out, nil
}

// CreateSession implements Store.
func (s *SQLStore) CreateSession(ctx context.Context, r SessionRecord, ev func(Member) audit.Event) (Member, error) {
	var m Member
	err := s.db.Tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO sessions(id, token_hash, csrf_hash, member_id, workspace_id, second_factor, created_at, expires_at)
			VALUES (?,?,?,?,?,?,?,?)`, r.ID, r.TokenHash, r.CSRFHash, r.MemberID, r.WorkspaceID, r.SecondFactor,
			store.FormatTime(r.CreatedAt), store.FormatTime(r.ExpiresAt)); err != nil {
			return err
		}
		// Expired sessions are swept on the way.
		if _, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE expires_at < ?`, store.FormatTime(r.CreatedAt)); err != nil {
			return err
		}
		var err error
		if m, err = scanMember(tx.QueryRowContext(ctx, `SELECT `+memberCols+memberFrom+` WHERE m.id = ?`, r.MemberID)); err != nil {
			return err
		}
		return s.audit.Record(ctx, tx, ev(m))
	})
	return m, err
}

// Session implements Store.
func (s *SQLStore) Session(ctx context.Context, tokenHash []byte) (SessionCredential, error) {
	var c SessionCredential
	var expires, role string
	err := s.db.QueryRowContext(ctx, `SELECT s.member_id, s.workspace_id, s.second_factor, s.csrf_hash, s.expires_at, m.role, m.status,
			w.verification_required
		FROM sessions s JOIN members m ON m.id = s.member_id JOIN workspaces w ON w.id = s.workspace_id WHERE s.token_hash = ?`, tokenHash).
		Scan(&c.MemberID, &c.WorkspaceID, &c.SecondFactor, &c.CSRFHash, &expires, &role, &c.Status, &c.Pending)
	if errors.Is(err, sql.ErrNoRows) {
		return SessionCredential{}, store.ErrNotFound
	}
	if err != nil {
		return SessionCredential{}, err
	}
	c.ExpiresAt = store.ParseTime(expires)
	c.Role, _ = auth.ParseRole(role)
	return c, nil
}

// DeleteSession implements Store.
func (s *SQLStore) DeleteSession(ctx context.Context, tokenHash []byte) error {
	_, err := s.db.ExecContext(ctx, `DELETE FROM sessions WHERE token_hash = ?`, tokenHash)
	return err
}

// SwitchSession implements Store.
func (s *SQLStore) SwitchSession(ctx context.Context, tokenHash []byte, workspace string, ev func(Member) audit.Event) (Member, error) {
	var m Member
	err := s.db.Tx(ctx, func(tx *sql.Tx) error {
		var target string
		err := tx.QueryRowContext(ctx, `SELECT m2.id FROM sessions se JOIN members m ON m.id = se.member_id
			JOIN members m2 ON m2.person_id = m.person_id
			WHERE se.token_hash = ? AND m.person_id <> '' AND m2.workspace_id = ? AND m2.status = 'active'`, tokenHash, workspace).Scan(&target)
		if errors.Is(err, sql.ErrNoRows) {
			return api.NotFound("workspace")
		}
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE sessions SET member_id = ?, workspace_id = ? WHERE token_hash = ?`, target, workspace, tokenHash); err != nil {
			return err
		}
		if m, err = scanMember(tx.QueryRowContext(ctx, `SELECT `+memberCols+memberFrom+` WHERE m.id = ?`, target)); err != nil {
			return err
		}
		return s.audit.Record(ctx, tx, ev(m))
	})
	return m, err
}
