package deploys_test

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/svcplatform/platform/controlplane"
	"github.com/svcplatform/platform/controlplane/cdn"
	"github.com/svcplatform/platform/controlplane/cptest"
	"github.com/svcplatform/platform/controlplane/deploys"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/rules"
)

func TestDeployingBlocksDeleteAndIsObservable(t *testing.T) {
	env := newCP(t)
	s := newSite(t, env, "Shop")
	c := s.push(t, map[string]string{"index.html": "x"})
	release := make(chan struct{})
	env.CP.Deploys().SetBuildHook(func(string) { <-release })
	var out struct{ Deployment deployment }
	env.Owner.Must(202, "POST", "/api/repos/"+s.repo+"/deploy", map[string]any{"projectId": s.project, "commit": c}).JSON(t, &out)

	var p projects.Detail
	env.Owner.Must(200, "GET", "/api/projects/"+s.project, nil).JSON(t, &p)
	if p.Serving.State != projects.Deploying || p.Project.LiveURL != nil {
		t.Fatalf("while deploying: %+v live %v", p.Serving, p.Project.LiveURL)
	}
	r := env.Owner.Do("DELETE", "/api/projects/"+s.project, nil)
	if r.Status != 409 || r.ErrorCode() != "deletion_blocked" || !strings.Contains(string(r.Body), "running_deploy") {
		t.Fatalf("delete while deploying: %d %s", r.Status, r.Body)
	}
	r = env.Owner.Do("POST", "/api/repos/"+s.repo+"/deploy", map[string]any{"projectId": s.project})
	if r.Status != 409 || r.ErrorCode() != "deploy_in_progress" {
		t.Fatalf("second deploy: %d %s", r.Status, r.Body)
	}
	close(release)
	env.CP.Deploys().Wait()
	env.Owner.Must(200, "GET", "/api/projects/"+s.project, nil).JSON(t, &p)
	if p.Serving.State != projects.Live || p.Project.LiveURL == nil || *p.Project.LiveURL != "https://shop.apps.test" {
		t.Fatalf("after deploy: %+v live %v", p.Serving, p.Project.LiveURL)
	}
	if p.DeployAction.Kind != "rebuild" || p.DeployAction.Commit != 1 {
		t.Fatalf("deployAction: %+v", p.DeployAction)
	}
	env.Owner.Must(200, "DELETE", "/api/projects/"+s.project, nil)
	if siteOf(edgeSnapshot(t, env), "shop.apps.test") != nil {
		t.Fatal("deleted project still in the edge snapshot")
	}
}

func TestServingStates(t *testing.T) {
	env := newCP(t)
	s := newSite(t, env, "States")
	var p projects.Detail
	env.Owner.Must(200, "GET", "/api/projects/"+s.project, nil).JSON(t, &p)
	if p.Serving.State != projects.NotDeployed || p.DeployAction.Kind != "none" {
		t.Fatalf("fresh: %+v %+v", p.Serving, p.DeployAction)
	}
	// Only private files: nothing to serve, the deploy fails.
	c := s.push(t, map[string]string{".env": "A=1", "server.key": "k"})
	d := s.deploy(t, c)
	if d.Deployment.State != "failed" || !strings.Contains(d.Deployment.Error, "nothing to serve") {
		t.Fatalf("deploy of private files only: %+v", d.Deployment)
	}
	env.Owner.Must(200, "GET", "/api/projects/"+s.project, nil).JSON(t, &p)
	if p.Serving.State != projects.Failed {
		t.Fatalf("after a failed first deploy: %+v", p.Serving)
	}
	// A server app whose origin answers is live; once it stops, down.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c = s.push(t, map[string]string{"platform.json": `{"kind":"app","origin":"http://` + ln.Addr().String() + `"}`, "server.js": "x"})
	d = s.deploy(t, c)
	if d.Deployment.State != "live" || d.Deployment.Kind != "app" || !strings.Contains(d.logText(), "answers") {
		t.Fatalf("app: %+v\n%s", d.Deployment, d.logText())
	}
	ln.Close()
	if err := env.CP.Deploys().ProbeOrigins(context.Background()); err != nil {
		t.Fatal(err)
	}
	env.Owner.Must(200, "GET", "/api/projects/"+s.project, nil).JSON(t, &p)
	if p.Serving.State != projects.Down || p.Project.LiveURL == nil {
		t.Fatalf("app with a dead origin: %+v", p.Serving)
	}
	snap := edgeSnapshot(t, env)
	st := siteOf(snap, "states.apps.test")
	if st == nil || st.Deployment.Kind != "app" || st.Deployment.Origin != "http://"+ln.Addr().String() || len(st.Deployment.Files) != 0 {
		t.Fatalf("app in snapshot: %+v", st)
	}
}

