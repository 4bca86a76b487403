package signin

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/controlplane/usage"
)

// TestPoolLifecycle: a pool is created with its defaults and two keys
// (current and next), listed, read, changed, refused bad settings without
// storing anything, and deleted with everything it holds.
func TestPoolLifecycle(t *testing.T) {
	e := newEnv(t)
	p := e.pool("customers", nil)
	if p.Name != "customers" || p.ProjectID != e.project || p.Settings.AccessTokenSeconds != DefaultAccessTokenSeconds ||
		p.Settings.RefreshTokenSeconds != DefaultRefreshTokenSeconds || p.Settings.LockoutThreshold != DefaultLockoutThreshold ||
		p.Settings.RequireEmailVerification || len(p.Settings.AllowedOrigins) != 0 {
		t.Fatalf("defaults: %+v", p)
	}
	if !slices.Equal(p.EffectiveOrigins, []string{appOrigin}) {
		t.Fatalf("effective origins %v, want the project's address", p.EffectiveOrigins)
	}
	if p.Issuer != baseURL+"/api/auth/"+p.ID || p.Audience != p.ID || p.Endpoints.JWKS != p.Issuer+"/.well-known/jwks.json" {
		t.Fatalf("issuer %q audience %q endpoints %+v", p.Issuer, p.Audience, p.Endpoints)
	}
	if len(p.Keys) != 2 || p.Keys[0].State != keyCurrent || p.Keys[1].State != keyNext || p.UserLimit != DefaultLimits[plans.Pro].UsersPerPool {
		t.Fatalf("keys %+v, user limit %d", p.Keys, p.UserLimit)
	}
	if got := kids(e.jwks(p.ID)); !slices.Equal(got, []string{p.Keys[0].Kid, p.Keys[1].Kid}) {
		t.Fatalf("jwks %v", got)
	}

	var list PoolList
	e.must(200, "GET", "/api/projects/"+e.project+"/auth-pools", nil).Decode(t, &list)
	if len(list.Pools) != 1 || list.Pools[0].ID != p.ID {
		t.Fatalf("list %+v", list)
	}
	var a PoolAnswer
	e.must(200, "PATCH", "/api/auth-pools/"+p.ID, map[string]any{"name": "members", "settings": map[string]any{
		"allowedOrigins": []string{"https://App.Example.com", "http://localhost:3000", "https://app.example.com/"}, "accessTokenSeconds": 300,
		"lockoutThreshold": 5, "requireEmailVerification": true, "linkUrl": "https://app.example.com/auth?x=1"}}).Decode(t, &a)
	st := a.Pool.Settings
	if a.Pool.Name != "members" || !slices.Equal(st.AllowedOrigins, []string{"https://app.example.com", "http://localhost:3000"}) ||
		st.AccessTokenSeconds != 300 || st.LockoutThreshold != 5 || !st.RequireEmailVerification || st.LinkURL != "https://app.example.com/auth?x=1" ||
		!slices.Equal(a.Pool.EffectiveOrigins, st.AllowedOrigins) {
		t.Fatalf("patched %+v", a.Pool)
	}

	refusals := []struct {
		name, body, code string
	}{
		{"access token too short", `{"settings":{"accessTokenSeconds":59}}`, "invalid_setting"},
		{"access token too long", `{"settings":{"accessTokenSeconds":86401}}`, "invalid_setting"},
		{"refresh shorter than access", `{"settings":{"accessTokenSeconds":7200,"refreshTokenSeconds":3600}}`, "invalid_setting"},
		{"lockout threshold", `{"settings":{"lockoutThreshold":2}}`, "invalid_setting"},
		{"lockout minutes", `{"settings":{"lockoutMinutes":0}}`, "invalid_setting"},
		{"wildcard origin", `{"settings":{"allowedOrigins":["https://*.example.com"]}}`, "invalid_setting"},
		{"origin with a path", `{"settings":{"allowedOrigins":["https://example.com/app"]}}`, "invalid_setting"},
		{"plain http elsewhere", `{"settings":{"allowedOrigins":["http://example.com"]}}`, "invalid_setting"},
		{"link off the origins", `{"settings":{"linkUrl":"https://evil.example.net/steal"}}`, "invalid_setting"},
		{"link with a fragment", `{"settings":{"linkUrl":"https://app.example.com/#x"}}`, "invalid_setting"},
		{"empty name", `{"name":" "}`, "invalid_request"},
		{"fraction", `{"settings":{"lockoutMinutes":1.5}}`, "invalid_request"},
		{"unknown field", `{"settings":{"mfa":true}}`, "unknown_field"},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			r := e.call("PATCH", "/api/auth-pools/"+p.ID, tt.body, req{key: ownerKey})
			if r.Status != 400 || r.Code() != tt.code {
				t.Fatalf("%d %s, want 400 %s", r.Status, r.Body, tt.code)
			}
		})
	}
	var again PoolAnswer
	e.must(200, "GET", "/api/auth-pools/"+p.ID, nil).Decode(t, &again)
	if again.Pool.Settings.AccessTokenSeconds != 300 || again.Pool.Settings.LockoutThreshold != 5 || again.Pool.Name != "members" {
		t.Fatalf("a refused change was stored: %+v", again.Pool)
	}

	// Empty allowedOrigins goes back to the project's address, which the
	// link is not on any more: refused until the link goes too.
	if r := e.call("PATCH", "/api/auth-pools/"+p.ID, `{"settings":{"allowedOrigins":[]}}`, req{key: ownerKey}); r.Status != 400 || r.Code() != "invalid_setting" {
		t.Fatalf("dropping the link's origin: %d %s", r.Status, r.Body)
	}
	e.must(200, "PATCH", "/api/auth-pools/"+p.ID, `{"settings":{"allowedOrigins":[],"linkUrl":"","requireEmailVerification":false}}`).Decode(t, &a)
	if len(a.Pool.Settings.AllowedOrigins) != 0 || !slices.Equal(a.Pool.EffectiveOrigins, []string{appOrigin}) {
		t.Fatalf("back to the project's address: %+v", a.Pool)
	}

	e.pool("second", nil)
	if r := e.call("POST", "/api/projects/"+e.project+"/auth-pools", `{"name":"second"}`, req{key: ownerKey}); r.Status != 409 || r.Code() != "name_taken" {
		t.Fatalf("a second pool of one name: %d %s", r.Status, r.Body)
	}
	if r := e.call("PATCH", "/api/auth-pools/"+p.ID, `{"name":"second"}`, req{key: ownerKey}); r.Status != 409 || r.Code() != "name_taken" {
		t.Fatalf("renamed onto another: %d %s", r.Status, r.Body)
	}

	e.signUp(p.ID, "ada@example.com")
	e.must(200, "DELETE", "/api/auth-pools/"+p.ID, nil)
	if r := e.call("GET", "/api/auth-pools/"+p.ID, nil, req{key: ownerKey}); r.Status != 404 {
		t.Fatalf("deleted pool read: %d", r.Status)
	}
	if r := e.endUser(p.ID, "POST", "/signin", Credentials{Email: "ada@example.com", Password: password}, ""); r.Status != 404 {
		t.Fatalf("deleted pool sign-in: %d %s", r.Status, r.Body)
	}
	for _, table := range append(poolTables, "signin_pools") {
		var n int
		col := "pool_id"
		if table == "signin_pools" {
			col = "id"
		}
		if err := e.DB.QueryRowContext(context.Background(), `SELECT count(*) FROM `+table+` WHERE `+col+` = ?`, p.ID).Scan(&n); err != nil || n != 0 {
			t.Errorf("%s keeps %d rows of the deleted pool (%v)", table, n, err)
		}
	}
}

