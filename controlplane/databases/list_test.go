package databases_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/databases"
	"github.com/svcplatform/platform/controlplane/plans"
)

// GET /api/projects/{id}/databases lists the project's databases oldest
// first, a page at a time, without deleted ones or another project's;
// readers may list, and bad pages are refused.
func TestList(t *testing.T) {
	e := newEnv(t, plans.Pro)
	// Made a second apart, in this order; the last two in the same second
	// (the id breaks the tie).
	var ids []string
	for i, name := range []string{"a", "b", "c", "d", "e"} {
		if i < 4 {
			e.Clock.Advance(time.Second)
		}
		ids = append(ids, e.create(name))
	}
	if ids[4] < ids[3] {
		ids[3], ids[4] = ids[4], ids[3]
	}
	e.Owner.Must(http.StatusOK, "DELETE", "/api/databases/"+ids[2], nil)
	live := []string{ids[0], ids[1], ids[3], ids[4]}
	other := e.CreateProject("other")
	var otherDB databases.DatabaseAnswer
	e.Owner.Must(http.StatusCreated, "POST", "/api/projects/"+other+"/databases", map[string]any{"name": "x"}).JSON(t, &otherDB)

	list := func(path string) databases.DatabaseList {
		t.Helper()
		var out databases.DatabaseList
		e.Owner.Must(http.StatusOK, "GET", path, nil).JSON(t, &out)
		return out
	}
	base := "/api/projects/" + e.project + "/databases"

	t.Run("one page", func(t *testing.T) {
		got := list(base)
		if len(got.Databases) != len(live) || got.NextCursor != "" {
			t.Fatalf("got %d databases, next %q", len(got.Databases), got.NextCursor)
		}
		for i, d := range got.Databases {
			if d.ID != live[i] || d.ProjectID != e.project || !strings.HasSuffix(d.Endpoint, "/api/databases/"+d.ID) || !strings.HasPrefix(d.Endpoint, "http") {
				t.Fatalf("database %d: %+v", i, d)
			}
		}
	})
	// Pages of one cross every boundary, the same-second one too.
	for _, n := range []string{"1", "2", "3"} {
		t.Run("pages of "+n, func(t *testing.T) {
			var seen []string
			path := base + "?limit=" + n
			for pages := 0; ; pages++ {
				if pages > len(live) {
					t.Fatal("the pages do not end")
				}
				got := list(path)
				for _, d := range got.Databases {
					seen = append(seen, d.ID)
				}
				if got.NextCursor == "" {
					break
				}
				path = base + "?limit=" + n + "&cursor=" + got.NextCursor
			}
			if strings.Join(seen, ",") != strings.Join(live, ",") {
				t.Fatalf("pages gave %v, want %v", seen, live)
			}
		})
	}
	t.Run("other project", func(t *testing.T) {
		got := list("/api/projects/" + other + "/databases")
		if len(got.Databases) != 1 || got.Databases[0].ID != otherDB.Database.ID {
			t.Fatalf("%+v", got)
		}
	})

	readOnly := e.NewKey("read_only", "")
	otherKey := e.NewKey("full", other)
	viewer := e.Member("viewer@example.com", "viewer")
	for _, tc := range []struct {
		name   string
		status int
		code   string
		do     func() (int, string)
	}{
		{"viewer lists", 200, "", func() (int, string) { r := viewer.Do("GET", base, nil); return r.Status, r.ErrorCode() }},
		{"read-only key lists", 200, "", func() (int, string) { r := readOnly.Do("GET", base, nil); return r.Status, r.ErrorCode() }},
		{"other project's key", 403, "project_key_mismatch", func() (int, string) { r := otherKey.Do("GET", base, nil); return r.Status, r.ErrorCode() }},
		{"unknown project", 404, "not_found", func() (int, string) {
			r := e.Owner.Do("GET", "/api/projects/prj_unknown/databases", nil)
			return r.Status, r.ErrorCode()
		}},
		{"limit 0", 400, "invalid_request", func() (int, string) { r := e.Owner.Do("GET", base+"?limit=0", nil); return r.Status, r.ErrorCode() }},
		{"limit past 200", 400, "invalid_request", func() (int, string) { r := e.Owner.Do("GET", base+"?limit=201", nil); return r.Status, r.ErrorCode() }},
		{"cursor from nowhere", 400, "invalid_request", func() (int, string) {
			r := e.Owner.Do("GET", base+"?cursor=db_nowhere", nil)
			return r.Status, r.ErrorCode()
		}},
		{"cursor of another project", 400, "invalid_request", func() (int, string) {
			r := e.Owner.Do("GET", base+"?cursor="+otherDB.Database.ID, nil)
			return r.Status, r.ErrorCode()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, code := tc.do()
			if status != tc.status || code != tc.code {
				t.Fatalf("got %d %q, want %d %q", status, code, tc.status, tc.code)
			}
		})
	}
}
