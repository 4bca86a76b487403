package controlplane_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/cptest"
)

const wsPassword = "a long password 1"

// ownerSession accepts the bootstrap owner's setup token and signs them in.
func ownerSession(env *cptest.Env) *cptest.Client {
	env.T.Helper()
	env.Client("").Must(http.StatusOK, "POST", "/api/members/accept", map[string]any{"token": env.CP.Bootstrap.SetupToken, "password": wsPassword})
	return env.SignIn("owner@example.com", wsPassword, "")
}

// newWorkspace makes a workspace with session s and returns its id.
func newWorkspace(env *cptest.Env, s *cptest.Client, name string) string {
	env.T.Helper()
	var out struct {
		Membership struct {
			Workspace struct {
				ID string `json:"id"`
			} `json:"workspace"`
			Role string `json:"role"`
		} `json:"membership"`
	}
	s.Must(http.StatusCreated, "POST", "/api/workspaces", map[string]any{"name": name}).JSON(env.T, &out)
	if out.Membership.Role != "owner" || out.Membership.Workspace.ID == "" {
		env.T.Fatalf("created %+v", out)
	}
	return out.Membership.Workspace.ID
}

// switchTo moves session s to workspace ws.
func switchTo(env *cptest.Env, s *cptest.Client, ws string) {
	env.T.Helper()
	s.Must(http.StatusOK, "POST", "/api/session/workspace", map[string]any{"workspaceId": ws})
}

// workspaceOf is the workspace the caller acts in.
func workspaceOf(env *cptest.Env, c *cptest.Client) (id, role string) {
	env.T.Helper()
	var who struct {
		Workspace struct {
			ID string `json:"id"`
		} `json:"workspace"`
		You struct {
			Role string `json:"role"`
		} `json:"you"`
	}
	c.Must(http.StatusOK, "GET", "/api/workspace", nil).JSON(env.T, &who)
	return who.Workspace.ID, who.You.Role
}

// listed returns the caller's workspaces as id -> role.
func listed(env *cptest.Env, c *cptest.Client) map[string]string {
	env.T.Helper()
	var out struct {
		Workspaces []struct {
			Workspace struct {
				ID string `json:"id"`
			} `json:"workspace"`
			Role string `json:"role"`
		} `json:"workspaces"`
	}
	c.Must(http.StatusOK, "GET", "/api/workspaces", nil).JSON(env.T, &out)
	m := map[string]string{}
	for _, w := range out.Workspaces {
		m[w.Workspace.ID] = w.Role
	}
	return m
}

// sessionKey makes a full-access key with session s, in the workspace the
// session acts in.
func sessionKey(env *cptest.Env, s *cptest.Client, access string) *cptest.Client {
	env.T.Helper()
	var key struct {
		Secret string `json:"secret"`
	}
	s.Must(http.StatusCreated, "POST", "/api/keys", map[string]any{"name": "k", "access": access}).JSON(env.T, &key)
	return env.Client(key.Secret)
}