// TestPoolPermissions: viewers read pools but neither change them nor read
// users; developers do both; read-only keys read; keys of another project
// are refused, also on routes whose project is known only once the pool is
// loaded.
func TestPoolPermissions(t *testing.T) {
	e := newEnv(t)
	p := e.pool("customers", nil)
	other := e.NewProject("other")
	viewer := e.memberKey("v@example.com", auth.Viewer, "full", "")
	dev := e.memberKey("d@example.com", auth.Developer, "full", "")
	devRO := e.memberKey("r@example.com", auth.Developer, "read_only", "")
	devProject := e.memberKey("p@example.com", auth.Developer, "full", e.project)
	devOther := e.memberKey("o@example.com", auth.Developer, "full", other)
	e.signUp(p.ID, "ada@example.com")
	var page UserPage
	e.must(200, "GET", "/api/auth-pools/"+p.ID+"/users", nil).Decode(t, &page)
	user := page.Users[0].ID

	pool, users, one := "/api/auth-pools/"+p.ID, "/api/auth-pools/"+p.ID+"/users", "/api/auth-pools/"+p.ID+"/users/"+user
	create := "/api/projects/" + e.project + "/auth-pools"
	tests := []struct {
		name, key, method, path, body string
		want                          int
	}{
		{"viewer reads a pool", viewer, "GET", pool, "", 200},
		{"viewer lists pools", viewer, "GET", create, "", 200},
		{"viewer cannot create", viewer, "POST", create, `{"name":"x"}`, 403},
		{"viewer cannot change", viewer, "PATCH", pool, `{"name":"x"}`, 403},
		{"viewer cannot rotate", viewer, "POST", pool + "/keys/rotate", "", 403},
		{"viewer cannot list users", viewer, "GET", users, "", 403},
		{"viewer cannot read a user", viewer, "GET", one, "", 403},
		{"viewer cannot disable", viewer, "PATCH", one, `{"disabled":true}`, 403},
		{"developer lists users", dev, "GET", users, "", 200},
		{"developer changes", dev, "PATCH", pool, `{"settings":{"lockoutMinutes":20}}`, 200},
		{"read-only key reads the pool", devRO, "GET", pool, "", 200},
		{"read-only key cannot change", devRO, "PATCH", pool, `{"name":"x"}`, 403},
		{"read-only key cannot read e-mail addresses", devRO, "GET", users, "", 403},
		{"project key of the project", devProject, "GET", users, "", 200},
		{"project key of another project reads", devOther, "GET", pool, "", 403},
		{"project key of another project deletes", devOther, "DELETE", one, "", 403},
		{"project key of another project creates", devOther, "POST", create, `{"name":"x"}`, 403},
		{"no key", "", "GET", pool, "", 401},
		{"developer deletes a user", dev, "DELETE", one, "", 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body any
			if tt.body != "" {
				body = tt.body
			}
			r := e.call(tt.method, tt.path, body, req{key: tt.key})
			if r.Status != tt.want {
				t.Fatalf("%s %s: %d %s, want %d", tt.method, tt.path, r.Status, r.Body, tt.want)
			}
		})
	}
	// Another workspace's pool is not found, not forbidden.
	if r := e.call("GET", "/api/auth-pools/sip_nope", nil, req{key: dev}); r.Status != 404 {
		t.Fatalf("unknown pool: %d", r.Status)
	}
}

