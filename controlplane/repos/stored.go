package repos

import (
	"context"
	"fmt"
)

// Stored is what a workspace's repos keep in the blob store: the bytes and
// number of distinct blobs their commits point at (a file kept unchanged
// across commits counts once).
func (s *Service) Stored(ctx context.Context, workspace string) (bytes, objects int64, err error) {
	err = s.db.QueryRowContext(ctx, `SELECT coalesce(sum(size), 0), count(*) FROM (
		SELECT f.sha256, max(f.size) AS size FROM repo_files f JOIN repos r ON r.id = f.repo_id
		WHERE r.workspace_id = ? AND f.sha256 <> '' GROUP BY f.sha256) AS blobs`, workspace).Scan(&bytes, &objects)
	if err != nil {
		return 0, 0, fmt.Errorf("repos: stored bytes: %w", err)
	}
	return bytes, objects, nil
}
