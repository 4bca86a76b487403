// Package audit writes and reads the workspace audit log: every create,
// delete, settings change, key, member and money event, with who did it,
// when and through which key. The short activity feed is read from the same
// rows.
package audit

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/store"
)

// Categories group actions; the activity feed hides the private ones from
// members below admin.
const (
	CategoryProject  = "project"
	CategoryEnv      = "env"
	CategorySettings = "settings"
	CategoryKey      = "key"
	CategoryMember   = "member"
	CategoryAccount  = "account"
	CategoryBilling  = "billing"
	CategoryMoney    = "money"
	CategoryData     = "data"
	CategoryDeploy   = "deploy"
)

// private are the categories the activity feed shows to admins only.
var private = map[string]bool{CategoryMember: true, CategoryKey: true, CategoryBilling: true, CategoryAccount: true}

// privateAreas are the action prefixes (before the dot) the feed also hides
// from non-admins, whatever category a row was written with: members,
// keys, billing, the caller's account and sign-ins, and the workspace
// itself (its plan).
var privateAreas = []string{"member", "key", "billing", "account", "session", "workspace"}

// Entry is one audit row.
type Entry struct {
	ID         string         `json:"id"`
	At         time.Time      `json:"at"`
	Actor      Actor          `json:"actor"`
	Action     string         `json:"action"`
	Category   string         `json:"category"`
	TargetType string         `json:"targetType,omitempty"`
	TargetID   string         `json:"targetId,omitempty"`
	ProjectID  string         `json:"projectId,omitempty"`
	Summary    string         `json:"summary"`
	Details    map[string]any `json:"details,omitempty"`
}

// Actor is who made a change.
type Actor struct {
	// Kind is key, session or system.
	Kind      string `json:"kind"`
	MemberID  string `json:"memberId,omitempty"`
	KeyID     string `json:"keyId,omitempty"`
	KeyPrefix string `json:"keyPrefix,omitempty"`
	// Via is "connector" for a change made through the assistant connector.
	Via string `json:"via,omitempty"`
}

// ActorOf describes principal p (nil is the platform itself).
func ActorOf(p *auth.Principal) Actor {
	switch {
	case p == nil:
		return Actor{Kind: "system"}
	case p.Session:
		return Actor{Kind: "session", MemberID: p.MemberID}
	default:
		return Actor{Kind: "key", MemberID: p.MemberID, KeyID: p.KeyID, KeyPrefix: p.KeyPrefix, Via: p.Via}
	}
}

// Log records and reads audit entries.
type Log struct {
	db  *store.DB
	clk clock.Clock
}

// New returns the audit log over db, its entries dated by clk
// (clock.System when nil).
func New(db *store.DB, clk clock.Clock) *Log {
	if clk == nil {
		clk = clock.System{}
	}
	return &Log{db: db, clk: clk}
}

// DB returns the database the log writes to (Record outside a change's
// transaction takes it as the Querier).
func (l *Log) DB() *store.DB { return l.db }

// Event describes a change to record.
type Event struct {
	Workspace  string
	Actor      *auth.Principal
	Action     string // area.verb, e.g. project.create
	Category   string
	TargetType string
	TargetID   string
	ProjectID  string
	Summary    string
	Details    map[string]any
}

// Record writes e through q, which should be the transaction of the change
// itself so that a change and its audit row commit or fail together.
func (l *Log) Record(ctx context.Context, q store.Querier, e Event) error {
	a := ActorOf(e.Actor)
	if a.Via != "" {
		d := make(map[string]any, len(e.Details)+1)
		for k, v := range e.Details {
			d[k] = v
		}
		d["via"] = a.Via
		e.Details = d
	}
	details := "{}"
	if len(e.Details) > 0 {
		b, err := json.Marshal(e.Details)
		if err != nil {
			return fmt.Errorf("audit: details: %w", err)
		}
		details = string(b)
	}
	label := a.Kind
	if a.KeyPrefix != "" {
		label = a.KeyPrefix
	}
	_, err := q.ExecContext(ctx, `INSERT INTO audit_log
		(id, workspace_id, at, actor_member, actor_key, actor_label, action, category, target_type, target_id, project_id, summary, details)
		VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)`,
		store.NewID("aud"), e.Workspace, store.FormatTime(l.clk.Now()), a.MemberID, a.KeyID, label,
		e.Action, e.Category, e.TargetType, e.TargetID, e.ProjectID, e.Summary, details)
	if err != nil {
		return fmt.Errorf("audit: record %s: %w", e.Action, err)
	}
	return nil
}

// Query selects audit rows.
type Query struct {
	Workspace string
	Action    string // exact action, or empty for all
	Before    string // cursor from a previous page
	Limit     int
	// HidePrivate drops member, key, billing and account rows.
	HidePrivate bool
	// Since limits rows to those at or after it (zero for all).
	Since time.Time
}

// ErrBadCursor is returned for a cursor this log did not issue.
var ErrBadCursor = fmt.Errorf("audit: bad cursor")