// TestPoolPlanLimit: the workspace's pools are capped by plan (402
// plan_limit naming the limit, the count and the plan that holds more),
// the cap's attention items warn near it and turn critical at it.
func TestPoolPlanLimit(t *testing.T) {
	e := newEnv(t, options{plan: plans.Hobby, cfg: Config{Limits: map[plans.Name]Limits{plans.Hobby: {Pools: 2, UsersPerPool: 5}}}})
	e.pool("a", nil)
	items, err := e.svc.Attention(context.Background(), e.Owner.WorkspaceID)
	if err != nil || len(items) != 0 {
		t.Fatalf("one pool of two: %v %+v", err, items)
	}
	e.pool("b", nil)
	r := e.call("POST", "/api/projects/"+e.project+"/auth-pools", `{"name":"c"}`, req{key: ownerKey})
	var body struct {
		Error struct {
			Code     string `json:"code"`
			Message  string `json:"message"`
			Limit    int    `json:"limit"`
			Current  int    `json:"current"`
			Required string `json:"required_plan"`
		} `json:"error"`
	}
	r.Decode(t, &body)
	if r.Status != 402 || body.Error.Code != "plan_limit" || body.Error.Limit != 2 || body.Error.Current != 2 || body.Error.Required != "pro" ||
		!strings.Contains(body.Error.Message, "2 sign-in pool") {
		t.Fatalf("third pool on hobby: %d %s", r.Status, r.Body)
	}
	items, err = e.svc.Attention(context.Background(), e.Owner.WorkspaceID)
	if err != nil || len(items) != 1 || items[0].Severity != usage.Critical || items[0].Kind != usage.KindPlanLimit {
		t.Fatalf("at the cap: %v %+v", err, items)
	}
}

