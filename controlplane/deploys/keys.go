package deploys

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/svcplatform/platform/controlplane/store"
)

// Keys mints and revokes the key each deployment of an app or worker
// program is given (accounts.Service: CreateRunKey, RevokeRunKey): an
// ephemeral key limited to the deployment's project, acting with the
// deploying member's role as it stands at each call.
type Keys interface {
	CreateRunKey(ctx context.Context, workspace, member, starterKey, project string, readOnly bool, expires time.Time) (id, secret string, err error)
	RevokeRunKey(ctx context.Context, id string) error
}

// TokenEnv is the variable holding a deployment's key.
const TokenEnv = "PLATFORM_TOKEN"

// DefaultDeployKeyTTL is the backstop expiry of a deployment's key: it is
// revoked as soon as the deployment is replaced, stops, fails or its
// project is deleted.
const DefaultDeployKeyTTL = 365 * 24 * time.Hour

func keyAAD(deploymentID string) []byte { return []byte("deployment key\x00" + deploymentID) }

// mintKey makes the key of a deployment about to run, stores it sealed
// and returns its secret ("" when keys are not configured or the deploy
// has no member to act for).
func (s *Service) keys() Keys {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg.Keys
}

func (s *Service) mintKey(ctx context.Context, b builder, d *Deployment) (string, error) {
	keys := s.keys()
	if keys == nil {
		return "", nil
	}
	if d.memberID == "" {
		b.logf("key: none (deployed without a member to act for): %s is not set", TokenEnv)
		return "", nil
	}
	now := s.cfg.Clock.Now()
	id, secret, err := keys.CreateRunKey(ctx, d.workspaceID, d.memberID, d.starterKey, d.ProjectID, false, now.Add(s.cfg.DeployKeyTTL))
	if err != nil {
		return "", fmt.Errorf("the deployment's key: %w", err)
	}
	sealed := s.cfg.Sealer.Seal([]byte(secret), keyAAD(d.ID))
	if _, err := s.cfg.DB.ExecContext(ctx, `INSERT INTO deployment_keys(deployment_id, project_id, key_id, secret_sealed, created_at) VALUES (?,?,?,?,?)`,
		d.ID, d.ProjectID, id, sealed, store.FormatTime(now)); err != nil {
		_ = keys.RevokeRunKey(context.WithoutCancel(ctx), id)
		return "", fmt.Errorf("deploys: store the deployment's key: %w", err)
	}
	b.logf("key: %s holds a key limited to this project, acting with %s's role; it is revoked when this deployment is replaced", TokenEnv, d.Actor)
	return secret, nil
}

// storedKey returns the secret of a deployment's key in force ("" when it
// has none or it was revoked).
func (s *Service) storedKey(ctx context.Context, deploymentID string) (string, error) {
	var sealed []byte
	var revoked string
	err := s.cfg.DB.QueryRowContext(ctx, `SELECT secret_sealed, revoked_at FROM deployment_keys WHERE deployment_id = ?`, deploymentID).Scan(&sealed, &revoked)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && revoked != "") {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("deploys: deployment key: %w", err)
	}
	raw, err := s.cfg.Sealer.Open(sealed, keyAAD(deploymentID))
	if err != nil {
		return "", fmt.Errorf("deploys: deployment key: %w", err)
	}
	return string(raw), nil
}

// revokeKeys revokes the keys in force of the deployments named, or with
// project set of every deployment of that project. Failures are logged:
// a key that could not be revoked is retried on the next call.
func (s *Service) revokeKeys(ctx context.Context, project string, deployments ...string) {
	keys := s.keys()
	if keys == nil {
		return
	}
	var rows *sql.Rows
	var err error
	if project != "" {
		rows, err = s.cfg.DB.QueryContext(ctx, `SELECT deployment_id, key_id FROM deployment_keys WHERE project_id = ? AND revoked_at = ''`, project)
	} else {
		if len(deployments) == 0 {
			return
		}
		args := make([]any, len(deployments))
		marks := "?"
		for i, d := range deployments {
			args[i] = d
			if i > 0 {
				marks += ",?"
			}
		}
		rows, err = s.cfg.DB.QueryContext(ctx, `SELECT deployment_id, key_id FROM deployment_keys WHERE revoked_at = '' AND deployment_id IN (`+marks+`)`, args...)
	}
	if err != nil {
		s.cfg.Logger.Warn("deploys: revoke deployment keys", "err", err)
		return
	}
	type key struct{ deployment, id string }
	var inForce []key
	for rows.Next() {
		var k key
		if err := rows.Scan(&k.deployment, &k.id); err != nil {
			s.cfg.Logger.Warn("deploys: revoke deployment keys", "err", err)
			break
		}
		inForce = append(inForce, k)
	}
	rows.Close()
	now := store.FormatTime(s.cfg.Clock.Now())
	for _, k := range inForce {
		if err := keys.RevokeRunKey(ctx, k.id); err != nil {
			s.cfg.Logger.Warn("deploys: revoke deployment key", "deployment", k.deployment, "err", err)
			continue
		}
		if _, err := s.cfg.DB.ExecContext(ctx, `UPDATE deployment_keys SET revoked_at = ? WHERE deployment_id = ?`, now, k.deployment); err != nil {
			s.cfg.Logger.Warn("deploys: revoke deployment key", "deployment", k.deployment, "err", err)
		}
	}
}

// withKey returns env with the deployment's key added (a copy; env is the
// pinned variables, which keep their digest).
func withKey(env map[string]string, secret string) map[string]string {
	if secret == "" {
		return env
	}
	out := make(map[string]string, len(env)+1)
	for k, v := range env {
		out[k] = v
	}
	out[TokenEnv] = secret
	return out
}
