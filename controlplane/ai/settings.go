package ai

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/store"
)

// Settings are a workspace admin's switches: the gateway as a whole, and
// models turned on or off against the catalogue's default.
type Settings struct {
	Enabled bool
	Models  map[string]bool
}

// settingsCache keeps each workspace's switches in memory; a change through
// this service replaces the entry at once.
type settingsCache struct {
	mu sync.RWMutex
	m  map[string]*Settings
}

func (s *Service) settings(ctx context.Context, ws string) (*Settings, error) {
	s.sets.mu.RLock()
	st := s.sets.m[ws]
	s.sets.mu.RUnlock()
	if st != nil {
		return st, nil
	}
	st = &Settings{Enabled: true, Models: map[string]bool{}}
	var on bool
	err := s.d.DB.QueryRowContext(ctx, `SELECT gateway_enabled FROM ai_settings WHERE workspace_id = ?`, ws).Scan(&on)
	switch {
	case err == nil:
		st.Enabled = on
	case errors.Is(err, sql.ErrNoRows):
	default:
		return nil, fmt.Errorf("ai: settings: %w", err)
	}
	rows, err := s.d.DB.QueryContext(ctx, `SELECT model_id, enabled FROM ai_model_settings WHERE workspace_id = ?`, ws)
	if err != nil {
		return nil, fmt.Errorf("ai: model settings: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var en bool
		if err := rows.Scan(&id, &en); err != nil {
			return nil, fmt.Errorf("ai: model settings: %w", err)
		}
		st.Models[id] = en
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ai: model settings: %w", err)
	}
	s.sets.mu.Lock()
	s.sets.m[ws] = st
	s.sets.mu.Unlock()
	return st, nil
}

// modelOn tells whether m is on for the workspace.
func (st *Settings) modelOn(m *Model) bool {
	if v, ok := st.Models[m.ID]; ok {
		return v
	}
	return m.Enabled
}

// SettingsView is the answer of GET and PUT /api/ai/settings.
type SettingsView struct {
	Enabled bool               `json:"enabled"`
	Models  []ModelSettingView `json:"models"`
}

// ModelSettingView is one model's switch.
type ModelSettingView struct {
	ID      string `json:"id"`
	Enabled bool   `json:"enabled"`
	// Default is the catalogue's setting, used when the workspace sets none.
	Default bool `json:"default"`
	// Set tells whether the workspace overrides the default.
	Set bool `json:"set"`
}

// SettingsRequest changes switches: enabled switches the gateway; models
// maps a model id to true (on), false (off) or null (back to the default).
type SettingsRequest struct {
	Enabled *bool            `json:"enabled,omitempty"`
	Models  map[string]*bool `json:"models,omitempty"`
}

// GetSettings returns the workspace's switches.
func (s *Service) GetSettings(ctx context.Context, p *auth.Principal) (SettingsView, error) {
	st, err := s.settings(ctx, p.WorkspaceID)
	if err != nil {
		return SettingsView{}, err
	}
	return s.settingsView(st), nil
}

func (s *Service) settingsView(st *Settings) SettingsView {
	v := SettingsView{Enabled: st.Enabled, Models: []ModelSettingView{}}
	for _, m := range s.cat.Models() {
		_, set := st.Models[m.ID]
		v.Models = append(v.Models, ModelSettingView{ID: m.ID, Enabled: st.modelOn(m), Default: m.Enabled, Set: set})
	}
	return v
}

// UpdateSettings changes the switches; admins only. The change and its
// audit row are one transaction.
func (s *Service) UpdateSettings(ctx context.Context, p *auth.Principal, req SettingsRequest) (SettingsView, error) {
	if p.Role < auth.Admin {
		return SettingsView{}, api.Forbidden("admin_required", "switching the AI gateway or a model needs an admin")
	}
	if req.Enabled == nil && len(req.Models) == 0 {
		return SettingsView{}, api.Invalid("send enabled and/or models")
	}
	ids := make([]string, 0, len(req.Models))
	for id := range req.Models {
		if _, ok := s.cat.Get(id); !ok {
			return SettingsView{}, api.E(api.KindInvalid, "unknown_model", "no model %q in the catalogue (GET /api/ai/chat lists them)", id).With("field", "models")
		}
		ids = append(ids, id)
	}
	sort.Strings(ids)
	ws := p.WorkspaceID
	now := store.FormatTime(s.d.Clock.Now())
	details := map[string]any{}
	err := s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		if req.Enabled != nil {
			if _, err := tx.ExecContext(ctx, `INSERT INTO ai_settings (workspace_id, gateway_enabled, updated_at) VALUES (?,?,?)
				ON CONFLICT (workspace_id) DO UPDATE SET gateway_enabled = excluded.gateway_enabled, updated_at = excluded.updated_at`,
				ws, *req.Enabled, now); err != nil {
				return fmt.Errorf("ai: save settings: %w", err)
			}
			details["enabled"] = *req.Enabled
		}
		models := map[string]any{}
		for _, id := range ids {
			v := req.Models[id]
			var err error
			if v == nil {
				_, err = tx.ExecContext(ctx, `DELETE FROM ai_model_settings WHERE workspace_id = ? AND model_id = ?`, ws, id)
				models[id] = nil
			} else {
				_, err = tx.ExecContext(ctx, `INSERT INTO ai_model_settings (workspace_id, model_id, enabled) VALUES (?,?,?)
					ON CONFLICT (workspace_id, model_id) DO UPDATE SET enabled = excluded.enabled`, ws, id, *v)
				models[id] = *v
			}
			if err != nil {
				return fmt.Errorf("ai: save model setting: %w", err)
			}
		}
		if len(models) > 0 {
			details["models"] = models
		}
		if s.d.Audit == nil {
			return nil
		}
		return s.d.Audit.Record(ctx, tx, audit.Event{Workspace: ws, Actor: p, Action: "ai.settings", Category: audit.CategorySettings,
			TargetType: "ai_gateway", TargetID: ws, Summary: "changed the AI gateway's switches", Details: details})
	})
	if err != nil {
		return SettingsView{}, err
	}
	s.sets.mu.Lock()
	delete(s.sets.m, ws)
	s.sets.mu.Unlock()
	return s.GetSettings(ctx, p)
}