// A person belongs to two workspaces with a role in each: the listing shows
// both, a session switches between them, keys stay in the workspace they
// were made in, an invitation joins the existing person only with their
// password, and a password change ends the person's sessions everywhere.
func TestPersonInTwoWorkspaces(t *testing.T) {
	env := cptest.New(t)
	a := env.CP.Bootstrap.Workspace.ID
	owner := ownerSession(env)
	b := newWorkspace(env, owner, "Second")
	if got := listed(env, owner); len(got) != 2 || got[a] != "owner" || got[b] != "owner" {
		t.Fatalf("workspaces = %v", got)
	}
	if ws, _ := workspaceOf(env, owner); ws != a {
		t.Fatalf("a new workspace moved the session to %s", ws)
	}
	switchTo(env, owner, b)
	if ws, role := workspaceOf(env, owner); ws != b || role != "owner" {
		t.Fatalf("after switching: %s %s", ws, role)
	}
	keyB := sessionKey(env, owner, "full")
	if ws, _ := workspaceOf(env, keyB); ws != b {
		t.Fatalf("a key made in %s acts in %s", b, ws)
	}
	// A key lists only its own workspace.
	if got := listed(env, keyB); len(got) != 1 || got[b] != "owner" {
		t.Fatalf("key lists %v", got)
	}

	// dev@ is a developer in A, then invited to B as a viewer.
	inviteA := invite(env, env.Owner, "dev@example.com", "developer")
	env.Client("").Must(http.StatusOK, "POST", "/api/members/accept", map[string]any{"token": inviteA, "password": wsPassword})
	env.Clock.Advance(time.Second) // A's membership is the older
	inviteB := invite(env, keyB, "Dev@example.com", "viewer")
	for _, tc := range []struct {
		name     string
		password string
		status   int
		code     string
	}{
		{"another password", "a different password", http.StatusForbidden, "wrong_password"},
		{"the person's password", wsPassword, http.StatusOK, ""},
		{"twice", wsPassword, http.StatusNotFound, "invalid_token"},
	} {
		t.Run("accept/"+tc.name, func(t *testing.T) {
			r := env.Client("").Do("POST", "/api/members/accept", map[string]any{"token": inviteB, "password": tc.password})
			if r.Status != tc.status || r.ErrorCode() != tc.code {
				t.Fatalf("%d %s, want %d %s", r.Status, r.Body, tc.status, tc.code)
			}
		})
	}
	dev := env.SignIn("dev@example.com", wsPassword, "")
	if ws, role := workspaceOf(env, dev); ws != a || role != "developer" {
		t.Fatalf("dev signed in to %s as %s, want the oldest membership", ws, role)
	}
	if got := listed(env, dev); len(got) != 2 || got[a] != "developer" || got[b] != "viewer" {
		t.Fatalf("dev's workspaces = %v", got)
	}
	switchTo(env, dev, b)
	if ws, role := workspaceOf(env, dev); ws != b || role != "viewer" {
		t.Fatalf("dev in %s as %s", ws, role)
	}
	// A viewer of B cannot do in B what a developer of A may.
	if r := dev.Do("POST", "/api/projects", map[string]any{"name": "x"}); r.Status != http.StatusForbidden {
		t.Fatalf("viewer created a project: %d %s", r.Status, r.Body)
	}
	// Sign-in straight into B.
	devB := env.SignIn("dev@example.com", wsPassword, "")
	switchTo(env, devB, b)

	// Switching to a workspace the person is not in answers 404, as an
	// unknown one; keys cannot switch.
	third := newWorkspace(env, owner, "Third")
	for _, tc := range []struct {
		name   string
		c      *cptest.Client
		ws     string
		status int
	}{
		{"not a member", dev, third, http.StatusNotFound},
		{"unknown", dev, "ws_nope", http.StatusNotFound},
		{"empty", dev, "", http.StatusBadRequest},
		{"with a key", keyB, a, http.StatusForbidden},
	} {
		t.Run("switch/"+tc.name, func(t *testing.T) {
			if r := tc.c.Do("POST", "/api/session/workspace", map[string]any{"workspaceId": tc.ws}); r.Status != tc.status {
				t.Fatalf("%d %s, want %d", r.Status, r.Body, tc.status)
			}
		})
	}
	if ws, _ := workspaceOf(env, dev); ws != b {
		t.Fatalf("a refused switch moved the session to %s", ws)
	}

	// A password change ends the person's other sessions, in every workspace.
	dev.Must(http.StatusOK, "PUT", "/api/account/password", map[string]any{"currentPassword": wsPassword, "newPassword": "another long password"})
	if r := devB.Do("GET", "/api/workspace", nil); r.Status != http.StatusUnauthorized {
		t.Fatalf("dev's other session survived a password change: %d", r.Status)
	}
	env.SignIn("dev@example.com", "another long password", "")

	// Keys and workspaces refused to keys and bad names.
	for _, tc := range []struct {
		name   string
		c      *cptest.Client
		body   any
		status int
	}{
		{"with a key", keyB, map[string]any{"name": "x"}, http.StatusForbidden},
		{"no name", owner, map[string]any{"name": " "}, http.StatusBadRequest},
		{"long name", owner, map[string]any{"name": strings.Repeat("x", 101)}, http.StatusBadRequest},
	} {
		t.Run("create/"+tc.name, func(t *testing.T) {
			if r := tc.c.Do("POST", "/api/workspaces", tc.body); r.Status != tc.status {
				t.Fatalf("%d %s, want %d", r.Status, r.Body, tc.status)
			}
		})
	}
}

