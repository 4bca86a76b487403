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

// API keys: the look-up every API request runs, listing, creating and
// revoking keys.

// KeyRecord is a new key as stored.
type KeyRecord struct {
	Key
	// WorkspaceID owns the key.
	WorkspaceID string
	// SecretHash is auth.HashSecret of the key; the secret itself is never stored.
	SecretHash []byte
}

// KeyCredential is what authenticating an API key needs.
type KeyCredential struct {
	ID          string
	WorkspaceID string
	MemberID    string
	Prefix      string
	SecretHash  []byte
	// Access is full or read_only.
	Access    string
	ProjectID string
	// ExpiresAt is nil for a key that never expires.
	ExpiresAt *time.Time
	// RevokedAt is nil for a key in force.
	RevokedAt *time.Time
	// Role is the member's current role.
	Role auth.Role
	// Pending is set while the workspace waits for its owner's e-mail
	// verification.
	Pending bool
}

// keyByHashSQL finds a key and its member's current role; prepared once,
// since every API request runs it.
const keyByHashSQL = `SELECT k.id, k.workspace_id, k.member_id, k.public_id, k.secret_hash, k.access, k.project_id,
		k.expires_at, k.revoked_at, m.role, w.verification_required
	FROM api_keys k JOIN members m ON m.id = k.member_id JOIN workspaces w ON w.id = k.workspace_id WHERE k.secret_hash = ?`

// KeyByHash implements Store.
func (s *SQLStore) KeyByHash(ctx context.Context, hash []byte) (KeyCredential, error) {
	var c KeyCredential
	var expires, revoked, role string
	err := s.keyByHash.QueryRowContext(ctx, hash).
		Scan(&c.ID, &c.WorkspaceID, &c.MemberID, &c.Prefix, &c.SecretHash, &c.Access, &c.ProjectID, &expires, &revoked, &role, &c.Pending)
	if errors.Is(err, sql.ErrNoRows) {
		return KeyCredential{}, store.ErrNotFound
	}
	if err != nil {
		return KeyCredential{}, err
	}
	c.ExpiresAt, c.RevokedAt = optTime(expires), optTime(revoked)
	c.Role, _ = auth.ParseRole(role)
	return c, nil
}

// TouchKey implements Store.
func (s *SQLStore) TouchKey(ctx context.Context, id string, at time.Time) error {
	_, err := s.db.ExecContext(ctx, `UPDATE api_keys SET last_used_at = ? WHERE id = ?`, store.FormatTime(at), id)
	return err
}

const keyCols = `id, name, public_id, access, project_id, member_id, created_at, expires_at, last_used_at, revoked_at`

func scanKey(sc interface{ Scan(...any) error }) (Key, error) {
	var k Key
	var created, expires, used, revoked string
	if err := sc.Scan(&k.ID, &k.Name, &k.Prefix, &k.Access, &k.ProjectID, &k.MemberID, &created, &expires, &used, &revoked); err != nil {
		return Key{}, err
	}
	k.CreatedAt, k.ExpiresAt, k.LastUsedAt, k.RevokedAt = store.ParseTime(created), optTime(expires), optTime(used), optTime(revoked)
	k.Kind = kindOf(k.Access, k.ProjectID)
	return k, nil
}

