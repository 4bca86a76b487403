package buckets

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/svcplatform/platform/controlplane/blobs"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/controlplane/usage"
)

var (
	_ projects.Dependent = (*Service)(nil)
	_ projects.Counter   = (*Service)(nil)
	_ usage.Counter      = (*Service)(nil)
	_ usage.Sizer        = (*Service)(nil)
	_ blobs.RefSource    = (*Service)(nil)
)

// Name implements projects.Dependent.
func (s *Service) Name() string { return "storage buckets" }

// Blockers implements projects.Dependent: nothing stops a project's
// deletion; its buckets go with it.
func (s *Service) Blockers(context.Context, string) ([]projects.Blocker, error) { return nil, nil }

// Remove implements projects.Dependent: the project's buckets, objects,
// unfinished uploads and access keys go in one transaction (safe to run
// again). Their blobs, named by nothing any more, are freed by the next
// blob cleanup once past its grace period.
func (s *Service) Remove(ctx context.Context, projectID string) error {
	public, err := hasPublic(ctx, s.d.DB, projectID)
	if err != nil {
		return projects.LeftBehind("storage buckets", err)
	}
	return s.tx(ctx, public, func(tx *sql.Tx) error {
		if err := removeBuckets(ctx, tx, `project_id = ?`, projectID); err != nil {
			return projects.LeftBehind("storage buckets", err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM storage_access_keys WHERE project_id = ?`, projectID); err != nil {
			return projects.LeftBehind("storage access keys", err)
		}
		return nil
	})
}

// Service implements projects.Counter and usage.Counter: "buckets".
func (s *Service) Service() string { return "buckets" }

// Count implements projects.Counter: a project's buckets.
func (s *Service) Count(ctx context.Context, projectID string) (int, error) {
	var n int
	if err := s.d.DB.QueryRowContext(ctx, `SELECT count(*) FROM storage_buckets WHERE project_id = ?`, projectID).Scan(&n); err != nil {
		return 0, fmt.Errorf("buckets: count: %w", err)
	}
	return n, nil
}

// Sizes implements usage.Sizer: one size per bucket of the workspace
// (resource "bucket <name>"): the bytes of its objects and unfinished
// uploads' parts, and its object count.
func (s *Service) Sizes(ctx context.Context, workspace string) ([]usage.Size, error) {
	rows, err := queryBuckets(ctx, s.d.DB, `workspace_id = ?`, workspace)
	if err != nil {
		return nil, fmt.Errorf("buckets: sizes: %w", err)
	}
	out := make([]usage.Size, 0, len(rows))
	for _, b := range rows {
		out = append(out, usage.Size{Project: b.Project, Resource: "bucket " + b.Name, Bytes: b.Bytes + b.UploadBytes, Objects: b.Objects})
	}
	return out, nil
}

// BlobRefs implements blobs.RefSource: every blob an object, an object's
// part or an unfinished upload's part names.
func (s *Service) BlobRefs(ctx context.Context, fn func(sum string) error) error {
	for _, q := range []string{
		`SELECT sha256 FROM storage_objects WHERE sha256 <> ''`,
		`SELECT sha256 FROM storage_object_parts`,
		`SELECT sha256 FROM storage_upload_parts`,
	} {
		if err := s.eachSum(ctx, q, fn); err != nil {
			return fmt.Errorf("buckets: blob refs: %w", err)
		}
	}
	return nil
}

func (s *Service) eachSum(ctx context.Context, query string, fn func(string) error) error {
	rows, err := s.d.DB.QueryContext(ctx, query)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var sum string
		if err := rows.Scan(&sum); err != nil {
			return err
		}
		if err := fn(sum); err != nil {
			return err
		}
	}
	return rows.Err()
}
