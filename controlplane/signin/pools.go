package signin

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/controlplane/store"
)

// poolRecord is a pool as stored.
type poolRecord struct {
	ID        string
	Workspace string
	Project   string
	Name      string
	Settings  Settings
	UserCount int
	CreatedAt time.Time
	UpdatedAt time.Time
}

const poolCols = `id, workspace_id, project_id, name, settings, user_count, created_at, updated_at`

func scanPool(sc interface{ Scan(...any) error }) (poolRecord, error) {
	var p poolRecord
	var settings, created, updated string
	if err := sc.Scan(&p.ID, &p.Workspace, &p.Project, &p.Name, &settings, &p.UserCount, &created, &updated); err != nil {
		return p, err
	}
	p.Settings = DefaultSettings()
	if err := json.Unmarshal([]byte(settings), &p.Settings); err != nil {
		return p, fmt.Errorf("signin: pool %s settings: %w", p.ID, err)
	}
	if p.Settings.AllowedOrigins == nil {
		p.Settings.AllowedOrigins = []string{}
	}
	p.CreatedAt, p.UpdatedAt = store.ParseTime(created), store.ParseTime(updated)
	return p, nil
}

// poolByID returns a pool, store.ErrNotFound when there is none.
func poolByID(ctx context.Context, q store.Querier, id string) (poolRecord, error) {
	p, err := scanPool(q.QueryRowContext(ctx, `SELECT `+poolCols+` FROM signin_pools WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return p, store.ErrNotFound
	}
	if err != nil {
		return p, fmt.Errorf("signin: pool: %w", err)
	}
	return p, nil
}

func queryPools(ctx context.Context, q store.Querier, where string, args ...any) ([]poolRecord, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+poolCols+` FROM signin_pools WHERE `+where+` ORDER BY created_at, id`, args...)
	if err != nil {
		return nil, fmt.Errorf("signin: pools: %w", err)
	}
	defer rows.Close()
	var out []poolRecord
	for rows.Next() {
		p, err := scanPool(rows)
		if err != nil {
			return nil, fmt.Errorf("signin: pools: %w", err)
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

func poolsOfWorkspace(ctx context.Context, q store.Querier, ws string) ([]poolRecord, error) {
	return queryPools(ctx, q, `workspace_id = ?`, ws)
}

func poolsOfProject(ctx context.Context, q store.Querier, project string) ([]poolRecord, error) {
	return queryPools(ctx, q, `project_id = ?`, project)
}

func saveSettings(ctx context.Context, tx *sql.Tx, p poolRecord) error {
	raw, err := json.Marshal(p.Settings)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE signin_pools SET name = ?, settings = ?, updated_at = ? WHERE id = ?`,
		p.Name, string(raw), store.FormatTime(p.UpdatedAt), p.ID); err != nil {
		if store.IsUniqueViolation(err) {
			return api.Conflict("name_taken", "this project already has a sign-in pool named %q", p.Name)
		}
		return fmt.Errorf("signin: save pool: %w", err)
	}
	return nil
}

// Pool is a sign-in pool as the management API shows it.
type Pool struct {
	ID        string `json:"id"`
	ProjectID string `json:"projectId"`
	Name      string `json:"name"`
	// Settings are the pool's settings.
	Settings Settings `json:"settings"`
	// EffectiveOrigins are the origins allowed now: allowedOrigins, or the
	// project's own addresses when that is empty.
	EffectiveOrigins []string `json:"effectiveOrigins"`
	// UserCount is how many users the pool holds; UserLimit the plan's cap
	// (-1: none).
	UserCount int `json:"userCount"`
	UserLimit int `json:"userLimit"`
	// Issuer and Audience are the iss and aud of the pool's access tokens.
	Issuer   string `json:"issuer"`
	Audience string `json:"audience"`
	// Endpoints are the end-user API's base URL and the JWKS URL.
	Endpoints Endpoints `json:"endpoints"`
	// Keys are the published signing keys (public parts only).
	Keys      []KeyView `json:"keys"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// Endpoints are where an app reaches a pool.
type Endpoints struct {
	Base string `json:"base" doc:"the end-user API: POST <base>/signup, /signin, /token/refresh, /signout, /verify, /recover; GET <base>/user"`
	JWKS string `json:"jwks" doc:"the public keys that verify access tokens offline"`
}

// PoolAnswer wraps one pool.
type PoolAnswer struct {
	Pool Pool `json:"pool"`
}

// PoolList is the answer of a project's pools.
type PoolList struct {
	Pools []Pool `json:"pools"`
}

// CreateRequest is the body of POST /api/projects/{id}/auth-pools: a name
// and any settings (the rest default).
type CreateRequest struct {
	Name     string         `json:"name"`
	Settings *SettingsPatch `json:"settings,omitempty"`
}

// UpdateRequest is the body of PATCH /api/auth-pools/{id}: a new name
// and/or settings, merged over the saved ones.
type UpdateRequest struct {
	Name     *string        `json:"name,omitempty"`
	Settings *SettingsPatch `json:"settings,omitempty"`
}

// patchOf returns *p, or the empty patch.
func patchOf(p *SettingsPatch) SettingsPatch {
	if p == nil {
		return SettingsPatch{}
	}
	return *p
}

// RotateRequest is the body of POST /api/auth-pools/{id}/keys/rotate.
type RotateRequest struct {
	// RevokePrevious drops every earlier key at once, so tokens they signed
	// stop verifying (after a key may have leaked); otherwise the previous
	// key stays published until its tokens expire.
	RevokePrevious bool `json:"revokePrevious,omitempty"`
}

// issuer is the iss of pool's tokens.
func (s *Service) issuer(pool string) string { return s.cfg.BaseURL + "/api/auth/" + pool }

func validPoolName(name string) (string, error) {
	name = strings.TrimSpace(name)
	switch {
	case name == "":
		return "", api.Invalid("name is required").With("field", "name")
	case len(name) > MaxNameLen:
		return "", api.Invalid("name is at most %d characters", MaxNameLen).With("field", "name")
	case strings.ContainsFunc(name, unicode.IsControl):
		return "", api.Invalid("name cannot hold control characters").With("field", "name")
	}
	return name, nil
}

// view renders p with its keys and the project's addresses.
func (s *Service) view(ctx context.Context, p poolRecord, prj projects.Project) (Pool, error) {
	keys, err := keysOf(ctx, s.d.DB, p.ID)
	if err != nil {
		return Pool{}, err
	}
	return Pool{ID: p.ID, ProjectID: p.Project, Name: p.Name, Settings: p.Settings, EffectiveOrigins: effectiveOrigins(p.Settings, prj),
		UserCount: p.UserCount, UserLimit: s.cfg.limits(s.d.Plans.Plan(ctx, p.Workspace)).UsersPerPool,
		Issuer: s.issuer(p.ID), Audience: p.ID,
		Endpoints: Endpoints{Base: s.issuer(p.ID), JWKS: s.issuer(p.ID) + "/.well-known/jwks.json"},
		Keys:      keyViews(keys, s.now()), CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}, nil
}

// CreatePool makes a pool in a project with its first two signing keys,
// within the plan's count of pools.
func (s *Service) CreatePool(ctx context.Context, pr *auth.Principal, projectID string, req CreateRequest) (Pool, error) {
	name, err := validPoolName(req.Name)
	if err != nil {
		return Pool{}, err
	}
	prj, err := s.d.Projects.Get(ctx, pr.WorkspaceID, projectID)
	if err != nil {
		return Pool{}, err
	}
	st, err := patchOf(req.Settings).apply(DefaultSettings(), prj)
	if err != nil {
		return Pool{}, err
	}
	if err := s.d.Projects.RequireActive(ctx, projectID); err != nil {
		return Pool{}, err
	}
	now := s.now()
	p := poolRecord{ID: store.NewID("sip"), Workspace: pr.WorkspaceID, Project: projectID, Name: name, Settings: st, CreatedAt: now, UpdatedAt: now}
	cur, err := s.newKey(p.ID, keyCurrent, st.AccessTokenSeconds, now)
	if err != nil {
		return Pool{}, err
	}
	next, err := s.newKey(p.ID, keyNext, st.AccessTokenSeconds, now)
	if err != nil {
		return Pool{}, err
	}
	raw, err := json.Marshal(st)
	if err != nil {
		return Pool{}, err
	}
	plan := s.d.Plans.Plan(ctx, pr.WorkspaceID)
	limit := s.cfg.limits(plan).Pools
	err = s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM signin_pools WHERE workspace_id = ?`, pr.WorkspaceID).Scan(&n); err != nil {
			return fmt.Errorf("signin: count pools: %w", err)
		}
		if limit != plans.Unlimited && n >= limit {
			e := api.E(api.KindPaymentRequired, "plan_limit", "the %s plan holds %d sign-in pool(s) and the workspace has %d: delete one or move to a larger plan", plan, limit, n).
				With("limit", limit).With("current", n)
			if above := s.planAbove(n, func(l Limits) int { return l.Pools }); above != "" {
				e = e.With("required_plan", above)
			}
			return e
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO signin_pools(`+poolCols+`) VALUES (?,?,?,?,?,0,?,?) ON CONFLICT (project_id, name) DO NOTHING`,
			p.ID, p.Workspace, p.Project, p.Name, string(raw), store.FormatTime(now), store.FormatTime(now))
		if err != nil {
			return fmt.Errorf("signin: insert pool: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			if err != nil {
				return err
			}
			return api.Conflict("name_taken", "this project already has a sign-in pool named %q", name)
		}
		for _, k := range []keyRecord{cur, next} {
			if err := insertKey(ctx, tx, k); err != nil {
				return err
			}
		}
		return s.d.Audit.Record(ctx, tx, audit.Event{Workspace: pr.WorkspaceID, Actor: pr, Action: "auth_pool.create", Category: audit.CategoryData,
			TargetType: "auth_pool", TargetID: p.ID, ProjectID: projectID, Summary: fmt.Sprintf("created sign-in pool %s", name)})
	})
	if err != nil {
		return Pool{}, err
	}
	return s.view(ctx, p, prj)
}

// load returns pool id and its project for a caller allowed op on it: 404
// for none or another workspace's, 403 for a key of another project.
func (s *Service) load(ctx context.Context, pr *auth.Principal, id string, op auth.Op) (poolRecord, projects.Project, error) {
	p, err := poolByID(ctx, s.d.DB, id)
	if errors.Is(err, store.ErrNotFound) || err == nil && p.Workspace != pr.WorkspaceID {
		return poolRecord{}, projects.Project{}, api.NotFound("sign-in pool " + id)
	}
	if err != nil {
		return poolRecord{}, projects.Project{}, err
	}
	if err := auth.Authorize(pr, op, p.Project); err != nil {
		return poolRecord{}, projects.Project{}, err
	}
	prj, err := s.d.Projects.Get(ctx, p.Workspace, p.Project)
	if err != nil {
		return poolRecord{}, projects.Project{}, err
	}
	return p, prj, nil
}

// GetPool returns a pool.
func (s *Service) GetPool(ctx context.Context, pr *auth.Principal, id string) (Pool, error) {
	p, prj, err := s.load(ctx, pr, id, OpRead)
	if err != nil {
		return Pool{}, err
	}
	return s.view(ctx, p, prj)
}

// ListPools returns a project's pools.
func (s *Service) ListPools(ctx context.Context, pr *auth.Principal, projectID string) ([]Pool, error) {
	prj, err := s.d.Projects.Get(ctx, pr.WorkspaceID, projectID)
	if err != nil {
		return nil, err
	}
	recs, err := poolsOfProject(ctx, s.d.DB, projectID)
	if err != nil {
		return nil, err
	}
	out := []Pool{}
	for _, p := range recs {
		v, err := s.view(ctx, p, prj)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// UpdatePool renames a pool and/or merges settings over its saved ones. A
// longer access-token lifetime is remembered by the signing keys, so a
// key rotated later stays published as long as its tokens may live.
func (s *Service) UpdatePool(ctx context.Context, pr *auth.Principal, id string, req UpdateRequest) (Pool, error) {
	p, prj, err := s.load(ctx, pr, id, OpWrite)
	if err != nil {
		return Pool{}, err
	}
	if req.Name != nil {
		if p.Name, err = validPoolName(*req.Name); err != nil {
			return Pool{}, err
		}
	}
	if err := s.d.Projects.RequireActive(ctx, p.Project); err != nil {
		return Pool{}, err
	}
	var out poolRecord
	err = s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		cur, err := poolByID(ctx, tx, id)
		if err != nil {
			return err
		}
		before := cur.Settings
		cur.Name = p.Name
		if cur.Settings, err = patchOf(req.Settings).apply(cur.Settings, prj); err != nil {
			return err
		}
		cur.UpdatedAt = s.now()
		if err := saveSettings(ctx, tx, cur); err != nil {
			return err
		}
		if cur.Settings.AccessTokenSeconds > before.AccessTokenSeconds {
			if err := lengthenKeys(ctx, tx, id, cur.Settings.AccessTokenSeconds); err != nil {
				return err
			}
		}
		out = cur
		return s.d.Audit.Record(ctx, tx, audit.Event{Workspace: pr.WorkspaceID, Actor: pr, Action: "auth_pool.update", Category: audit.CategorySettings,
			TargetType: "auth_pool", TargetID: id, ProjectID: cur.Project, Summary: fmt.Sprintf("changed sign-in pool %s", cur.Name),
			Details: map[string]any{"before": before, "after": cur.Settings}})
	})
	if err != nil {
		return Pool{}, err
	}
	return s.view(ctx, out, prj)
}

// RotateKeys rotates a pool's signing keys now (see rotate).
func (s *Service) RotateKeys(ctx context.Context, pr *auth.Principal, id string, req RotateRequest) (Pool, error) {
	p, prj, err := s.load(ctx, pr, id, OpWrite)
	if err != nil {
		return Pool{}, err
	}
	if err := s.d.Projects.RequireActive(ctx, p.Project); err != nil {
		return Pool{}, err
	}
	err = s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		cur, err := poolByID(ctx, tx, id)
		if err != nil {
			return err
		}
		if err := s.rotate(ctx, tx, cur, req.RevokePrevious, s.now()); err != nil {
			return err
		}
		summary := fmt.Sprintf("rotated the signing keys of sign-in pool %s", cur.Name)
		if req.RevokePrevious {
			summary += ", revoking the previous ones"
		}
		return s.d.Audit.Record(ctx, tx, audit.Event{Workspace: pr.WorkspaceID, Actor: pr, Action: "auth_pool.rotate_keys", Category: audit.CategorySettings,
			TargetType: "auth_pool", TargetID: id, ProjectID: cur.Project, Summary: summary})
	})
	if err != nil {
		return Pool{}, err
	}
	return s.view(ctx, p, prj)
}

// DeletePool removes a pool with its users, sessions, tokens and keys.
func (s *Service) DeletePool(ctx context.Context, pr *auth.Principal, id string) error {
	p, _, err := s.load(ctx, pr, id, OpWrite)
	if err != nil {
		return err
	}
	return s.removePool(ctx, pr, p, fmt.Sprintf("deleted sign-in pool %s", p.Name))
}

// poolTables are the tables holding a pool's rows, the pool's own last.
var poolTables = []string{"signin_email_tokens", "signin_refresh_tokens", "signin_sessions", "signin_lockouts", "signin_users", "signin_keys"}

// removePool deletes every row of pool p in one transaction.
func (s *Service) removePool(ctx context.Context, pr *auth.Principal, p poolRecord, summary string) error {
	err := s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		for _, t := range poolTables {
			if _, err := tx.ExecContext(ctx, `DELETE FROM `+t+` WHERE pool_id = ?`, p.ID); err != nil {
				return fmt.Errorf("signin: delete pool %s: %w", p.ID, err)
			}
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM signin_pools WHERE id = ?`, p.ID); err != nil {
			return fmt.Errorf("signin: delete pool %s: %w", p.ID, err)
		}
		return s.d.Audit.Record(ctx, tx, audit.Event{Workspace: p.Workspace, Actor: pr, Action: "auth_pool.delete", Category: audit.CategoryData,
			TargetType: "auth_pool", TargetID: p.ID, ProjectID: p.Project, Summary: summary})
	})
	if err != nil {
		return err
	}
	s.forgetKeys(p.ID)
	return nil
}

// forgetKeys drops a deleted pool's keys from memory.
func (s *Service) forgetKeys(pool string) {
	s.keysMu.Lock()
	defer s.keysMu.Unlock()
	for id := range s.keys {
		if s.keys[id].pool == pool {
			delete(s.keys, id)
		}
	}
}
