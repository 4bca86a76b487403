package shield

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/rules"
)

// Limits of site passwords.
const (
	// MinSitePasswordLen is the shortest site password accepted, in characters.
	MinSitePasswordLen = 8
	// MaxPasswordsPerRequest bounds the sites one request may change.
	MaxPasswordsPerRequest = 100
)

// knownSetting holds the JSON names of the settings (rules.Settings), so an
// error naming another field is an unknown setting; read from the type, not
// from an error's message.
var knownSetting = func() map[string]bool {
	m := map[string]bool{}
	t := reflect.TypeFor[rules.Settings]()
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			m[name] = true
		}
	}
	return m
}()

// invalidSetting turns a rules validation error into a 400 naming the
// setting and the entry.
func invalidSetting(err error) error {
	var ve *rules.ValidationError
	if !errors.As(err, &ve) {
		return api.Invalid("%v", err)
	}
	code := "invalid_setting"
	if ve.Field != "" && ve.Index < 0 && ve.Field != "passwords" && !knownSetting[ve.Field] {
		code = "unknown_setting"
	}
	e := api.E(api.KindInvalid, code, "%s", strings.TrimPrefix(ve.Error(), "rules: "))
	if ve.Field != "" {
		e = e.With("field", ve.Field)
	}
	if ve.Index >= 0 {
		e = e.With("index", ve.Index)
	}
	if ve.Entry != "" {
		e = e.With("entry", ve.Entry)
	}
	return e
}

// IsPasswordsBody reports whether a PUT body sets passwords (and so must
// hold nothing else).
func IsPasswordsBody(body []byte) (bool, error) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(bytes.TrimSpace(body), &fields) != nil {
		return false, nil // DecodeSettingsPatch names what is wrong
	}
	if _, ok := fields["passwords"]; !ok {
		return false, nil
	}
	if len(fields) > 1 {
		return false, api.E(api.KindInvalid, "invalid_setting", "passwords are set in a request of their own: send {\"passwords\": {...}} without other settings").
			With("field", "passwords")
	}
	return true, nil
}

