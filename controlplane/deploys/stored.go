package deploys

import (
	"context"
	"fmt"
)

// StoredSize is what one project's deployments keep in the blob store.
type StoredSize struct {
	Project        string
	Bytes, Objects int64
}

// Stored lists, per project of the workspace, the bytes and number of
// distinct blobs its deployments' files point at.
func (s *Service) Stored(ctx context.Context, workspace string) ([]StoredSize, error) {
	rows, err := s.cfg.DB.QueryContext(ctx, `SELECT project_id, coalesce(sum(size), 0), count(*) FROM (
		SELECT d.project_id, f.sha256, max(f.size) AS size FROM deployment_files f JOIN deployments d ON d.id = f.deployment_id
		WHERE d.workspace_id = ? GROUP BY d.project_id, f.sha256) AS blobs GROUP BY project_id ORDER BY project_id`, workspace)
	if err != nil {
		return nil, fmt.Errorf("deploys: stored bytes: %w", err)
	}
	defer rows.Close()
	var out []StoredSize
	for rows.Next() {
		var st StoredSize
		if err := rows.Scan(&st.Project, &st.Bytes, &st.Objects); err != nil {
			return nil, fmt.Errorf("deploys: stored bytes: %w", err)
		}
		out = append(out, st)
	}
	return out, rows.Err()
}
