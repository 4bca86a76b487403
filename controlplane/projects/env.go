package projects

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/store"
)

// Limits of environment variables.
const (
	MaxEnvKeyLen     = 256
	MaxEnvValueBytes = 64 << 10
	MaxEnvPerProject = 500
	// ProjectIDVar is set by the service in every deployment and never
	// overridden by a stored variable.
	ProjectIDVar = "SERVICE_PROJECT_ID"
)

var envKeyRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Variable is an environment variable.
type Variable struct {
	ID        string    `json:"id"`
	Key       string    `json:"key"`
	Value     string    `json:"value"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// EnvRequest is the body of POST /api/projects/{id}/env.
type EnvRequest struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// EnvPatch is the body of PATCH /api/projects/{id}/env/{envId}.
type EnvPatch struct {
	Key   *string `json:"key,omitempty"`
	Value *string `json:"value,omitempty"`
}

// EnvAnswer is the answer of an upsert or change.
type EnvAnswer struct {
	Variable Variable `json:"variable"`
	Created  bool     `json:"created"`
	// FunctionsBehind names functions still running older values: they get
	// the change on their next deploy.
	FunctionsBehind []string `json:"functions_behind"`
	Note            string   `json:"note,omitempty"`
}

func checkEnvKey(k string) error {
	if len(k) == 0 || len(k) > MaxEnvKeyLen || !envKeyRE.MatchString(k) {
		return api.E(api.KindInvalid, "invalid_env_key",
			"key %q must start with a letter or underscore, then letters, digits or underscores (at most %d characters)", k, MaxEnvKeyLen)
	}
	return nil
}

func checkEnvValue(v string) error {
	if len(v) > MaxEnvValueBytes {
		return api.E(api.KindTooLarge, "env_value_too_large", "value is larger than %d bytes", MaxEnvValueBytes)
	}
	return nil
}

func (s *Service) aad(projectID, key string) []byte { return []byte(projectID + "\x00" + key) }

func (s *Service) note(key string) string {
	if key == ProjectIDVar {
		return ProjectIDVar + " is set by the service to the project id in every deployment; this stored value is kept but never overrides it"
	}
	return ""
}

func (s *Service) functionsBehind(ctx context.Context, projectID string) ([]string, error) {
	if s.deployments == nil {
		return []string{}, nil
	}
	names, err := s.deployments.FunctionsBehind(ctx, projectID)
	if names == nil {
		names = []string{}
	}
	return names, err
}

// SetEnv creates or replaces the variable key (case kept: API_KEY and
// api_key are two variables).
func (s *Service) SetEnv(ctx context.Context, pr *auth.Principal, projectID string, req EnvRequest) (EnvAnswer, error) {
	if err := checkEnvKey(req.Key); err != nil {
		return EnvAnswer{}, err
	}
	if err := checkEnvValue(req.Value); err != nil {
		return EnvAnswer{}, err
	}
	if _, err := s.Writable(ctx, pr.WorkspaceID, projectID); err != nil {
		return EnvAnswer{}, err
	}
	now := s.clock.Now()
	out := EnvAnswer{Variable: Variable{Key: req.Key, Value: req.Value, UpdatedAt: now}, Note: s.note(req.Key)}
	sealed := s.sealer.Seal([]byte(req.Value), s.aad(projectID, req.Key))
	err := s.db.Tx(ctx, func(tx *sql.Tx) error {
		var created string
		err := tx.QueryRowContext(ctx, `SELECT id, created_at FROM env_vars WHERE project_id = ? AND key = ?`, projectID, req.Key).Scan(&out.Variable.ID, &created)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM env_vars WHERE project_id = ?`, projectID).Scan(&n); err != nil {
				return err
			}
			if n >= MaxEnvPerProject {
				return api.Conflict("env_limit", "a project holds at most %d variables", MaxEnvPerProject)
			}
			out.Created, out.Variable.ID, out.Variable.CreatedAt = true, store.NewID("env"), now
			if _, err := tx.ExecContext(ctx, `INSERT INTO env_vars(id, project_id, key, value_enc, created_at, updated_at) VALUES (?,?,?,?,?,?)`,
				out.Variable.ID, projectID, req.Key, sealed, store.FormatTime(now), store.FormatTime(now)); err != nil {
				return err
			}
		case err != nil:
			return err
		default:
			out.Variable.CreatedAt = store.ParseTime(created)
			if _, err := tx.ExecContext(ctx, `UPDATE env_vars SET value_enc = ?, updated_at = ? WHERE id = ?`, sealed, store.FormatTime(now), out.Variable.ID); err != nil {
				return err
			}
		}
		verb := "updated"
		if out.Created {
			verb = "created"
		}
		return s.audit.Record(ctx, tx, audit.Event{Workspace: pr.WorkspaceID, Actor: pr, Action: "env.set", Category: audit.CategoryEnv,
			TargetType: "env", TargetID: out.Variable.ID, ProjectID: projectID, Summary: verb + " variable " + req.Key})
	})
	if err != nil {
		return EnvAnswer{}, err
	}
	out.FunctionsBehind, err = s.functionsBehind(ctx, projectID)
	return out, err
}

// EnvList is the answer of GET /api/projects/{id}/env.
type EnvList struct {
	Variables []Variable `json:"variables"`
	// System are the variables the service sets itself.
	System map[string]string `json:"system"`
}

