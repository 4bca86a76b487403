// Package signin is the sign-in pools area: end-user authentication for a
// project's apps, as Supabase Auth or Firebase Authentication offer it.
//
// A pool belongs to a project. Its users sign up and sign in with an e-mail
// address and a password (argon2id, passhash) from a visitor's browser on
// the project's own addresses (CORS limited to the pool's allowed origins),
// get a short-lived access token (a JWT signed ES256 with the pool's
// current key, published with the others in the pool's JWKS so apps verify
// it offline) and an opaque refresh token that rotates on every use; a
// refresh token used twice revokes its whole session. E-mail verification
// and password reset go through a Mailer as single-use tokens stored
// hashed. Sign-in attempts are throttled per address and per account
// before any password is hashed, and an account is locked after repeated
// failures in a row. There is no second factor.
//
// Developers manage pools and their users through /api/projects/{id}/auth-pools
// and /api/auth-pools/{id}; visitors call /api/auth/{poolId}/... (README.md).
package signin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/metering"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/controlplane/ratelimit"
	"github.com/svcplatform/platform/controlplane/seal"
	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/internal/passhash"
)

// Defaults of Config.
const (
	// DefaultKeyRotateEvery is how long a key signs before the sweep
	// rotates it (ours).
	DefaultKeyRotateEvery = 30 * 24 * time.Hour
	// DefaultSweepEvery is how often Run sweeps.
	DefaultSweepEvery = 10 * time.Minute
)

// Throttles are the rate limits of the end-user endpoints, each per pool.
// An attempt is counted before the password is hashed; a successful
// sign-in gives its units back.
type Throttles struct {
	// Address bounds sign-in attempts from one client address (an IPv6
	// address counts as its /64), whatever the e-mail: password spraying.
	Address ratelimit.Limit `json:"address"`
	// Account bounds sign-in attempts for one e-mail address, from
	// anywhere: guesses spread over many addresses.
	Account ratelimit.Limit `json:"account"`
	// SignUp bounds sign-ups from one client address.
	SignUp ratelimit.Limit `json:"signUp"`
	// MailAddress bounds verification and reset requests from one client
	// address (refused with 429).
	MailAddress ratelimit.Limit `json:"mailAddress"`
	// MailAccount bounds the verification and reset messages one e-mail
	// address receives; past it requests are answered alike and nothing
	// is sent, so the answer says nothing about the account.
	MailAccount ratelimit.Limit `json:"mailAccount"`
}

// DefaultThrottles are the throttles when Config sets none (ours; the
// members' sign-in limits of controlplane/accounts are the model).
func DefaultThrottles() Throttles {
	return Throttles{
		Address:     ratelimit.PerWindow(50, 15*time.Minute),
		Account:     ratelimit.PerWindow(30, time.Hour),
		SignUp:      ratelimit.PerWindow(20, time.Hour),
		MailAddress: ratelimit.PerWindow(10, time.Hour),
		MailAccount: ratelimit.PerWindow(3, time.Hour),
	}
}

// Config is the area's configuration.
type Config struct {
	// BaseURL is the API's address as browsers and apps reach it
	// (https://api.example.com); issuers and JWKS URLs start with it.
	BaseURL string `json:"baseUrl"`
	// Hash are the argon2id parameters of new passwords (passhash.Default
	// when zero).
	Hash passhash.Params `json:"hash"`
	// Limits are the plans' caps (DefaultLimits when nil; a plan missing
	// from the map gets DefaultLimits' row).
	Limits map[plans.Name]Limits `json:"limits,omitempty"`
	// Throttles are the end-user rate limits (DefaultThrottles for each
	// zero one).
	Throttles Throttles `json:"throttles"`
	// KeyRotateEvery is how long a key signs before Sweep rotates it
	// (DefaultKeyRotateEvery when 0; negative: never).
	KeyRotateEvery time.Duration `json:"keyRotateEvery"`
	// SweepEvery is how often Run sweeps (DefaultSweepEvery when 0).
	SweepEvery time.Duration `json:"sweepEvery"`
}

