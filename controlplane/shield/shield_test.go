package shield_test

import (
	"context"
	"errors"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svcplatform/platform/controlplane"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/cptest"
	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/shield"
	"github.com/svcplatform/platform/rules"
)

// liveSite creates a project, pushes files and deploys them.
func liveSite(t *testing.T, env *cptest.Env, name string, files map[string]string) string {
	t.Helper()
	id := env.CreateProject(name)
	var repo struct{ Repo struct{ ID string } }
	env.Owner.Must(201, "POST", "/api/repos", map[string]any{"name": name}).JSON(t, &repo)
	var list []map[string]any
	for p, c := range files {
		list = append(list, map[string]any{"path": p, "content": c})
	}
	env.Owner.Must(201, "POST", "/api/repos/"+repo.Repo.ID+"/commits", map[string]any{"message": "m", "files": list})
	env.Owner.Must(202, "POST", "/api/repos/"+repo.Repo.ID+"/deploy", map[string]any{"projectId": id})
	env.CP.Deploys().Wait()
	return id
}

func snap(t *testing.T, env *cptest.Env) snapshot.Snapshot {
	t.Helper()
	s, err := env.CP.EdgeSync().Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func workspaceShield(t *testing.T, env *cptest.Env) rules.Settings {
	t.Helper()
	s := snap(t, env)
	if len(s.Workspaces) != 1 {
		t.Fatalf("workspaces: %+v", s.Workspaces)
	}
	return s.Workspaces[0].Shield
}

func TestShieldSettings(t *testing.T) {
	for _, eng := range pgtest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			env := cptest.New(t, onEngine(t, eng))
			var got shield.Answer
			env.Owner.Must(200, "GET", "/api/services/shield", nil).JSON(t, &got)
			if !got.Enabled || got.BlockedCountries == nil || len(got.BlockedCountries) != 0 || !got.PasswordsAllowed || got.ProtectedSites == nil {
				t.Fatalf("defaults: %+v", got)
			}
			liveSite(t, env, "Blog", map[string]string{"index.html": "x"})
			v0 := env.CP.EdgeSync().Version()
			env.Owner.Must(200, "PUT", "/api/services/shield", map[string]any{"blockedCountries": []string{"de", " fr "}, "denyIps": []string{"10.0.0.0/8"}}).JSON(t, &got)
			if strings.Join(got.BlockedCountries, ",") != "DE,FR" || !got.Enabled || got.Applied == nil || strings.Join(got.Applied.Sites, ",") != "blog" ||
				!strings.Contains(got.AppliedNote, "blog") {
				t.Fatalf("save: %+v", got)
			}
			// Merged over saved settings.
			env.Owner.Must(200, "PUT", "/api/services/shield", map[string]any{"logOnly": true}).JSON(t, &got)
			if strings.Join(got.BlockedCountries, ",") != "DE,FR" || !got.LogOnly || strings.Join(got.DenyIPs, ",") != "10.0.0.0/8" {
				t.Fatalf("merge: %+v", got)
			}
			if env.CP.EdgeSync().Version() <= v0 {
				t.Fatal("a save did not publish a new edge configuration")
			}
			ws := workspaceShield(t, env)
			if !ws.LogOnly || strings.Join(ws.BlockedCountries, ",") != "DE,FR" {
				t.Fatalf("snapshot shield: %+v", ws)
			}

			refusals := []struct {
				name  string
				body  string
				code  string
				field string
				want  string
			}{
				{"UK", `{"blockedCountries":["GB","UK"]}`, "invalid_setting", "blockedCountries", "GB"},
				{"not a code", `{"blockedCountries":["Germany"]}`, "invalid_setting", "blockedCountries", "Germany"},
				{"bad address", `{"denyIps":["10.0.0.300"]}`, "invalid_setting", "denyIps", "10.0.0.300"},
				{"bad range", `{"allowIps":["10.0.0.0/33"]}`, "invalid_setting", "allowIps", "10.0.0.0/33"},
				{"unknown setting", `{"rateLimit":10}`, "unknown_setting", "rateLimit", "rateLimit"},
				{"wrong type", `{"enabled":"yes"}`, "invalid_setting", "enabled", "true or false"},
				{"passwords with settings", `{"passwords":{"blog":"longpassword"},"logOnly":false}`, "invalid_setting", "passwords", "own"},
				{"not JSON", `{`, "invalid_setting", "", "JSON"},
			}
			for _, tt := range refusals {
				t.Run(tt.name, func(t *testing.T) {
					v := env.CP.EdgeSync().Version()
					r := env.Owner.Do("PUT", "/api/services/shield", tt.body)
					m := r.Map(t)
					e, _ := m["error"].(map[string]any)
					if r.Status != 400 || r.ErrorCode() != tt.code || (tt.field != "" && e["field"] != tt.field) || !strings.Contains(string(r.Body), tt.want) {
						t.Fatalf("%d %s; want 400 %s naming %s and %q", r.Status, r.Body, tt.code, tt.field, tt.want)
					}
					if env.CP.EdgeSync().Version() != v {
						t.Fatal("a refused save published a new version")
					}
				})
			}
			env.Owner.Must(200, "GET", "/api/services/shield", nil).JSON(t, &got)
			if strings.Join(got.BlockedCountries, ",") != "DE,FR" || !got.LogOnly {
				t.Fatalf("a refused save changed the settings: %+v", got)
			}
		})
	}
}

