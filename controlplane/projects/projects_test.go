package projects_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/svcplatform/platform/controlplane/cptest"
	"github.com/svcplatform/platform/controlplane/projects"
)

type projectBody struct {
	Project projects.Project `json:"project"`
}

func TestCreateProject(t *testing.T) {
	env := cptest.New(t)
	for _, tc := range []struct {
		name     string
		body     any
		status   int
		code     string
		wantSlug string
	}{
		{"plain", map[string]any{"name": "My Blog"}, 201, "", "my-blog"},
		{"same name gets a suffix", map[string]any{"name": "My Blog"}, 201, "", "my-blog-2"},
		{"punctuation folds", map[string]any{"name": "  Café -- Shop!! "}, 201, "", "caf-shop"},
		{"with repo", map[string]any{"name": "withrepo", "repoUrl": "https://git.example.com/a/b"}, 201, "", "withrepo"},
		{"reserved short name", map[string]any{"name": "svc tools"}, 400, "reserved_name", ""},
		{"reserved full name", map[string]any{"name": "Service Desk"}, 400, "reserved_name", ""},
		{"reserved host", map[string]any{"name": "www"}, 400, "reserved_name", ""},
		{"no letters", map[string]any{"name": "!!!"}, 400, "invalid_request", ""},
		{"empty name", map[string]any{"name": " "}, 400, "invalid_request", ""},
		{"long name", map[string]any{"name": strings.Repeat("a", 101)}, 400, "invalid_request", ""},
		{"bad repo url", map[string]any{"name": "x", "repoUrl": "ftp://x"}, 400, "invalid_request", ""},
		{"unknown field", map[string]any{"name": "x", "slug": "mine"}, 400, "unknown_field", ""},
		{"malformed", `{"name":`, 400, "invalid_request", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := env.Owner.Do("POST", "/api/projects", tc.body)
			if r.Status != tc.status || r.ErrorCode() != tc.code {
				t.Fatalf("%d %s, want %d %s", r.Status, r.Body, tc.status, tc.code)
			}
			if tc.wantSlug != "" {
				var p projectBody
				r.JSON(t, &p)
				if p.Project.Slug != tc.wantSlug || p.Project.URL != "https://"+tc.wantSlug+".apps.test" || p.Project.LiveURL != nil {
					t.Fatalf("project %+v", p.Project)
				}
			}
		})
	}
	// Nothing half-stored by the refusals.
	var list projects.ProjectList
	env.Owner.Must(200, "GET", "/api/projects", nil).JSON(t, &list)
	if len(list.Projects) != 4 {
		t.Fatalf("%d projects stored, want 4", len(list.Projects))
	}
}

func TestReadUpdateProject(t *testing.T) {
	env := cptest.New(t)
	id := env.CreateProject("Shop")
	var d projects.Detail
	env.Owner.Must(200, "GET", "/api/projects/"+id, nil).JSON(t, &d)
	if d.Serving.State != projects.NotDeployed || d.DeployAction.Kind == "" || len(d.Services) != len(projects.ServiceKeys) {
		t.Fatalf("detail %+v", d)
	}
	var p projectBody
	env.Owner.Must(200, "PATCH", "/api/projects/"+id, map[string]any{"name": "Shop 2", "mailFrom": "shop@example.com", "repoBranch": "main"}).JSON(t, &p)
	if p.Project.Name != "Shop 2" || p.Project.Slug != "shop" || p.Project.MailFrom != "shop@example.com" || p.Project.RepoBranch != "main" {
		t.Fatalf("patched %+v (slug must stay)", p.Project)
	}
	for _, tc := range []struct {
		name string
		body any
		code string
	}{
		{"bad mail", map[string]any{"mailFrom": "not mail"}, "invalid_request"},
		{"bad branch", map[string]any{"repoBranch": "a..b"}, "invalid_request"},
		{"header injection", map[string]any{"mailSenderName": "a\r\nBcc: x"}, "invalid_request"},
		{"slug is permanent", map[string]any{"slug": "other"}, "unknown_field"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if r := env.Owner.Do("PATCH", "/api/projects/"+id, tc.body); r.Status != 400 || r.ErrorCode() != tc.code {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
		})
	}
	env.Owner.Must(200, "GET", "/api/projects/"+id, nil).JSON(t, &d)
	if d.Project.MailFrom != "shop@example.com" {
		t.Fatal("a refused PATCH changed the project")
	}
	if r := env.Owner.Do("GET", "/api/projects/prj_nope", nil); r.Status != 404 {
		t.Fatalf("missing project: %d", r.Status)
	}
}

