package accounts

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/store"
)

// CreateEmailVerification implements Store.
func (s *SQLStore) CreateEmailVerification(ctx context.Context, v EmailVerification, ev audit.Event) error {
	return s.db.Tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM email_verifications WHERE member_id = ? OR expires_at <= ?`,
			v.MemberID, store.FormatTime(v.CreatedAt)); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO email_verifications(token_hash, member_id, email, created_at, expires_at) VALUES (?,?,?,?,?)`,
			v.TokenHash, v.MemberID, v.Email, store.FormatTime(v.CreatedAt), store.FormatTime(v.ExpiresAt)); err != nil {
			return err
		}
		return s.audit.Record(ctx, tx, ev)
	})
}

// VerifyEmail implements Store.
func (s *SQLStore) VerifyEmail(ctx context.Context, tokenHash []byte, check func(EmailVerification, string) error, ev func(string, Member) audit.Event) (Member, error) {
	var m Member
	err := s.db.Tx(ctx, func(tx *sql.Tx) error {
		var v EmailVerification
		var created, expires, ws, current string
		err := tx.QueryRowContext(ctx, `SELECT v.token_hash, v.member_id, v.email, v.created_at, v.expires_at, m.workspace_id, p.email
			FROM email_verifications v JOIN members m ON m.id = v.member_id JOIN people p ON p.id = m.person_id WHERE v.token_hash = ?`, tokenHash).
			Scan(&v.TokenHash, &v.MemberID, &v.Email, &created, &expires, &ws, &current)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		v.CreatedAt, v.ExpiresAt = store.ParseTime(created), store.ParseTime(expires)
		if err := check(v, current); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE people SET email_verified = 1 WHERE id = `+personOf, v.MemberID); err != nil {
			return err
		}
		// Workspaces the person signed up for can now do everything.
		if _, err := tx.ExecContext(ctx, `UPDATE workspaces SET verification_required = 0 WHERE verification_required = 1
			AND id IN (SELECT workspace_id FROM members WHERE person_id = `+personOf+` AND role = 'owner')`, v.MemberID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM email_verifications WHERE member_id = ?`, v.MemberID); err != nil {
			return err
		}
		if m, err = scanMember(tx.QueryRowContext(ctx, `SELECT `+memberCols+memberFrom+` WHERE m.id = ?`, v.MemberID)); err != nil {
			return err
		}
		return s.audit.Record(ctx, tx, ev(ws, m))
	})
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return Member{}, fmt.Errorf("accounts: verify e-mail: %w", err)
	}
	return m, err
}

// OwnerEmailVerified implements Store.
func (s *SQLStore) OwnerEmailVerified(ctx context.Context, workspace string) (bool, error) {
	var ok bool
	err := s.db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM members m JOIN people p ON p.id = m.person_id
		WHERE m.workspace_id = ? AND m.role = 'owner' AND m.status = 'active' AND p.email_verified = 1)`, workspace).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("accounts: owner e-mail: %w", err)
	}
	return ok, nil
}