func TestShieldPermissions(t *testing.T) {
	for _, eng := range pgtest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			env := cptest.New(t, onEngine(t, eng))
			prj := env.CreateProject("p")
			viewer := env.Member("viewer@example.com", "viewer")
			dev := env.Member("dev@example.com", "developer")
			admin := env.Member("admin@example.com", "admin")
			tests := []struct {
				name         string
				c            *cptest.Client
				method, path string
				body         any
				status       int
			}{
				{"viewer reads", viewer, "GET", "/api/services/shield", nil, 200},
				{"viewer reads blocks", viewer, "GET", "/api/services/shield/blocks", nil, 200},
				{"developer cannot change", dev, "PUT", "/api/services/shield", map[string]any{"logOnly": true}, 403},
				{"developer cannot apply", dev, "POST", "/api/services/shield", nil, 403},
				{"admin changes", admin, "PUT", "/api/services/shield", map[string]any{"logOnly": true}, 200},
				{"admin applies", admin, "POST", "/api/services/shield", nil, 200},
				{"project key refused", env.NewKey("full", prj), "GET", "/api/services/shield", nil, 403},
				{"read-only key cannot change", env.NewKey("read_only", ""), "PUT", "/api/services/shield", map[string]any{"logOnly": true}, 403},
				{"bad days", env.Owner, "GET", "/api/services/shield/blocks?days=14", nil, 400},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) { tt.c.Must(tt.status, tt.method, tt.path, tt.body) })
			}
		})
	}
}

func TestSitePasswords(t *testing.T) {
	for _, eng := range pgtest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			env := cptest.New(t, onEngine(t, eng))
			id := liveSite(t, env, "Guide", map[string]string{"index.html": "x"})
			env.CreateProject("Other")
			var ans shield.PasswordsAnswer
			env.Owner.Must(200, "PUT", "/api/services/shield", map[string]any{"passwords": map[string]any{"guide": "correct horse"}}).JSON(t, &ans)
			if strings.Join(ans.ProtectedSites, ",") != "guide" || !ans.PasswordsAllowed {
				t.Fatalf("set: %+v", ans)
			}
			var got shield.Answer
			r := env.Owner.Must(200, "GET", "/api/services/shield", nil)
			r.JSON(t, &got)
			if strings.Contains(string(r.Body), "argon2") || strings.Contains(string(r.Body), "correct horse") || strings.Join(got.ProtectedSites, ",") != "guide" {
				t.Fatalf("GET shows a password or misses the site: %s", r.Body)
			}
			// The site and its deployment's own address (1--guide) carry it.
			s := snap(t, env)
			if len(s.Sites) != 2 || len(s.SessionKey) != 32 {
				t.Fatalf("snapshot password: %+v", s.Sites)
			}
			for _, st := range s.Sites {
				if st.Password == nil || !rules.VerifyPassword(st.Password.Hash, "correct horse") || st.Password.Version != rules.PasswordVersion(st.Password.Hash) {
					t.Fatalf("snapshot password of %s: %+v", st.Host, st.Password)
				}
			}
			refusals := []struct {
				name, code string
				body       any
			}{
				{"same site twice", "invalid_request", map[string]any{"passwords": map[string]any{"guide": "correct horse", id: "another one"}}},
				{"unknown site", "unknown_site", map[string]any{"passwords": map[string]any{"nope": "correct horse"}}},
				{"too short", "invalid_password", map[string]any{"passwords": map[string]any{"guide": "short"}}},
				{"empty map", "invalid_request", map[string]any{"passwords": map[string]any{}}},
				{"not a string", "invalid_request", map[string]any{"passwords": map[string]any{"guide": 12345678}}},
			}
			for _, tt := range refusals {
				t.Run(tt.name, func(t *testing.T) {
					r := env.Owner.Do("PUT", "/api/services/shield", tt.body)
					if r.Status != 400 || r.ErrorCode() != tt.code {
						t.Fatalf("%d %s; want 400 %s", r.Status, r.Body, tt.code)
					}
				})
			}
			env.Owner.Must(200, "PUT", "/api/services/shield", map[string]any{"passwords": map[string]any{id: nil}}).JSON(t, &ans)
			if len(ans.ProtectedSites) != 0 || snap(t, env).Sites[0].Password != nil {
				t.Fatalf("removal: %+v", ans)
			}
		})
	}
}

