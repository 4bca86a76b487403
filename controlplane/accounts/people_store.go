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
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/store"
)

// People: a person across their memberships, with their password and
// two-factor state.

func insertPerson(ctx context.Context, tx *sql.Tx, p Person) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO people(id, email, name, password_hash, password_set_at, created_at) VALUES (?,?,?,?,?,?)`,
		p.ID, p.Email, p.Name, p.passwordHash, passwordSetAt(p), store.FormatTime(p.CreatedAt))
	if store.IsUniqueViolation(err) {
		return api.Conflict("account_exists", "%s already has an account: sign in instead", p.Email)
	}
	return err
}

func passwordSetAt(p Person) string {
	if p.passwordHash == "" {
		return ""
	}
	return store.FormatTime(p.CreatedAt)
}

// PersonOfMember implements Store.
func (s *SQLStore) PersonOfMember(ctx context.Context, member string) (Person, error) {
	var p Person
	var created string
	err := s.db.QueryRowContext(ctx, `SELECT p.id, p.email, p.name, p.email_verified, p.created_at
		FROM members m JOIN people p ON p.id = m.person_id WHERE m.id = ?`, member).Scan(&p.ID, &p.Email, &p.Name, &p.EmailVerified, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return p, store.ErrNotFound
	}
	if err != nil {
		return p, fmt.Errorf("accounts: person: %w", err)
	}
	p.CreatedAt = store.ParseTime(created)
	return p, nil
}

// Memberships implements Store.
func (s *SQLStore) Memberships(ctx context.Context, member string) ([]Membership, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT w.id, w.name, w.plan, w.created_at, w.verification_required, m2.id, m2.role
		FROM members m JOIN members m2 ON m2.person_id = m.person_id JOIN workspaces w ON w.id = m2.workspace_id
		WHERE m.id = ? AND m.person_id <> '' AND m2.status = 'active' AND w.deleted_at = '' ORDER BY m2.created_at, m2.id`, member)
	if err != nil {
		return nil, fmt.Errorf("accounts: workspaces: %w", err)
	}
	out, err := store.AppendRows([]Membership{}, rows, func(sc store.RowScanner) (Membership, error) {
		var ms Membership
		var plan, created, role string
		if err := sc.Scan(&ms.Workspace.ID, &ms.Workspace.Name, &plan, &created, &ms.Workspace.VerificationRequired, &ms.MemberID, &role); err != nil {
			return ms, err
		}
		ms.Workspace.Plan, ms.Workspace.CreatedAt = plans.Name(plan), store.ParseTime(created)
		ms.Role, _ = auth.ParseRole(role)
		return ms, nil
	})
	if err != nil {
		return nil, fmt.Errorf("accounts: workspaces: %w", err)
	}
	return out, nil
}

// TOTP is a member's two-factor state.
type TOTP struct {
	// Secret is the enrolled secret ("" when none).
	Secret string
	// Enabled tells whether sign-ins need a code.
	Enabled bool
	// LastStep is the last step accepted; earlier and equal steps are replays.
	LastStep int64
}

// ClaimTOTPStep implements Store.
func (s *SQLStore) ClaimTOTPStep(ctx context.Context, member string, step int64) (bool, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE people SET totp_last_step = ? WHERE id = `+personOf+` AND totp_last_step < ?`, step, member, step)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// PasswordHash implements Store.
func (s *SQLStore) PasswordHash(ctx context.Context, member string) (string, error) {
	var hash string
	err := s.db.QueryRowContext(ctx, `SELECT p.password_hash FROM members m JOIN people p ON p.id = m.person_id WHERE m.id = ?`, member).Scan(&hash)
	if errors.Is(err, sql.ErrNoRows) {
		return "", store.ErrNotFound
	}
	return hash, err
}

// SetPassword implements Store.
func (s *SQLStore) SetPassword(ctx context.Context, member, hash string, at time.Time, keep []byte, ev audit.Event) error {
	return s.db.Tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE people SET password_hash = ?, password_set_at = ? WHERE id = `+personOf, hash, store.FormatTime(at), member); err != nil {
			return err
		}
		// Every session of the person ends, in whichever workspace it acts.
		if _, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE member_id IN (SELECT id FROM members WHERE person_id = `+personOf+`)
			AND token_hash <> ?`, member, keep); err != nil {
			return err
		}
		return s.audit.Record(ctx, tx, ev)
	})
}

// TOTPStatus implements Store.
func (s *SQLStore) TOTPStatus(ctx context.Context, member string) (string, bool, error) {
	var email string
	var enabled bool
	err := s.db.QueryRowContext(ctx, `SELECT p.email, p.totp_enabled FROM members m JOIN people p ON p.id = m.person_id WHERE m.id = ?`, member).Scan(&email, &enabled)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, store.ErrNotFound
	}
	return email, enabled, err
}

// SetTOTPSecret implements Store.
func (s *SQLStore) SetTOTPSecret(ctx context.Context, member, secret string) (bool, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE people SET totp_secret = ? WHERE id = `+personOf+` AND totp_enabled = 0`, secret, member)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// UpdateTOTP implements Store.
func (s *SQLStore) UpdateTOTP(ctx context.Context, member string, apply func(*TOTP) error, ev audit.Event) error {
	return s.db.Tx(ctx, func(tx *sql.Tx) error {
		var t TOTP
		err := tx.QueryRowContext(ctx, `SELECT p.totp_secret, p.totp_enabled, p.totp_last_step FROM members m JOIN people p ON p.id = m.person_id WHERE m.id = ?`, member).
			Scan(&t.Secret, &t.Enabled, &t.LastStep)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		if err := apply(&t); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE people SET totp_enabled = ?, totp_secret = ?, totp_last_step = ? WHERE id = `+personOf,
			t.Enabled, t.Secret, t.LastStep, member); err != nil {
			return err
		}
		return s.audit.Record(ctx, tx, ev)
	})
}
