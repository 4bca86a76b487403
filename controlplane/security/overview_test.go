package security_test

import (
	"context"
	"github.com/svcplatform/platform/controlplane"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
	"net/http"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/accounts"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/cptest"
	"github.com/svcplatform/platform/controlplane/security"
)

func overview(t *testing.T, c *cptest.Client) (security.Overview, map[string]security.Check) {
	t.Helper()
	var o security.Overview
	c.Must(http.StatusOK, "GET", "/api/security/overview", nil).JSON(t, &o)
	m := map[string]security.Check{}
	for _, ch := range o.Checks {
		m[ch.ID] = ch
	}
	return o, m
}

func TestOverviewHasEveryCheck(t *testing.T) {
	for _, eng := range pgtest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			env := cptest.New(t, onEngine(t, eng))
			o, m := overview(t, env.Owner)
			// Custom domains and sign-in pools' lockouts are scored (none
			// here).
			want := map[string]bool{"two_factor": true, "full_access_keys": true, "oldest_key": true, "never_used_keys": true,
				"domain_verification": true, "owners_and_admins": true, "environment_variables": false, "end_user_lockouts": true,
				"password_hashing": false, "app_user_two_factor": false, "audit_activity": false, "api_key_activity": false}
			if len(o.Checks) != 12 {
				t.Fatalf("%d checks, want the spec's 12", len(o.Checks))
			}
			weights, points := 0, 0
			for id, isScored := range want {
				c, ok := m[id]
				if !ok || c.Scored != isScored || c.Finding == "" || c.Title == "" {
					t.Errorf("check %s: %+v", id, c)
				}
				if c.Status != "pass" && c.Scored && c.Fix == "" {
					t.Errorf("check %s is %s without a fix", id, c.Status)
				}
				weights += c.Weight
				points += c.Points
			}
			// The owner lacks two-factor (0 of 25), everything else
			// passes: 75 of 100.
			if weights != 100 || points != 75 || o.Score != 75 {
				t.Fatalf("weights %d, points %d, score %d", weights, points, o.Score)
			}
			if c := m["domain_verification"]; c.Status != "pass" || c.Weight != 10 || c.Points != 10 || c.Fix != "" {
				t.Errorf("domain_verification: %+v", c)
			}
			if len(o.ChangesPerHour) != 24 || !o.ChangesPerHour[23].Hour.Equal(env.Clock.Now().Truncate(time.Hour)) {
				t.Fatalf("changes per hour %+v", o.ChangesPerHour)
			}
			if m["app_user_two_factor"].Status != "unavailable" {
				t.Fatalf("app user two-factor %+v", m["app_user_two_factor"])
			}
		})
	}
}

func TestTwoFactorTransition(t *testing.T) {
	for _, eng := range pgtest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			env := cptest.New(t, onEngine(t, eng))
			_, m := overview(t, env.Owner)
			if m["two_factor"].Status != "fail" || m["two_factor"].Points != 0 {
				t.Fatalf("owner without two-factor: %+v", m["two_factor"])
			}
			env.Client("").Must(200, "POST", "/api/members/accept", map[string]any{"token": env.CP.Bootstrap.SetupToken, "password": "owner password 1"})
			s := env.SignIn("owner@example.com", "owner password 1", "")
			var enr accounts.TOTPEnrollment
			s.Must(200, "POST", "/api/account/totp", nil).JSON(t, &enr)
			code, _ := auth.TOTPCode(enr.Secret, auth.TOTPStep(env.Clock.Now()))
			s.Must(200, "POST", "/api/account/totp/confirm", map[string]any{"code": code})
			_, m = overview(t, env.Owner)
			if m["two_factor"].Status != "pass" || m["two_factor"].Points != 25 {
				t.Fatalf("owner with two-factor: %+v", m["two_factor"])
			}
			env.Member("admin@example.com", "admin")
			_, m = overview(t, env.Owner)
			if m["two_factor"].Status != "warn" || m["two_factor"].Points != 13 {
				t.Fatalf("one of two with two-factor: %+v", m["two_factor"])
			}
		})
	}
}

