package controlplane_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane"
	"github.com/svcplatform/platform/controlplane/accounts"
	"github.com/svcplatform/platform/controlplane/billing"
	"github.com/svcplatform/platform/controlplane/cptest"
	"github.com/svcplatform/platform/controlplane/plans"
)

// Sign-up in each mode: closed refuses, open makes a person and a
// workspace that can do nothing but verify its owner's e-mail until the
// mailed token is redeemed, domains refuses other domains; all throttled.
func TestSignUpModes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy string
		email  string
		status int
		code   string
	}{
		{"closed", "closed", "a@example.com", http.StatusForbidden, "signup_closed"},
		{"open", "open", "a@example.com", http.StatusAccepted, ""},
		{"listed domain", "domains:example.org,example.com", "a@example.com", http.StatusAccepted, ""},
		{"other domain", "domains:example.org", "a@example.com", http.StatusForbidden, "signup_domain"},
		{"bad address", "open", "not an address", http.StatusBadRequest, "invalid_request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			policy, err := accounts.ParseSignUpPolicy(tc.policy)
			if err != nil {
				t.Fatal(err)
			}
			env := cptest.New(t, cptest.Options{Configure: func(c *controlplane.Config) {
				c.Accounts.SignUp, c.Accounts.DefaultPlan = policy, plans.Pro
			}})
			anon := env.Client("")
			r := anon.Do("POST", "/api/signup", map[string]any{"email": tc.email, "password": wsPassword, "name": "Ann"})
			if r.Status != tc.status || (tc.code != "" && r.ErrorCode() != tc.code) {
				t.Fatalf("%d %s, want %d %s", r.Status, r.Body, tc.status, tc.code)
			}
			if r.Status != http.StatusAccepted {
				return
			}
			s := env.SignIn(tc.email, wsPassword, "")
			var who struct {
				Workspace struct {
					ID   string `json:"id"`
					Plan string `json:"plan"`
				} `json:"workspace"`
				You struct {
					Role string `json:"role"`
				} `json:"you"`
			}
			s.Must(http.StatusOK, "GET", "/api/workspace", nil).JSON(t, &who)
			if who.Workspace.Plan != "pro" || who.You.Role != "owner" {
				t.Fatalf("signed up: %+v, want the owner of a workspace on the default plan pro", who)
			}
			// Signing up again with the same e-mail answers the same and
			// makes nothing: the address's owner is told by mail.
			again := anon.Do("POST", "/api/signup", map[string]any{"email": tc.email, "password": "another password 2"})
			if again.Status != http.StatusAccepted || string(again.Body) != string(r.Body) {
				t.Fatalf("second sign-up: %d %s, want the first answer %s", again.Status, again.Body, r.Body)
			}
			if !strings.Contains(mailWith(env, tc.email, "already has an account"), tc.email) {
				t.Fatal("no notice to the address's owner")
			}
			if got := listed(env, s); len(got) != 1 {
				t.Fatalf("a second sign-up made a workspace: %v", got)
			}
			for _, call := range [][2]string{{"GET", "/api/projects"}, {"POST", "/api/projects"}, {"POST", "/api/keys"}, {"POST", "/api/workspaces"}} {
				if r := s.Do(call[0], call[1], map[string]any{"name": "x"}); r.Status != http.StatusForbidden || r.ErrorCode() != "email_unverified" {
					t.Fatalf("%s %s before verification: %d %s", call[0], call[1], r.Status, r.Body)
				}
			}
			tok := regexp.MustCompile(`svcverify_[A-Za-z0-9_-]+`).FindString(verificationMail(env, tc.email))
			anon.Must(http.StatusOK, "POST", "/api/account/email/verify", map[string]any{"token": tok})
			s.Must(http.StatusCreated, "POST", "/api/projects", map[string]any{"name": "first"})
		})
	}
	t.Run("throttled per address", func(t *testing.T) {
		env := cptest.New(t, cptest.Options{Configure: func(c *controlplane.Config) { c.Accounts.SignUp = accounts.SignUpPolicy{Open: true} }})
		for i := 0; i < accounts.SignUpsPerHour; i++ {
			env.Client("").Must(http.StatusAccepted, "POST", "/api/signup", map[string]any{"email": fmt.Sprintf("p%d@example.com", i), "password": wsPassword})
		}
		r := env.Client("").Do("POST", "/api/signup", map[string]any{"email": "late@example.com", "password": wsPassword})
		if r.Status != http.StatusTooManyRequests || r.Header.Get("Retry-After") == "" {
			t.Fatalf("%d %s, want 429 with Retry-After", r.Status, r.Body)
		}
	})
}

