// Package cdn is the CDN area: one cache setting per workspace for its
// static sites ({enabled, cacheTtlSeconds}), merged over the saved setting on
// PUT. A change takes effect on each project's next deploy, which pins the
// setting in force to the deployment; server apps and functions are not
// affected.
package cdn

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
	"github.com/svcplatform/platform/controlplane/store"
)

// Limits and defaults.
const (
	// DefaultCacheTTLSeconds is the spec's default cache time.
	DefaultCacheTTLSeconds = 3600
	// MaxCacheTTLSeconds is one year, the longest cache time accepted (and
	// the longest browsers are usually told: RFC 9111 deployments cap
	// max-age near it).
	MaxCacheTTLSeconds = 365 * 24 * 3600
)

// Settings is a workspace's CDN setting.
type Settings struct {
	// Enabled false stops caching: every visit is served fresh. Default true.
	Enabled bool `json:"enabled"`
	// CacheTTLSeconds is how long browsers and the edge keep a page, 0 to
	// one year. Default 3600.
	CacheTTLSeconds int64 `json:"cacheTtlSeconds"`
}

// Default returns the setting of a workspace that saved none.
func Default() Settings { return Settings{Enabled: true, CacheTTLSeconds: DefaultCacheTTLSeconds} }

// Edge returns s as the edge snapshot carries it.
func (s Settings) Edge() snapshot.CDN {
	return snapshot.CDN{Enabled: s.Enabled, CacheTTLSeconds: s.CacheTTLSeconds}
}

// Publisher runs a change that edges must see (edgesync.Service.Change).
type Publisher interface {
	Change(ctx context.Context, fn func(tx *sql.Tx) error) error
}

// Service is the CDN area.
type Service struct {
	db    *store.DB
	clock clock.Clock
	audit *audit.Log
	pub   Publisher
}

// Config is the area's configuration. It has no settings yet: the bounds
// of a setting are this file's constants.
type Config struct{}

// Deps are what the area is built on.
type Deps struct {
	DB *store.DB
	// Clock dates changes (clock.System when nil).
	Clock clock.Clock
	// Audit records changes (audit.New over DB when nil).
	Audit *audit.Log
	// Pub publishes a change to the edges in its transaction.
	Pub Publisher
}

// check names what is missing.
func (d *Deps) check() error {
	var missing []string
	for name, ok := range map[string]bool{"DB": d.DB != nil, "Pub": d.Pub != nil} {
		if !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return fmt.Errorf("%w: %s", ErrNotConfigured, strings.Join(missing, ", "))
	}
	return nil
}

// ErrNotConfigured is returned by New when a dependency is missing.
var ErrNotConfigured = errors.New("cdn: missing dependencies")

// New returns the CDN service.
func New(_ Config, d Deps) (*Service, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	if d.Clock == nil {
		d.Clock = clock.System{}
	}
	if d.Audit == nil {
		d.Audit = audit.New(d.DB, d.Clock)
	}
	return &Service{db: d.DB, clock: d.Clock, audit: d.Audit, pub: d.Pub}, nil
}

// Get returns the workspace's setting in force.
func (s *Service) Get(ctx context.Context, workspace string) (Settings, error) {
	return load(ctx, s.db, workspace)
}

func load(ctx context.Context, q store.Querier, workspace string) (Settings, error) {
	st := Default()
	err := q.QueryRowContext(ctx, `SELECT enabled, cache_ttl_seconds FROM cdn_settings WHERE workspace_id = ?`, workspace).
		Scan(&st.Enabled, &st.CacheTTLSeconds)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return st, fmt.Errorf("cdn: load: %w", err)
	}
	return st, nil
}

