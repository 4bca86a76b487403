package accounts_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/accounts"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/cptest"
)

func TestKeysLifecycle(t *testing.T) {
	env := cptest.New(t)
	prj := env.CreateProject("p")
	var created accounts.CreatedKey
	env.Owner.Must(201, "POST", "/api/keys", map[string]any{"name": "ci", "access": "read_only", "expiresInDays": 30}).JSON(t, &created)
	k := created.Key
	if !auth.ValidKeyFormat(created.Secret) || !strings.HasPrefix(created.Secret, k.Prefix) || k.Kind != "read_only" || k.ExpiresAt == nil {
		t.Fatalf("created %+v", created)
	}
	// The secret is never shown again, nor stored in clear.
	var list accounts.KeyList
	r := env.Owner.Must(200, "GET", "/api/keys", nil)
	r.JSON(t, &list)
	if strings.Contains(string(r.Body), created.Secret) {
		t.Fatal("listing shows a secret")
	}
	var n int
	env.CP.DB.QueryRow(`SELECT count(*) FROM api_keys WHERE CAST(secret_hash AS TEXT) LIKE ?`, "%"+created.Secret[16:]+"%").Scan(&n)
	if n != 0 {
		t.Fatal("secret stored in clear")
	}
	// Last use is recorded.
	ro := env.Client(created.Secret)
	ro.Must(200, "GET", "/api/workspace", nil)
	env.Owner.Must(200, "GET", "/api/keys", nil).JSON(t, &list)
	for _, kk := range list.Keys {
		if kk.ID == k.ID && kk.LastUsedAt == nil {
			t.Fatal("last use not recorded")
		}
	}
	for _, tc := range []struct {
		name   string
		body   any
		status int
	}{
		{"no name", map[string]any{"access": "full"}, 400},
		{"bad access", map[string]any{"name": "x", "access": "admin"}, 400},
		{"unknown project", map[string]any{"name": "x", "projectId": "prj_nope"}, 400},
		{"negative expiry", map[string]any{"name": "x", "expiresInDays": -1}, 400},
		{"unknown field", map[string]any{"name": "x", "role": "owner"}, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if r := env.Owner.Do("POST", "/api/keys", tc.body); r.Status != tc.status {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
		})
	}
	// A read-only key cannot make keys; a project key cannot either.
	if r := ro.Do("POST", "/api/keys", map[string]any{"name": "x"}); r.Status != 403 {
		t.Fatalf("read-only key made a key: %d", r.Status)
	}
	if r := env.NewKey("full", prj).Do("POST", "/api/keys", map[string]any{"name": "x"}); r.Status != 403 {
		t.Fatalf("project key made a key: %d", r.Status)
	}
	// Expiry.
	env.Clock.Advance(31 * 24 * time.Hour)
	if r := ro.Do("GET", "/api/workspace", nil); r.Status != 401 {
		t.Fatalf("expired key: %d", r.Status)
	}
	// Revocation, idempotent.
	full := env.NewKey("full", "")
	var keys accounts.KeyList
	env.Owner.Must(200, "GET", "/api/keys", nil).JSON(t, &keys)
	id := keys.Keys[0].ID
	env.Owner.Must(200, "DELETE", "/api/keys/"+id, nil)
	env.Owner.Must(200, "DELETE", "/api/keys/"+id, nil)
	if r := full.Do("GET", "/api/workspace", nil); r.Status != 401 || r.ErrorCode() != "invalid_credentials" {
		t.Fatalf("revoked key: %d %s", r.Status, r.Body)
	}
	if r := env.Owner.Do("DELETE", "/api/keys/key_nope", nil); r.Status != 404 {
		t.Fatalf("unknown key: %d", r.Status)
	}
	var page audit.AuditPage
	env.Owner.Must(200, "GET", "/api/orgs/"+env.CP.Bootstrap.Workspace.ID+"/audit-logs?action=key.revoke", nil).JSON(t, &page)
	if len(page.Entries) != 1 {
		t.Fatalf("revoking twice wrote %d audit rows, want 1", len(page.Entries))
	}
}