// Update merges a PUT body of settings over the saved ones, validates them
// through rules and stores them; a refused body stores nothing. The answer
// says which live sites the saved rules reached.
func (s *Service) Update(ctx context.Context, pr *auth.Principal, body []byte) (Answer, error) {
	var next rules.Settings
	var changed []string
	err := s.pub.Change(ctx, func(tx *sql.Tx) error {
		cur, err := loadSettings(ctx, tx, pr.WorkspaceID)
		if err != nil {
			return err
		}
		if next, err = rules.DecodeSettingsPatch(cur, body); err != nil {
			return invalidSetting(err)
		}
		changed = changedFields(cur, next)
		raw, err := json.Marshal(next)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO shield_settings(workspace_id, settings, updated_at) VALUES (?,?,?)
			ON CONFLICT(workspace_id) DO UPDATE SET settings = excluded.settings, updated_at = excluded.updated_at`,
			pr.WorkspaceID, string(raw), store.FormatTime(s.clock.Now())); err != nil {
			return fmt.Errorf("shield: save: %w", err)
		}
		summary := "Shield settings saved without change"
		if len(changed) > 0 {
			summary = "Shield settings changed: " + strings.Join(changed, ", ")
		}
		return s.audit.Record(ctx, tx, audit.Event{Workspace: pr.WorkspaceID, Actor: pr, Action: "shield.update", Category: audit.CategorySettings,
			TargetType: "shield", TargetID: pr.WorkspaceID, Summary: summary, Details: map[string]any{"fields": changed, "settings": next}})
	})
	if err != nil {
		return Answer{}, err
	}
	out, err := s.answer(ctx, pr.WorkspaceID, next)
	if err != nil {
		return Answer{}, err
	}
	out.Applied, out.AppliedNote, err = s.applied(ctx, pr.WorkspaceID, next)
	if err == nil {
		out.AppliedNote = "saved; " + out.AppliedNote
	}
	return out, err
}

func changedFields(a, b rules.Settings) []string {
	var out []string
	if a.Enabled != b.Enabled {
		out = append(out, "enabled")
	}
	if !slices.Equal(a.BlockedCountries, b.BlockedCountries) {
		out = append(out, "blockedCountries")
	}
	if !slices.Equal(a.DenyIPs, b.DenyIPs) {
		out = append(out, "denyIps")
	}
	if !slices.Equal(a.AllowIPs, b.AllowIPs) {
		out = append(out, "allowIps")
	}
	if a.BlockAICrawlers != b.BlockAICrawlers {
		out = append(out, "blockAiCrawlers")
	}
	if a.LogOnly != b.LogOnly {
		out = append(out, "logOnly")
	}
	return out
}

// PasswordsRequest is the body of PUT /api/services/shield that sets site
// passwords: each key is a project slug or id, each value a password or
// null to remove it.
type PasswordsRequest struct {
	Passwords map[string]*string `json:"passwords"`
}

// PasswordsAnswer is the answer of a passwords PUT; passwords are never
// read back.
type PasswordsAnswer struct {
	ProtectedSites   []string `json:"protectedSites"`
	PasswordsAllowed bool     `json:"passwordsAllowed"`
}

// passwordsNotAllowed refuses setting a site password on a plan without
// them (the plan-limit error: limit and current 0, required_plan the
// smallest plan with them).
func passwordsNotAllowed(plan plans.Name) error {
	return plans.LimitError(plan, sitePasswords, 0, 1,
		"site passwords need the %s plan or above; removing one (null) is always allowed", plans.Above(0, sitePasswords))
}

// sitePasswords is how many site passwords a plan allows: none or any.
func sitePasswords(p plans.Name) int {
	if plans.Of(p).SitePasswords {
		return plans.Unlimited
	}
	return 0
}

// ErrPasswordStaticOnly is matched (errors.Is) by the refusal of a password
// for a site that serves a server app, function or worker program: site
// passwords are enforced on static sites only.
var ErrPasswordStaticOnly = errors.New("shield: site passwords are for static sites only")

// staticOnly is the 400 refusing a password for a site of another kind.
func staticOnly(slug, kind, key string) error {
	return api.E(api.KindInvalid, "password_static_only",
		"%s serves a %s: site passwords protect static sites only; protect an app, function or worker in its own code", slug, kind).
		With("site", key).With("kind", kind).Wrap(ErrPasswordStaticOnly)
}

type site struct{ id, slug string }

// SetPasswords sets or removes site passwords. Everything is validated and
// hashed before anything is stored; a refused request stores nothing.
func (s *Service) SetPasswords(ctx context.Context, pr *auth.Principal, req PasswordsRequest) (PasswordsAnswer, error) {
	switch n := len(req.Passwords); {
	case n == 0:
		return PasswordsAnswer{}, api.Invalid("passwords must name at least one site: {\"passwords\": {\"<site>\": \"<password>\" or null}}")
	case n > MaxPasswordsPerRequest:
		return PasswordsAnswer{}, api.Invalid("one request changes at most %d site passwords", MaxPasswordsPerRequest)
	}
	plan := s.plans.Plan(ctx, pr.WorkspaceID)
	allowed := plans.Allows(sitePasswords(plan), 1)
	keys := make([]string, 0, len(req.Passwords))
	for k := range req.Passwords {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	type change struct {
		site site
		hash string // empty: remove
	}
	var changes []change
	seen := map[string]string{}
	kinds, err := s.liveKinds(ctx, pr.WorkspaceID)
	if err != nil {
		return PasswordsAnswer{}, err
	}
	for _, k := range keys {
		st, err := s.findSite(ctx, pr.WorkspaceID, k)
		if err != nil {
			return PasswordsAnswer{}, err
		}
		if err := s.projects.RequireActive(ctx, st.id); err != nil {
			return PasswordsAnswer{}, err
		}
		if prev, dup := seen[st.id]; dup {
			return PasswordsAnswer{}, api.Invalid("passwords names site %s twice (%q and %q)", st.slug, prev, k)
		}
		seen[st.id] = k
		pw := req.Passwords[k]
		if pw == nil {
			changes = append(changes, change{site: st})
			continue
		}
		if !allowed {
			return PasswordsAnswer{}, passwordsNotAllowed(plan)
		}
		if kind, live := kinds[st.id]; live && kind != snapshot.KindStatic {
			return PasswordsAnswer{}, fmt.Errorf("shield: site %s: %w", st.slug, staticOnly(st.slug, kind, k))
		}
		if n := utf8.RuneCountInString(*pw); n < MinSitePasswordLen || len(*pw) > rules.MaxSitePasswordLen {
			return PasswordsAnswer{}, api.E(api.KindInvalid, "invalid_password",
				"the password for %s must be %d to %d characters", st.slug, MinSitePasswordLen, rules.MaxSitePasswordLen).With("site", k)
		}
		h, err := s.hash(*pw)
		if err != nil {
			return PasswordsAnswer{}, fmt.Errorf("shield: hash: %w", err)
		}
		changes = append(changes, change{site: st, hash: h})
	}
	var set, removed []string
	err = s.pub.Change(ctx, func(tx *sql.Tx) error {
		now := store.FormatTime(s.clock.Now())
		for _, c := range changes {
			if c.hash == "" {
				if _, err := tx.ExecContext(ctx, `DELETE FROM site_passwords WHERE project_id = ?`, c.site.id); err != nil {
					return err
				}
				removed = append(removed, c.site.slug)
				continue
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO site_passwords(project_id, workspace_id, hash, set_at) VALUES (?,?,?,?)
				ON CONFLICT(project_id) DO UPDATE SET hash = excluded.hash, set_at = excluded.set_at`, c.site.id, pr.WorkspaceID, c.hash, now); err != nil {
				return err
			}
			set = append(set, c.site.slug)
		}
		var parts []string
		if len(set) > 0 {
			parts = append(parts, "set site password on "+strings.Join(set, ", "))
		}
		if len(removed) > 0 {
			parts = append(parts, "removed site password from "+strings.Join(removed, ", "))
		}
		return s.audit.Record(ctx, tx, audit.Event{Workspace: pr.WorkspaceID, Actor: pr, Action: "shield.passwords", Category: audit.CategorySettings,
			TargetType: "shield", TargetID: pr.WorkspaceID, Summary: strings.Join(parts, "; "),
			Details: map[string]any{"set": set, "removed": removed}})
	})
	if err != nil {
		return PasswordsAnswer{}, err
	}
	ps, err := s.protectedSites(ctx, pr.WorkspaceID)
	return PasswordsAnswer{ProtectedSites: ps, PasswordsAllowed: allowed}, err
}

