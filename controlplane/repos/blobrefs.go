package repos

import (
	"context"
	"fmt"
)

// BlobRefs calls fn for every blob the commits of every repo still point
// at (blobs.RefSource for the blob cleanup): each sum once, in sum order.
// A deleted repo's commits are gone with it, so their blobs are no longer
// named here (deployments built from them name them in deploys).
func (s *Service) BlobRefs(ctx context.Context, fn func(sum string) error) error {
	rows, err := s.db.QueryContext(ctx, `SELECT DISTINCT sha256 FROM repo_files WHERE sha256 <> '' ORDER BY sha256`)
	if err != nil {
		return fmt.Errorf("repos: blob refs: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var sum string
		if err := rows.Scan(&sum); err != nil {
			return fmt.Errorf("repos: blob refs: %w", err)
		}
		if err := fn(sum); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("repos: blob refs: %w", err)
	}
	return nil
}