func insertKey(ctx context.Context, tx *sql.Tx, k KeyRecord) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO api_keys(id, workspace_id, member_id, name, public_id, secret_hash, access, project_id, created_at, expires_at)
		VALUES (?,?,?,?,?,?,?,?,?,?)`, k.ID, k.WorkspaceID, k.MemberID, k.Name, k.Prefix, k.SecretHash, k.Access, k.ProjectID,
		store.FormatTime(k.CreatedAt), optTimeString(k.ExpiresAt))
	return err
}

// Keys implements Store.
func (s *SQLStore) Keys(ctx context.Context, workspace string, member *string) ([]Key, error) {
	q := `SELECT ` + keyCols + ` FROM api_keys WHERE workspace_id = ? AND ephemeral = 0`
	args := []any{workspace}
	if member != nil {
		q += ` AND member_id = ?`
		args = append(args, *member)
	}
	rows, err := s.db.QueryContext(ctx, q+` ORDER BY created_at DESC`, args...)
	if err != nil {
		return nil, fmt.Errorf("accounts: list keys: %w", err)
	}
	keys, err := store.AppendRows([]Key{}, rows, scanKey)
	if err != nil {
		return nil, fmt.Errorf("accounts: list keys: %w", err)
	}
	return keys, nil
}

// CreateKey implements Store.
func (s *SQLStore) CreateKey(ctx context.Context, k KeyRecord, check func(workspaceActive, memberActive int) error, ev audit.Event) error {
	return s.db.Tx(ctx, func(tx *sql.Tx) error {
		var ws, member int
		if err := tx.QueryRowContext(ctx, `SELECT count(*), count(CASE WHEN member_id = ? AND ephemeral = 0 THEN 1 END)
			FROM api_keys WHERE workspace_id = ? AND revoked_at = ''`, k.MemberID, k.WorkspaceID).Scan(&ws, &member); err != nil {
			return err
		}
		if err := check(ws, member); err != nil {
			return err
		}
		if err := insertKey(ctx, tx, k); err != nil {
			return err
		}
		return s.audit.Record(ctx, tx, ev)
	})
}

// RevokeKey implements Store.
func (s *SQLStore) RevokeKey(ctx context.Context, workspace, id string, apply func(*Key) (bool, error), ev func(Key) audit.Event) (Key, error) {
	var k Key
	err := s.db.Tx(ctx, func(tx *sql.Tx) error {
		var err error
		k, err = scanKey(tx.QueryRowContext(ctx, `SELECT `+keyCols+` FROM api_keys WHERE id = ? AND workspace_id = ? AND ephemeral = 0`, id, workspace))
		if errors.Is(err, sql.ErrNoRows) {
			return api.NotFound("key")
		}
		if err != nil {
			return err
		}
		revoke, err := apply(&k)
		if err != nil || !revoke {
			return err
		}
		if k.RevokedAt == nil {
			return fmt.Errorf("accounts: revoke key %s: no revocation time", id)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE api_keys SET revoked_at = ? WHERE id = ?`, store.FormatTime(*k.RevokedAt), id); err != nil {
			return err
		}
		if err := notifyKeys(ctx, s.db, tx, invKey+id); err != nil {
			return err
		}
		return s.audit.Record(ctx, tx, ev(k))
	})
	return k, err
}

// ResetMemberKeys implements Store.
func (s *SQLStore) ResetMemberKeys(ctx context.Context, k KeyRecord, revoke bool, check func(Member, int, int) error, ev func(Member, []string) audit.Event) ([]string, error) {
	var revoked []string
	err := s.db.Tx(ctx, func(tx *sql.Tx) error {
		revoked = nil
		m, err := scanMember(tx.QueryRowContext(ctx, `SELECT `+memberCols+memberFrom+` WHERE m.workspace_id = ? AND m.id = ?`, k.WorkspaceID, k.MemberID))
		if errors.Is(err, sql.ErrNoRows) {
			return api.NotFound("member")
		}
		if err != nil {
			return err
		}
		if revoke {
			rows, err := tx.QueryContext(ctx, `SELECT id FROM api_keys WHERE member_id = ? AND revoked_at = '' ORDER BY created_at, id`, m.ID)
			if err != nil {
				return err
			}
			if revoked, err = store.AppendRows(revoked, rows, store.ScanString); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `UPDATE api_keys SET revoked_at = ? WHERE member_id = ? AND revoked_at = ''`,
				store.FormatTime(k.CreatedAt), m.ID); err != nil {
				return err
			}
		}
		var ws, member int
		if err := tx.QueryRowContext(ctx, `SELECT count(*), count(CASE WHEN member_id = ? AND ephemeral = 0 THEN 1 END)
			FROM api_keys WHERE workspace_id = ? AND revoked_at = ''`, m.ID, k.WorkspaceID).Scan(&ws, &member); err != nil {
			return err
		}
		if err := check(m, ws, member); err != nil {
			return err
		}
		if err := insertKey(ctx, tx, k); err != nil {
			return err
		}
		if err := notifyKeys(ctx, s.db, tx, invMember+m.ID); err != nil {
			return err
		}
		return s.audit.Record(ctx, tx, ev(m, revoked))
	})
	return revoked, err
}