func TestProjectKeySeesOnlyItsProject(t *testing.T) {
	env := cptest.New(t)
	a := env.CreateProject("a")
	b := env.CreateProject("b")
	k := env.NewKey("full", a)
	var list projects.ProjectList
	k.Must(200, "GET", "/api/projects", nil).JSON(t, &list)
	if len(list.Projects) != 1 || list.Projects[0].ID != a {
		t.Fatalf("project key listed %+v", list.Projects)
	}
	k.Must(200, "GET", "/api/projects/"+a, nil)
	if r := k.Do("GET", "/api/projects/"+b, nil); r.Status != 403 || r.ErrorCode() != "project_key_mismatch" {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if r := k.Do("POST", "/api/projects", map[string]any{"name": "c"}); r.Status != 403 {
		t.Fatalf("project key created a project: %d", r.Status)
	}
	if r := k.Do("DELETE", "/api/projects/"+a, nil); r.Status != 403 {
		t.Fatalf("project key deleted its project: %d", r.Status)
	}
}

func TestEnvironmentVariables(t *testing.T) {
	env := cptest.New(t)
	id := env.CreateProject("app")
	base := "/api/projects/" + id + "/env"
	var out projects.EnvAnswer
	env.Owner.Must(201, "POST", base, map[string]any{"key": "API_KEY", "value": "one"}).JSON(t, &out)
	if !out.Created || out.FunctionsBehind == nil {
		t.Fatalf("answer %+v", out)
	}
	env.Owner.Must(201, "POST", base, map[string]any{"key": "api_key", "value": "lower"})
	env.Owner.Must(200, "POST", base, map[string]any{"key": "API_KEY", "value": "two"})
	env.Owner.Must(201, "POST", base, map[string]any{"key": "SERVICE_PROJECT_ID", "value": "spoof"}).JSON(t, &out)
	if out.Note == "" {
		t.Fatal("storing SERVICE_PROJECT_ID gave no note")
	}
	for _, tc := range []struct {
		name   string
		body   any
		status int
		code   string
	}{
		{"digit first", map[string]any{"key": "1ABC", "value": "x"}, 400, "invalid_env_key"},
		{"dash", map[string]any{"key": "A-B", "value": "x"}, 400, "invalid_env_key"},
		{"empty", map[string]any{"key": "", "value": "x"}, 400, "invalid_env_key"},
		{"space", map[string]any{"key": "A B", "value": "x"}, 400, "invalid_env_key"},
		{"too long value", map[string]any{"key": "BIG", "value": strings.Repeat("v", projects.MaxEnvValueBytes+1)}, 413, "env_value_too_large"},
		{"unknown field", map[string]any{"key": "A", "value": "x", "target": "preview"}, 400, "unknown_field"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if r := env.Owner.Do("POST", base, tc.body); r.Status != tc.status || r.ErrorCode() != tc.code {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
		})
	}
	var list projects.EnvList
	env.Owner.Must(200, "GET", base, nil).JSON(t, &list)
	got := map[string]string{}
	for _, v := range list.Variables {
		got[v.Key] = v.Value
	}
	if len(got) != 3 || got["API_KEY"] != "two" || got["api_key"] != "lower" || list.System["SERVICE_PROJECT_ID"] != id {
		t.Fatalf("variables %+v system %+v", got, list.System)
	}
	deployed, err := env.CP.Projects.DeployEnv(context.Background(), id)
	if err != nil || deployed["SERVICE_PROJECT_ID"] != id || deployed["API_KEY"] != "two" {
		t.Fatalf("deploy env %v %v: SERVICE_PROJECT_ID must be the project id", deployed, err)
	}
	// Values are sealed at rest.
	var raw []byte
	env.CP.DB.QueryRow(`SELECT value_enc FROM env_vars WHERE key = 'API_KEY'`).Scan(&raw)
	if strings.Contains(string(raw), "two") {
		t.Fatal("value stored in clear")
	}
	// Who may read values.
	viewer := env.Member("viewer@example.com", "viewer")
	dev := env.Member("dev@example.com", "developer")
	if r := viewer.Do("GET", base, nil); r.Status != 403 {
		t.Fatalf("viewer read values: %d", r.Status)
	}
	if r := env.NewKey("read_only", "").Do("GET", base, nil); r.Status != 403 {
		t.Fatalf("read-only key read values: %d", r.Status)
	}
	dev.Must(200, "GET", base, nil)
	// PATCH and DELETE.
	var apiKey string
	for _, v := range list.Variables {
		if v.Key == "API_KEY" {
			apiKey = v.ID
		}
	}
	env.Owner.Must(200, "PATCH", base+"/"+apiKey, map[string]any{"value": "three"})
	if r := env.Owner.Do("PATCH", base+"/"+apiKey, map[string]any{"key": "api_key"}); r.Status != 409 {
		t.Fatalf("rename onto an existing key: %d %s", r.Status, r.Body)
	}
	env.Owner.Must(200, "DELETE", base+"/"+apiKey, nil)
	if r := env.Owner.Do("DELETE", base+"/"+apiKey, nil); r.Status != 404 {
		t.Fatalf("second delete: %d", r.Status)
	}
	other := env.CreateProject("other")
	if r := env.Owner.Do("DELETE", "/api/projects/"+other+"/env/"+list.Variables[0].ID, nil); r.Status != 404 {
		t.Fatalf("variable reached through another project: %d", r.Status)
	}
}

// dependent is a fake area holding resources of projects.
type dependent struct {
	blockers []projects.Blocker
	fail     error
	removed  int
}

func (d *dependent) Name() string { return "widgets" }
func (d *dependent) Blockers(context.Context, string) ([]projects.Blocker, error) {
	return d.blockers, nil
}
func (d *dependent) Remove(context.Context, string) error {
	if d.fail != nil {
		return d.fail
	}
	d.removed++
	return nil
}

func TestDeleteProject(t *testing.T) {
	env := cptest.New(t)
	dep := &dependent{}
	env.CP.Projects.AddDependent(dep)
	id := env.CreateProject("doomed")
	env.Owner.Must(201, "POST", "/api/projects/"+id+"/env", map[string]any{"key": "A", "value": "1"})
	path := "/api/projects/" + id

	// Blocked: 409 with blockers, nothing removed.
	dep.blockers = []projects.Blocker{{Kind: "running_deploy", Message: "a deploy is running", Action: "wait for it to finish"}}
	r := env.Owner.Do("DELETE", path, nil)
	m := r.Map(t)["error"].(map[string]any)
	if r.Status != 409 || m["code"] != "deletion_blocked" || len(m["blockers"].([]any)) != 1 || dep.removed != 0 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	dep.blockers = nil

	// A part fails: 502 teardown_incomplete, project kept as teardown_failed,
	// only reads and deletes accepted.
	// The answer and teardownError name what is left, never the error's
	// words (a host path).
	hostDir := t.TempDir()
	dep.fail = projects.LeftBehind("widget w1", fmt.Errorf("remove %s/w1: disk on fire", hostDir))
	r = env.Owner.Do("DELETE", path, nil)
	if r.Status != 502 || r.ErrorCode() != "teardown_incomplete" || !strings.Contains(string(r.Body), "widget w1") ||
		strings.Contains(string(r.Body), hostDir) {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	var d projects.Detail
	env.Owner.Must(200, "GET", path, nil).JSON(t, &d)
	if d.Project.Status != projects.StatusTeardownFailed || !strings.Contains(d.Project.TeardownError, "widget w1") ||
		strings.Contains(d.Project.TeardownError, hostDir) {
		t.Fatalf("project %+v", d.Project)
	}
	var repo struct{ Repo struct{ ID string } }
	env.Owner.Must(201, "POST", "/api/repos", map[string]any{"name": "r"}).JSON(t, &repo)
	env.Owner.Must(201, "POST", "/api/repos/"+repo.Repo.ID+"/commits", map[string]any{"message": "m", "files": []map[string]any{{"path": "index.html", "content": "hi"}}})
	var vars projects.EnvList
	env.Owner.Must(200, "GET", path+"/env", nil).JSON(t, &vars)
	envPath := path + "/env/" + vars.Variables[0].ID
	// Every area refuses changes under the project (reads stay open).
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"PATCH", path, map[string]any{"name": "x"}},
		{"POST", path + "/env", map[string]any{"key": "B", "value": "2"}},
		{"PATCH", envPath, map[string]any{"value": "3"}},
		{"DELETE", envPath, nil},
		{"POST", path + "/deploy", nil},
		{"POST", "/api/repos/" + repo.Repo.ID + "/deploy", map[string]any{"projectId": id}},
		{"PUT", "/api/services/shield", map[string]any{"passwords": map[string]any{"doomed": "a site password"}}},
		{"PUT", "/api/services/shield", map[string]any{"passwords": map[string]any{"doomed": nil}}},
	} {
		if r := env.Owner.Do(c.method, c.path, c.body); r.Status != 409 || r.ErrorCode() != "project_teardown_failed" {
			t.Fatalf("%s %s on teardown_failed: %d %s", c.method, c.path, r.Status, r.Body)
		}
	}
	env.Owner.Must(200, "GET", path+"/env", nil)
	env.Owner.Must(200, "GET", path+"/deployments", nil)
	projectKey := env.NewKey("full", id)
	projectKey.Must(200, "GET", path, nil)

	// Deleting again retries and finishes; the project's keys go with it.
	dep.fail = nil
	env.Owner.Must(200, "DELETE", path, nil)
	if r := projectKey.Do("GET", "/api/projects", nil); r.Status != 401 {
		t.Fatalf("a deleted project's key still works: %d %s", r.Status, r.Body)
	}
	if dep.removed != 1 {
		t.Fatalf("removed %d times", dep.removed)
	}
	if r := env.Owner.Do("GET", path, nil); r.Status != 404 {
		t.Fatalf("deleted project still readable: %d", r.Status)
	}
	var n int
	env.CP.DB.QueryRow(`SELECT count(*) FROM env_vars`).Scan(&n)
	if n != 0 {
		t.Fatalf("%d variables left behind", n)
	}
}

