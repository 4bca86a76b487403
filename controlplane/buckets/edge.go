package buckets

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/svcplatform/platform/controlplane/store"
)

// Publisher runs a change that edges must see in the same transaction as
// the change (edgesync.Service.Change): which buckets are public is part
// of the edge snapshot, so an edge in front of /storage stops answering a
// bucket's objects from its cache as soon as the bucket is made private or
// deleted.
type Publisher interface {
	Change(ctx context.Context, fn func(tx *sql.Tx) error) error
}

// tx runs fn in a transaction; when edges must see the change (publish)
// and a Publisher is set, through it.
func (s *Service) tx(ctx context.Context, publish bool, fn func(tx *sql.Tx) error) error {
	if publish && s.d.Edge != nil {
		return s.d.Edge.Change(ctx, fn)
	}
	return s.d.DB.Tx(ctx, fn)
}

// PublicBucketIDs returns the id of every public bucket, in order: what an
// edge's storage host serves without a signature (every other unsigned
// /storage path is 404 there, answered without asking the control plane).
// It is the buckets source of the edge snapshot.
func PublicBucketIDs(ctx context.Context, q store.Querier) ([]string, error) {
	rows, err := q.QueryContext(ctx, `SELECT id FROM storage_buckets WHERE public <> 0 ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("buckets: public buckets: %w", err)
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("buckets: public buckets: %w", err)
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// hasPublic reports whether any of a project's buckets is public.
func hasPublic(ctx context.Context, q store.Querier, projectID string) (bool, error) {
	var n int
	err := q.QueryRowContext(ctx, `SELECT count(*) FROM storage_buckets WHERE project_id = ? AND public <> 0`, projectID).Scan(&n)
	return n > 0, err
}
