package projects_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestSQLStore runs the projects store on SQLite and PostgreSQL.
func TestSQLStore(t *testing.T) {
	t0 := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	ctx := context.Background()
	ev := func(action string) audit.Event {
		return audit.Event{Workspace: "ws_1", Action: action, Category: audit.CategoryProject}
	}
	for _, e := range pgtest.Engines() {
		t.Run(e.Name, func(t *testing.T) {
			db := e.Open(t)
			if _, err := db.Exec(`INSERT INTO workspaces(id, name, created_at) VALUES ('ws_1', 'W', 't')`); err != nil {
				t.Fatal(err)
			}
			st := &projects.SQLStore{DB: db, Audit: audit.New(db, clock.NewFake(t0)),
				Address: func(slug string) string { return "https://" + slug + ".localhost" }}
			auditRows := func() (n int) {
				db.QueryRow(`SELECT count(*) FROM audit_log`).Scan(&n)
				return n
			}

			// Equal names take the next free slug, each in one transaction.
			for i, want := range []string{"blog", "blog-2", "blog-3"} {
				p := projects.Project{ID: store.NewID("prj"), Name: "Blog", Status: projects.StatusActive, WorkspaceID: "ws_1", CreatedAt: t0, UpdatedAt: t0}
				if err := st.CreateProject(ctx, &p, "blog", func(projects.Project) audit.Event { return ev("project.create") }); err != nil {
					t.Fatal(err)
				}
				if p.Slug != want || p.URL != "https://"+want+".localhost" {
					t.Fatalf("project %d: slug %q url %q, want %q", i, p.Slug, p.URL, want)
				}
			}
			if n := auditRows(); n != 3 {
				t.Fatalf("audit rows = %d, want 3", n)
			}
			list, err := st.Projects(ctx, "ws_1", "")
			if err != nil || len(list) != 3 {
				t.Fatalf("projects: %d %v", len(list), err)
			}
			got, err := st.ProjectBySlug(ctx, "ws_1", "blog-2")
			if err != nil || got.Slug != "blog-2" || !got.CreatedAt.Equal(t0) {
				t.Fatalf("by slug: %+v %v", got, err)
			}
			var ae *api.Error
			if _, err := st.Project(ctx, "ws_other", got.ID); !errors.As(err, &ae) || ae.Kind != api.KindNotFound {
				t.Fatalf("another workspace's project: %v", err)
			}

			// Variables: create, replace, refuse a duplicate rename, delete.
			pid := list[0].ID
			vev := func(projects.SealedVariable, bool) audit.Event { return ev("env.set") }
			a, created, err := st.SetVariable(ctx, pid, "A", []byte{0, 1, 0xff}, t0, 10, vev)
			if err != nil || !created {
				t.Fatalf("set A: %v %v", created, err)
			}
			if _, created, err := st.SetVariable(ctx, pid, "A", []byte{2}, t0, 10, vev); err != nil || created {
				t.Fatalf("replace A: %v %v", created, err)
			}
			if _, _, err := st.SetVariable(ctx, pid, "B", []byte{3}, t0, 10, vev); err != nil {
				t.Fatal(err)
			}
			before := auditRows()
			_, err = st.UpdateVariable(ctx, pid, a.ID, func(v *projects.SealedVariable) error { v.Key = "B"; return nil },
				func(projects.SealedVariable) audit.Event { return ev("env.update") })
			if !errors.As(err, &ae) || ae.Code != "env_exists" {
				t.Fatalf("rename onto B: %v", err)
			}
			if auditRows() != before {
				t.Fatal("a refused rename wrote an audit row")
			}
			vars, err := st.Variables(ctx, pid)
			if err != nil || len(vars) != 2 {
				t.Fatalf("variables: %d %v", len(vars), err)
			}
			for _, v := range vars {
				if v.Key == "A" && string(v.Sealed) != "\x02" {
					t.Fatalf("A sealed = %x", v.Sealed)
				}
			}
			if n, err := st.CountVariables(ctx, "ws_1"); err != nil || n != 2 {
				t.Fatalf("count = %d %v", n, err)
			}
			if err := st.DeleteVariable(ctx, pid, a.ID, func(string) audit.Event { return ev("env.delete") }); err != nil {
				t.Fatal(err)
			}
			if n, _ := st.CountVariables(ctx, "ws_1"); n != 1 {
				t.Fatalf("count after delete = %d", n)
			}
		})
	}
}
