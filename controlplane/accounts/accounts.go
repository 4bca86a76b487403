// Package accounts manages people, the workspaces they belong to (as
// members, with a role in each), API keys, dashboard sessions and sign-up,
// and authenticates every API request.
//
// Keys are shown once at creation, stored as SHA-256 hashes, found by that
// hash and compared in constant time; each carries a visible prefix, records
// its last use and can be revoked. A key never carries more than its member's
// current role, and dies with the membership. People sign in to the
// dashboard with an argon2id-hashed password and an optional TOTP second
// factor, in one workspace at a time; a signed-in owner is what money-out
// actions require. People verify their e-mail with a mailed single-use
// token (AI on hobby and live payment links need the owner's).
//
// Service holds the area's rules (validation, role grants, the last-owner
// guard, the key limits per member and workspace, sign-in throttling per
// address and account, TOTP checks, password hashing, e-mail verification);
// Store is its persistence, with every change and its audit row in one
// transaction, and SQLStore implements Store on the metadata database.
package accounts

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/internal/passhash"
)

// Limits of this area.
const (
	// SessionLifetime is how long a dashboard sign-in lasts.
	SessionLifetime = 12 * time.Hour
	// InvitationLifetime is how long an invitation or password-setup token works.
	InvitationLifetime = 7 * 24 * time.Hour
	// MaxKeysPerWorkspace bounds the keys a workspace may hold unrevoked.
	MaxKeysPerWorkspace = 500
	// MaxKeysPerMember bounds the keys one member may hold unrevoked, so
	// that no member (a viewer included) can use up the workspace's.
	MaxKeysPerMember = 50
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
	// OwnerEmailVerified tells whether an active owner has verified their
	// e-mail (AI on hobby and live payment links need it).
	OwnerEmailVerified bool `json:"ownerEmailVerified"`
	// VerificationRequired is set on a workspace made by an open sign-up
	// until its owner verifies their e-mail; until then it can do nothing
	// but that.
	VerificationRequired bool `json:"verificationRequired,omitempty"`
}

// Service is the accounts area: its rules, over a Store.
type Service struct {
	store  Store
	clock  clock.Clock
	log    *slog.Logger
	params passhash.Params

	mu       sync.Mutex
	lastUsed map[string]time.Time
	dummy    string

	signIns *throttle
	// verifications counts the verification mails each member asked for.
	verifications *throttle
	mailer        Mailer
	// passwordChecks counts the passwords hashed for sign-ins.
	passwordChecks atomic.Int64

	// keys caches verified API keys; invalidations arrive on KeyChannel.
	keys *keyCache
	// plans caches workspaces' plans; invalidations arrive on PlanChannel.
	plans *planCache
	db    *store.DB
	// defaultPlan is new workspaces' plan; maxOwned the workspaces one
	// person may own.
	defaultPlan plans.Name
	maxOwned    int
	// signUp says who may sign up; signUps throttles sign-ups per address.
	signUp  SignUpPolicy
	signUps *throttle
	// teardown is what deleting a workspace needs from other areas.
	teardown Teardown
	// touching counts last-use writes in flight (Close waits for them).
	touching inflight
}

// Config is the area's configuration; the zero value works.
type Config struct {
	// PasswordHash is the cost of hashing members' passwords
	// (passhash.Default when zero).
	PasswordHash passhash.Params `json:"passwordHash"`
	// DefaultPlan is the plan new workspaces start on (hobby when empty).
	DefaultPlan plans.Name `json:"defaultPlan"`
	// MaxWorkspacesPerPerson bounds the workspaces one person may own
	// (DefaultMaxWorkspacesPerPerson when zero).
	MaxWorkspacesPerPerson int `json:"maxWorkspacesPerPerson"`
	// SignUp says who may sign up (closed when zero: invitations only).
	SignUp SignUpPolicy `json:"signUp"`
}

// Deps are what the area is built on.
type Deps struct {
	// DB holds workspaces, members, keys and sessions.
	DB *store.DB
	// Clock dates sessions, keys and tokens (clock.System when nil).
	Clock clock.Clock
	// Audit records every change (audit.New over DB when nil).
	Audit *audit.Log
	// Logger receives what goes wrong off the request path (slog.Default
	// when nil).
	Logger *slog.Logger
}

// check names what is missing.
func (d *Deps) check() error {
	if d.DB == nil {
		return fmt.Errorf("%w: DB", ErrNotConfigured)
	}
	return nil
}

// ErrNotConfigured is returned by New when a dependency is missing.
var ErrNotConfigured = errors.New("accounts: missing dependencies")