func TestKeysOfOthers(t *testing.T) {
	env := cptest.New(t)
	dev := env.Member("dev@example.com", "developer")
	var list accounts.KeyList
	dev.Must(200, "GET", "/api/keys", nil).JSON(t, &list)
	if len(list.Keys) != 1 {
		t.Fatalf("developer sees %d keys, want only their own", len(list.Keys))
	}
	var all accounts.KeyList
	env.Owner.Must(200, "GET", "/api/keys", nil).JSON(t, &all)
	var ownerKey string
	for _, k := range all.Keys {
		if k.MemberID != list.Keys[0].MemberID {
			ownerKey = k.ID
		}
	}
	if r := dev.Do("DELETE", "/api/keys/"+ownerKey, nil); r.Status != 404 {
		t.Fatalf("developer revoked the owner's key: %d", r.Status)
	}
	// An admin may revoke anyone's key.
	admin := env.Member("admin@example.com", "admin")
	admin.Must(200, "DELETE", "/api/keys/"+list.Keys[0].ID, nil)
	if r := dev.Do("GET", "/api/workspace", nil); r.Status != 401 {
		t.Fatalf("revoked developer key still works: %d", r.Status)
	}
}

func TestMembers(t *testing.T) {
	env := cptest.New(t)
	admin := env.Member("admin@example.com", "admin")
	dev := env.Member("dev@example.com", "developer")
	for _, tc := range []struct {
		name   string
		caller *cptest.Client
		body   any
		status int
		code   string
	}{
		{"developer cannot invite", dev, map[string]any{"email": "x@example.com", "role": "viewer"}, 403, "insufficient_role"},
		{"admin cannot make owners", admin, map[string]any{"email": "x@example.com", "role": "owner"}, 403, "insufficient_role"},
		{"bad email", admin, map[string]any{"email": "nope", "role": "viewer"}, 400, "invalid_request"},
		{"bad role", admin, map[string]any{"email": "x@example.com", "role": "god"}, 400, "invalid_request"},
		{"no role", admin, map[string]any{"email": "x@example.com"}, 400, "invalid_request"},
		{"already a member", admin, map[string]any{"email": "dev@example.com", "role": "viewer"}, 409, "member_exists"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if r := tc.caller.Do("POST", "/api/members", tc.body); r.Status != tc.status || r.ErrorCode() != tc.code {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
		})
	}
	var inv accounts.Invitation
	admin.Must(201, "POST", "/api/members", map[string]any{"email": "New@Example.com", "role": "viewer"}).JSON(t, &inv)
	anon := env.Client("")
	if r := anon.Do("POST", "/api/members/accept", map[string]any{"token": inv.Token, "password": "short"}); r.Status != 400 || r.ErrorCode() != "weak_password" {
		t.Fatalf("weak password: %d %s", r.Status, r.Body)
	}
	anon.Must(200, "POST", "/api/members/accept", map[string]any{"token": inv.Token, "password": "long enough pw"})
	if r := anon.Do("POST", "/api/members/accept", map[string]any{"token": inv.Token, "password": "long enough pw"}); r.Status != 404 {
		t.Fatalf("invitation used twice: %d", r.Status)
	}
	env.SignIn("new@example.com", "long enough pw", "")

	var members accounts.MemberList
	env.Owner.Must(200, "GET", "/api/members", nil).JSON(t, &members)
	ids := map[string]accounts.Member{}
	var ownerID string
	for _, m := range members.Members {
		ids[m.Email] = m
		if m.Role == auth.Owner {
			ownerID = m.ID
		}
	}
	// Roles.
	admin.Must(200, "PATCH", "/api/members/"+ids["dev@example.com"].ID, map[string]any{"role": "viewer"})
	if r := admin.Do("PATCH", "/api/members/"+ownerID, map[string]any{"role": "admin"}); r.Status != 403 {
		t.Fatalf("admin demoted the owner: %d", r.Status)
	}
	if r := env.Owner.Do("PATCH", "/api/members/"+ownerID, map[string]any{"role": "admin"}); r.Status != 409 || r.ErrorCode() != "last_owner" {
		t.Fatalf("last owner demoted: %d %s", r.Status, r.Body)
	}
	if r := env.Owner.Do("DELETE", "/api/members/"+ownerID, nil); r.Status != 409 {
		t.Fatalf("last owner removed: %d", r.Status)
	}
	// The demoted developer's key now carries viewer rights only.
	if r := dev.Do("POST", "/api/projects", map[string]any{"name": "x"}); r.Status != 403 {
		t.Fatalf("demoted member's key kept developer rights: %d", r.Status)
	}
	// Removal revokes their keys.
	admin.Must(200, "DELETE", "/api/members/"+ids["dev@example.com"].ID, nil)
	if r := dev.Do("GET", "/api/workspace", nil); r.Status != 401 {
		t.Fatalf("removed member's key still works: %d", r.Status)
	}
}