// findSite resolves a project id or slug of the workspace.
func (s *Service) findSite(ctx context.Context, workspace, key string) (site, error) {
	p, err := s.projects.Find(ctx, workspace, key)
	var ae *api.Error
	if errors.As(err, &ae) && ae.Kind == api.KindNotFound {
		return site{}, api.E(api.KindInvalid, "unknown_site", "passwords names %q, which is not a project of this workspace (give its slug or id)", key).With("site", key)
	}
	if err != nil {
		return site{}, fmt.Errorf("shield: find site: %w", err)
	}
	return site{id: p.ID, slug: p.Slug}, nil
}

// ApplyAnswer is the answer of POST /api/services/shield (Apply now).
type ApplyAnswer struct {
	Applied     *Applied `json:"applied"`
	AppliedNote string   `json:"appliedNote"`
	// Version is the edge configuration version that carries the rules.
	Version int64 `json:"version"`
}

// ApplyNow puts the saved rules on every live static site: it publishes a
// new edge configuration version and answers where the rules are in force.
func (s *Service) ApplyNow(ctx context.Context, pr *auth.Principal) (ApplyAnswer, error) {
	st, err := s.Current(ctx, pr.WorkspaceID)
	if err != nil {
		return ApplyAnswer{}, err
	}
	var out ApplyAnswer
	if out.Applied, out.AppliedNote, err = s.applied(ctx, pr.WorkspaceID, st); err != nil {
		return ApplyAnswer{}, err
	}
	err = s.pub.Change(ctx, func(tx *sql.Tx) error {
		return s.audit.Record(ctx, tx, audit.Event{Workspace: pr.WorkspaceID, Actor: pr, Action: "shield.apply", Category: audit.CategorySettings,
			TargetType: "shield", TargetID: pr.WorkspaceID, Summary: fmt.Sprintf("applied Shield rules now to %d live static site(s)", len(out.Applied.Sites))})
	})
	if err != nil {
		return ApplyAnswer{}, err
	}
	out.Version = s.pub.Version()
	out.AppliedNote = "applied; " + out.AppliedNote
	return out, nil
}