// The owner changes the plan from the Balance: limits change at once; a
// downgrade below what the workspace holds is made and lists what is
// over; refusals change nothing.
func TestPlanChangeThroughTheAPI(t *testing.T) {
	env := cptest.New(t, cptest.Options{Plan: plans.Hobby})
	ctx := context.Background()
	ws := env.CP.Bootstrap.Workspace.ID
	prj := env.CreateProject("p")
	newDB := func(name string) *cptest.Response {
		return env.Owner.Do("POST", "/api/projects/"+prj+"/databases", map[string]any{"name": name})
	}
	if r := newDB("one"); r.Status != http.StatusCreated {
		t.Fatalf("first database: %d %s", r.Status, r.Body)
	}
	if r := newDB("two"); r.Status != http.StatusPaymentRequired || r.ErrorCode() != "plan_limit" {
		t.Fatalf("second database on hobby: %d %s", r.Status, r.Body)
	}
	// Empty Balance: refused with what is missing.
	r := env.Owner.Do("POST", "/api/workspace/plan", map[string]any{"plan": "pro"})
	var refusal struct {
		Error struct {
			Code    string `json:"code"`
			Missing int64  `json:"missingMicros"`
		} `json:"error"`
	}
	r.JSON(t, &refusal)
	if r.Status != http.StatusPaymentRequired || refusal.Error.Code != "balance_insufficient" || refusal.Error.Missing <= 0 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	dev := env.Member("dev@example.com", "admin")
	for _, tc := range []struct {
		name   string
		c      *cptest.Client
		body   any
		status int
		code   string
	}{
		{"not the owner", dev, map[string]any{"plan": "pro"}, http.StatusForbidden, "insufficient_role"},
		{"unknown plan", env.Owner, map[string]any{"plan": "gold"}, http.StatusBadRequest, "invalid_plan"},
		{"operator's plan", env.Owner, map[string]any{"plan": "enterprise"}, http.StatusForbidden, "plan_not_self_serve"},
		{"same plan", env.Owner, map[string]any{"plan": "hobby"}, http.StatusConflict, "plan_unchanged"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if r := tc.c.Do("POST", "/api/workspace/plan", tc.body); r.Status != tc.status || r.ErrorCode() != tc.code {
				t.Fatalf("%d %s, want %d %s", r.Status, r.Body, tc.status, tc.code)
			}
		})
	}
	if err := env.CP.Billing.AddBalance(ctx, ws, 100*billing.Dollar, "test", "plan"); err != nil {
		t.Fatal(err)
	}
	var up billing.PlanAnswer
	env.Owner.Must(http.StatusOK, "POST", "/api/workspace/plan", map[string]any{"plan": "pro"}).JSON(t, &up)
	if up.Change.From != plans.Hobby || up.Change.To != plans.Pro || up.Change.Charged <= 0 || len(up.Over) != 0 {
		t.Fatalf("upgrade %+v", up)
	}
	// Pro's limits at once.
	if r := newDB("two"); r.Status != http.StatusCreated {
		t.Fatalf("second database on pro: %d %s", r.Status, r.Body)
	}
	// Down to hobby with two databases: made, and the databases are listed over.
	var down billing.PlanAnswer
	env.Owner.Must(http.StatusOK, "POST", "/api/workspace/plan", map[string]any{"plan": "hobby"}).JSON(t, &down)
	if down.Change.Credited <= 0 || down.Change.Charged != 0 || len(down.Over) != 1 || down.Over[0] != (billing.OverLimit{Resource: "databases", Limit: 1, Current: 2}) {
		t.Fatalf("downgrade %+v", down)
	}
	if r := newDB("three"); r.Status != http.StatusPaymentRequired {
		t.Fatalf("third database back on hobby: %d %s", r.Status, r.Body)
	}
	if w, _ := workspaceOf(env, env.Owner); w != ws {
		t.Fatal("workspace changed")
	}
	var table billing.PlanTable
	env.Owner.Must(http.StatusOK, "GET", "/api/plans", nil).JSON(t, &table)
	if len(table.Plans) != 5 || table.Plans[1].Name != plans.Pro || table.Plans[1].MonthlyPriceCents <= 0 {
		t.Fatalf("plans %+v", table.Plans)
	}
	if err := env.CP.Billing.VerifyAll(ctx); err != nil {
		t.Fatal(err)
	}
}

