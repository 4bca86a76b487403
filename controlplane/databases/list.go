package databases

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/projects"
)

// The page sizes of GET /api/projects/{id}/databases.
const (
	DefaultListLimit = 50
	MaxListLimit     = 200
)

// DatabaseList is the answer of listing a project's databases: oldest
// first; nextCursor, when set, asks for the next page (?cursor=).
type DatabaseList struct {
	Databases  []Database `json:"databases"`
	NextCursor string     `json:"nextCursor,omitempty" doc:"the cursor of the next page; absent on the last page"`
}

// List answers GET /api/projects/{id}/databases?limit=&cursor=.
func (h Handlers) List(w http.ResponseWriter, r *http.Request) error {
	limit, cursor, err := api.Page(r, DefaultListLimit, MaxListLimit, "cursor")
	if err != nil {
		return err
	}
	out, err := h.S.List(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"), limit, cursor)
	if err != nil {
		return err
	}
	for i := range out.Databases {
		out.Databases[i].Endpoint = h.origin(r) + out.Databases[i].Endpoint
	}
	api.WriteJSON(w, http.StatusOK, out)
	return nil
}

// List returns a page of a project's databases that are not deleted, in
// the order they were created. cursor is the nextCursor of the page
// before, or empty for the first page.
func (s *Service) List(ctx context.Context, p *auth.Principal, projectID string, limit int, cursor string) (DatabaseList, error) {
	// A project whose deletion failed half-way still has its databases to
	// read.
	if _, err := s.d.Projects.Writable(ctx, p.WorkspaceID, projectID); err != nil && !errors.Is(err, projects.ErrTeardownFailed) {
		return DatabaseList{}, err
	}
	recs, err := s.records.page(ctx, p.WorkspaceID, projectID, cursor, limit+1)
	if err != nil {
		return DatabaseList{}, err
	}
	out := DatabaseList{Databases: []Database{}}
	if len(recs) > limit {
		recs = recs[:limit]
		out.NextCursor = recs[limit-1].ID
	}
	for _, rec := range recs {
		out.Databases = append(out.Databases, s.view(ctx, rec))
	}
	return out, nil
}

// errBadCursor refuses a cursor that is not a database of the project.
var errBadCursor = api.Invalid("cursor is not from this listing: start again without it")

// page reads up to n records of a project after the record named by cursor
// (none: from the start), oldest first; deleted ones are left out.
func (rs *records) page(ctx context.Context, workspace, project, cursor string, n int) ([]record, error) {
	q := `SELECT ` + recordCols + ` FROM databases WHERE workspace_id = ? AND project_id = ? AND status <> ?`
	args := []any{workspace, project, StatusDeleted}
	if cursor != "" {
		var created string
		err := rs.db.QueryRowContext(ctx, `SELECT created_at FROM databases WHERE id = ? AND workspace_id = ? AND project_id = ?`,
			cursor, workspace, project).Scan(&created)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, errBadCursor
		}
		if err != nil {
			return nil, fmt.Errorf("databases: list: %w", err)
		}
		q += ` AND (created_at > ? OR (created_at = ? AND id > ?))`
		args = append(args, created, created, cursor)
	}
	q += ` ORDER BY created_at, id LIMIT ?`
	args = append(args, n)
	rows, err := rs.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("databases: list: %w", err)
	}
	defer rows.Close()
	var out []record
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return nil, fmt.Errorf("databases: list: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