// List returns rows newest first and the cursor of the next page ("" at the end).
func (l *Log) List(ctx context.Context, q Query) ([]Entry, string, error) {
	sqlq := `SELECT seq, id, at, actor_member, actor_key, actor_label, action, category, target_type, target_id, project_id, summary, details
		FROM audit_log WHERE workspace_id = ?`
	args := []any{q.Workspace}
	if q.Action != "" {
		sqlq += ` AND action = ?`
		args = append(args, q.Action)
	}
	if q.Before != "" {
		seq, err := strconv.ParseInt(q.Before, 36, 64)
		if err != nil || seq <= 0 {
			return nil, "", ErrBadCursor
		}
		sqlq += ` AND seq < ?`
		args = append(args, seq)
	}
	if q.HidePrivate {
		sqlq += ` AND category NOT IN ('member','key','billing','account')`
		// The action's area (before the first dot) is not private; written
		// with = and LIKE so that it runs on both engines.
		for _, area := range privateAreas {
			sqlq += ` AND action <> ? AND action NOT LIKE ?`
			args = append(args, area, area+".%")
		}
	}
	if !q.Since.IsZero() {
		sqlq += ` AND at >= ?`
		args = append(args, store.FormatTime(q.Since))
	}
	sqlq += ` ORDER BY seq DESC LIMIT ?`
	args = append(args, q.Limit+1)
	rows, err := l.db.QueryContext(ctx, sqlq, args...)
	if err != nil {
		return nil, "", fmt.Errorf("audit: list: %w", err)
	}
	defer rows.Close()
	var out []Entry
	var seqs []int64
	for rows.Next() {
		var e Entry
		var seq int64
		var at, label, details string
		if err := rows.Scan(&seq, &e.ID, &at, &e.Actor.MemberID, &e.Actor.KeyID, &label, &e.Action, &e.Category,
			&e.TargetType, &e.TargetID, &e.ProjectID, &e.Summary, &details); err != nil {
			return nil, "", fmt.Errorf("audit: scan: %w", err)
		}
		e.At = store.ParseTime(at)
		switch {
		case e.Actor.KeyID != "":
			e.Actor.Kind, e.Actor.KeyPrefix = "key", label
		case e.Actor.MemberID != "":
			e.Actor.Kind = "session"
		default:
			e.Actor.Kind = "system"
		}
		if details != "{}" {
			json.Unmarshal([]byte(details), &e.Details)
			e.Actor.Via, _ = e.Details["via"].(string)
		}
		out = append(out, e)
		seqs = append(seqs, seq)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("audit: list: %w", err)
	}
	next := ""
	if len(out) > q.Limit {
		out = out[:q.Limit]
		next = strconv.FormatInt(seqs[q.Limit-1], 36)
	}
	return out, next, nil
}

// CountSince counts the workspace's rows at or after t (the security
// overview's audit activity, and its changes per hour).
func (l *Log) CountSince(ctx context.Context, workspace string, t time.Time) (int, error) {
	var n int
	err := l.db.QueryRowContext(ctx, `SELECT count(*) FROM audit_log WHERE workspace_id = ? AND at >= ?`,
		workspace, store.FormatTime(t)).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("audit: count: %w", err)
	}
	return n, nil
}

// PerHour counts the workspace's rows in each of n UTC hours starting at
// first (truncated to the hour), oldest first.
func (l *Log) PerHour(ctx context.Context, workspace string, first time.Time, n int) ([]int, error) {
	first = first.UTC().Truncate(time.Hour)
	out := make([]int, n)
	rows, err := l.db.QueryContext(ctx, `SELECT substr(at, 1, 13), count(*) FROM audit_log WHERE workspace_id = ? AND at >= ? AND at < ? GROUP BY 1`,
		workspace, store.FormatTime(first), store.FormatTime(first.Add(time.Duration(n)*time.Hour)))
	if err != nil {
		return nil, fmt.Errorf("audit: per hour: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var hour string
		var c int
		if err := rows.Scan(&hour, &c); err != nil {
			return nil, fmt.Errorf("audit: per hour: %w", err)
		}
		t, err := time.Parse("2006-01-02T15", hour)
		if err != nil {
			continue
		}
		if i := int(t.Sub(first) / time.Hour); i >= 0 && i < n {
			out[i] = c
		}
	}
	return out, rows.Err()
}

// Private reports whether category is hidden from non-admins in the feed.
func Private(category string) bool { return private[category] }

// PrivateEntry reports whether the feed hides e from non-admins: its
// category is private or its action belongs to a private area.
func PrivateEntry(e Entry) bool {
	if private[e.Category] {
		return true
	}
	area, _, _ := strings.Cut(e.Action, ".")
	return slices.Contains(privateAreas, area)
}

// LastChange returns when the workspace's newest row of action listed
// field among its details' changed "fields" was written (false when none
// did): for example when Shield's logOnly was last switched.
func (l *Log) LastChange(ctx context.Context, workspace, action, field string) (time.Time, bool, error) {
	var at string
	has := `json_valid(details) AND EXISTS (SELECT 1 FROM json_each(details, '$.fields') WHERE value = ?)`
	if l.db.Dialect() == store.Postgres {
		// details is always JSON written by Record; fields an array of names.
		has = `jsonb_exists(details::jsonb -> 'fields', ?)`
	}
	err := l.db.QueryRowContext(ctx, `SELECT at FROM audit_log WHERE workspace_id = ? AND action = ?
		AND `+has+` ORDER BY seq DESC LIMIT 1`, workspace, action, field).Scan(&at)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, fmt.Errorf("audit: last change of %s: %w", field, err)
	}
	return store.ParseTime(at), true, nil
}