func TestManifestRefusals(t *testing.T) {
	env := newCP(t)
	s := newSite(t, env, "M")
	tests := []struct{ name, manifest, want string }{
		{"not JSON", `{`, "not a valid manifest"},
		{"unknown field", `{"kind":"static","built":"npm"}`, "unknown field"},
		{"build not an object", `{"kind":"static","build":"npm"}`, "not a valid manifest"},
		{"build output escapes", `{"build":{"command":"make","output":"../x"}}`, "build.output"},
		{"build output for an app", `{"kind":"app","run":["node","s.js"],"build":{"command":"make","output":"dist"}}`, "build.output applies to static sites only"},
		{"unknown kind", `{"kind":"lambda"}`, "not static, app, worker or function"},
		{"app without origin", `{"kind":"app"}`, "needs run"},
		{"origin not http", `{"kind":"function","origin":"ftp://x"}`, "http or https"},
		{"origin with path", `{"kind":"app","origin":"http://127.0.0.1:1/api"}`, "without a path"},
		{"static with origin", `{"origin":"http://127.0.0.1:1"}`, "no origin"},
		{"bad root", `{"root":"../x"}`, "root"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := s.push(t, map[string]string{"platform.json": tt.manifest, "index.html": "x"})
			r := env.Owner.Do("POST", "/api/repos/"+s.repo+"/deploy", map[string]any{"projectId": s.project, "commit": c})
			if r.Status != 400 || r.ErrorCode() != "invalid_manifest" || !strings.Contains(string(r.Body), tt.want) {
				t.Fatalf("%d %s; want 400 invalid_manifest with %q", r.Status, r.Body, tt.want)
			}
		})
	}
	var list deploys.ProjectDeployments
	env.Owner.Must(200, "GET", "/api/projects/"+s.project+"/deployments", nil).JSON(t, &list)
	if len(list.Deployments) != 0 {
		t.Fatalf("refused deploys stored deployments: %+v", list.Deployments)
	}
}

func TestDeployRefusals(t *testing.T) {
	env := newCP(t)
	s := newSite(t, env, "R")
	other := newSite(t, env, "Other")
	withBuild := s.push(t, map[string]string{"index.html": "x", "platform.json": `{"build":{"command":"npm run build"}}`})
	c := s.push(t, map[string]string{"index.html": "x"})
	projectKey := env.NewKey("full", s.project)
	viewer := env.Member("viewer@example.com", "viewer")
	tests := []struct {
		name   string
		c      *cptest.Client
		repo   string
		body   any
		status int
		code   string
	}{
		{"no project", env.Owner, s.repo, map[string]any{"commit": c}, 400, "invalid_request"},
		{"unknown project", env.Owner, s.repo, map[string]any{"projectId": "prj_nope"}, 404, "not_found"},
		{"unknown repo", env.Owner, "repo_nope", map[string]any{"projectId": s.project}, 404, "not_found"},
		{"missing commit", env.Owner, s.repo, map[string]any{"projectId": s.project, "commit": 7}, 404, "commit_not_found"},
		{"negative commit", env.Owner, s.repo, map[string]any{"projectId": s.project, "commit": -1}, 400, "invalid_request"},
		{"repo without commits", env.Owner, other.repo, map[string]any{"projectId": s.project}, 404, "no_commits"},
		{"project key", projectKey, s.repo, map[string]any{"projectId": s.project}, 403, "workspace_key_required"},
		{"viewer", viewer, s.repo, map[string]any{"projectId": s.project}, 403, "insufficient_role"},
		{"build without a runtime", env.Owner, s.repo, map[string]any{"projectId": s.project, "commit": withBuild}, 503, "runtime_unavailable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.c.Do("POST", "/api/repos/"+tt.repo+"/deploy", tt.body)
			if r.Status != tt.status || r.ErrorCode() != tt.code {
				t.Fatalf("status %d code %q, want %d %q: %s", r.Status, r.ErrorCode(), tt.status, tt.code, r.Body)
			}
		})
	}
	// A project key reads its project's deployments, but not another's.
	d := s.deploy(t, c)
	projectKey.Must(http.StatusOK, "GET", "/api/deployments/"+d.Deployment.ID, nil)
	otherKey := env.NewKey("full", other.project)
	otherKey.Must(http.StatusForbidden, "GET", "/api/deployments/"+d.Deployment.ID, nil)
	otherKey.Must(http.StatusForbidden, "GET", "/api/projects/"+s.project+"/deployments", nil)
	env.Owner.Must(http.StatusNotFound, "GET", "/api/deployments/dpl_nope", nil)
}