// New returns the accounts service over the platform's SQL database. It
// prepares the store's statements (hence ctx). It starts nothing: verified
// keys and plans are kept in memory only while Run listens for their
// invalidations.
func New(ctx context.Context, cfg Config, d Deps) (*Service, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	if d.Clock == nil {
		d.Clock = clock.System{}
	}
	if d.Audit == nil {
		d.Audit = audit.New(d.DB, d.Clock)
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if cfg.PasswordHash == (passhash.Params{}) {
		cfg.PasswordHash = passhash.Default
	}
	if cfg.DefaultPlan == "" {
		cfg.DefaultPlan = plans.Hobby
	}
	if _, err := plans.Parse(string(cfg.DefaultPlan)); err != nil {
		return nil, fmt.Errorf("accounts: default plan: %w", err)
	}
	if cfg.MaxWorkspacesPerPerson <= 0 {
		cfg.MaxWorkspacesPerPerson = DefaultMaxWorkspacesPerPerson
	}
	st, err := NewSQLStore(ctx, d.DB, d.Audit)
	if err != nil {
		return nil, err
	}
	return &Service{
		store: st, clock: d.Clock, log: d.Logger, params: cfg.PasswordHash, db: d.DB,
		lastUsed: map[string]time.Time{},
		signIns:  newThrottle(), verifications: newThrottle(),
		keys: newKeyCache(KeyCacheTTL, KeyCacheSize), plans: newPlanCache(),
		defaultPlan: cfg.DefaultPlan, maxOwned: cfg.MaxWorkspacesPerPerson, signUp: cfg.SignUp, signUps: newThrottle(),
	}, nil
}

// Close waits for the last-use writes in flight and releases the store's
// prepared statements. Call it after Run has returned.
func (s *Service) Close() error {
	s.touching.wait()
	return s.store.Close()
}

// SetHashParams changes the password hashing cost (tests use a cheap one).
func (s *Service) SetHashParams(p passhash.Params) { s.params, s.dummy = p, "" }

// Workspace returns the workspace with id.
func (s *Service) Workspace(ctx context.Context, id string) (Workspace, error) {
	return s.store.Workspace(ctx, id)
}

// Plan returns the plan of workspace id (hobby when unknown). Every AI
// request asks, so known plans are kept in memory until a plan change
// (PlanChannel, from any replica) or PlanCacheTTL.
func (s *Service) Plan(ctx context.Context, id string) plans.Name {
	now := s.clock.Now()
	if p, ok := s.plans.get(id, now); ok {
		return p
	}
	gen := s.plans.generation()
	w, err := s.Workspace(ctx, id)
	if err != nil {
		return plans.Hobby
	}
	s.plans.put(id, w.Plan, gen, now)
	return w.Plan
}

var _ plans.Source = (*Service)(nil)

// SetPlan changes a workspace's plan (an operator action).
func (s *Service) SetPlan(ctx context.Context, id string, plan plans.Name) error {
	defer s.plans.drop(id)
	return s.store.SetPlan(ctx, id, plan, audit.Event{Workspace: id, Action: "workspace.plan", Category: audit.CategoryBilling,
		TargetType: "workspace", TargetID: id, Summary: "plan set to " + string(plan)})
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

// Validate reports an operator-supplied key EnsureBootstrap would refuse.
// It is pure, so a start can check it before it creates anything.
func (c BootstrapConfig) Validate() error {
	if c.Key != "" && (len(c.Key) < MinBootstrapKeyLen || len(c.Key) > 512 || strings.ContainsAny(c.Key, " \t\r\n")) {
		return fmt.Errorf("accounts: --bootstrap-key must be %d to 512 characters without spaces", MinBootstrapKeyLen)
	}
	return nil
}

// EnsureBootstrap creates the first workspace, its owner and the owner's
// full-access key when the database holds no workspace; otherwise it does
// nothing and returns Created false.
func (s *Service) EnsureBootstrap(ctx context.Context, c BootstrapConfig) (Bootstrap, error) {
	if err := c.Validate(); err != nil {
		return Bootstrap{}, err
	}
	if c.Plan == "" {
		c.Plan = plans.Hobby
	}
	now := s.clock.Now()
	var b Bootstrap
	created, err := s.store.CreateFirstWorkspace(ctx, func() FirstWorkspace {
		b = Bootstrap{Workspace: Workspace{ID: store.NewID("ws"), Name: c.WorkspaceName, Plan: c.Plan, CreatedAt: now},
			OwnerEmail: c.OwnerEmail, SetupToken: "svcsetup_" + auth.RandomString(40)}
		person := Person{ID: store.NewID("per"), Email: strings.ToLower(strings.TrimSpace(c.OwnerEmail)), Name: "Owner", CreatedAt: now}
		owner := MemberRecord{WorkspaceID: b.Workspace.ID, InviteHash: auth.HashSecret(b.SetupToken), InviteExpires: now.Add(InvitationLifetime),
			PersonID: person.ID, Member: Member{ID: store.NewID("mem"), Email: person.Email, Name: "Owner", Role: auth.Owner, Status: "active", CreatedAt: now}}
		key, prefix, hash := auth.NewKey()
		if c.Key != "" {
			prefix, hash = c.Key[:4]+"…", auth.HashSecret(c.Key)
		} else {
			b.Key = key
		}
		return FirstWorkspace{Workspace: b.Workspace, Person: person, Owner: owner, Key: KeyRecord{WorkspaceID: b.Workspace.ID, SecretHash: hash,
			Key: Key{ID: store.NewID("key"), Name: "bootstrap owner key", Prefix: prefix, Access: "full", MemberID: owner.ID, CreatedAt: now}}}
	}, func(f FirstWorkspace) audit.Event {
		return audit.Event{Workspace: f.Workspace.ID, Action: "workspace.create", Category: audit.CategoryAccount,
			TargetType: "workspace", TargetID: f.Workspace.ID, Summary: "workspace created with owner " + c.OwnerEmail}
	})
	if err != nil {
		return Bootstrap{}, fmt.Errorf("accounts: bootstrap: %w", err)
	}
	if !created {
		return Bootstrap{}, nil
	}
	b.Created = true
	return b, nil
}
