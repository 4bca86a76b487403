package signin

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/controlplane/store"
)

// The area's parts of project deletion, the project read, the security
// overview and the background sweep.
var (
	_ projects.Dependent = (*Service)(nil)
	_ projects.Counter   = (*Service)(nil)
)

// Name names the area's resources in teardown messages.
func (s *Service) Name() string { return "sign-in pools" }

// Blockers: sign-in pools never stop a project's deletion.
func (s *Service) Blockers(context.Context, string) ([]projects.Blocker, error) { return nil, nil }

// Remove deletes every pool of a deleted project, each in one transaction
// (users, sessions, tokens, keys); safe to call again after a failure,
// which names the pools left (projects.LeftBehind).
func (s *Service) Remove(ctx context.Context, projectID string) error {
	pools, err := poolsOfProject(ctx, s.d.DB, projectID)
	if err != nil {
		return err
	}
	var errs []error
	for _, p := range pools {
		if err := s.removePool(ctx, nil, p, fmt.Sprintf("deleted sign-in pool %s with its project", p.Name)); err != nil {
			errs = append(errs, projects.LeftBehind("sign-in pool "+p.ID, err))
		}
	}
	return errors.Join(errs...)
}

// Service is the key of the project read's services object.
func (s *Service) Service() string { return "authPools" }

// Count is the number of sign-in pools of a project.
func (s *Service) Count(ctx context.Context, projectID string) (int, error) {
	var n int
	if err := s.d.DB.QueryRowContext(ctx, `SELECT count(*) FROM signin_pools WHERE project_id = ?`, projectID).Scan(&n); err != nil {
		return 0, fmt.Errorf("signin: count: %w", err)
	}
	return n, nil
}

// LockedOutUsers counts the workspace's app users whose e-mail address is
// locked now after failed sign-ins in a row (the security overview's
// "End-user sign-in lockouts"; a security.Counter). Lockouts of addresses
// no user has are not counted.
func (s *Service) LockedOutUsers(ctx context.Context, workspace string) (int, error) {
	var n int
	err := s.d.DB.QueryRowContext(ctx, `SELECT count(*) FROM signin_lockouts l
		JOIN signin_pools p ON p.id = l.pool_id
		JOIN signin_users u ON u.pool_id = l.pool_id AND u.email = l.email
		WHERE p.workspace_id = ? AND l.locked_until > ?`, workspace, store.FormatTime(s.now())).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("signin: lockouts: %w", err)
	}
	return n, nil
}

// Sweep rotates keys that have signed for Config.KeyRotateEvery and
// deletes what can no longer be used: expired refresh tokens, e-mail
// tokens and sessions, lockouts that ended with no failure for a day,
// and retired keys whose tokens have all expired.
func (s *Service) Sweep(ctx context.Context) error {
	now := s.now()
	var errs []error
	if s.cfg.KeyRotateEvery > 0 {
		errs = append(errs, s.rotateDue(ctx, now))
	}
	t := store.FormatTime(now)
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`DELETE FROM signin_refresh_tokens WHERE expires_at <= ?`, []any{t}},
		{`DELETE FROM signin_email_tokens WHERE expires_at <= ?`, []any{t}},
		{`DELETE FROM signin_sessions WHERE expires_at <= ? OR (revoked_at <> '' AND revoked_at <= ?)`, []any{t, store.FormatTime(now.Add(-MaxAccessTokenSeconds * time.Second))}},
		{`DELETE FROM signin_lockouts WHERE locked_until <= ? AND last_failure_at <= ?`, []any{t, store.FormatTime(now.Add(-failureMemory))}},
		{`DELETE FROM signin_keys WHERE state = ? AND publish_until <= ?`, []any{keyRetired, t}},
	} {
		if _, err := s.d.DB.ExecContext(ctx, q.sql, q.args...); err != nil {
			errs = append(errs, fmt.Errorf("signin: sweep: %w", err))
		}
	}
	return errors.Join(errs...)
}

// rotateDue rotates each key that became current KeyRotateEvery ago or
// earlier, checking its age again inside the rotation's transaction so
// that replicas sweeping together rotate it once.
func (s *Service) rotateDue(ctx context.Context, now time.Time) error {
	cutoff := store.FormatTime(now.Add(-s.cfg.KeyRotateEvery))
	rows, err := s.d.DB.QueryContext(ctx, `SELECT pool_id FROM signin_keys WHERE state = ? AND activated_at <= ?`, keyCurrent, cutoff)
	if err != nil {
		return fmt.Errorf("signin: keys due: %w", err)
	}
	var due []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return fmt.Errorf("signin: keys due: %w", err)
		}
		due = append(due, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("signin: keys due: %w", err)
	}
	var errs []error
	for _, id := range due {
		err := s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM signin_keys WHERE pool_id = ? AND state = ? AND activated_at <= ?`, id, keyCurrent, cutoff).Scan(&n); err != nil {
				return err
			}
			if n == 0 {
				return nil // rotated meanwhile
			}
			p, err := poolByID(ctx, tx, id)
			if errors.Is(err, store.ErrNotFound) {
				return nil
			}
			if err != nil {
				return err
			}
			return s.rotate(ctx, tx, p, false, now)
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("signin: rotate keys of %s: %w", id, err))
		}
	}
	return errors.Join(errs...)
}