func TestSessionsAndTwoFactor(t *testing.T) {
	env := cptest.New(t)
	anon := env.Client("")
	// The owner sets a password with the bootstrap setup token.
	anon.Must(200, "POST", "/api/members/accept", map[string]any{"token": env.CP.Bootstrap.SetupToken, "password": "owner password 1"})
	s := env.SignIn("owner@example.com", "owner password 1", "")
	var info accounts.SessionInfo
	s.Must(200, "GET", "/api/session", nil).JSON(t, &info)
	if info.Member.Role != auth.Owner || info.SecondFactor {
		t.Fatalf("session %+v", info)
	}
	// Unsafe requests with the cookie need the CSRF header.
	noCSRF := *s
	noCSRF.Header = http.Header{}
	if r := noCSRF.Do("POST", "/api/projects", map[string]any{"name": "x"}); r.Status != 403 || r.ErrorCode() != "csrf" {
		t.Fatalf("no CSRF header: %d %s", r.Status, r.Body)
	}
	s.Must(201, "POST", "/api/projects", map[string]any{"name": "via session"})
	// Account changes need a session, not a key.
	if r := env.Owner.Do("PUT", "/api/account/password", map[string]any{"currentPassword": "owner password 1", "newPassword": "owner password 2"}); r.Status != 403 || r.ErrorCode() != "session_required" {
		t.Fatalf("key changed a password: %d %s", r.Status, r.Body)
	}
	// Two-factor.
	var enr accounts.TOTPEnrollment
	s.Must(200, "POST", "/api/account/totp", nil).JSON(t, &enr)
	if !strings.HasPrefix(enr.OTPAuthURL, "otpauth://totp/") {
		t.Fatalf("enrolment %+v", enr)
	}
	if r := s.Do("POST", "/api/account/totp/confirm", map[string]any{"code": "000000"}); r.Status != 403 {
		t.Fatalf("wrong code confirmed: %d", r.Status)
	}
	code, _ := auth.TOTPCode(enr.Secret, auth.TOTPStep(env.Clock.Now()))
	s.Must(200, "POST", "/api/account/totp/confirm", map[string]any{"code": code})
	if r := anon.Do("POST", "/api/session", map[string]any{"email": "owner@example.com", "password": "owner password 1"}); r.Status != 401 {
		t.Fatalf("sign-in without code: %d", r.Status)
	}
	env.Clock.Advance(30 * time.Second)
	code, _ = auth.TOTPCode(enr.Secret, auth.TOTPStep(env.Clock.Now()))
	s2 := env.SignIn("owner@example.com", "owner password 1", code)
	s2.Must(200, "GET", "/api/session", nil).JSON(t, &info)
	if !info.SecondFactor || !info.Member.TwoFactor {
		t.Fatalf("two-factor session %+v", info)
	}
	// The same code cannot be replayed.
	if r := anon.Do("POST", "/api/session", map[string]any{"email": "owner@example.com", "password": "owner password 1", "code": code}); r.Status != 401 {
		t.Fatalf("replayed code: %d", r.Status)
	}
	// Sign out ends the session.
	s2.Must(200, "DELETE", "/api/session", nil)
	if r := s2.Do("GET", "/api/session", nil); r.Status != 401 {
		t.Fatalf("signed-out session: %d", r.Status)
	}
	// Sessions expire.
	env.Clock.Advance(accounts.SessionLifetime + time.Minute)
	if r := s.Do("GET", "/api/session", nil); r.Status != 401 || r.ErrorCode() != "session_expired" {
		t.Fatalf("expired session: %d %s", r.Status, r.Body)
	}
}

func TestSignInThrottle(t *testing.T) {
	env := cptest.New(t)
	anon := env.Client("")
	for i := 0; i < 10; i++ {
		if r := anon.Do("POST", "/api/session", map[string]any{"email": "owner@example.com", "password": "wrong wrong wrong"}); r.Status != 401 {
			t.Fatalf("attempt %d: %d", i, r.Status)
		}
	}
	r := anon.Do("POST", "/api/session", map[string]any{"email": "owner@example.com", "password": "wrong wrong wrong"})
	if r.Status != 429 || r.Header.Get("Retry-After") == "" {
		t.Fatalf("11th attempt: %d %v", r.Status, r.Header)
	}
	// Unknown e-mails answer exactly as wrong passwords do.
	env.Clock.Advance(16 * time.Minute)
	a := anon.Do("POST", "/api/session", map[string]any{"email": "nobody@example.com", "password": "x"})
	b := anon.Do("POST", "/api/session", map[string]any{"email": "owner@example.com", "password": "x"})
	if a.Status != b.Status || string(a.Body) != string(b.Body) {
		t.Fatalf("unknown e-mail distinguishable: %s vs %s", a.Body, b.Body)
	}
}