// TestNewChecksDeps: New names every missing dependency and refuses a
// configuration without the API's address; the metrics register; Run
// returns when its context ends.
func TestNewChecksDeps(t *testing.T) {
	_, err := New(Config{BaseURL: baseURL}, Deps{})
	if !errors.Is(err, ErrNotConfigured) || !strings.Contains(err.Error(), "Audit, Clock, DB, Limiter, Meter, Plans, Projects, Sealer") {
		t.Fatalf("err = %v", err)
	}
	if _, err := New(Config{}, Deps{}); err == nil || !strings.Contains(err.Error(), "BaseURL") {
		t.Fatalf("no base URL: %v", err)
	}
	e := newEnv(t)
	reg := prometheus.NewRegistry()
	for _, c := range e.svc.Collectors() {
		if err := reg.Register(c); err != nil {
			t.Fatalf("collector: %v", err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	e.svc.Run(ctx) // returns once its context ends
}

// TestTeardown: the project's pools go with it (counted in its services
// until then), and removing again is harmless.
func TestTeardown(t *testing.T) {
	e := newEnv(t)
	p := e.pool("a", nil)
	e.pool("b", nil)
	e.signUp(p.ID, "ada@example.com")
	ctx := context.Background()
	if n, err := e.svc.Count(ctx, e.project); err != nil || n != 2 || e.svc.Service() != "authPools" {
		t.Fatalf("count %d %v", n, err)
	}
	for range 2 {
		if err := e.svc.Remove(ctx, e.project); err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := e.svc.Count(ctx, e.project); n != 0 {
		t.Fatalf("left %d pools", n)
	}
	var users int
	e.DB.QueryRowContext(ctx, `SELECT count(*) FROM signin_users WHERE pool_id = ?`, p.ID).Scan(&users)
	if users != 0 {
		t.Fatalf("left %d users", users)
	}
	if r := e.endUser(p.ID, "GET", "/.well-known/jwks.json", nil, ""); r.Status != http.StatusNotFound {
		t.Fatalf("jwks of a removed pool: %d", r.Status)
	}
}

// failing is a projects.Dependent whose removal fails.
type failing struct{}

func (failing) Name() string                                                 { return "things" }
func (failing) Blockers(context.Context, string) ([]projects.Blocker, error) { return nil, nil }
func (failing) Remove(context.Context, string) error                         { return errors.New("cannot") }

// TestTeardownFailed: when a project's deletion stops half way, its pools
// take reads and deletes only: nobody signs up or in, settings and keys do
// not change, and the pool can still be read, its keys fetched and it
// deleted.
func TestTeardownFailed(t *testing.T) {
	e := newEnv(t)
	p := e.pool("customers", nil)
	e.signUp(p.ID, "ada@example.com")
	e.Projects.AddDependent(failing{})
	if err := e.Projects.Delete(context.Background(), e.Owner, e.project); err == nil {
		t.Fatal("the delete did not fail")
	}
	for _, tt := range []struct {
		name string
		r    response
	}{
		{"sign-up", e.endUser(p.ID, "POST", "/signup", Credentials{Email: "bob@example.com", Password: password}, "")},
		{"sign-in", e.endUser(p.ID, "POST", "/signin", Credentials{Email: "ada@example.com", Password: password}, "")},
		{"settings", e.call("PATCH", "/api/auth-pools/"+p.ID, `{"name":"x"}`, req{key: ownerKey})},
		{"key rotation", e.call("POST", "/api/auth-pools/"+p.ID+"/keys/rotate", nil, req{key: ownerKey})},
		{"new pool", e.call("POST", "/api/projects/"+e.project+"/auth-pools", `{"name":"y"}`, req{key: ownerKey})},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.r.Status != 409 || tt.r.Code() != "project_teardown_failed" {
				t.Fatalf("%d %s", tt.r.Status, tt.r.Body)
			}
		})
	}
	e.must(200, "GET", "/api/auth-pools/"+p.ID, nil)
	e.jwks(p.ID)
	e.must(200, "DELETE", "/api/auth-pools/"+p.ID, nil)
}