func TestSitePasswordsNeedAPlan(t *testing.T) {
	env := cptest.New(t, cptest.Options{Plan: plans.Hobby})
	env.CreateProject("Guide")
	var got shield.Answer
	env.Owner.Must(200, "GET", "/api/services/shield", nil).JSON(t, &got)
	if got.PasswordsAllowed {
		t.Fatal("hobby allows passwords")
	}
	r := env.Owner.Do("PUT", "/api/services/shield", map[string]any{"passwords": map[string]any{"guide": "correct horse"}})
	if r.Status != http.StatusPaymentRequired || r.ErrorCode() != "plan_limit" || !strings.Contains(string(r.Body), `"required_plan":"pro"`) {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	// Removing stays allowed.
	env.Owner.Must(200, "PUT", "/api/services/shield", map[string]any{"passwords": map[string]any{"guide": nil}})
}

func TestApplyNowAndBlocks(t *testing.T) {
	for _, eng := range pgtest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			env := cptest.New(t, onEngine(t, eng))
			id := liveSite(t, env, "Blog", map[string]string{"index.html": "x"})
			v := env.CP.EdgeSync().Version()
			var ap shield.ApplyAnswer
			env.Owner.Must(200, "POST", "/api/services/shield", nil).JSON(t, &ap)
			if ap.Version <= v || strings.Join(ap.Applied.Sites, ",") != "blog" {
				t.Fatalf("apply now: %+v (version before %d)", ap, v)
			}
			ctx := context.Background()
			today := env.Clock.Now().Format("2006-01-02")
			old := env.Clock.Now().AddDate(0, 0, -10).Format("2006-01-02")
			batch := snapshot.CountBatch{Batch: "b1", Counts: []rules.Count{
				{ID: id, Rule: rules.RuleCountry, Verdict: rules.Refuse, Day: today, N: 5},
				{ID: id, Rule: rules.RuleCountry, Verdict: rules.WouldRefuse, Day: today, N: 2},
				{ID: id, Rule: rules.RuleAICrawler, Verdict: rules.Refuse, Day: old, N: 7},
				{ID: "prj_gone", Rule: rules.RuleDenyList, Verdict: rules.Refuse, Day: today, N: 1},
			}}
			if _, err := env.CP.EdgeSync().Ingest(ctx, "edt_test", batch); err != nil {
				t.Fatal(err)
			}
			var b shield.Blocks
			env.Owner.Must(200, "GET", "/api/services/shield/blocks?days=7", nil).JSON(t, &b)
			if b.Days != 7 || len(b.Daily) != 7 || b.Refused != 5 || b.WouldRefuse != 2 || len(b.Items) != 1 ||
				b.Items[0].Site != "blog" || b.Items[0].Rule != "country" || b.Items[0].Kind != "static" {
				t.Fatalf("7 days: %+v", b)
			}
			env.Owner.Must(200, "GET", "/api/services/shield/blocks?days=30", nil).JSON(t, &b)
			if b.Refused != 12 || len(b.Items) != 2 || b.Items[0].Rule != "aiCrawler" || len(b.Daily) != 30 {
				t.Fatalf("30 days: %+v", b)
			}
		})
	}
}

