package vectors_test

import (
	"net/http"
	"testing"
)

// TestListCollections: GET /api/projects/{id}/vectors lists the project's
// live collections by name, with their vector counts; a deleted one
// is gone; keys see only their own project's.
func TestListCollections(t *testing.T) {
	e := newEnv(t)
	a := e.create(map[string]any{"name": "docs", "dimensions": 384})
	b := e.create(map[string]any{"name": "faq", "dimensions": 384, "metadataIndexes": []map[string]any{{"propertyName": "lang", "indexType": "string"}}})
	gone := e.create(map[string]any{"name": "old", "dimensions": 384})
	e.must(http.StatusAccepted, "POST", "/api/vectors/"+b+"/upsert", map[string]any{"vectors": []any{
		map[string]any{"id": "x", "values": vec(384, 1)}, map[string]any{"id": "y", "values": vec(384, 2)}}})
	e.must(http.StatusOK, "DELETE", "/api/vectors/"+gone, nil)
	var list struct {
		Collections []struct {
			ID, Name, ProjectID string
			VectorCount         int
			MetadataIndexes     []struct{ PropertyName string }
		}
	}
	e.must(http.StatusOK, "GET", "/api/projects/"+e.project+"/vectors", nil).JSON(t, &list)
	if len(list.Collections) != 2 || list.Collections[0].ID != a || list.Collections[1].ID != b ||
		list.Collections[0].VectorCount != 0 || list.Collections[1].VectorCount != 2 ||
		len(list.Collections[1].MetadataIndexes) != 1 || list.Collections[1].ProjectID != e.project {
		t.Fatalf("list: %+v", list.Collections)
	}
	other := e.newProject("other")
	for _, c := range []struct {
		name, key, project string
		status             int
		want               int
	}{
		{"another project has none", ownerKey, other, 200, 0},
		{"read-only key reads", e.key("read_only", ""), e.project, 200, 2},
		{"own project key reads", e.key("full", e.project), e.project, 200, 2},
		{"another project's key", e.key("full", other), e.project, 403, 0},
		{"unknown project", ownerKey, "prj_nosuchproject000", 404, 0},
		{"no key", "", e.project, 401, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := e.cp.Client(c.key).Do("GET", "/api/projects/"+c.project+"/vectors", nil)
			if r.Status != c.status {
				t.Fatalf("%d %s, want %d", r.Status, r.Body, c.status)
			}
			if c.status == 200 {
				var l struct{ Collections []struct{ ID string } }
				r.JSON(t, &l)
				if len(l.Collections) != c.want {
					t.Fatalf("%d collections: %s", len(l.Collections), r.Body)
				}
			}
		})
	}
}
