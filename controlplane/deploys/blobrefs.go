package deploys

import (
	"context"
	"fmt"
)

// BlobRefs calls fn for every blob the files of every deployment still
// point at, whatever its state (blobs.RefSource for the blob cleanup): each
// sum once, in sum order. A deleted project's deployments are gone with it,
// so their blobs are no longer named here.
func (s *Service) BlobRefs(ctx context.Context, fn func(sum string) error) error {
	rows, err := s.cfg.DB.QueryContext(ctx, `SELECT DISTINCT sha256 FROM deployment_files WHERE sha256 <> '' ORDER BY sha256`)
	if err != nil {
		return fmt.Errorf("deploys: blob refs: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var sum string
		if err := rows.Scan(&sum); err != nil {
			return fmt.Errorf("deploys: blob refs: %w", err)
		}
		if err := fn(sum); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("deploys: blob refs: %w", err)
	}
	return nil
}
