// Package accounts manages workspaces, their members, API keys and
// dashboard sessions, and authenticates every API request.
//
// Keys are shown once at creation, stored as SHA-256 hashes, found by that
// hash and compared in constant time; each carries a visible prefix, records
// its last use and can be revoked. A key never carries more than its member's
// current role, and dies with the membership. Members sign in to the
// dashboard with an argon2id-hashed password and an optional TOTP second
// factor; a signed-in owner is what money-out actions require.
package accounts

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/passhash"
)

// Limits of this area.
const (
	// SessionLifetime is how long a dashboard sign-in lasts.
	SessionLifetime = 12 * time.Hour
	// InvitationLifetime is how long an invitation or password-setup token works.
	InvitationLifetime = 7 * 24 * time.Hour
	// MaxKeysPerWorkspace bounds the keys a workspace may hold unrevoked.
	MaxKeysPerWorkspace = 500
	// MinPasswordLen is the shortest member password accepted.
	MinPasswordLen = 10
	// lastUsedEvery is how often a key's last use is written (per key).
	lastUsedEvery = time.Minute
	// sessionCookie names the dashboard session cookie.
	sessionCookie = "svc_session"
)

// Workspace is a tenant: it holds members, keys and projects.
type Workspace struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	Plan      plans.Name `json:"plan"`
	CreatedAt time.Time  `json:"createdAt"`
}

// Service is the accounts area.
type Service struct {
	db     *store.DB
	clock  clock.Clock
	audit  *audit.Log
	log    *slog.Logger
	params passhash.Params

	mu       sync.Mutex
	lastUsed map[string]time.Time
	dummy    string

	signIns   *throttle
	keyByHash *sql.Stmt
}

// New returns the accounts service.
func New(ctx context.Context, db *store.DB, clk clock.Clock, log *audit.Log, logger *slog.Logger) (*Service, error) {
	stmt, err := db.PrepareContext(ctx, keyByHashSQL)
	if err != nil {
		return nil, fmt.Errorf("accounts: prepare: %w", err)
	}
	return &Service{
		db: db, clock: clk, audit: log, log: logger, params: passhash.Default,
		lastUsed:  map[string]time.Time{},
		signIns:   newThrottle(10, 15*time.Minute),
		keyByHash: stmt,
	}, nil
}

// Close releases the prepared statements.
func (s *Service) Close() error { return s.keyByHash.Close() }

// SetHashParams changes the password hashing cost (tests use a cheap one).
func (s *Service) SetHashParams(p passhash.Params) { s.params, s.dummy = p, "" }

// Workspace returns the workspace with id.
func (s *Service) Workspace(ctx context.Context, id string) (Workspace, error) {
	var w Workspace
	var created, plan string
	err := s.db.QueryRowContext(ctx, `SELECT id, name, plan, created_at FROM workspaces WHERE id = ?`, id).
		Scan(&w.ID, &w.Name, &plan, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return w, api.NotFound("workspace")
	}
	if err != nil {
		return w, fmt.Errorf("accounts: workspace: %w", err)
	}
	w.Plan, w.CreatedAt = plans.Name(plan), store.ParseTime(created)
	return w, nil
}

// Plan returns the plan of workspace id (hobby when unknown).
func (s *Service) Plan(ctx context.Context, id string) plans.Name {
	w, err := s.Workspace(ctx, id)
	if err != nil {
		return plans.Hobby
	}
	return w.Plan
}

// SetPlan changes a workspace's plan (an operator action).
func (s *Service) SetPlan(ctx context.Context, id string, plan plans.Name) error {
	return s.db.Tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE workspaces SET plan = ? WHERE id = ?`, string(plan), id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return api.NotFound("workspace")
		}
		return s.audit.Record(ctx, tx, audit.Event{Workspace: id, Action: "workspace.plan", Category: audit.CategoryBilling,
			TargetType: "workspace", TargetID: id, Summary: "plan set to " + string(plan)})
	})
}

// Bootstrap is what the first start creates.
type Bootstrap struct {
	Created    bool
	Workspace  Workspace
	OwnerEmail string
	// Key is the owner's full-access key when it was generated (empty when
	// the operator supplied it).
	Key string
	// SetupToken lets the owner choose a dashboard password once
	// (POST /api/members/accept).
	SetupToken string
}

// BootstrapConfig describes the first workspace.
type BootstrapConfig struct {
	WorkspaceName string
	OwnerEmail    string
	Plan          plans.Name
	// Key is the owner key to install; empty to generate one.
	Key string
}

// MinBootstrapKeyLen is the shortest operator-supplied key accepted.
const MinBootstrapKeyLen = 24

// EnsureBootstrap creates the first workspace, its owner and the owner's
// full-access key when the database holds no workspace; otherwise it does
// nothing and returns Created false.
func (s *Service) EnsureBootstrap(ctx context.Context, c BootstrapConfig) (Bootstrap, error) {
	var b Bootstrap
	if c.Key != "" && (len(c.Key) < MinBootstrapKeyLen || len(c.Key) > 512 || strings.ContainsAny(c.Key, " \t\r\n")) {
		return b, fmt.Errorf("accounts: --bootstrap-key must be %d to 512 characters without spaces", MinBootstrapKeyLen)
	}
	if c.Plan == "" {
		c.Plan = plans.Hobby
	}
	now := s.clock.Now()
	err := s.db.Tx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM workspaces`).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
		b.Created = true
		b.Workspace = Workspace{ID: store.NewID("ws"), Name: c.WorkspaceName, Plan: c.Plan, CreatedAt: now}
		if _, err := tx.ExecContext(ctx, `INSERT INTO workspaces(id, name, plan, created_at) VALUES (?,?,?,?)`,
			b.Workspace.ID, c.WorkspaceName, string(c.Plan), store.FormatTime(now)); err != nil {
			return err
		}
		memberID := store.NewID("mem")
		b.OwnerEmail = c.OwnerEmail
		b.SetupToken = "svcsetup_" + auth.RandomString(40)
		if _, err := tx.ExecContext(ctx, `INSERT INTO members(id, workspace_id, email, name, role, status, invite_hash, invite_expires, created_at)
			VALUES (?,?,?,?,?,?,?,?,?)`, memberID, b.Workspace.ID, c.OwnerEmail, "Owner", "owner", "active",
			auth.HashSecret(b.SetupToken), store.FormatTime(now.Add(InvitationLifetime)), store.FormatTime(now)); err != nil {
			return err
		}
		key, prefix, hash := auth.NewKey()
		if c.Key != "" {
			prefix, hash = c.Key[:4]+"…", auth.HashSecret(c.Key)
		} else {
			b.Key = key
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO api_keys(id, workspace_id, member_id, name, public_id, secret_hash, access, created_at)
			VALUES (?,?,?,?,?,?,?,?)`, store.NewID("key"), b.Workspace.ID, memberID, "bootstrap owner key", prefix, hash, "full",
			store.FormatTime(now)); err != nil {
			return err
		}
		return s.audit.Record(ctx, tx, audit.Event{Workspace: b.Workspace.ID, Action: "workspace.create", Category: audit.CategoryAccount,
			TargetType: "workspace", TargetID: b.Workspace.ID, Summary: "workspace created with owner " + c.OwnerEmail})
	})
	if err != nil {
		return Bootstrap{}, fmt.Errorf("accounts: bootstrap: %w", err)
	}
	return b, nil
}