func TestAuditLogAndActivity(t *testing.T) {
	env := cptest.New(t)
	ws := env.CP.Bootstrap.Workspace.ID
	env.CreateProject("one")
	env.CreateProject("two")
	env.NewKey("full", "")
	viewer := env.Member("v@example.com", "viewer")
	admin := env.Member("a@example.com", "admin")

	var page audit.AuditPage
	admin.Must(200, "GET", "/api/orgs/"+ws+"/audit-logs?limit=2", nil).JSON(t, &page)
	if len(page.Entries) != 2 || page.NextCursor == "" {
		t.Fatalf("page %+v", page)
	}
	var next audit.AuditPage
	admin.Must(200, "GET", "/api/orgs/"+ws+"/audit-logs?limit=100&before="+page.NextCursor, nil).JSON(t, &next)
	if len(next.Entries) == 0 || next.Entries[0].ID == page.Entries[1].ID {
		t.Fatalf("cursor did not advance: %+v", next)
	}
	var creates audit.AuditPage
	admin.Must(200, "GET", "/api/orgs/"+ws+"/audit-logs?action=project.create", nil).JSON(t, &creates)
	if len(creates.Entries) != 2 || creates.Entries[0].Actor.KeyPrefix == "" {
		t.Fatalf("filtered %+v", creates)
	}
	for _, tc := range []struct {
		name   string
		caller *cptest.Client
		path   string
		status int
	}{
		{"viewer", viewer, "/api/orgs/" + ws + "/audit-logs", 403},
		{"other workspace", admin, "/api/orgs/ws_other/audit-logs", 404},
		{"bad limit", admin, "/api/orgs/" + ws + "/audit-logs?limit=0", 400},
		{"bad cursor", admin, "/api/orgs/" + ws + "/audit-logs?before=!!", 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if r := tc.caller.Do("GET", tc.path, nil); r.Status != tc.status {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
		})
	}
	var feed audit.Feed
	viewer.Must(200, "GET", "/api/activity", nil).JSON(t, &feed)
	for _, e := range feed.Activity {
		if audit.Private(e.Category) {
			t.Fatalf("viewer sees private row %+v", e)
		}
	}
	var adminFeed audit.Feed
	admin.Must(200, "GET", "/api/activity", nil).JSON(t, &adminFeed)
	if len(adminFeed.Activity) <= len(feed.Activity) {
		t.Fatalf("admin feed (%d) should include key and member rows the viewer's (%d) hides", len(adminFeed.Activity), len(feed.Activity))
	}
}

func TestPasswordChangeEndsOtherSessions(t *testing.T) {
	env := cptest.New(t)
	env.Client("").Must(200, "POST", "/api/members/accept", map[string]any{"token": env.CP.Bootstrap.SetupToken, "password": "owner password 1"})
	here := env.SignIn("owner@example.com", "owner password 1", "")
	elsewhere := env.SignIn("owner@example.com", "owner password 1", "")
	if r := here.Do("PUT", "/api/account/password", map[string]any{"currentPassword": "wrong one here", "newPassword": "owner password 2"}); r.Status != 403 {
		t.Fatalf("wrong current password: %d", r.Status)
	}
	if r := here.Do("PUT", "/api/account/password", map[string]any{"currentPassword": "owner password 1", "newPassword": "short"}); r.Status != 400 {
		t.Fatalf("weak new password: %d", r.Status)
	}
	here.Must(200, "PUT", "/api/account/password", map[string]any{"currentPassword": "owner password 1", "newPassword": "owner password 2"})
	here.Must(200, "GET", "/api/session", nil)
	if r := elsewhere.Do("GET", "/api/session", nil); r.Status != 401 {
		t.Fatalf("other session survived the password change: %d", r.Status)
	}
	if r := env.Client("").Do("POST", "/api/session", map[string]any{"email": "owner@example.com", "password": "owner password 1"}); r.Status != 401 {
		t.Fatalf("old password still signs in: %d", r.Status)
	}
	env.SignIn("owner@example.com", "owner password 2", "")
}