func TestEnvPinsAndFunctions(t *testing.T) {
	env := newCP(t)
	s := newSite(t, env, "Fn")
	env.Owner.Must(201, "POST", "/api/projects/"+s.project+"/env", map[string]any{"key": "API_KEY", "value": "v1"})
	env.Owner.Must(201, "POST", "/api/projects/"+s.project+"/env", map[string]any{"key": "SERVICE_PROJECT_ID", "value": "spoof"})
	env.Owner.Must(200, "PUT", "/api/services/cdn", map[string]any{"cacheTtlSeconds": 60})
	env.Owner.Must(200, "PUT", "/api/services/shield", map[string]any{"blockedCountries": []string{"de", "FR"}})
	c := s.push(t, map[string]string{"platform.json": `{"kind":"function","origin":"http://127.0.0.1:9"}`})
	d := s.deploy(t, c)
	if d.Deployment.State != "live" || strings.Join(d.Deployment.EnvKeys, ",") != "API_KEY,SERVICE_PROJECT_ID" {
		t.Fatalf("function: %+v\n%s", d.Deployment, d.logText())
	}
	for _, want := range []string{"blocked countries: DE, FR", "rules pinned", "does not answer yet"} {
		if !strings.Contains(d.logText(), want) {
			t.Errorf("log lacks %q:\n%s", want, d.logText())
		}
	}
	got, err := env.CP.Deploys().Env(context.Background(), d.Deployment.ID)
	if err != nil || got["SERVICE_PROJECT_ID"] != s.project || got["API_KEY"] != "v1" {
		t.Fatalf("deployment env %v, %v", got, err)
	}
	st := siteOf(edgeSnapshot(t, env), "fn.apps.test")
	if st.Deployment.Shield == nil || strings.Join(st.Deployment.Shield.BlockedCountries, ",") != "DE,FR" || st.Deployment.CDN.CacheTTLSeconds != 60 {
		t.Fatalf("pinned: %+v", st.Deployment)
	}
	// A changed variable leaves the function behind until its next deploy.
	var ans projects.EnvAnswer
	env.Owner.Must(200, "POST", "/api/projects/"+s.project+"/env", map[string]any{"key": "API_KEY", "value": "v2"}).JSON(t, &ans)
	if strings.Join(ans.FunctionsBehind, ",") != "fn" {
		t.Fatalf("functions_behind %v", ans.FunctionsBehind)
	}
	// Shield changes do not reach the function until it is deployed again.
	var sh struct {
		AppliedNote string
		Applied     struct{ FunctionsBehind []string }
	}
	env.Owner.Must(200, "PUT", "/api/services/shield", map[string]any{"blockedCountries": []string{"DE"}}).JSON(t, &sh)
	if strings.Join(sh.Applied.FunctionsBehind, ",") != "fn" || !strings.Contains(sh.AppliedNote, "fn") {
		t.Fatalf("shield save answer: %+v", sh)
	}
	var re struct{ Deployment deployment }
	env.Owner.Must(202, "POST", "/api/projects/"+s.project+"/deploy", nil).JSON(t, &re)
	env.CP.Deploys().Wait()
	env.Owner.Must(201, "POST", "/api/projects/"+s.project+"/env", map[string]any{"key": "OTHER", "value": "x"}).JSON(t, &ans)
	if len(ans.FunctionsBehind) != 1 {
		t.Fatalf("after a new variable: %v", ans.FunctionsBehind)
	}
	st = siteOf(edgeSnapshot(t, env), "fn.apps.test")
	if st.Deployment.ID != re.Deployment.ID || strings.Join(st.Deployment.Shield.BlockedCountries, ",") != "DE" {
		t.Fatalf("after redeploy: %+v", st.Deployment)
	}
}

func TestRedeployKeptFilesAfterRepoDelete(t *testing.T) {
	env := newCP(t)
	s := newSite(t, env, "Kept")
	c := s.push(t, map[string]string{"platform.json": `{"root":"public"}`, "public/index.html": "hi", "src/main.go": "package main"})
	d := s.deploy(t, c)
	if len(d.Files) != 1 || d.Files[0].Path != "index.html" || d.Files[0].ContentType != "text/html; charset=utf-8" {
		t.Fatalf("root public: %+v", d.Files)
	}
	env.Owner.Must(200, "DELETE", "/api/repos/"+s.repo, nil)
	var p projects.Detail
	env.Owner.Must(200, "GET", "/api/projects/"+s.project, nil).JSON(t, &p)
	if p.DeployAction.Kind != "redeploy" {
		t.Fatalf("deployAction after repo delete: %+v", p.DeployAction)
	}
	env.Owner.Must(200, "PUT", "/api/services/cdn", map[string]any{"enabled": false})
	var re struct{ Deployment deployment }
	env.Owner.Must(202, "POST", "/api/projects/"+s.project+"/deploy", nil).JSON(t, &re)
	env.CP.Deploys().Wait()
	st := siteOf(edgeSnapshot(t, env), "kept.apps.test")
	if st.Deployment.ID != re.Deployment.ID || st.Deployment.CDN.Enabled || len(st.Deployment.Files) != 1 {
		t.Fatalf("redeployed: %+v", st.Deployment)
	}
}

