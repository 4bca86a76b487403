// Package shield is the Shield area of the control plane: a workspace's
// access rules for visitors (validated and normalized by package rules),
// site passwords (kept only as argon2id hashes), Apply now, and what the
// rules caught as the edges report it. Every change is published to the
// edges through edgesync in the transaction that stores it.
package shield

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/edgesync"
	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/rules"
)

// Publisher publishes changes to the edges (edgesync.Service).
type Publisher interface {
	// Change runs fn in a transaction that also bumps the snapshot version.
	Change(ctx context.Context, fn func(tx *sql.Tx) error) error
	// Version is the current snapshot version.
	Version() int64
}

// LiveSite is a project with a serving deployment.
type LiveSite struct {
	ProjectID string
	Slug      string
	// Kind is static, app, worker or function.
	Kind string
	// Shield is the settings pinned at deploy (functions and worker
	// programs only).
	Shield *rules.Settings
}

// Sites lists a workspace's live sites (the deploys area).
type Sites interface {
	Live(ctx context.Context, workspace string) ([]LiveSite, error)
}

// Counts reads what the edges reported (edgesync.Service).
type Counts interface {
	Counts(ctx context.Context, workspace, since string) ([]edgesync.CountRow, []edgesync.DayRow, error)
}

// Projects is what Shield needs of the projects area (projects.Service):
// a site password names a project, and Shield never reads the projects
// table.
type Projects interface {
	// Find returns the workspace's project with this id or slug (404 when none).
	Find(ctx context.Context, workspace, key string) (projects.Project, error)
	// Slugs returns the slug of every project of the workspace, by id.
	Slugs(ctx context.Context, workspace string) (map[string]string, error)
	// RequireActive refuses changes to a project in teardown_failed.
	RequireActive(ctx context.Context, projectID string) error
}

// Config is the area's configuration. It has no settings yet: the limits
// are the constants of update.go.
type Config struct{}

// Deps are what the Shield service is built on.
type Deps struct {
	DB *store.DB
	// Clock dates changes and counts (clock.System when nil).
	Clock clock.Clock
	// Audit records changes (audit.New over DB when nil).
	Audit    *audit.Log
	Pub      Publisher
	Sites    Sites
	Counts   Counts
	Projects Projects
	// Plans tells a workspace's plan (site passwords need pro).
	Plans plans.Source
}

