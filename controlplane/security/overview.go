// Package security computes the workspace's security overview: a score out
// of 100 from the scored checks of the spec's table, every check with its
// finding and how to fix it, and the audit-log changes per hour over the
// last 24 hours (UTC).
//
// Scoring: each scored check has a weight (the weights of the table sum to
// 100) and earns a share of it between 0 and 1. A check passes at share 1,
// warns above 0 and fails at 0.
//
// Only what exists is scored. A check whose area is not built or not
// wired (custom domains, app users' sign-in lockouts: a nil Counter)
// reports status "unavailable", is not scored, and its weight leaves the
// denominator: the score is round(100 x sum(weight x share) / sum(weight))
// over the scored checks only, so a workspace is neither rewarded nor
// punished for a feature it cannot have. With every check available this
// is the plain sum of weight x share.
//
//	check                              weight  share
//	Owners and admins with two-factor    25    owners and admins with two-factor / owners and admins
//	Full-access API keys                 15    1 with at most 2; 0.5 with 3 to 5; 0 above
//	Oldest active key                    15    1 up to 90 days old; 0.5 up to 365 days; 0 older
//	Never-used keys                      10    1 - never-used active keys / active keys
//	Domain verification                  10    1 with no unverified custom domain; 0 otherwise
//	Owners and admins                    15    1 with at most 3; 0.5 with 4 or 5; 0 above
//	End-user sign-in lockouts            10    1 with no locked-out app user; 0.5 otherwise
package security

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/svcplatform/platform/controlplane/accounts"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/metering"
	"github.com/svcplatform/platform/internal/passhash"
)

// Check is one row of the overview.
type Check struct {
	ID      string `json:"id"`
	Title   string `json:"title"`
	Scored  bool   `json:"scored"`
	Status  string `json:"status"` // pass, warn, fail, info or unavailable
	Weight  int    `json:"weight,omitempty"`
	Points  int    `json:"points,omitempty"`
	Finding string `json:"finding"`
	Fix     string `json:"fix,omitempty"`
	// Value is the measured number behind the finding, where there is one.
	Value *float64 `json:"value,omitempty"`
	// share is the earned share of Weight, 0 to 1.
	share float64
}

// HourCount is the number of audit-log changes in one UTC hour.
type HourCount struct {
	Hour    time.Time `json:"hour"`
	Changes int       `json:"changes"`
}

// Overview is the answer of GET /api/security/overview.
type Overview struct {
	Score          int         `json:"score"`
	Checks         []Check     `json:"checks"`
	ChangesPerHour []HourCount `json:"changesPerHour"`
	GeneratedAt    time.Time   `json:"generatedAt"`
}

// Counter counts something of a workspace held by an area that may not be
// built yet (custom domains, app users locked out); a nil Counter makes its
// check unavailable.
type Counter func(ctx context.Context, workspace string) (int, error)

// Accounts gives the member and key facts (accounts.Service).
type Accounts interface {
	SecurityFacts(ctx context.Context, workspace string, now, since time.Time) (accounts.SecurityFacts, error)
}

// Variables counts stored environment variables (projects.Service).
type Variables interface {
	EnvCount(ctx context.Context, workspace string) (int, error)
}

// AuditLog counts audit rows (audit.Log).
type AuditLog interface {
	CountSince(ctx context.Context, workspace string, t time.Time) (int, error)
	PerHour(ctx context.Context, workspace string, first time.Time, n int) ([]int, error)
}

// Usage sums usage events (metering.Meter).
type Usage interface {
	Total(ctx context.Context, workspace, project string, metric metering.Metric, from, to time.Time) (float64, error)
}

// Deps are what the overview reads, each through its owner.
type Deps struct {
	Accounts  Accounts
	Variables Variables
	Audit     AuditLog
	Usage     Usage
	// Clock tells the time of the overview (clock.System when nil).
	Clock clock.Clock
	// UnverifiedDomains counts custom domains that are not verified,
	// pending or misconfigured (domains.Service.Unverified; nil: the check
	// is unavailable).
	UnverifiedDomains Counter
	// LockedOutUsers counts app users locked out after failed sign-ins
	// (nil: the check is unavailable).
	LockedOutUsers Counter
}

// Config is the area's configuration. It has no settings yet: the
// thresholds are the constants below.
type Config struct{}

