package accounts

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/store"
)

// moveSessions moves, inside tx, the sessions of members of workspace
// (every member when member is empty) to each person's oldest other
// active membership; sessions of people with none are deleted. It returns
// where the session whose token hashes to caller acts now ("" when ended).
func moveSessions(ctx context.Context, tx *sql.Tx, workspace, member string, caller []byte) (string, error) {
	q := `SELECT se.id, se.token_hash, coalesce((SELECT m2.id FROM members m2 JOIN workspaces w ON w.id = m2.workspace_id
			WHERE m2.person_id = m.person_id AND m.person_id <> '' AND m2.workspace_id <> m.workspace_id AND m2.status = 'active'
			AND w.deleted_at = '' ORDER BY m2.created_at, m2.id LIMIT 1), '')
		FROM sessions se JOIN members m ON m.id = se.member_id WHERE m.workspace_id = ?`
	args := []any{workspace}
	if member != "" {
		q += ` AND m.id = ?`
		args = append(args, member)
	}
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return "", err
	}
	type move struct {
		id, to string
		hash   []byte
	}
	moves, err := store.AppendRows(nil, rows, func(sc store.RowScanner) (move, error) {
		var mv move
		err := sc.Scan(&mv.id, &mv.hash, &mv.to)
		return mv, err
	})
	if err != nil {
		return "", err
	}
	next := ""
	for _, mv := range moves {
		if mv.to == "" {
			if _, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE id = ?`, mv.id); err != nil {
				return "", err
			}
			continue
		}
		var ws string
		if err := tx.QueryRowContext(ctx, `UPDATE sessions SET member_id = ?, workspace_id = (SELECT workspace_id FROM members WHERE id = ?)
			WHERE id = ? RETURNING workspace_id`, mv.to, mv.to, mv.id).Scan(&ws); err != nil {
			return "", err
		}
		if len(caller) > 0 && string(mv.hash) == string(caller) {
			next = ws
		}
	}
	return next, nil
}

// RemoveMembers implements Store.
func (s *SQLStore) RemoveMembers(ctx context.Context, workspace, member string, at time.Time, check func(Member, func() (int, error)) error, ev audit.Event, caller []byte) (string, error) {
	var next string
	err := s.db.Tx(ctx, func(tx *sql.Tx) error {
		m, err := scanMember(tx.QueryRowContext(ctx, `SELECT `+memberCols+memberFrom+` WHERE m.workspace_id = ? AND m.id = ?`, workspace, member))
		if errors.Is(err, sql.ErrNoRows) {
			return api.NotFound("member")
		}
		if err != nil {
			return err
		}
		if err := check(m, otherOwners(ctx, tx, workspace, member)); err != nil {
			return err
		}
		if next, err = moveSessions(ctx, tx, workspace, member, caller); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE api_keys SET revoked_at = ? WHERE member_id = ? AND revoked_at = ''`, store.FormatTime(at), member); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM members WHERE id = ?`, member); err != nil {
			return err
		}
		if err := notifyKeys(ctx, s.db, tx, invMember+member); err != nil {
			return err
		}
		return s.audit.Record(ctx, tx, ev)
	})
	return next, err
}

// DeleteWorkspace implements Store.
func (s *SQLStore) DeleteWorkspace(ctx context.Context, workspace string, at time.Time, caller []byte, ev audit.Event) (string, error) {
	var next string
	err := s.db.Tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE workspaces SET deleted_at = ? WHERE id = ? AND deleted_at = ''`, store.FormatTime(at), workspace)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return api.NotFound("workspace")
		}
		if next, err = moveSessions(ctx, tx, workspace, "", caller); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE api_keys SET revoked_at = ? WHERE workspace_id = ? AND revoked_at = ''`, store.FormatTime(at), workspace); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM members WHERE workspace_id = ?`, workspace); err != nil {
			return err
		}
		if err := notifyKeys(ctx, s.db, tx, invAll); err != nil {
			return err
		}
		return s.audit.Record(ctx, tx, ev)
	})
	return next, err
}

// RemoveMember implements Store.
func (s *SQLStore) RemoveMember(ctx context.Context, workspace, id string, revokedAt time.Time, check func(Member, func() (int, error)) error, ev func(Member) audit.Event) error {
	return s.db.Tx(ctx, func(tx *sql.Tx) error {
		m, err := scanMember(tx.QueryRowContext(ctx, `SELECT `+memberCols+memberFrom+` WHERE m.workspace_id = ? AND m.id = ?`, workspace, id))
		if errors.Is(err, sql.ErrNoRows) {
			return api.NotFound("member")
		}
		if err != nil {
			return err
		}
		if err := check(m, otherOwners(ctx, tx, workspace, id)); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE api_keys SET revoked_at = ? WHERE member_id = ? AND revoked_at = ''`, store.FormatTime(revokedAt), id); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM members WHERE id = ?`, id); err != nil {
			return err
		}
		if err := notifyKeys(ctx, s.db, tx, invMember+id); err != nil {
			return err
		}
		return s.audit.Record(ctx, tx, ev(m))
	})
}
