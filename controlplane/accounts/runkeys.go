package accounts

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/store"
)

// CreateRunKey makes the ephemeral key an agent run executes with: limited
// to project, read-only when readOnly (or when the starter's own key is),
// expiring at expires, acting with member's role as it stands at each call.
// The starter must still be an active member and, when they started the run
// with a key (starterKey), that key must still work and not be limited to
// another project. Ephemeral keys are never listed and do not count toward
// the key limits.
func (s *Service) CreateRunKey(ctx context.Context, workspace, member, starterKey, project string, readOnly bool, expires time.Time) (string, string, error) {
	now := s.clock.Now()
	secret, prefix, hash := auth.NewKey()
	id := store.NewID("key")
	err := s.runKeys().Tx(ctx, func(tx *sql.Tx) error {
		var status string
		err := tx.QueryRowContext(ctx, `SELECT status FROM members WHERE workspace_id = ? AND id = ?`, workspace, member).Scan(&status)
		if errors.Is(err, sql.ErrNoRows) || (err == nil && status != "active") {
			return api.Forbidden("starter_gone", "the member who started this run is no longer an active member")
		}
		if err != nil {
			return err
		}
		if starterKey != "" {
			var access, keyProject, revoked, expiresAt string
			err := tx.QueryRowContext(ctx, `SELECT access, project_id, revoked_at, expires_at FROM api_keys WHERE workspace_id = ? AND id = ?`,
				workspace, starterKey).Scan(&access, &keyProject, &revoked, &expiresAt)
			if errors.Is(err, sql.ErrNoRows) || (err == nil && revoked != "") {
				return api.Forbidden("starter_key_revoked", "the key that set up this run was revoked")
			}
			if err != nil {
				return err
			}
			if expiresAt != "" && !store.ParseTime(expiresAt).After(now) {
				return api.Forbidden("starter_key_expired", "the key that set up this run has expired")
			}
			if keyProject != "" && keyProject != project {
				return api.Forbidden("project_key_mismatch", "the key that set up this run is limited to another project")
			}
			if access == "read_only" {
				readOnly = true
			}
		}
		access := "full"
		if readOnly {
			access = "read_only"
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO api_keys(id, workspace_id, member_id, name, public_id, secret_hash, access, project_id, created_at, expires_at, ephemeral)
			VALUES (?,?,?,?,?,?,?,?,?,?,1)`, id, workspace, member, "agent run", prefix, hash, access, project,
			store.FormatTime(now), store.FormatTime(expires))
		return err
	})
	if err != nil {
		return "", "", fmt.Errorf("accounts: run key: %w", err)
	}
	return id, secret, nil
}

// RevokeRunKey revokes an ephemeral run key; revoking twice is no error.
func (s *Service) RevokeRunKey(ctx context.Context, id string) error {
	_, err := s.runKeys().ExecContext(ctx, `UPDATE api_keys SET revoked_at = ? WHERE id = ? AND ephemeral = 1 AND revoked_at = ''`,
		store.FormatTime(s.clock.Now()), id)
	if err != nil {
		return fmt.Errorf("accounts: revoke run key: %w", err)
	}
	s.keys.invalidate(invKey + id)
	if err := notifyKeys(ctx, s.runKeys(), s.runKeys(), invKey+id); err != nil {
		return fmt.Errorf("accounts: revoke run key: %w", err)
	}
	return nil
}

// runKeys is the database run keys are written to (the SQL store's).
func (s *Service) runKeys() *store.DB { return s.store.(*SQLStore).db }