// Provision fills defaults.
func (c *Config) Provision() {
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	if c.Hash == (passhash.Params{}) {
		c.Hash = passhash.Default
	}
	d := DefaultThrottles()
	for _, l := range []struct{ dst, def *ratelimit.Limit }{
		{&c.Throttles.Address, &d.Address}, {&c.Throttles.Account, &d.Account}, {&c.Throttles.SignUp, &d.SignUp},
		{&c.Throttles.MailAddress, &d.MailAddress}, {&c.Throttles.MailAccount, &d.MailAccount},
	} {
		if *l.dst == (ratelimit.Limit{}) {
			*l.dst = *l.def
		}
	}
	if c.KeyRotateEvery == 0 {
		c.KeyRotateEvery = DefaultKeyRotateEvery
	}
	if c.SweepEvery <= 0 {
		c.SweepEvery = DefaultSweepEvery
	}
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	if c.BaseURL == "" || !strings.HasPrefix(c.BaseURL, "http://") && !strings.HasPrefix(c.BaseURL, "https://") {
		return fmt.Errorf("signin: BaseURL %q must be the API's http(s) address", c.BaseURL)
	}
	if c.Hash.Memory == 0 || c.Hash.Time == 0 || c.Hash.Threads == 0 || c.Hash.SaltLen < 8 || c.Hash.KeyLen < 16 {
		return errors.New("signin: argon2id parameters need memory, time, threads, a salt of 8 bytes and a key of 16")
	}
	return nil
}

// limits returns plan p's caps.
func (c Config) limits(p plans.Name) Limits {
	return plans.Lookup(c.Limits, DefaultLimits, p)
}

// Projects is what the area needs of the projects area (*projects.Service).
type Projects interface {
	// Get returns a project of the workspace (a 404 error for another
	// workspace's or none).
	Get(ctx context.Context, workspace, id string) (projects.Project, error)
	// RequireActive refuses changes to a project whose deletion failed.
	RequireActive(ctx context.Context, projectID string) error
}

// Message is one e-mail to an app's user: a verification or a password
// reset. Workspace and Project say whose app sends it, so the mail area
// sends it as the project.
type Message struct {
	Workspace string
	Project   string
	To        string
	Subject   string
	Body      string
}

// Mailer delivers the area's e-mail (the shape of accounts.Mailer, with
// the project the message is sent for).
type Mailer interface {
	Send(ctx context.Context, m Message) error
}

// Deps are the services the area is built on.
type Deps struct {
	// DB is the metadata database.
	DB *store.DB
	// Clock tells the time of tokens, lockouts and records.
	Clock clock.Clock
	// Audit records what developers change.
	Audit *audit.Log
	// Meter records end_user_logins.
	Meter metering.Recorder
	// Sealer seals the pools' private signing keys.
	Sealer *seal.Sealer
	// Projects says which projects exist, their addresses, and which
	// accept changes.
	Projects Projects
	// Plans tells each workspace's plan (its caps).
	Plans plans.Source
	// Limiter counts the end-user throttles (ratelimit.For: shared by
	// replicas on PostgreSQL).
	Limiter ratelimit.Limiter
	// Mailer sends verification and reset messages; nil answers those 503
	// mail_unavailable.
	Mailer Mailer
	// Logger receives what goes wrong in the background (slog.Default
	// when nil); never passwords or tokens.
	Logger *slog.Logger
}

// ErrNotConfigured is returned by New when a dependency is missing.
var ErrNotConfigured = errors.New("signin: missing dependencies")

// check names what is missing.
func (d *Deps) check() error {
	var missing []string
	for name, ok := range map[string]bool{"DB": d.DB != nil, "Clock": d.Clock != nil, "Audit": d.Audit != nil, "Meter": d.Meter != nil,
		"Sealer": d.Sealer != nil, "Projects": d.Projects != nil, "Plans": d.Plans != nil, "Limiter": d.Limiter != nil} {
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

// Service is the sign-in pools area.
type Service struct {
	cfg Config
	d   Deps
	m   *metrics

	dummyOnce sync.Once
	dummy     string

	// keys caches unsealed private keys by id (keys never change).
	keysMu sync.Mutex
	keys   map[string]*privateKey
}

// New builds the area. It starts nothing: Run sweeps.
func New(cfg Config, d Deps) (*Service, error) {
	cfg.Provision()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := d.check(); err != nil {
		return nil, err
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	return &Service{cfg: cfg, d: d, m: newMetrics(), keys: map[string]*privateKey{}}, nil
}

// now is the area's time.
func (s *Service) now() time.Time { return s.d.Clock.Now().UTC() }

// Run sweeps every Config.SweepEvery until ctx ends: expired tokens,
// sessions, lockouts and keys go, and keys past Config.KeyRotateEvery are
// rotated. Failures are logged and tried again at the next sweep.
func (s *Service) Run(ctx context.Context) {
	t := time.NewTicker(s.cfg.SweepEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := s.Sweep(ctx); err != nil && ctx.Err() == nil {
				s.d.Logger.Warn("signin: sweep", "err", err)
			}
		}
	}
}

// dummyHash is a hash under the configured parameters to verify against
// when no user has the e-mail, so a miss costs what a hit costs.
func (s *Service) dummyHash() string {
	s.dummyOnce.Do(func() {
		s.dummy, _ = passhash.HashWith(s.cfg.Hash, "not a real password")
	})
	return s.dummy
}