// A person owns at most MaxWorkspacesPerPerson workspaces.
func TestWorkspacesPerPersonCap(t *testing.T) {
	env := cptest.New(t)
	owner := ownerSession(env)
	for i := 1; i < 10; i++ { // the bootstrap workspace is the first
		newWorkspace(env, owner, "w")
	}
	r := owner.Do("POST", "/api/workspaces", map[string]any{"name": "one too many"})
	if r.Status != http.StatusConflict || r.ErrorCode() != "workspace_limit" {
		t.Fatalf("%d %s, want 409 workspace_limit", r.Status, r.Body)
	}
}

func invite(env *cptest.Env, c *cptest.Client, email, role string) string {
	env.T.Helper()
	var inv struct {
		Token string `json:"token"`
	}
	c.Must(http.StatusCreated, "POST", "/api/members", map[string]any{"email": email, "role": role}).JSON(env.T, &inv)
	return inv.Token
}

// collectIDs finds the ids in an answer: every string value of a field named
// id or ending in Id.
func collectIDs(v any, into map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && (k == "id" || strings.HasSuffix(k, "Id")) && len(s) >= 8 {
				into[s] = true
			}
			collectIDs(e, into)
		}
	case []any:
		for _, e := range x {
			collectIDs(e, into)
		}
	}
}

var (
	pathParam  = regexp.MustCompile(`\{[A-Za-z]+(\.\.\.)?\}`)
	platformID = regexp.MustCompile(`^[a-z]{2,8}_[0-9a-z]{20}$`)
)

// clip shortens an answer for a failure message.
func clip(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}

