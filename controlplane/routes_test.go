package controlplane_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/cptest"
)

var param = regexp.MustCompile(`\{[A-Za-z]+\}`)

// credential is one way of calling the API: a member of some role with a
// session or one kind of key, and the principal the permission table sees.
type credential struct {
	name   string
	client *cptest.Client
	p      auth.Principal
}

// keyKinds are the credentials a member can hold. A key limited to a project
// is limited to the project given to credentials.
var keyKinds = []struct {
	name     string
	session  bool
	access   string
	project  bool
	readOnly bool
}{
	{name: "session", session: true},
	{name: "full workspace key", access: "full"},
	{name: "read-only key", access: "read_only", readOnly: true},
	{name: "project key", access: "full", project: true},
	{name: "read-only project key", access: "read_only", project: true, readOnly: true},
}

// roles are every member role, each with its sign-in e-mail address.
var roles = []struct {
	role  auth.Role
	email string
}{
	{auth.Owner, "owner@example.com"},
	{auth.Admin, "admin@example.com"},
	{auth.Developer, "developer@example.com"},
	{auth.Viewer, "viewer@example.com"},
}

// signIns signs in the bootstrap owner and a member of every other role and
// returns their sessions by role.
func signIns(env *cptest.Env) map[auth.Role]*cptest.Client {
	env.T.Helper()
	const password = "a long password 1"
	anon := env.Client("")
	out := map[auth.Role]*cptest.Client{}
	for _, r := range roles {
		token := env.CP.Bootstrap.SetupToken
		if r.role != auth.Owner {
			var inv struct {
				Token string `json:"token"`
			}
			env.Owner.Must(http.StatusCreated, "POST", "/api/members", map[string]any{"email": r.email, "role": r.role.String()}).JSON(env.T, &inv)
			token = inv.Token
		}
		anon.Must(http.StatusOK, "POST", "/api/members/accept", map[string]any{"token": token, "password": password})
		out[r.role] = env.SignIn(r.email, password, "")
	}
	return out
}

// credentials returns every key kind of every role: the member's session and
// keys that member created, the project-limited ones limited to project.
func credentials(env *cptest.Env, sessions map[auth.Role]*cptest.Client, project string) []credential {
	env.T.Helper()
	var out []credential
	for _, r := range roles {
		for k := range keyKinds {
			out = append(out, newCredential(env, sessions[r.role], r.role, k, project))
		}
	}
	return out
}

// newCredential returns the session of a member of role, or a key of
// keyKinds[kind] that the member creates with that session.
func newCredential(env *cptest.Env, session *cptest.Client, role auth.Role, kind int, project string) credential {
	env.T.Helper()
	k := keyKinds[kind]
	c := credential{name: role.String() + "'s " + k.name, client: session,
		p: auth.Principal{WorkspaceID: "ws", MemberID: "m", Role: role, Session: k.session, ReadOnly: k.readOnly}}
	if k.session {
		return c
	}
	c.p.KeyID = "k"
	body := map[string]any{"name": k.name, "access": k.access}
	if k.project {
		body["projectId"] = project
		c.p.ProjectID = project
	}
	var key struct {
		Secret string `json:"secret"`
	}
	session.Must(http.StatusCreated, "POST", "/api/keys", body).JSON(env.T, &key)
	c.client = env.Client(key.Secret)
	return c
}

