// Package security computes the workspace's security overview: a score out
// of 100 from the scored checks of the spec's table, every check with its
// finding and how to fix it, and the audit-log changes per hour over the
// last 24 hours (UTC).
//
// Scoring: each scored check has a weight (the weights sum to 100) and earns
// a share of it between 0 and 1; the score is the rounded sum of weight x
// share. A check passes at share 1, warns above 0 and fails at 0.
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
	"fmt"
	"math"
	"time"

	"github.com/svcplatform/platform/controlplane/metering"
	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/passhash"
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
// wired (custom domains, app users locked out); nil counts zero.
type Counter func(ctx context.Context, workspace string) (int, error)

// Service computes overviews.
type Service struct {
	db  *store.DB
	now func() time.Time
	// UnverifiedDomains counts custom domains awaiting verification.
	UnverifiedDomains Counter
	// LockedOutUsers counts app users locked out after failed sign-ins.
	LockedOutUsers Counter
}

// New returns the service.
func New(db *store.DB, now func() time.Time) *Service { return &Service{db: db, now: now} }

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
		Status: status(share), Finding: finding, Value: ptr(value)}
	if share < 1 {
		c.Fix = fix
	}
	return c
}

func (s *Service) count(ctx context.Context, q string, args ...any) (int, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, q, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("security: %w", err)
	}
	return n, nil
}