// Env returns the project's variables with their values.
func (s *Service) Env(ctx context.Context, workspace, projectID string) (EnvList, error) {
	if _, err := s.Get(ctx, workspace, projectID); err != nil {
		return EnvList{}, err
	}
	vars, err := s.envRows(ctx, projectID)
	if err != nil {
		return EnvList{}, err
	}
	return EnvList{Variables: vars, System: map[string]string{ProjectIDVar: projectID}}, nil
}

func (s *Service) envRows(ctx context.Context, projectID string) ([]Variable, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, key, value_enc, created_at, updated_at FROM env_vars WHERE project_id = ? ORDER BY key`, projectID)
	if err != nil {
		return nil, fmt.Errorf("projects: env: %w", err)
	}
	defer rows.Close()
	out := []Variable{}
	for rows.Next() {
		var v Variable
		var enc []byte
		var created, updated string
		if err := rows.Scan(&v.ID, &v.Key, &enc, &created, &updated); err != nil {
			return nil, fmt.Errorf("projects: env: %w", err)
		}
		val, err := s.sealer.Open(enc, s.aad(projectID, v.Key))
		if err != nil {
			return nil, fmt.Errorf("projects: env %s: %w", v.Key, err)
		}
		v.Value, v.CreatedAt, v.UpdatedAt = string(val), store.ParseTime(created), store.ParseTime(updated)
		out = append(out, v)
	}
	return out, rows.Err()
}

// DeployEnv is what a deployment receives: the stored variables with
// SERVICE_PROJECT_ID set to the project id whatever is stored.
func (s *Service) DeployEnv(ctx context.Context, projectID string) (map[string]string, error) {
	vars, err := s.envRows(ctx, projectID)
	if err != nil {
		return nil, err
	}
	env := make(map[string]string, len(vars)+1)
	for _, v := range vars {
		env[v.Key] = v.Value
	}
	env[ProjectIDVar] = projectID
	return env, nil
}

// PatchEnv renames a variable or changes its value.
func (s *Service) PatchEnv(ctx context.Context, pr *auth.Principal, projectID, envID string, req EnvPatch) (EnvAnswer, error) {
	if req.Key != nil {
		if err := checkEnvKey(*req.Key); err != nil {
			return EnvAnswer{}, err
		}
	}
	if req.Value != nil {
		if err := checkEnvValue(*req.Value); err != nil {
			return EnvAnswer{}, err
		}
	}
	if _, err := s.Writable(ctx, pr.WorkspaceID, projectID); err != nil {
		return EnvAnswer{}, err
	}
	var out EnvAnswer
	err := s.db.Tx(ctx, func(tx *sql.Tx) error {
		var v Variable
		var enc []byte
		var created string
		err := tx.QueryRowContext(ctx, `SELECT id, key, value_enc, created_at FROM env_vars WHERE id = ? AND project_id = ?`, envID, projectID).
			Scan(&v.ID, &v.Key, &enc, &created)
		if errors.Is(err, sql.ErrNoRows) {
			return api.NotFound("variable")
		}
		if err != nil {
			return err
		}
		val, err := s.sealer.Open(enc, s.aad(projectID, v.Key))
		if err != nil {
			return err
		}
		v.Value, v.CreatedAt, v.UpdatedAt = string(val), store.ParseTime(created), s.clock.Now()
		if req.Key != nil {
			v.Key = *req.Key
		}
		if req.Value != nil {
			v.Value = *req.Value
		}
		_, err = tx.ExecContext(ctx, `UPDATE env_vars SET key = ?, value_enc = ?, updated_at = ? WHERE id = ?`,
			v.Key, s.sealer.Seal([]byte(v.Value), s.aad(projectID, v.Key)), store.FormatTime(v.UpdatedAt), v.ID)
		if store.IsUniqueViolation(err) {
			return api.Conflict("env_exists", "variable %s already exists", v.Key)
		}
		if err != nil {
			return err
		}
		out = EnvAnswer{Variable: v, Note: s.note(v.Key)}
		return s.audit.Record(ctx, tx, audit.Event{Workspace: pr.WorkspaceID, Actor: pr, Action: "env.set", Category: audit.CategoryEnv,
			TargetType: "env", TargetID: v.ID, ProjectID: projectID, Summary: "updated variable " + v.Key})
	})
	if err != nil {
		return EnvAnswer{}, err
	}
	out.FunctionsBehind, err = s.functionsBehind(ctx, projectID)
	return out, err
}

// DeleteEnv removes a variable.
func (s *Service) DeleteEnv(ctx context.Context, pr *auth.Principal, projectID, envID string) error {
	if _, err := s.Writable(ctx, pr.WorkspaceID, projectID); err != nil {
		return err
	}
	return s.db.Tx(ctx, func(tx *sql.Tx) error {
		var key string
		err := tx.QueryRowContext(ctx, `SELECT key FROM env_vars WHERE id = ? AND project_id = ?`, envID, projectID).Scan(&key)
		if errors.Is(err, sql.ErrNoRows) {
			return api.NotFound("variable")
		}
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM env_vars WHERE id = ?`, envID); err != nil {
			return err
		}
		return s.audit.Record(ctx, tx, audit.Event{Workspace: pr.WorkspaceID, Actor: pr, Action: "env.delete", Category: audit.CategoryEnv,
			TargetType: "env", TargetID: envID, ProjectID: projectID, Summary: "deleted variable " + key})
	})
}
