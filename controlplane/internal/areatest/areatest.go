// Package areatest is what the areas' tests share: both store engines,
// the projects and plans areas as fakes, and one set of callers. Every area
// test that uses it sees the same world: workspace ws_a (hobby) with
// projects prj_a (Shop), prj_b (Blog) and prj_dead (Gone, teardown_failed);
// workspace ws_b (pro) with prj_c (Other).
//
// Tests that want the real accounts and projects instead build a Core
// (one workspace bootstrapped with the key OwnerKey). Either way a test
// calls its server with Call or Must and reads the Response.
package areatest

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

// EachEngine runs fn as one subtest per engine of pgtest.Engines, SQLite
// and PostgreSQL.
func EachEngine(t *testing.T, fn func(t *testing.T, e pgtest.Engine)) {
	for _, e := range pgtest.Engines() {
		t.Run(e.Name, func(t *testing.T) { fn(t, e) })
	}
}

// Projects is the projects area as an area sees it: Get answers 404 for
// another workspace's project, Writable refuses one in teardown_failed.
type Projects struct {
	mu sync.Mutex
	m  map[string]projects.Project
}

// NewProjects holds ps by id.
func NewProjects(ps ...projects.Project) *Projects {
	f := &Projects{m: map[string]projects.Project{}}
	for _, p := range ps {
		f.m[p.ID] = p
	}
	return f
}

// StandardProjects is the tests' world: prj_a, prj_b and prj_dead in ws_a,
// prj_c in ws_b.
func StandardProjects() *Projects {
	return NewProjects(
		projects.Project{ID: "prj_a", WorkspaceID: "ws_a", Name: "Shop", Slug: "shop", Status: projects.StatusActive},
		projects.Project{ID: "prj_b", WorkspaceID: "ws_a", Name: "Blog", Slug: "blog", Status: projects.StatusActive},
		projects.Project{ID: "prj_dead", WorkspaceID: "ws_a", Name: "Gone", Slug: "gone", Status: projects.StatusTeardownFailed},
		projects.Project{ID: "prj_c", WorkspaceID: "ws_b", Name: "Other", Slug: "other", Status: projects.StatusActive},
	)
}

// Get returns a project of the workspace.
func (f *Projects) Get(_ context.Context, workspace, id string) (projects.Project, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.m[id]
	if !ok || p.WorkspaceID != workspace {
		return projects.Project{}, api.NotFound("project")
	}
	return p, nil
}

// Writable returns a project of the workspace that accepts changes.
func (f *Projects) Writable(ctx context.Context, workspace, id string) (projects.Project, error) {
	p, err := f.Get(ctx, workspace, id)
	if err == nil && p.Status == projects.StatusTeardownFailed {
		return p, projects.ErrTeardownFailed
	}
	return p, err
}

// All returns every project.
func (f *Projects) All() []projects.Project {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]projects.Project, 0, len(f.m))
	for _, p := range f.m {
		out = append(out, p)
	}
	return out
}

// Update changes a project.
func (f *Projects) Update(id string, fn func(p *projects.Project)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.m[id]
	fn(&p)
	f.m[id] = p
}

// SetStatus sets a project's status.
func (f *Projects) SetStatus(id, status string) {
	f.Update(id, func(p *projects.Project) { p.Status = status })
}

// Plans tells each workspace's plan; tests change it.
type Plans struct {
	mu sync.Mutex
	m  map[string]plans.Name
}

// StandardPlans: ws_a on hobby, ws_b on pro.
func StandardPlans() *Plans {
	return NewPlans(map[string]plans.Name{"ws_a": plans.Hobby, "ws_b": plans.Pro})
}

// NewPlans holds the plan of each workspace of m (a copy).
func NewPlans(m map[string]plans.Name) *Plans {
	p := &Plans{m: map[string]plans.Name{}}
	for ws, n := range m {
		p.m[ws] = n
	}
	return p
}

// Plan returns a workspace's plan.
func (f *Plans) Plan(_ context.Context, ws string) plans.Name {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.m[ws]
}

// PlanOf is Plan as billing asks for it.
func (f *Plans) PlanOf(ctx context.Context, ws string) (plans.Name, error) {
	return f.Plan(ctx, ws), nil
}

// Set puts a workspace on a plan.
func (f *Plans) Set(ws string, n plans.Name) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.m[ws] = n
}

// Keys authenticates "Bearer <name>" as the principal of that name.
type Keys map[string]*auth.Principal

// Authenticate implements the API's authenticator.
func (k Keys) Authenticate(r *http.Request) (*auth.Principal, error) {
	return k[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")], nil
}

// Callers are the tests' callers: in ws_a an owner, a developer, a viewer,
// a read-only key, keys limited to prj_a and to prj_b; in ws_b an owner.
var Callers = Keys{
	"owner":    {WorkspaceID: "ws_a", MemberID: "mem_o", Role: auth.Owner, KeyID: "key_o", KeyPrefix: "svc_o"},
	"dev":      {WorkspaceID: "ws_a", MemberID: "mem_d", Role: auth.Developer, KeyID: "key_d", KeyPrefix: "svc_d"},
	"viewer":   {WorkspaceID: "ws_a", MemberID: "mem_v", Role: auth.Viewer, KeyID: "key_v", KeyPrefix: "svc_v"},
	"readonly": {WorkspaceID: "ws_a", MemberID: "mem_o", Role: auth.Owner, KeyID: "key_r", KeyPrefix: "svc_r", ReadOnly: true},
	"prjkey":   {WorkspaceID: "ws_a", MemberID: "mem_d", Role: auth.Developer, KeyID: "key_p", KeyPrefix: "svc_p", ProjectID: "prj_a"},
	"otherprj": {WorkspaceID: "ws_a", MemberID: "mem_d", Role: auth.Developer, KeyID: "key_q", KeyPrefix: "svc_q", ProjectID: "prj_b"},
	"stranger": {WorkspaceID: "ws_b", MemberID: "mem_s", Role: auth.Owner, KeyID: "key_s", KeyPrefix: "svc_s"},
}