// Two workspaces on one installation with a person in both: every id of
// workspace A (projects, keys, members, databases, vectors, memory stores,
// sign-in pools, repos, buckets, whatever A holds) is refused to workspace
// B's owner, by session and by key, on every route of the table that takes
// an id; and no listing of B shows any of A's ids.
func TestWorkspaceIsolationOverRouteTable(t *testing.T) {
	env := cptest.New(t)
	a := env.CP.Bootstrap.Workspace.ID
	owner := ownerSession(env)
	// Workspace A's resources, made with the owner's key.
	prj := env.CreateProject("a-project")
	env.Member("member@example.com", "developer")
	seeds := []struct {
		path string
		body map[string]any
	}{
		{"/api/projects/" + prj + "/env", map[string]any{"key": "A_VAR", "value": "a"}},
		{"/api/projects/" + prj + "/databases", map[string]any{"name": "adb"}},
		{"/api/projects/" + prj + "/vectors", map[string]any{"name": "avec", "dimensions": 384}},
		{"/api/projects/" + prj + "/memory", map[string]any{"name": "amem"}},
		{"/api/projects/" + prj + "/auth-pools", map[string]any{"name": "apool"}},
		{"/api/projects/" + prj + "/buckets", map[string]any{"name": "abucket"}},
		{"/api/projects/" + prj + "/media", map[string]any{"name": "a video", "kind": "video"}},
		{"/api/projects/" + prj + "/agents", map[string]any{"name": "aagent", "model": "gpt-4o-mini", "instructions": "help"}},
		{"/api/projects/" + prj + "/mail/domains", map[string]any{"name": "a.example"}},
		{"/api/repos", map[string]any{"name": "arepo"}},
		{"/api/keys", map[string]any{"name": "a key"}},
	}
	for _, s := range seeds {
		if r := env.Owner.Do("POST", s.path, s.body); r.Status >= 300 {
			t.Logf("seed %s: %d %s (its ids come from the listings if any)", s.path, r.Status, r.Body)
		}
	}
	// A payment account with a payable link.
	var acct struct {
		Account struct {
			ID string `json:"id"`
		} `json:"account"`
	}
	env.Owner.Must(http.StatusOK, "POST", "/api/projects/"+prj+"/payments", nil).JSON(t, &acct)
	env.NewKey("full", prj).Must(http.StatusCreated, "POST", "/api/payments/"+acct.Account.ID, map[string]any{"amountCents": 1000})
	// Harvest A's ids from every listing A's owner can read.
	idsOfA := map[string]bool{a: true, prj: true}
	for _, rt := range env.CP.Routes() {
		if rt.Method != http.MethodGet || rt.Public {
			continue
		}
		path := rt.Path
		if rt.ProjectParam != "" {
			path = strings.Replace(path, "{"+rt.ProjectParam+"}", prj, 1)
		}
		if pathParam.MatchString(path) {
			continue
		}
		r := env.Owner.Do("GET", path, nil)
		if r.Status != http.StatusOK {
			continue
		}
		var v any
		if json.Unmarshal(r.Body, &v) == nil {
			collectIDs(v, idsOfA)
		}
	}
	// Ids every workspace shares or that name no resource are not A's.
	for id := range idsOfA {
		// Audit rows are not addressable; leave them out.
		if !platformID.MatchString(id) || strings.HasPrefix(id, "aud_") {
			delete(idsOfA, id)
		}
	}
	var ids []string
	for id := range idsOfA {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	if len(ids) < 5 {
		t.Fatalf("only %d ids of workspace A found: %v", len(ids), ids)
	}
	t.Logf("%d ids of workspace A: %v", len(ids), ids)

	// Workspace B, owned by the same person: their session switched to B
	// and a full-access key of B.
	b := newWorkspace(env, owner, "B")
	switchTo(env, owner, b)
	keyB := sessionKey(env, owner, "full")
	callers := []struct {
		name string
		c    *cptest.Client
	}{{"B session", owner}, {"B key", keyB}}

	for _, rt := range env.CP.Routes() {
		if rt.Public {
			continue
		}
		if !pathParam.MatchString(rt.Path) {
			// Listings of B hold nothing of A.
			// GET /api/workspaces lists the person's workspaces: A among them.
			if rt.Method != http.MethodGet || rt.Path == "/api/workspaces" {
				continue
			}
			for _, c := range callers {
				r := c.c.Do("GET", rt.Path, nil)
				for _, id := range ids {
					if strings.Contains(string(r.Body), id) {
						t.Errorf("%s GET %s shows A's %s: %s", c.name, rt.Path, id, clip(r.Body))
					}
				}
			}
			continue
		}
		for _, id := range ids {
			path := pathParam.ReplaceAllString(rt.Path, id)
			for _, c := range callers {
				r := c.c.Do(rt.Method, path, "{}")
				if r.Status < 300 {
					t.Errorf("%s %s %s (A's id %s): %d %s", c.name, rt.Method, rt.Path, id, r.Status, clip(r.Body))
				}
			}
		}
	}
	// Ids of A sent in bodies are refused too.
	if r := keyB.Do("POST", "/api/keys", map[string]any{"name": "x", "projectId": prj}); r.Status < 400 {
		t.Errorf("B made a key limited to A's project: %d %s", r.Status, r.Body)
	}
	if r := owner.Do("POST", "/api/session/workspace", map[string]any{"workspaceId": a}); r.Status != http.StatusOK {
		t.Fatalf("the person cannot switch back to A: %d %s", r.Status, r.Body)
	}
}

// mailTo returns the last mail the platform wrote to address, from the
// data directory's mail folder.
func mailTo(env *cptest.Env, address string) string {
	env.T.Helper()
	files, _ := filepath.Glob(filepath.Join(env.CP.Config().DataDir, "mail", "*"))
	sort.Strings(files)
	for i := len(files) - 1; i >= 0; i-- {
		b, err := os.ReadFile(files[i])
		if err == nil && regexp.MustCompile(`(?mi)^To:.*\b`+regexp.QuoteMeta(address)).Match(b) {
			return string(b)
		}
	}
	env.T.Fatalf("no mail to %s among %d", address, len(files))
	return ""
}

// An invitation reaches the invitee by mail, with the token that joins.
func TestInvitationIsMailed(t *testing.T) {
	env := cptest.New(t)
	var inv struct {
		Token  string `json:"token"`
		Mailed bool   `json:"mailed"`
	}
	env.Owner.Must(http.StatusCreated, "POST", "/api/members", map[string]any{"email": "new@example.com", "role": "viewer"}).JSON(t, &inv)
	body := mailTo(env, "new@example.com")
	if !inv.Mailed || !strings.Contains(body, inv.Token) || !strings.Contains(body, "Test") {
		t.Fatalf("mailed %v, body %q", inv.Mailed, body)
	}
	tok := regexp.MustCompile(`svcinv_[A-Za-z0-9_-]+`).FindString(body)
	env.Client("").Must(http.StatusOK, "POST", "/api/members/accept", map[string]any{"token": tok, "password": wsPassword})
	env.SignIn("new@example.com", wsPassword, "")
}