func TestKeyChecksTransitions(t *testing.T) {
	for _, eng := range pgtest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			env := cptest.New(t, onEngine(t, eng))
			prj := env.CreateProject("p")
			_, m := overview(t, env.Owner)
			if m["full_access_keys"].Status != "pass" || m["never_used_keys"].Status != "pass" || m["oldest_key"].Status != "pass" {
				t.Fatalf("fresh workspace: %+v %+v %+v", m["full_access_keys"], m["never_used_keys"], m["oldest_key"])
			}
			// Two more full keys (three in all): warn. Scoped keys do not count.
			env.NewKey("full", "")
			env.NewKey("full", "")
			env.NewKey("read_only", "")
			env.NewKey("full", prj)
			_, m = overview(t, env.Owner)
			if m["full_access_keys"].Status != "warn" || *m["full_access_keys"].Value != 3 {
				t.Fatalf("three full keys: %+v", m["full_access_keys"])
			}
			if m["never_used_keys"].Status != "warn" || *m["never_used_keys"].Value != 4 {
				t.Fatalf("four never-used keys: %+v", m["never_used_keys"])
			}
			for i := 0; i < 3; i++ {
				env.NewKey("full", "")
			}
			_, m = overview(t, env.Owner)
			if m["full_access_keys"].Status != "fail" {
				t.Fatalf("six full keys: %+v", m["full_access_keys"])
			}
			// Age.
			env.Clock.Advance(100 * 24 * time.Hour)
			_, m = overview(t, env.Owner)
			if m["oldest_key"].Status != "warn" || *m["oldest_key"].Value != 100 {
				t.Fatalf("100-day-old key: %+v", m["oldest_key"])
			}
			env.Clock.Advance(300 * 24 * time.Hour)
			_, m = overview(t, env.Owner)
			if m["oldest_key"].Status != "fail" {
				t.Fatalf("400-day-old key: %+v", m["oldest_key"])
			}
			if *m["api_key_activity"].Value != 1 {
				t.Fatalf("key activity: %+v", m["api_key_activity"])
			}
		})
	}
}

func TestOwnersAdminsAndActivity(t *testing.T) {
	for _, eng := range pgtest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			env := cptest.New(t, onEngine(t, eng))
			for _, e := range []string{"a1@example.com", "a2@example.com", "a3@example.com"} {
				env.Member(e, "admin")
			}
			o, m := overview(t, env.Owner)
			if m["owners_and_admins"].Status != "warn" || *m["owners_and_admins"].Value != 4 {
				t.Fatalf("four owners and admins: %+v", m["owners_and_admins"])
			}
			env.Member("a4@example.com", "admin")
			env.Member("a5@example.com", "admin")
			_, m = overview(t, env.Owner)
			if m["owners_and_admins"].Status != "fail" {
				t.Fatalf("six owners and admins: %+v", m["owners_and_admins"])
			}
			id := env.CreateProject("p")
			env.Owner.Must(201, "POST", "/api/projects/"+id+"/env", map[string]any{"key": "A", "value": "1"})
			o, m = overview(t, env.Owner)
			if *m["environment_variables"].Value != 1 || *m["audit_activity"].Value < 2 {
				t.Fatalf("env %+v audit %+v", m["environment_variables"], m["audit_activity"])
			}
			if o.ChangesPerHour[23].Changes == 0 {
				t.Fatalf("this hour's changes not counted: %+v", o.ChangesPerHour[23])
			}
			env.Clock.Advance(8 * 24 * time.Hour)
			_, m = overview(t, env.Owner)
			if *m["audit_activity"].Value != 0 {
				t.Fatalf("changes older than 7 days counted: %+v", m["audit_activity"])
			}
		})
	}
}

func TestAreaCounterTransitions(t *testing.T) {
	for _, eng := range pgtest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			env := cptest.New(t, onEngine(t, eng))
			ws := env.CP.Bootstrap.Workspace.ID
			counter := func(n int) security.Counter {
				return func(context.Context, string) (int, error) { return n, nil }
			}
			// The owner has no two-factor (0 of 25) and their key made no call yet
			// (0 of 10) in every case; the score is what is earned over the weights
			// of the available checks.
			for _, tc := range []struct {
				name             string
				domains, locked  security.Counter
				domainS, lockedS string
				score            int
			}{
				{"neither area wired", nil, nil, "unavailable", "unavailable", 56},             // 45/80
				{"domains wired, none unverified", counter(0), nil, "pass", "unavailable", 61}, // 55/90
				{"unverified domain", counter(2), nil, "fail", "unavailable", 50},              // 45/90
				{"both wired, all clear", counter(0), counter(0), "pass", "pass", 65},          // 65/100
				{"locked-out users", counter(0), counter(3), "pass", "warn", 60},               // 60/100
			} {
				t.Run(tc.name, func(t *testing.T) {
					s, err := security.New(security.Config{}, security.Deps{Accounts: env.CP.Accounts, Variables: env.CP.Projects, Audit: env.CP.Audit,
						Usage: env.CP.Meter, Clock: env.Clock, UnverifiedDomains: tc.domains, LockedOutUsers: tc.locked})
					if err != nil {
						t.Fatal(err)
					}
					o, err := s.Overview(context.Background(), ws)
					if err != nil {
						t.Fatal(err)
					}
					for _, c := range o.Checks {
						if c.ID == "domain_verification" && c.Status != tc.domainS || c.ID == "end_user_lockouts" && c.Status != tc.lockedS {
							t.Fatalf("%s: %+v", c.ID, c)
						}
					}
					if o.Score != tc.score {
						t.Fatalf("score %d, want %d", o.Score, tc.score)
					}
				})
			}
		})
	}
}

// TestMain stops the PostgreSQL server the engine subtests started.
func TestMain(m *testing.M) { pgtest.Main(m) }

// onEngine starts the control plane on engine e's metadata store (a SQLite
// path or a fresh PostgreSQL database).
func onEngine(t *testing.T, e pgtest.Engine) cptest.Options {
	return cptest.Options{Configure: func(c *controlplane.Config) { c.Store = e.DSN(t) }}
}
