package projects

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/store"
)

// What other areas ask of projects. They depend on these methods through a
// small interface of their own and never read the projects table.

// Ref is what the edge snapshot and the edge counts need of a project.
type Ref struct {
	Workspace string
	Slug      string
}

// ErrTeardownFailed refuses changes to a project whose deletion is
// incomplete: only reads and deletes (which retry) are accepted.
var ErrTeardownFailed = api.Conflict("project_teardown_failed", "only reads and deletes are accepted until the delete is retried: this project's deletion did not finish")

// RequireActive returns nil for a project that accepts changes and
// ErrTeardownFailed for one in teardown_failed; an unknown project is 404.
// Every area calls it before changing anything under a project.
func (s *Service) RequireActive(ctx context.Context, projectID string) error {
	p, err := s.store.ProjectByID(ctx, projectID)
	if err != nil {
		return err
	}
	if p.Status == StatusTeardownFailed {
		return ErrTeardownFailed
	}
	return nil
}

// Find returns the workspace's project named by its id or its slug (404
// when neither matches).
func (s *Service) Find(ctx context.Context, workspace, key string) (Project, error) {
	p, err := s.store.Project(ctx, workspace, key)
	if err == nil || !isNotFound(err) {
		return p, err
	}
	return s.store.ProjectBySlug(ctx, workspace, strings.ToLower(key))
}

// Slugs returns the slug of each of the workspace's projects, by id.
func (s *Service) Slugs(ctx context.Context, workspace string) (map[string]string, error) {
	ps, err := s.store.Projects(ctx, workspace, "")
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(ps))
	for _, p := range ps {
		out[p.ID] = p.Slug
	}
	return out, nil
}

// Slug returns the slug of a project of any workspace.
func (s *Service) Slug(ctx context.Context, projectID string) (string, error) {
	p, err := s.store.ProjectByID(ctx, projectID)
	return p.Slug, err
}

// EnvCount counts the variables stored in the workspace's projects.
func (s *Service) EnvCount(ctx context.Context, workspace string) (int, error) {
	return s.store.CountVariables(ctx, workspace)
}

func isNotFound(err error) bool {
	var e *api.Error
	return errors.As(err, &e) && e.Kind == api.KindNotFound
}

// AllRefs returns every project's workspace and slug by id, read through q
// (the edge snapshot reads every source through one querier).
func AllRefs(ctx context.Context, q store.Querier) (map[string]Ref, error) {
	rows, err := q.QueryContext(ctx, `SELECT id, workspace_id, slug FROM projects`)
	if err != nil {
		return nil, fmt.Errorf("projects: refs: %w", err)
	}
	defer rows.Close()
	out := map[string]Ref{}
	for rows.Next() {
		var id string
		var r Ref
		if err := rows.Scan(&id, &r.Workspace, &r.Slug); err != nil {
			return nil, fmt.Errorf("projects: refs: %w", err)
		}
		out[id] = r
	}
	return out, rows.Err()
}

// RefOf returns one project's workspace and slug, read through q; ok is
// false when the project does not exist.
func RefOf(ctx context.Context, q store.Querier, projectID string) (Ref, bool, error) {
	var r Ref
	err := q.QueryRowContext(ctx, `SELECT workspace_id, slug FROM projects WHERE id = ?`, projectID).Scan(&r.Workspace, &r.Slug)
	if errors.Is(err, sql.ErrNoRows) {
		return r, false, nil
	}
	if err != nil {
		return r, false, fmt.Errorf("projects: ref: %w", err)
	}
	return r, true, nil
}

// ProjectByID implements Store.
func (s *SQLStore) ProjectByID(ctx context.Context, id string) (Project, error) {
	return s.scan(s.DB.QueryRowContext(ctx, `SELECT `+projectCols+` FROM projects WHERE id = ?`, id))
}

// ProjectBySlug implements Store.
func (s *SQLStore) ProjectBySlug(ctx context.Context, workspace, slug string) (Project, error) {
	return s.scan(s.DB.QueryRowContext(ctx, `SELECT `+projectCols+` FROM projects WHERE workspace_id = ? AND slug = ?`, workspace, slug))
}

// CountVariables implements Store.
func (s *SQLStore) CountVariables(ctx context.Context, workspace string) (int, error) {
	var n int
	err := s.DB.QueryRowContext(ctx, `SELECT count(*) FROM env_vars e JOIN projects p ON p.id = e.project_id WHERE p.workspace_id = ?`, workspace).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("projects: count variables: %w", err)
	}
	return n, nil
}