// Every route that needs credentials refuses a caller without them, and
// refuses with the permission table's code every credential the table
// refuses: each role's session, full workspace key, read-only key and
// project keys (limited to another project than the one in the path).
// Checked over HTTP for the whole route table, so routes added by later
// areas are covered too. Only refusals are sent: a refused request changes
// nothing, so the cases cannot disturb one another.
func TestRouteTableAuthMatrix(t *testing.T) {
	env := cptest.New(t)
	own := env.CreateProject("own")
	other := env.CreateProject("other")
	anon := env.Client("")
	creds := credentials(env, signIns(env), own)
	for _, rt := range env.CP.Routes() {
		if rt.Public {
			continue
		}
		if _, ok := auth.RuleOf(rt.Op); !ok {
			t.Errorf("%s %s names op %q, which is not in the permission table", rt.Method, rt.Path, rt.Op)
			continue
		}
		path := param.ReplaceAllString(rt.Path, "x_missing")
		if rt.ProjectParam != "" {
			path = strings.Replace(rt.Path, "{"+rt.ProjectParam+"}", other, 1)
			path = param.ReplaceAllString(path, "x_missing")
		}
		name := rt.Method + " " + rt.Path
		t.Run(name+"/no credentials", func(t *testing.T) {
			if r := anon.Do(rt.Method, path, "{}"); r.Status != http.StatusUnauthorized {
				t.Fatalf("status %d, want 401: %s", r.Status, r.Body)
			}
		})
		t.Run(name+"/bad key", func(t *testing.T) {
			if r := env.Client("svc_aaaaaaaaaaaa_"+strings.Repeat("b", 40)).Do(rt.Method, path, "{}"); r.Status != http.StatusUnauthorized {
				t.Fatalf("status %d, want 401: %s", r.Status, r.Body)
			}
		})
		for _, c := range creds {
			// The project the route is checked against: the one in the
			// path, or a project key's own for routes without one.
			target := c.p.ProjectID
			if rt.ProjectParam != "" {
				target = other
			}
			var want *auth.Denied
			if !errors.As(auth.Authorize(&c.p, rt.Op, target), &want) {
				continue
			}
			t.Run(name+"/"+c.name, func(t *testing.T) {
				r := c.client.Do(rt.Method, path, "{}")
				if r.Status != http.StatusForbidden || r.ErrorCode() != want.Code {
					t.Fatalf("status %d %s, want 403 %s", r.Status, r.Body, want.Code)
				}
			})
		}
	}
}

// Deleting a project over HTTP with every key kind of every role: only an
// admin's or the owner's session or full workspace key deletes it. A refused
// delete leaves the project in place.
func TestProjectDeleteByRoleAndKeyKind(t *testing.T) {
	env := cptest.New(t)
	sessions := signIns(env)
	allowed := map[string]bool{
		"owner's session": true, "owner's full workspace key": true,
		"admin's session": true, "admin's full workspace key": true,
	}
	// One project per credential, and keys limited to that project.
	type deleteCase struct {
		project string
		cred    credential
	}
	var cases []deleteCase
	for _, r := range roles {
		for k := range keyKinds {
			id := env.CreateProject(r.role.String() + " " + keyKinds[k].name)
			cases = append(cases, deleteCase{id, newCredential(env, sessions[r.role], r.role, k, id)})
		}
	}
	for _, tc := range cases {
		t.Run(tc.cred.name, func(t *testing.T) {
			r := tc.cred.client.Do("DELETE", "/api/projects/"+tc.project, nil)
			left := env.Owner.Do("GET", "/api/projects/"+tc.project, nil).Status
			if allowed[tc.cred.name] {
				if r.Status != http.StatusOK || left != http.StatusNotFound {
					t.Fatalf("delete: %d %s, then read: %d; want 200 and 404", r.Status, r.Body, left)
				}
				return
			}
			if r.Status != http.StatusForbidden || left != http.StatusOK {
				t.Fatalf("delete: %d %s, then read: %d; want 403 and the project kept", r.Status, r.Body, left)
			}
		})
	}
}

// The OpenAPI document lists exactly the routes of the table, each with a
// summary, and is valid JSON served without credentials.
func TestOpenAPIDocument(t *testing.T) {
	env := cptest.New(t)
	r := env.Client("").Must(http.StatusOK, "GET", "/api/openapi.json", nil)
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	r.JSON(t, &doc)
	if doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi = %q", doc.OpenAPI)
	}
	seen := 0
	for _, rt := range env.CP.Routes() {
		raw, ok := doc.Paths[strings.ReplaceAll(rt.Path, "...}", "}")][strings.ToLower(rt.Method)]
		if !ok {
			t.Errorf("%s %s missing from the document", rt.Method, rt.Path)
			continue
		}
		seen++
		var op struct {
			Summary   string                     `json:"summary"`
			Responses map[string]json.RawMessage `json:"responses"`
		}
		json.Unmarshal(raw, &op)
		if op.Summary == "" || len(op.Responses) < 2 {
			t.Errorf("%s %s: summary %q, %d responses", rt.Method, rt.Path, op.Summary, len(op.Responses))
		}
	}
	total := 0
	for _, ops := range doc.Paths {
		total += len(ops)
	}
	if total != seen {
		t.Errorf("document has %d operations, route table %d", total, seen)
	}
}

func TestUnknownRouteIsJSON404(t *testing.T) {
	env := cptest.New(t)
	r := env.Owner.Do("GET", "/api/nothing-here", nil)
	if r.Status != 404 || r.ErrorCode() != "no_route" {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
}