// check names what is missing.
func (d *Deps) check() error {
	var missing []string
	for name, ok := range map[string]bool{"DB": d.DB != nil, "Pub": d.Pub != nil, "Sites": d.Sites != nil, "Counts": d.Counts != nil,
		"Projects": d.Projects != nil, "Plans": d.Plans != nil} {
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
var ErrNotConfigured = errors.New("shield: missing dependencies")

// Service is the Shield area.
type Service struct {
	db       *store.DB
	clock    clock.Clock
	audit    *audit.Log
	pub      Publisher
	sites    Sites
	counts   Counts
	projects Projects
	plans    plans.Source
	// hash hashes a site password (rules.HashPassword; tests may cheapen it).
	hash func(string) (string, error)
}

// New returns the Shield service.
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
	return &Service{db: d.DB, clock: d.Clock, audit: d.Audit, pub: d.Pub, sites: d.Sites, counts: d.Counts, projects: d.Projects,
		plans: d.Plans, hash: rules.HashPassword}, nil
}

// Current returns the workspace's saved settings (the defaults when none
// were saved).
func (s *Service) Current(ctx context.Context, workspace string) (rules.Settings, error) {
	return loadSettings(ctx, s.db, workspace)
}

func loadSettings(ctx context.Context, q store.Querier, workspace string) (rules.Settings, error) {
	var raw string
	err := q.QueryRowContext(ctx, `SELECT settings FROM shield_settings WHERE workspace_id = ?`, workspace).Scan(&raw)
	if errors.Is(err, sql.ErrNoRows) {
		return rules.DefaultSettings(), nil
	}
	if err != nil {
		return rules.Settings{}, fmt.Errorf("shield: load: %w", err)
	}
	st := rules.DefaultSettings()
	if err := json.Unmarshal([]byte(raw), &st); err != nil {
		return rules.Settings{}, fmt.Errorf("shield: load: %w", err)
	}
	return st.Normalized(), nil
}

// AllSettings returns every workspace's saved settings, for the edge
// snapshot.
func AllSettings(ctx context.Context, q store.Querier) (map[string]rules.Settings, error) {
	rows, err := q.QueryContext(ctx, `SELECT workspace_id, settings FROM shield_settings`)
	if err != nil {
		return nil, fmt.Errorf("shield: all: %w", err)
	}
	defer rows.Close()
	out := map[string]rules.Settings{}
	for rows.Next() {
		var ws, raw string
		if err := rows.Scan(&ws, &raw); err != nil {
			return nil, fmt.Errorf("shield: all: %w", err)
		}
		st := rules.DefaultSettings()
		if err := json.Unmarshal([]byte(raw), &st); err != nil {
			return nil, fmt.Errorf("shield: all %s: %w", ws, err)
		}
		out[ws] = st.Normalized()
	}
	return out, rows.Err()
}

// AllPasswords returns every protected project's password hash, for the
// edge snapshot.
func AllPasswords(ctx context.Context, q store.Querier) (map[string]string, error) {
	rows, err := q.QueryContext(ctx, `SELECT project_id, hash FROM site_passwords`)
	if err != nil {
		return nil, fmt.Errorf("shield: passwords: %w", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var id, h string
		if err := rows.Scan(&id, &h); err != nil {
			return nil, fmt.Errorf("shield: passwords: %w", err)
		}
		out[id] = h
	}
	return out, rows.Err()
}

// protectedSites returns the slugs of the workspace's sites whose password
// is in force, sorted: a password is enforced on static sites only, so a
// project now serving an app, function or worker is not listed (its
// password is kept and applies again if it serves a static site).
func (s *Service) protectedSites(ctx context.Context, workspace string) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT project_id FROM site_passwords WHERE workspace_id = ?`, workspace)
	if err != nil {
		return nil, fmt.Errorf("shield: protected sites: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("shield: protected sites: %w", err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("shield: protected sites: %w", err)
	}
	out := []string{}
	if len(ids) == 0 {
		return out, nil
	}
	slugs, err := s.projects.Slugs(ctx, workspace)
	if err != nil {
		return nil, fmt.Errorf("shield: protected sites: %w", err)
	}
	kinds, err := s.liveKinds(ctx, workspace)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		slug, ok := slugs[id]
		if !ok {
			continue
		}
		if k, live := kinds[id]; live && k != snapshot.KindStatic {
			continue
		}
		out = append(out, slug)
	}
	slices.Sort(out)
	return out, nil
}

// liveKinds returns the kind of every live site of the workspace, by
// project id.
func (s *Service) liveKinds(ctx context.Context, workspace string) (map[string]string, error) {
	live, err := s.sites.Live(ctx, workspace)
	if err != nil {
		return nil, fmt.Errorf("shield: live sites: %w", err)
	}
	out := make(map[string]string, len(live))
	for _, l := range live {
		out[l.ProjectID] = l.Kind
	}
	return out, nil
}

// Answer is the answer of GET and of a settings PUT: the saved settings and
// the password facts, and after a save what it reached.
type Answer struct {
	rules.Settings
	// ProtectedSites are the slugs of the sites behind a password.
	ProtectedSites []string `json:"protectedSites"`
	// PasswordsAllowed tells whether the plan may set site passwords.
	PasswordsAllowed bool `json:"passwordsAllowed"`
	// AppliedNote says, after a save or Apply now, which live sites the
	// rules reached and which functions and worker programs still run
	// older rules.
	AppliedNote string `json:"appliedNote,omitempty"`
	// Applied is AppliedNote as lists of site slugs.
	Applied *Applied `json:"applied,omitempty"`
}

// Applied says where saved rules are in force.
type Applied struct {
	// Sites are the live static sites: reached at once.
	Sites []string `json:"sites"`
	// Apps are the live server apps: their country rules apply within
	// about a minute.
	Apps []string `json:"apps"`
	// FunctionsBehind are the live functions and worker programs still
	// running older rules: they receive the saved rules on their next
	// deploy (spec: "functions and worker programs next deploy").
	FunctionsBehind []string `json:"functionsBehind"`
}

// Get returns the saved settings with the password facts.
func (s *Service) Get(ctx context.Context, workspace string) (Answer, error) {
	st, err := s.Current(ctx, workspace)
	if err != nil {
		return Answer{}, err
	}
	return s.answer(ctx, workspace, st)
}

func (s *Service) answer(ctx context.Context, workspace string, st rules.Settings) (Answer, error) {
	ps, err := s.protectedSites(ctx, workspace)
	if err != nil {
		return Answer{}, err
	}
	return Answer{Settings: st, ProtectedSites: ps, PasswordsAllowed: plans.Allows(sitePasswords(s.plans.Plan(ctx, workspace)), 1)}, nil
}

// applied computes where st is in force among the workspace's live sites.
func (s *Service) applied(ctx context.Context, workspace string, st rules.Settings) (*Applied, string, error) {
	live, err := s.sites.Live(ctx, workspace)
	if err != nil {
		return nil, "", err
	}
	a := &Applied{Sites: []string{}, Apps: []string{}, FunctionsBehind: []string{}}
	for _, l := range live {
		switch l.Kind {
		case "static":
			a.Sites = append(a.Sites, l.Slug)
		case "app":
			a.Apps = append(a.Apps, l.Slug)
		case "function", "worker":
			if l.Shield == nil || !l.Shield.Equal(st) {
				a.FunctionsBehind = append(a.FunctionsBehind, l.Slug)
			}
		}
	}
	slices.Sort(a.Sites)
	slices.Sort(a.Apps)
	slices.Sort(a.FunctionsBehind)
	var b strings.Builder
	if len(live) == 0 {
		b.WriteString("no live sites yet: each site gets these rules as it goes live")
	} else {
		if len(a.Sites) > 0 {
			fmt.Fprintf(&b, "in force now on %d live static site(s): %s", len(a.Sites), strings.Join(a.Sites, ", "))
		} else {
			b.WriteString("no live static sites")
		}
		if len(a.Apps) > 0 {
			fmt.Fprintf(&b, "; server apps apply the country rules within about a minute: %s", strings.Join(a.Apps, ", "))
		}
		if len(a.FunctionsBehind) > 0 {
			fmt.Fprintf(&b, "; functions and worker programs still running older rules until their next deploy: %s", strings.Join(a.FunctionsBehind, ", "))
		}
	}
	return a, b.String(), nil
}