func TestInterruptedDeployFailsOnStart(t *testing.T) {
	env := newCP(t)
	s := newSite(t, env, "Crash")
	c := s.push(t, map[string]string{"index.html": "x"})
	d := s.deploy(t, c)
	// Simulate a process that stopped mid-build.
	if _, err := env.CP.DB.Exec(`DELETE FROM project_serving; UPDATE deployments SET state = 'deploying', finished_at = ''`); err != nil {
		t.Fatal(err)
	}
	cp := env.CP
	restarted, err := deploys.New(context.Background(), deploys.Config{}, deploys.Deps{DB: cp.DB, Blobs: cp.Blobs(), Clock: env.Clock,
		Audit: cp.Audit, Meter: cp.Meter, Projects: cp.Projects, Repos: cp.Repos(), Settings: settingsOf{cp}, Pub: cp.EdgeSync()})
	if err != nil {
		t.Fatal(err)
	}
	defer restarted.Close()
	var got detail
	env.Owner.Must(200, "GET", "/api/deployments/"+d.Deployment.ID, nil).JSON(t, &got)
	if got.Deployment.State != "failed" || !strings.Contains(got.Deployment.Error, "restart") || !strings.Contains(got.logText(), "failed: interrupted") {
		t.Fatalf("after restart: %+v\n%s", got.Deployment, got.logText())
	}
}

// settingsOf gives a deploys service built in a test the settings in force.
type settingsOf struct{ cp *controlplane.ControlPlane }

func (s settingsOf) CDN(ctx context.Context, workspace string) (cdn.Settings, error) {
	return s.cp.CDN().Get(ctx, workspace)
}

func (s settingsOf) Shield(ctx context.Context, workspace string) (rules.Settings, error) {
	return s.cp.Shield().Current(ctx, workspace)
}

// deployAction rebuilds the project's own repository: the workspace repo
// its repoUrl names, else the repo its serving deployment came from; never
// merely the repo deployed to it last.
func TestDeployActionUsesTheProjectsOwnRepo(t *testing.T) {
	env := newCP(t)
	a := newSite(t, env, "Own")
	a.push(t, map[string]string{"index.html": "a1"})
	a.push(t, map[string]string{"index.html": "a2"})
	a.deploy(t, 1)
	b := &site{env: env, project: a.project}
	var out struct{ Repo struct{ ID string } }
	env.Owner.Must(201, "POST", "/api/repos", map[string]any{"name": "other"}).JSON(t, &out)
	b.repo = out.Repo.ID
	b.push(t, map[string]string{"index.html": "b1"})

	action := func() projects.DeployAction {
		var p projects.Detail
		env.Owner.Must(200, "GET", "/api/projects/"+a.project, nil).JSON(t, &p)
		return p.DeployAction
	}
	redeployRepo := func() string {
		var d struct {
			Deployment struct {
				RepoID string `json:"repoId"`
				Commit int    `json:"commit"`
			}
		}
		env.Owner.Must(202, "POST", "/api/projects/"+a.project+"/deploy", nil).JSON(t, &d)
		env.CP.Deploys().Wait()
		return d.Deployment.RepoID
	}
	for _, tt := range []struct {
		name     string
		setup    func()
		wantRepo string
		commit   int
	}{
		{"serving repo without a link", func() {}, a.repo, 2},
		{"another repo deployed last serves", func() { b.deploy(t, 1) }, b.repo, 1},
		{"repoUrl names the project's repo", func() {
			env.Owner.Must(200, "PATCH", "/api/projects/"+a.project, map[string]any{"repoUrl": "https://platform.example/api/repos/" + a.repo, "repoBranch": "main"})
		}, a.repo, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.setup()
			if got := action(); got.Kind != "rebuild" || got.RepoID != tt.wantRepo || got.Commit != tt.commit {
				t.Fatalf("deployAction %+v, want rebuild of %s commit %d", got, tt.wantRepo, tt.commit)
			}
			if got := redeployRepo(); got != tt.wantRepo {
				t.Fatalf("redeploy built repo %s, want %s", got, tt.wantRepo)
			}
		})
	}
	if id := deploys.LinkedRepoID("https://x.example/api/repos/rep_1"); id != "rep_1" {
		t.Fatalf("LinkedRepoID = %q", id)
	}
	if id := deploys.LinkedRepoID("https://github.com/acme/site"); id != "" {
		t.Fatalf("an outside repository named a repo: %q", id)
	}
}