// All returns the saved setting of every workspace that saved one, for the
// edge snapshot.
func All(ctx context.Context, q store.Querier) (map[string]snapshot.CDN, error) {
	rows, err := q.QueryContext(ctx, `SELECT workspace_id, enabled, cache_ttl_seconds FROM cdn_settings`)
	if err != nil {
		return nil, fmt.Errorf("cdn: all: %w", err)
	}
	defer rows.Close()
	out := map[string]snapshot.CDN{}
	for rows.Next() {
		var ws string
		var c snapshot.CDN
		if err := rows.Scan(&ws, &c.Enabled, &c.CacheTTLSeconds); err != nil {
			return nil, fmt.Errorf("cdn: all: %w", err)
		}
		out[ws] = c
	}
	return out, rows.Err()
}

// PatchDoc documents the body of PUT /api/services/cdn for the OpenAPI
// document; Patch is what is decoded.
type PatchDoc struct {
	Enabled         *bool  `json:"enabled,omitempty"`
	CacheTTLSeconds *int64 `json:"cacheTtlSeconds,omitempty"`
}

// Patch is the body of PUT /api/services/cdn: any of the fields, merged
// over the saved setting. The TTL is kept raw so that a fraction, a string
// or null gets a message naming the setting.
type Patch struct {
	Enabled *bool `json:"enabled,omitempty"`
	// CacheTTLSeconds must be a whole number of seconds, 0 to one year.
	CacheTTLSeconds json.RawMessage `json:"cacheTtlSeconds,omitempty"`
}

// apply merges p over st, validating it; st is unchanged on error.
func (p Patch) apply(st Settings) (Settings, error) {
	if p.Enabled != nil {
		st.Enabled = *p.Enabled
	}
	if raw := bytes.TrimSpace(p.CacheTTLSeconds); len(raw) > 0 {
		n, err := parseTTL(raw)
		if err != nil {
			return st, api.E(api.KindInvalid, "invalid_setting", "cacheTtlSeconds %s", err).With("field", "cacheTtlSeconds")
		}
		st.CacheTTLSeconds = n
	}
	return st, nil
}

var errTTL = errors.New("must be a whole number of seconds from 0 to 31536000 (one year)")

func parseTTL(raw []byte) (int64, error) {
	if raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
		return 0, errTTL // a string, null, true, an object
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || n < 0 || n > MaxCacheTTLSeconds {
		return 0, errTTL
	}
	return n, nil
}

// Answer is the answer of GET and PUT.
type Answer struct {
	Settings
	// Note says when a change takes effect (PUT only).
	Note string `json:"note,omitempty"`
}

// Update merges p over the saved setting and stores it. A refused patch
// stores nothing.
func (s *Service) Update(ctx context.Context, pr *auth.Principal, p Patch) (Answer, error) {
	var out Answer
	err := s.pub.Change(ctx, func(tx *sql.Tx) error {
		cur, err := load(ctx, tx, pr.WorkspaceID)
		if err != nil {
			return err
		}
		next, err := p.apply(cur)
		if err != nil {
			return err
		}
		out.Settings = next
		if _, err := tx.ExecContext(ctx, `INSERT INTO cdn_settings(workspace_id, enabled, cache_ttl_seconds, updated_at) VALUES (?,?,?,?)
			ON CONFLICT(workspace_id) DO UPDATE SET enabled = excluded.enabled, cache_ttl_seconds = excluded.cache_ttl_seconds, updated_at = excluded.updated_at`,
			pr.WorkspaceID, next.Enabled, next.CacheTTLSeconds, store.FormatTime(s.clock.Now())); err != nil {
			return fmt.Errorf("cdn: save: %w", err)
		}
		return s.audit.Record(ctx, tx, audit.Event{Workspace: pr.WorkspaceID, Actor: pr, Action: "cdn.update", Category: audit.CategorySettings,
			TargetType: "cdn", TargetID: pr.WorkspaceID,
			Summary: fmt.Sprintf("CDN settings: enabled %t, cache %s", next.Enabled, time.Duration(next.CacheTTLSeconds)*time.Second),
			Details: map[string]any{"enabled": next.Enabled, "cacheTtlSeconds": next.CacheTTLSeconds, "before": cur}})
	})
	if err != nil {
		return Answer{}, err
	}
	out.Note = "saved: each static site gets this setting on its next deploy (or redeploy); server apps and functions are not affected"
	return out, nil
}