// Site passwords are enforced on static sites only: setting one for an
// app or function is refused with a message, and a protected site that
// later serves an app leaves protectedSites while its password cannot be
// enforced.
func TestSitePasswordsStaticOnly(t *testing.T) {
	for _, eng := range pgtest.Engines() {
		t.Run(eng.Name, func(t *testing.T) {
			env := cptest.New(t, onEngine(t, eng))
			liveSite(t, env, "App", map[string]string{"platform.json": `{"kind":"app","origin":"http://127.0.0.1:9"}`, "server.js": "x"})
			liveSite(t, env, "Fn", map[string]string{"platform.json": `{"kind":"function","origin":"http://127.0.0.1:9"}`})
			later := liveSite(t, env, "Later", map[string]string{"index.html": "x"})
			env.CreateProject("Undeployed")
			for _, tt := range []struct{ site, kind string }{{"app", "app"}, {"fn", "function"}} {
				t.Run(tt.site, func(t *testing.T) {
					r := env.Owner.Do("PUT", "/api/services/shield", map[string]any{"passwords": map[string]any{tt.site: "correct horse"}})
					m := r.Map(t)["error"].(map[string]any)
					if r.Status != 400 || m["code"] != "password_static_only" || m["kind"] != tt.kind || !strings.Contains(m["message"].(string), "static sites only") {
						t.Fatalf("%d %s", r.Status, r.Body)
					}
				})
			}
			ws := env.CP.Bootstrap.Workspace.ID
			_, err := env.CP.Shield().SetPasswords(context.Background(), &auth.Principal{WorkspaceID: ws, Role: auth.Owner, KeyID: "k", KeyPrefix: "k"},
				shield.PasswordsRequest{Passwords: map[string]*string{"app": ptr("correct horse")}})
			if !errors.Is(err, shield.ErrPasswordStaticOnly) {
				t.Fatalf("service error %v does not match ErrPasswordStaticOnly", err)
			}
			// A static site and a project not deployed yet may have one.
			var ans shield.PasswordsAnswer
			env.Owner.Must(200, "PUT", "/api/services/shield", map[string]any{"passwords": map[string]any{"later": "correct horse", "undeployed": "correct horse"}}).JSON(t, &ans)
			if strings.Join(ans.ProtectedSites, ",") != "later,undeployed" {
				t.Fatalf("protected %v", ans.ProtectedSites)
			}
			// "later" now serves an app: its password is not enforced, so it is not
			// listed as protected.
			var repo struct{ Repo struct{ ID string } }
			env.Owner.Must(201, "POST", "/api/repos", map[string]any{"name": "later-app"}).JSON(t, &repo)
			env.Owner.Must(201, "POST", "/api/repos/"+repo.Repo.ID+"/commits", map[string]any{"message": "m",
				"files": []map[string]any{{"path": "platform.json", "content": `{"kind":"app","origin":"http://127.0.0.1:9"}`}}})
			env.Owner.Must(202, "POST", "/api/repos/"+repo.Repo.ID+"/deploy", map[string]any{"projectId": later})
			env.CP.Deploys().Wait()
			var got shield.Answer
			env.Owner.Must(200, "GET", "/api/services/shield", nil).JSON(t, &got)
			if strings.Join(got.ProtectedSites, ",") != "undeployed" {
				t.Fatalf("protected %v after the site became an app", got.ProtectedSites)
			}
		})
	}
}

func ptr(s string) *string { return &s }

// TestWorkerProgramsBehind: a worker program the platform runs keeps the
// Shield rules pinned at its deploy (spec: functions and worker programs
// receive rules on their next deploy), so a save lists it with the
// functions behind, never with the server apps that read rules within a
// minute; its next deploy brings it up to date.
func TestWorkerProgramsBehind(t *testing.T) {
	rtDir := filepath.Join(t.TempDir(), "runtime")
	env := cptest.New(t, cptest.Options{Configure: func(c *controlplane.Config) {
		c.Runtime = controlplane.RuntimeConfig{Sandbox: controlplane.SandboxNone, Dir: rtDir, ReapEvery: -1}
	}})
	worker := map[string]string{"platform.json": `{"kind":"worker","run":["/bin/sleep","600"]}`}
	liveSite(t, env, "Queue", worker)
	liveSite(t, env, "Proxy", map[string]string{"platform.json": `{"kind":"app","origin":"http://127.0.0.1:9"}`})
	liveSite(t, env, "Blog", map[string]string{"index.html": "x"})

	var got shield.Answer
	env.Owner.Must(200, "PUT", "/api/services/shield", map[string]any{"blockedCountries": []string{"DE"}}).JSON(t, &got)
	a := got.Applied
	if a == nil || strings.Join(a.FunctionsBehind, ",") != "queue" || strings.Join(a.Apps, ",") != "proxy" || strings.Join(a.Sites, ",") != "blog" {
		t.Fatalf("applied: %+v", a)
	}
	if !strings.Contains(got.AppliedNote, "functions and worker programs still running older rules until their next deploy: queue") {
		t.Fatalf("note: %s", got.AppliedNote)
	}

	// The next deploy pins the saved rules: no longer behind.
	var list struct{ Projects []struct{ ID, Slug string } }
	env.Owner.Must(200, "GET", "/api/projects", nil).JSON(t, &list)
	for _, p := range list.Projects {
		if p.Slug == "queue" {
			env.Owner.Must(202, "POST", "/api/projects/"+p.ID+"/deploy", nil)
			env.CP.Deploys().Wait()
		}
	}
	var ap struct{ Applied shield.Applied }
	env.Owner.Must(200, "POST", "/api/services/shield", nil).JSON(t, &ap)
	if len(ap.Applied.FunctionsBehind) != 0 {
		t.Fatalf("after the redeploy: %+v", ap.Applied)
	}
}

// TestMain stops the PostgreSQL server the engine subtests started.
func TestMain(m *testing.M) { pgtest.Main(m) }

// onEngine starts the control plane on engine e's metadata store (a SQLite
// path or a fresh PostgreSQL database).
func onEngine(t *testing.T, e pgtest.Engine) cptest.Options {
	return cptest.Options{Configure: func(c *controlplane.Config) { c.Store = e.DSN(t) }}
}
