package deploys_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/svcplatform/platform/controlplane/cptest"
	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
)

// site is a test fixture: a project, a repo and helpers to push and deploy.
type site struct {
	env     *cptest.Env
	project string
	repo    string
}

func newSite(t *testing.T, env *cptest.Env, name string) *site {
	t.Helper()
	s := &site{env: env, project: env.CreateProject(name)}
	var out struct {
		Repo struct{ ID string } `json:"repo"`
	}
	env.Owner.Must(201, "POST", "/api/repos", map[string]any{"name": name}).JSON(t, &out)
	s.repo = out.Repo.ID
	return s
}

// push commits files (path -> content) and returns the commit number.
func (s *site) push(t *testing.T, files map[string]string) int {
	t.Helper()
	var list []map[string]any
	for p, c := range files {
		list = append(list, map[string]any{"path": p, "content": c})
	}
	var out struct {
		Commit struct {
			Number int `json:"commit"`
		} `json:"commit"`
	}
	s.env.Owner.Must(201, "POST", "/api/repos/"+s.repo+"/commits", map[string]any{"message": "m", "files": list}).JSON(t, &out)
	return out.Commit.Number
}

type deployment struct {
	ID       string `json:"id"`
	State    string `json:"state"`
	Kind     string `json:"kind"`
	Rollback bool   `json:"rollback"`
	Commit   int    `json:"commit"`
	Error    string `json:"error"`
	EnvKeys  []string
}

type detail struct {
	Deployment deployment              `json:"deployment"`
	Log        []struct{ Line string } `json:"log"`
	Files      []struct {
		Path, ContentType string
	} `json:"files"`
}

func (d detail) logText() string {
	var b strings.Builder
	for _, l := range d.Log {
		b.WriteString(l.Line + "\n")
	}
	return b.String()
}

// deploy deploys commit and waits for the build to end.
func (s *site) deploy(t *testing.T, commit int) detail {
	t.Helper()
	var out struct{ Deployment deployment }
	s.env.Owner.Must(202, "POST", "/api/repos/"+s.repo+"/deploy", map[string]any{"projectId": s.project, "commit": commit}).JSON(t, &out)
	s.env.CP.Deploys().Wait()
	var d detail
	s.env.Owner.Must(200, "GET", "/api/deployments/"+out.Deployment.ID, nil).JSON(t, &d)
	return d
}

// edge returns a client for the edge protocol with a fresh token.
func edgeSnapshot(t *testing.T, env *cptest.Env) snapshot.Snapshot {
	t.Helper()
	tok, err := env.CP.EdgeSync().EnsureLocalToken(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", env.Server.URL+snapshot.ConfigPath, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := env.Server.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("config: %d %s", resp.StatusCode, body)
	}
	var snap snapshot.Snapshot
	if err := json.Unmarshal(body, &snap); err != nil {
		t.Fatal(err)
	}
	return snap
}

func siteOf(snap snapshot.Snapshot, host string) *snapshot.Site {
	for i := range snap.Sites {
		if snap.Sites[i].Host == host {
			return &snap.Sites[i]
		}
	}
	return nil
}

func TestDeployRollbackSnapshot(t *testing.T) {
	env := newCP(t)
	s := newSite(t, env, "Blog")
	c1 := s.push(t, map[string]string{"index.html": "<h1>one</h1>", ".env": "SECRET=1", "keys/id_rsa": "x", "style.css": "a{}"})
	d1 := s.deploy(t, c1)
	if d1.Deployment.State != "live" || d1.Deployment.Kind != "static" {
		t.Fatalf("deployment 1: %+v\n%s", d1.Deployment, d1.logText())
	}
	for _, want := range []string{"omitted private file .env", "omitted private file keys/id_rsa", "Shield: no blocked countries", "live at https://blog.apps.test"} {
		if !strings.Contains(d1.logText(), want) {
			t.Errorf("log lacks %q:\n%s", want, d1.logText())
		}
	}
	c2 := s.push(t, map[string]string{"index.html": "<h1>two</h1>"})
	d2 := s.deploy(t, c2)
	snap := edgeSnapshot(t, env)
	st := siteOf(snap, "blog.apps.test")
	if st == nil || st.Deployment.ID != d2.Deployment.ID {
		t.Fatalf("snapshot site: %+v", st)
	}
	d3 := s.deploy(t, 1)
	if !d3.Deployment.Rollback || d3.Deployment.State != "live" {
		t.Fatalf("rollback: %+v", d3.Deployment)
	}
	snap = edgeSnapshot(t, env)
	st = siteOf(snap, "blog.apps.test")
	if st.Deployment.ID != d3.Deployment.ID || len(st.Deployment.Files) != 2 {
		t.Fatalf("snapshot after rollback: %+v", st.Deployment)
	}
	_ = base64.StdEncoding
}