// check names what is missing.
func (d *Deps) check() error {
	var missing []string
	for name, ok := range map[string]bool{"Accounts": d.Accounts != nil, "Variables": d.Variables != nil, "Audit": d.Audit != nil,
		"Usage": d.Usage != nil} {
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
var ErrNotConfigured = errors.New("security: missing dependencies")

// Service computes overviews.
type Service struct{ d Deps }

// New returns the service.
func New(_ Config, d Deps) (*Service, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	if d.Clock == nil {
		d.Clock = clock.System{}
	}
	return &Service{d: d}, nil
}

// Thresholds of the scored checks.
const (
	KeyAgeGood     = 90 * 24 * time.Hour
	KeyAgeTolerate = 365 * 24 * time.Hour
)

// dataMetrics are the metered data calls counted by the API key activity check.
var dataMetrics = []metering.Metric{metering.DatabaseQueries}

func ptr(f float64) *float64 { return &f }

// tier is the share of a check measured against two thresholds: full up to
// good, half up to tolerate, none above.
func tier(v, good, tolerate float64) float64 {
	switch {
	case v <= good:
		return 1
	case v <= tolerate:
		return 0.5
	}
	return 0
}

func status(share float64) string {
	switch {
	case share >= 1:
		return "pass"
	case share > 0:
		return "warn"
	}
	return "fail"
}

func scored(id, title string, weight int, share float64, value float64, finding, fix string) Check {
	share = math.Max(0, math.Min(1, share))
	c := Check{ID: id, Title: title, Scored: true, Weight: weight, Points: int(math.Round(float64(weight) * share)),
		Status: status(share), Finding: finding, Value: ptr(value), share: share}
	if share < 1 {
		c.Fix = fix
	}
	return c
}

// unavailable is the row of a scored check whose area does not exist yet.
func unavailable(id, title, finding string) Check {
	return Check{ID: id, Title: title, Status: "unavailable", Finding: finding}
}

// Overview computes the overview of workspace ws now.
func (s *Service) Overview(ctx context.Context, ws string) (Overview, error) {
	now := s.d.Clock.Now().UTC()
	f, err := s.d.Accounts.SecurityFacts(ctx, ws, now, now.Add(-24*time.Hour))
	if err != nil {
		return Overview{}, fmt.Errorf("security: %w", err)
	}
	envCount, err := s.d.Variables.EnvCount(ctx, ws)
	if err != nil {
		return Overview{}, fmt.Errorf("security: %w", err)
	}
	audit7d, err := s.d.Audit.CountSince(ctx, ws, now.Add(-7*24*time.Hour))
	if err != nil {
		return Overview{}, fmt.Errorf("security: %w", err)
	}
	var checks []Check

	// Owners and admins with two-factor.
	priv, priv2f := f.Privileged, f.PrivilegedTwoFactor
	share := 1.0
	if priv > 0 {
		share = float64(priv2f) / float64(priv)
	}
	checks = append(checks, scored("two_factor", "Owners and admins with two-factor", 25, share, float64(priv2f),
		fmt.Sprintf("%d of %d owners and admins use two-factor sign-in", priv2f, priv),
		"Each owner and admin turns on two-factor: POST /api/account/totp, then confirm with a code."))

	// Full-access API keys.
	full := f.FullAccessKeys
	share = tier(float64(full), 2, 5)
	checks = append(checks, scored("full_access_keys", "Full-access API keys", 15, share, float64(full),
		fmt.Sprintf("%d active keys have full access to the whole workspace", full),
		"Replace full-access keys with read-only or project-limited keys where they suffice, and revoke the rest (DELETE /api/keys/{id})."))

	// Oldest active key.
	share, age, finding := 1.0, 0.0, "No active keys"
	if !f.OldestActiveKey.IsZero() {
		d := now.Sub(f.OldestActiveKey)
		age = math.Floor(d.Hours() / 24)
		finding = fmt.Sprintf("The oldest active key is %.0f days old", age)
		share = tier(float64(d), float64(KeyAgeGood), float64(KeyAgeTolerate))
	}
	checks = append(checks, scored("oldest_key", "Oldest active key", 15, share, age, finding,
		"Rotate keys older than 90 days: create a new key, move your callers to it, revoke the old one."))

	// Never-used keys.
	active, never := f.ActiveKeys, f.NeverUsedKeys
	share = 1
	if active > 0 {
		share = 1 - float64(never)/float64(active)
	}
	checks = append(checks, scored("never_used_keys", "Never-used keys", 10, share, float64(never),
		fmt.Sprintf("%d of %d active keys never made a call", never, active),
		"Revoke keys nobody uses: they are secrets to leak for no benefit."))

	// Domain verification.
	if s.d.UnverifiedDomains == nil {
		checks = append(checks, unavailable("domain_verification", "Domain verification",
			"Custom domains are not offered yet, so there is nothing to verify; this check is not scored"))
	} else {
		unverified, err := s.d.UnverifiedDomains(ctx, ws)
		if err != nil {
			return Overview{}, fmt.Errorf("security: domains: %w", err)
		}
		share, finding = 1, "No custom domain is waiting for verification"
		if unverified > 0 {
			share, finding = 0, fmt.Sprintf("%d custom domains are not verified (awaiting their TXT record, or not pointing at the platform)", unverified)
		}
		checks = append(checks, scored("domain_verification", "Domain verification", 10, share, float64(unverified), finding,
			"Publish the records each domain lists (GET /api/projects/{id}/domains) at your DNS provider, then POST /api/domains/{id}/verify; remove domains you no longer use (DELETE /api/domains/{id})."))
	}

	// Owners and admins.
	share = tier(float64(priv), 3, 5)
	checks = append(checks, scored("owners_and_admins", "Owners and admins", 15, share, float64(priv),
		fmt.Sprintf("%d members can change everything (owner or admin)", priv),
		"Give members the least role they need: developer for day-to-day work (PATCH /api/members/{id})."))

	// Environment variables (not scored).
	checks = append(checks, Check{ID: "environment_variables", Title: "Environment variables", Status: "info", Value: ptr(float64(envCount)),
		Finding: fmt.Sprintf("%d variables stored, sealed at rest with AES-256-GCM", envCount)})

	// End-user sign-in lockouts.
	if s.d.LockedOutUsers == nil {
		checks = append(checks, unavailable("end_user_lockouts", "End-user sign-in lockouts",
			"Sign-in for your apps' users is not offered yet, so no lockouts are recorded; this check is not scored"))
	} else {
		locked, err := s.d.LockedOutUsers(ctx, ws)
		if err != nil {
			return Overview{}, fmt.Errorf("security: lockouts: %w", err)
		}
		share, finding = 1, "No app user is locked out"
		if locked > 0 {
			share, finding = 0.5, fmt.Sprintf("%d app users are locked out after repeated failed sign-ins", locked)
		}
		checks = append(checks, scored("end_user_lockouts", "End-user sign-in lockouts", 10, share, float64(locked), finding,
			"Look for password-guessing against your apps' sign-in: the lockouts protect the accounts, but a wave of them means an attack."))
	}

	// Password hashing (not scored).
	p := passhash.Default
	checks = append(checks, Check{ID: "password_hashing", Title: "Password hashing", Status: "info",
		Finding: fmt.Sprintf("Members' passwords are stored as salted argon2id hashes (m=%d KiB, t=%d, p=%d); API keys as SHA-256 of 200-bit secrets", p.Memory, p.Time, p.Threads)})

	// Sign-in for your apps' users (not scored, unavailable).
	checks = append(checks, unavailable("app_user_two_factor", "Sign-in for your apps' users",
		"App users cannot add a second factor: the platform does not offer it yet"))

	// Audit activity (not scored).
	checks = append(checks, Check{ID: "audit_activity", Title: "Audit activity", Status: "info", Value: ptr(float64(audit7d)),
		Finding: fmt.Sprintf("%d changes recorded in the audit log over the last 7 days", audit7d)})

	// API key activity (not scored).
	day := now.Truncate(24 * time.Hour)
	today, yesterday := 0.0, 0.0
	for _, m := range dataMetrics {
		a, err := s.d.Usage.Total(ctx, ws, "", m, day, day.Add(24*time.Hour))
		if err != nil {
			return Overview{}, fmt.Errorf("security: %w", err)
		}
		b, err := s.d.Usage.Total(ctx, ws, "", m, day.Add(-24*time.Hour), day)
		if err != nil {
			return Overview{}, fmt.Errorf("security: %w", err)
		}
		today, yesterday = today+a, yesterday+b
	}
	checks = append(checks, Check{ID: "api_key_activity", Title: "API key activity", Status: "info", Value: ptr(float64(f.KeysUsedSince)),
		Finding: fmt.Sprintf("%d keys used in the last 24 hours; %.0f data calls today and %.0f yesterday (UTC)", f.KeysUsedSince, today, yesterday)})

	hours, err := s.changesPerHour(ctx, ws, now)
	if err != nil {
		return Overview{}, err
	}
	return Overview{Score: Score(checks), Checks: checks, ChangesPerHour: hours, GeneratedAt: now}, nil
}

// Score is the overview's score of checks: 100 x the earned share of the
// weights of the scored checks, rounded; unavailable checks are not scored
// and leave the denominator. With no scored check it is 100.
func Score(checks []Check) int {
	var weights, earned float64
	for _, c := range checks {
		if !c.Scored {
			continue
		}
		weights += float64(c.Weight)
		earned += float64(c.Weight) * c.share
	}
	if weights == 0 {
		return 100
	}
	return int(math.Round(100 * earned / weights))
}

// changesPerHour counts audit rows in each of the 24 UTC hours ending with
// the current one, oldest first.
func (s *Service) changesPerHour(ctx context.Context, ws string, now time.Time) ([]HourCount, error) {
	first := now.Truncate(time.Hour).Add(-23 * time.Hour)
	counts, err := s.d.Audit.PerHour(ctx, ws, first, 24)
	if err != nil {
		return nil, fmt.Errorf("security: changes per hour: %w", err)
	}
	out := make([]HourCount, 24)
	for i := range out {
		out[i] = HourCount{Hour: first.Add(time.Duration(i) * time.Hour), Changes: counts[i]}
	}
	return out, nil
}