func TestDeletePermissions(t *testing.T) {
	env := cptest.New(t)
	for _, tc := range []struct {
		name   string
		caller func(project string) *cptest.Client
		status int
	}{
		{"developer signed in", func(string) *cptest.Client {
			env.Member("d@example.com", "developer")
			return env.SignIn("d@example.com", "a long password 1", "")
		}, 403},
		// "Deleting a project needs an admin or a full workspace key": the
		// key of a member who may delete; a key never does more than its
		// member's role.
		{"developer's full workspace key", func(string) *cptest.Client { return env.Member("d2@example.com", "developer") }, 403},
		{"viewer's full workspace key", func(string) *cptest.Client { return env.Member("v2@example.com", "viewer") }, 403},
		{"viewer's read-only key", func(string) *cptest.Client {
			v := env.Member("v@example.com", "viewer")
			var out struct {
				Secret string `json:"secret"`
			}
			v.Must(201, "POST", "/api/keys", map[string]any{"name": "ro", "access": "read_only"}).JSON(t, &out)
			return env.Client(out.Secret)
		}, 403},
		{"read-only key", func(string) *cptest.Client { return env.NewKey("read_only", "") }, 403},
		{"own project key", func(p string) *cptest.Client { return env.NewKey("full", p) }, 403},
		{"admin", func(string) *cptest.Client { return env.Member("a@example.com", "admin") }, 200},
		{"full workspace key", func(string) *cptest.Client { return env.NewKey("full", "") }, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := env.CreateProject(fmt.Sprint("p ", tc.name))
			if r := tc.caller(id).Do("DELETE", "/api/projects/"+id, nil); r.Status != tc.status {
				t.Fatalf("%d %s, want %d", r.Status, r.Body, tc.status)
			}
		})
	}
}

