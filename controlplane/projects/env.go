package projects

import (
	"context"
	"fmt"
	"regexp"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
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
	sv, created, err := s.store.SetVariable(ctx, projectID, req.Key, s.sealer.Seal([]byte(req.Value), s.aad(projectID, req.Key)),
		s.clock.Now(), MaxEnvPerProject, func(v SealedVariable, created bool) audit.Event {
			verb := "updated"
			if created {
				verb = "created"
			}
			return audit.Event{Workspace: pr.WorkspaceID, Actor: pr, Action: "env.set", Category: audit.CategoryEnv,
				TargetType: "env", TargetID: v.ID, ProjectID: projectID, Summary: verb + " variable " + req.Key}
		})
	if err != nil {
		return EnvAnswer{}, err
	}
	out := EnvAnswer{Created: created, Note: s.note(req.Key),
		Variable: Variable{ID: sv.ID, Key: sv.Key, Value: req.Value, CreatedAt: sv.CreatedAt, UpdatedAt: sv.UpdatedAt}}
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
	sealed, err := s.store.Variables(ctx, projectID)
	if err != nil {
		return nil, err
	}
	out := make([]Variable, 0, len(sealed))
	for _, v := range sealed {
		val, err := s.sealer.Open(v.Sealed, s.aad(projectID, v.Key))
		if err != nil {
			return nil, fmt.Errorf("projects: env %s: %w", v.Key, err)
		}
		out = append(out, Variable{ID: v.ID, Key: v.Key, Value: string(val), CreatedAt: v.CreatedAt, UpdatedAt: v.UpdatedAt})
	}
	return out, nil
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
	var value string
	sv, err := s.store.UpdateVariable(ctx, projectID, envID, func(v *SealedVariable) error {
		val, err := s.sealer.Open(v.Sealed, s.aad(projectID, v.Key))
		if err != nil {
			return err
		}
		value = string(val)
		if req.Key != nil {
			v.Key = *req.Key
		}
		if req.Value != nil {
			value = *req.Value
		}
		v.Sealed, v.UpdatedAt = s.sealer.Seal([]byte(value), s.aad(projectID, v.Key)), s.clock.Now()
		return nil
	}, func(v SealedVariable) audit.Event {
		return audit.Event{Workspace: pr.WorkspaceID, Actor: pr, Action: "env.set", Category: audit.CategoryEnv,
			TargetType: "env", TargetID: v.ID, ProjectID: projectID, Summary: "updated variable " + v.Key}
	})
	if err != nil {
		return EnvAnswer{}, err
	}
	out := EnvAnswer{Note: s.note(sv.Key), Variable: Variable{ID: sv.ID, Key: sv.Key, Value: value, CreatedAt: sv.CreatedAt, UpdatedAt: sv.UpdatedAt}}
	out.FunctionsBehind, err = s.functionsBehind(ctx, projectID)
	return out, err
}

// DeleteEnv removes a variable.
func (s *Service) DeleteEnv(ctx context.Context, pr *auth.Principal, projectID, envID string) error {
	if _, err := s.Writable(ctx, pr.WorkspaceID, projectID); err != nil {
		return err
	}
	return s.store.DeleteVariable(ctx, projectID, envID, func(key string) audit.Event {
		return audit.Event{Workspace: pr.WorkspaceID, Actor: pr, Action: "env.delete", Category: audit.CategoryEnv,
			TargetType: "env", TargetID: envID, ProjectID: projectID, Summary: "deleted variable " + key}
	})
}