// A member leaves: their keys stop, their session moves to another of
// their workspaces or ends. The owner alone deletes a workspace, signed in
// and naming it; money on the Balance and a project's payable link block
// it, as they block project deletion; a deleted workspace's keys and ids
// are gone.
func TestLeaveAndDeleteWorkspace(t *testing.T) {
	env := cptest.New(t, cptest.Options{Configure: func(c *controlplane.Config) { c.Payments.PublicBaseURL = "http://payments.test" }})
	ctx := context.Background()
	a := env.CP.Bootstrap.Workspace.ID
	owner := ownerSession(env)
	b := newWorkspace(env, owner, "B")
	switchTo(env, owner, b)
	keyB := sessionKey(env, owner, "full")
	// dev@ is only in B, as an admin; dev2@ is in A and B.
	tok := invite(env, keyB, "dev@example.com", "admin")
	env.Client("").Must(http.StatusOK, "POST", "/api/members/accept", map[string]any{"token": tok, "password": wsPassword})
	dev := env.SignIn("dev@example.com", wsPassword, "")
	devKey := sessionKey(env, dev, "full")
	env.Client("").Must(http.StatusOK, "POST", "/api/members/accept", map[string]any{"token": invite(env, env.Owner, "dev2@example.com", "viewer"), "password": wsPassword})
	env.Clock.Advance(time.Second)
	env.Client("").Must(http.StatusOK, "POST", "/api/members/accept", map[string]any{"token": invite(env, keyB, "dev2@example.com", "viewer"), "password": wsPassword})
	dev2 := env.SignIn("dev2@example.com", wsPassword, b)
	switchTo(env, dev2, b)

	// Leaving.
	var left struct {
		Left        string `json:"left"`
		WorkspaceID string `json:"workspaceId"`
	}
	dev2.Must(http.StatusOK, "POST", "/api/workspace/leave", nil).JSON(t, &left)
	if left.Left != b || left.WorkspaceID != a {
		t.Fatalf("dev2 left %+v, want the session moved to A", left)
	}
	if ws, _ := workspaceOf(env, dev2); ws != a {
		t.Fatalf("dev2's session acts in %s", ws)
	}
	dev.Must(http.StatusOK, "POST", "/api/workspace/leave", nil).JSON(t, &left)
	if left.WorkspaceID != "" {
		t.Fatalf("dev left %+v, want the session ended", left)
	}
	if r := dev.Do("GET", "/api/workspace", nil); r.Status != http.StatusUnauthorized {
		t.Fatalf("dev's session after leaving their only workspace: %d", r.Status)
	}
	if r := devKey.Do("GET", "/api/workspace", nil); r.Status != http.StatusUnauthorized {
		t.Fatalf("dev's key after leaving: %d", r.Status)
	}
	if r := owner.Do("POST", "/api/workspace/leave", nil); r.Status != http.StatusConflict || r.ErrorCode() != "last_owner" {
		t.Fatalf("the last owner left: %d %s", r.Status, r.Body)
	}

	// Deleting B: refusals first, each changing nothing.
	admin := env.Member("admin@example.com", "admin") // A's admin, by key
	prj := ""
	{
		var out struct {
			Project struct {
				ID string `json:"id"`
			} `json:"project"`
		}
		keyB.Must(http.StatusCreated, "POST", "/api/projects", map[string]any{"name": "shop"}).JSON(t, &out)
		prj = out.Project.ID
	}
	var acct struct {
		Account struct {
			ID string `json:"id"`
		} `json:"account"`
	}
	keyB.Must(http.StatusOK, "POST", "/api/projects/"+prj+"/payments", nil).JSON(t, &acct)
	keyB.Must(http.StatusCreated, "POST", "/api/payments/"+acct.Account.ID, map[string]any{"amountCents": 1000})
	for _, tc := range []struct {
		name   string
		c      *cptest.Client
		body   any
		status int
		code   string
	}{
		{"a key", keyB, map[string]any{"confirm": "B"}, http.StatusForbidden, "session_required"},
		{"another workspace's admin", admin, map[string]any{"confirm": "B"}, http.StatusForbidden, "session_required"},
		{"wrong name", owner, map[string]any{"confirm": "A"}, http.StatusBadRequest, "invalid_request"},
		{"a payable link", owner, map[string]any{"confirm": "B"}, http.StatusConflict, "deletion_blocked"},
	} {
		t.Run("delete/"+tc.name, func(t *testing.T) {
			if r := tc.c.Do("DELETE", "/api/workspace", tc.body); r.Status != tc.status || r.ErrorCode() != tc.code {
				t.Fatalf("%d %s, want %d %s", r.Status, r.Body, tc.status, tc.code)
			}
			owner.Must(http.StatusOK, "GET", "/api/projects/"+prj, nil)
		})
	}
	// Money on the Balance blocks too.
	c := newWorkspace(env, owner, "C")
	if err := env.CP.Billing.AddBalance(ctx, c, billing.Dollar, "test", ""); err != nil {
		t.Fatal(err)
	}
	switchTo(env, owner, c)
	if r := owner.Do("DELETE", "/api/workspace", map[string]any{"confirm": "C"}); r.Status != http.StatusConflict || !strings.Contains(string(r.Body), "balance_left") {
		t.Fatalf("delete with money on the Balance: %d %s", r.Status, r.Body)
	}

	// A workspace with projects and nothing blocking goes, with them.
	d := newWorkspace(env, owner, "D")
	switchTo(env, owner, d)
	keyD := sessionKey(env, owner, "full")
	var p struct {
		Project struct {
			ID string `json:"id"`
		} `json:"project"`
	}
	keyD.Must(http.StatusCreated, "POST", "/api/projects", map[string]any{"name": "gone"}).JSON(t, &p)
	owner.Must(http.StatusOK, "DELETE", "/api/workspace", map[string]any{"confirm": "D"}).JSON(t, &left)
	if left.Left != d || (left.WorkspaceID != a && left.WorkspaceID != b && left.WorkspaceID != c) {
		t.Fatalf("deleted %+v, want the session moved to another of the owner's workspaces", left)
	}
	if r := keyD.Do("GET", "/api/workspace", nil); r.Status != http.StatusUnauthorized {
		t.Fatalf("a deleted workspace's key: %d", r.Status)
	}
	if got := listed(env, owner); got[d] != "" || len(got) != 3 {
		t.Fatalf("workspaces after deleting D: %v", got)
	}
	if r := owner.Do("POST", "/api/session/workspace", map[string]any{"workspaceId": d}); r.Status != http.StatusNotFound {
		t.Fatalf("switching to a deleted workspace: %d", r.Status)
	}
	var n int
	env.CP.DB.QueryRow(`SELECT count(*) FROM projects WHERE id = ?`, p.Project.ID).Scan(&n)
	if n != 0 {
		t.Fatal("the deleted workspace's project is still there")
	}
}

// mailWith is a mail to address holding text ("" when none).
func mailWith(env *cptest.Env, address, text string) string {
	env.T.Helper()
	files, _ := filepath.Glob(filepath.Join(env.CP.Config().DataDir, "mail", "*"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err == nil && strings.Contains(string(b), address) && strings.Contains(string(b), text) {
			return string(b)
		}
	}
	return ""
}

// verificationMail is a mail to address holding a verification token.
func verificationMail(env *cptest.Env, address string) string {
	env.T.Helper()
	m := mailWith(env, address, "svcverify_")
	if m == "" {
		env.T.Fatalf("no verification mail to %s", address)
	}
	return m
}