// TestTeardownMessages checks what a failed Remove shows: the resources
// it names with LeftBehind, or a general sentence; never its own words.
func TestTeardownMessages(t *testing.T) {
	hostDir := t.TempDir()
	pathErr := fmt.Errorf("unlinkat %s/x: permission denied", hostDir)
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"plain error", pathErr, "widgets: some resources could not be removed (the server log has the details)"},
		{"one resource", projects.LeftBehind("widget w1", pathErr), "widgets: could not remove widget w1"},
		{"joined", errors.Join(projects.LeftBehind("widget w1", pathErr), pathErr, projects.LeftBehind("widget w2", pathErr)),
			"widgets: could not remove widget w1, widget w2"},
		{"wrapped join", fmt.Errorf("widgets: %w", errors.Join(projects.LeftBehind("widget w1", pathErr), projects.LeftBehind("widget w1", pathErr))),
			"widgets: could not remove widget w1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := cptest.New(t)
			env.CP.Projects.AddDependent(&dependent{fail: tc.err})
			id := env.CreateProject("doomed")
			r := env.Owner.Do("DELETE", "/api/projects/"+id, nil)
			var body struct {
				Error struct {
					Failed []string `json:"failed"`
				} `json:"error"`
			}
			r.JSON(t, &body)
			if r.Status != 502 || strings.Contains(string(r.Body), hostDir) || len(body.Error.Failed) != 1 || body.Error.Failed[0] != tc.want {
				t.Fatalf("%d %s, want failed [%q]", r.Status, r.Body, tc.want)
			}
			var d projects.Detail
			env.Owner.Must(200, "GET", "/api/projects/"+id, nil).JSON(t, &d)
			if d.Project.TeardownError != tc.want {
				t.Fatalf("teardownError %q, want %q", d.Project.TeardownError, tc.want)
			}
		})
	}
}
