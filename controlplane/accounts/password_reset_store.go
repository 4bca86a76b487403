package accounts

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/store"
)

// CreatePasswordReset implements Store.
func (s *SQLStore) CreatePasswordReset(ctx context.Context, r PasswordReset) error {
	return s.db.Tx(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `SELECT id FROM people WHERE email = ?`, r.Email).Scan(&r.PersonID)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM password_resets WHERE person_id = ? OR expires_at <= ?`,
			r.PersonID, store.FormatTime(r.CreatedAt)); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO password_resets(token_hash, person_id, email, created_at, expires_at) VALUES (?,?,?,?,?)`,
			r.TokenHash, r.PersonID, r.Email, store.FormatTime(r.CreatedAt), store.FormatTime(r.ExpiresAt))
		return err
	})
}

// ResetPassword implements Store.
func (s *SQLStore) ResetPassword(ctx context.Context, tokenHash []byte, hash string, at time.Time, check func(PasswordReset, string) error,
	ev func(workspace, member, email string) audit.Event) (string, error) {
	var email string
	err := s.db.Tx(ctx, func(tx *sql.Tx) error {
		var r PasswordReset
		var created, expires string
		var verified bool
		err := tx.QueryRowContext(ctx, `SELECT r.token_hash, r.person_id, r.email, r.created_at, r.expires_at, p.email, p.email_verified
			FROM password_resets r JOIN people p ON p.id = r.person_id WHERE r.token_hash = ?`, tokenHash).
			Scan(&r.TokenHash, &r.PersonID, &r.Email, &created, &expires, &email, &verified)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		r.CreatedAt, r.ExpiresAt = store.ParseTime(created), store.ParseTime(expires)
		if err := check(r, email); err != nil {
			return err
		}
		q := `UPDATE people SET password_hash = ?, password_set_at = ?, email_verified = 1 WHERE id = ?`
		if !verified {
			// Whoever set up this second factor had not shown the address
			// was theirs: the address's owner is not held to it.
			q = `UPDATE people SET password_hash = ?, password_set_at = ?, email_verified = 1,
				totp_secret = '', totp_enabled = 0, totp_last_step = 0 WHERE id = ?`
		}
		if _, err := tx.ExecContext(ctx, q, hash, store.FormatTime(at), r.PersonID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE workspaces SET verification_required = 0 WHERE verification_required = 1
			AND id IN (SELECT workspace_id FROM members WHERE person_id = ? AND role = 'owner')`, r.PersonID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE member_id IN (SELECT id FROM members WHERE person_id = ?)`, r.PersonID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM password_resets WHERE person_id = ?`, r.PersonID); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT workspace_id, id FROM members WHERE person_id = ? AND status = 'active' ORDER BY workspace_id`, r.PersonID)
		if err != nil {
			return err
		}
		type wm struct{ ws, member string }
		list, err := store.AppendRows([]wm(nil), rows, func(sc store.RowScanner) (wm, error) {
			var x wm
			return x, sc.Scan(&x.ws, &x.member)
		})
		if err != nil {
			return err
		}
		for _, x := range list {
			if err := s.audit.Record(ctx, tx, ev(x.ws, x.member, email)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return "", fmt.Errorf("accounts: reset password: %w", err)
	}
	return email, err
}
