package databases

import (
	"context"
	"fmt"
)

// Service names the area in a project's services counts.
func (s *Service) Service() string { return "databases" }

// Count is how many databases a project has (creating, ready or failed).
func (s *Service) Count(ctx context.Context, projectID string) (int, error) {
	ids, err := s.records.inProject(ctx, projectID)
	return len(ids), err
}

// DatabaseSize is one ready database's size at its last measurement.
type DatabaseSize struct {
	ID, Project string
	Bytes       int64
}

// Sizes lists the workspace's ready databases with their sizes, for the
// daily usage measurement.
func (s *Service) Sizes(ctx context.Context, workspace string) ([]DatabaseSize, error) {
	rows, err := s.records.db.QueryContext(ctx,
		`SELECT id, project_id, size_bytes FROM databases WHERE workspace_id = ? AND status = ? ORDER BY id`, workspace, StatusReady)
	if err != nil {
		return nil, fmt.Errorf("databases: sizes: %w", err)
	}
	defer rows.Close()
	var out []DatabaseSize
	for rows.Next() {
		var d DatabaseSize
		if err := rows.Scan(&d.ID, &d.Project, &d.Bytes); err != nil {
			return nil, fmt.Errorf("databases: sizes: %w", err)
		}
		out = append(out, d)
	}
	return out, rows.Err()
}