// Overview computes the overview of workspace ws now.
func (s *Service) Overview(ctx context.Context, ws string) (Overview, error) {
	now := s.now().UTC()
	nowS := store.FormatTime(now)
	var checks []Check
	var err error
	counts := map[string]int{}
	for name, q := range map[string]string{
		"privileged":   `SELECT count(*) FROM members WHERE workspace_id = ? AND status = 'active' AND role IN ('owner','admin')`,
		"privileged2f": `SELECT count(*) FROM members WHERE workspace_id = ? AND status = 'active' AND role IN ('owner','admin') AND totp_enabled = 1`,
		"active":       `SELECT count(*) FROM api_keys WHERE workspace_id = ? AND ephemeral = 0 AND revoked_at = '' AND (expires_at = '' OR expires_at > ?)`,
		"fullKeys":     `SELECT count(*) FROM api_keys WHERE workspace_id = ? AND ephemeral = 0 AND revoked_at = '' AND (expires_at = '' OR expires_at > ?) AND access = 'full' AND project_id = ''`,
		"neverUsed":    `SELECT count(*) FROM api_keys WHERE workspace_id = ? AND ephemeral = 0 AND revoked_at = '' AND (expires_at = '' OR expires_at > ?) AND last_used_at = ''`,
		"usedToday":    `SELECT count(*) FROM api_keys WHERE workspace_id = ? AND ephemeral = 0 AND last_used_at >= ?`,
		"env":          `SELECT count(*) FROM env_vars e JOIN projects p ON p.id = e.project_id WHERE p.workspace_id = ?`,
		"audit7d":      `SELECT count(*) FROM audit_log WHERE workspace_id = ? AND at >= ?`,
	} {
		args := []any{ws}
		switch name {
		case "active", "fullKeys", "neverUsed":
			args = append(args, nowS)
		case "usedToday":
			args = append(args, store.FormatTime(now.Add(-24*time.Hour)))
		case "audit7d":
			args = append(args, store.FormatTime(now.Add(-7*24*time.Hour)))
		}
		if counts[name], err = s.count(ctx, q, args...); err != nil {
			return Overview{}, err
		}
	}

	// Owners and admins with two-factor.
	priv, priv2f := counts["privileged"], counts["privileged2f"]
	share := 1.0
	if priv > 0 {
		share = float64(priv2f) / float64(priv)
	}
	checks = append(checks, scored("two_factor", "Owners and admins with two-factor", 25, share, float64(priv2f),
		fmt.Sprintf("%d of %d owners and admins use two-factor sign-in", priv2f, priv),
		"Each owner and admin turns on two-factor: POST /api/account/totp, then confirm with a code."))

	// Full-access API keys.
	full := counts["fullKeys"]
	share = tier(float64(full), 2, 5)
	checks = append(checks, scored("full_access_keys", "Full-access API keys", 15, share, float64(full),
		fmt.Sprintf("%d active keys have full access to the whole workspace", full),
		"Replace full-access keys with read-only or project-limited keys where they suffice, and revoke the rest (DELETE /api/keys/{id})."))

	// Oldest active key.
	var oldest string
	if err := s.db.QueryRowContext(ctx, `SELECT coalesce(min(created_at),'') FROM api_keys WHERE workspace_id = ? AND ephemeral = 0 AND revoked_at = '' AND (expires_at = '' OR expires_at > ?)`,
		ws, nowS).Scan(&oldest); err != nil {
		return Overview{}, fmt.Errorf("security: %w", err)
	}
	share, age, finding := 1.0, 0.0, "No active keys"
	if oldest != "" {
		d := now.Sub(store.ParseTime(oldest))
		age = math.Floor(d.Hours() / 24)
		finding = fmt.Sprintf("The oldest active key is %.0f days old", age)
		share = tier(float64(d), float64(KeyAgeGood), float64(KeyAgeTolerate))
	}
	checks = append(checks, scored("oldest_key", "Oldest active key", 15, share, age, finding,
		"Rotate keys older than 90 days: create a new key, move your callers to it, revoke the old one."))

	// Never-used keys.
	active, never := counts["active"], counts["neverUsed"]
	share = 1
	if active > 0 {
		share = 1 - float64(never)/float64(active)
	}
	checks = append(checks, scored("never_used_keys", "Never-used keys", 10, share, float64(never),
		fmt.Sprintf("%d of %d active keys never made a call", never, active),
		"Revoke keys nobody uses: they are secrets to leak for no benefit."))

	// Domain verification.
	unverified, err := s.optional(ctx, s.UnverifiedDomains, ws)
	if err != nil {
		return Overview{}, err
	}
	share, finding = 1, "No custom domain is waiting for verification"
	if unverified > 0 {
		share, finding = 0, fmt.Sprintf("%d custom domains are not verified yet", unverified)
	}
	checks = append(checks, scored("domain_verification", "Domain verification", 10, share, float64(unverified), finding,
		"Add the verification records your domain's page shows at your DNS provider, or remove domains you no longer use."))

	// Owners and admins.
	share = tier(float64(priv), 3, 5)
	checks = append(checks, scored("owners_and_admins", "Owners and admins", 15, share, float64(priv),
		fmt.Sprintf("%d members can change everything (owner or admin)", priv),
		"Give members the least role they need: developer for day-to-day work (PATCH /api/members/{id})."))

	// Environment variables (not scored).
	checks = append(checks, Check{ID: "environment_variables", Title: "Environment variables", Status: "info", Value: ptr(float64(counts["env"])),
		Finding: fmt.Sprintf("%d variables stored, sealed at rest with AES-256-GCM", counts["env"])})

	// End-user sign-in lockouts.
	locked, err := s.optional(ctx, s.LockedOutUsers, ws)
	if err != nil {
		return Overview{}, err
	}
	share, finding = 1, "No app user is locked out"
	if locked > 0 {
		share, finding = 0.5, fmt.Sprintf("%d app users are locked out after repeated failed sign-ins", locked)
	}
	checks = append(checks, scored("end_user_lockouts", "End-user sign-in lockouts", 10, share, float64(locked), finding,
		"Look for password-guessing against your apps' sign-in: the lockouts protect the accounts, but a wave of them means an attack."))

	// Password hashing (not scored).
	p := passhash.Default
	checks = append(checks, Check{ID: "password_hashing", Title: "Password hashing", Status: "info",
		Finding: fmt.Sprintf("Members' passwords are stored as salted argon2id hashes (m=%d KiB, t=%d, p=%d); API keys as SHA-256 of 200-bit secrets", p.Memory, p.Time, p.Threads)})

	// Sign-in for your apps' users (not scored, unavailable).
	checks = append(checks, Check{ID: "app_user_two_factor", Title: "Sign-in for your apps' users", Status: "unavailable",
		Finding: "App users cannot add a second factor: the platform does not offer it yet"})

	// Audit activity (not scored).
	checks = append(checks, Check{ID: "audit_activity", Title: "Audit activity", Status: "info", Value: ptr(float64(counts["audit7d"])),
		Finding: fmt.Sprintf("%d changes recorded in the audit log over the last 7 days", counts["audit7d"])})

	// API key activity (not scored).
	day := now.Truncate(24 * time.Hour)
	today, yesterday := 0.0, 0.0
	for _, m := range dataMetrics {
		var a, b float64
		if err := s.db.QueryRowContext(ctx, `SELECT
				coalesce(sum(CASE WHEN at >= ? THEN quantity END),0), coalesce(sum(CASE WHEN at < ? THEN quantity END),0)
			FROM usage_events WHERE workspace_id = ? AND metric = ? AND at >= ?`,
			store.FormatTime(day), store.FormatTime(day), ws, string(m), store.FormatTime(day.Add(-24*time.Hour))).Scan(&a, &b); err != nil {
			return Overview{}, fmt.Errorf("security: %w", err)
		}
		today, yesterday = today+a, yesterday+b
	}
	checks = append(checks, Check{ID: "api_key_activity", Title: "API key activity", Status: "info", Value: ptr(float64(counts["usedToday"])),
		Finding: fmt.Sprintf("%d keys used in the last 24 hours; %.0f data calls today and %.0f yesterday (UTC)", counts["usedToday"], today, yesterday)})

	score := 0
	for _, c := range checks {
		score += c.Points
	}
	hours, err := s.changesPerHour(ctx, ws, now)
	if err != nil {
		return Overview{}, err
	}
	return Overview{Score: score, Checks: checks, ChangesPerHour: hours, GeneratedAt: now}, nil
}

func (s *Service) optional(ctx context.Context, c Counter, ws string) (int, error) {
	if c == nil {
		return 0, nil
	}
	return c(ctx, ws)
}

// changesPerHour counts audit rows in each of the 24 UTC hours ending with
// the current one, oldest first.
func (s *Service) changesPerHour(ctx context.Context, ws string, now time.Time) ([]HourCount, error) {
	first := now.Truncate(time.Hour).Add(-23 * time.Hour)
	out := make([]HourCount, 24)
	for i := range out {
		out[i].Hour = first.Add(time.Duration(i) * time.Hour)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT substr(at, 1, 13), count(*) FROM audit_log WHERE workspace_id = ? AND at >= ? GROUP BY 1`,
		ws, store.FormatTime(first))
	if err != nil {
		return nil, fmt.Errorf("security: changes per hour: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var hour string
		var n int
		if err := rows.Scan(&hour, &n); err != nil {
			return nil, fmt.Errorf("security: changes per hour: %w", err)
		}
		t, err := time.Parse("2006-01-02T15", hour)
		if err != nil {
			continue
		}
		if i := int(t.Sub(first) / time.Hour); i >= 0 && i < 24 {
			out[i].Changes = n
		}
	}
	return out, rows.Err()
}
