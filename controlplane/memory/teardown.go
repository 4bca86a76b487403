package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/controlplane/store"
)

var (
	_ projects.Dependent = (*Service)(nil)
	_ projects.Counter   = (*Service)(nil)
)

// Name implements projects.Dependent.
func (s *Service) Name() string { return "memory stores" }

// Blockers implements projects.Dependent: nothing stops a project's
// deletion.
func (s *Service) Blockers(context.Context, string) ([]projects.Blocker, error) { return nil, nil }

// Remove implements projects.Dependent: every store of the project is
// marked deleted at once (invisible, no more writes), then its keys and
// row are removed in batches. A failure names the stores left; calling it
// again (or the sweep) finishes them.
func (s *Service) Remove(ctx context.Context, projectID string) error {
	err := s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE memory_stores SET status = 'deleting', updated_at = ? WHERE project_id = ? AND status = 'active'`,
			store.FormatTime(s.now()), projectID)
		return err
	})
	if err != nil {
		return projects.LeftBehind("the project's memory stores", fmt.Errorf("memory: mark stores deleted: %w", err))
	}
	rows, err := s.d.DB.QueryContext(ctx, `SELECT id, name FROM memory_stores WHERE project_id = ? ORDER BY id`, projectID)
	if err != nil {
		return projects.LeftBehind("the project's memory stores", fmt.Errorf("memory: stores: %w", err))
	}
	type named struct{ id, name string }
	var all []named
	for rows.Next() {
		var n named
		if err := rows.Scan(&n.id, &n.name); err != nil {
			rows.Close()
			return projects.LeftBehind("the project's memory stores", fmt.Errorf("memory: stores: %w", err))
		}
		all = append(all, n)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return projects.LeftBehind("the project's memory stores", fmt.Errorf("memory: stores: %w", err))
	}
	var errs []error
	for _, n := range all {
		if err := s.purge(ctx, n.id); err != nil {
			errs = append(errs, projects.LeftBehind("memory store "+n.name, err))
		}
	}
	return errors.Join(errs...)
}

// Service implements projects.Counter: the key of the services object.
func (s *Service) Service() string { return "memoryStores" }

// Count implements projects.Counter: the project's stores.
func (s *Service) Count(ctx context.Context, projectID string) (int, error) {
	var n int
	err := s.d.DB.QueryRowContext(ctx, `SELECT count(*) FROM memory_stores WHERE project_id = ? AND status = 'active'`, projectID).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("memory: count stores: %w", err)
	}
	return n, nil
}

// Stored is what one project's stores hold.
type Stored struct {
	Project string
	// Bytes are the keys', values' and metadata's bytes; Keys the keys
	// (expired keys count until swept).
	Bytes, Keys int64
}

// Stored returns what each project of workspace keeps in memory stores,
// for the daily storage measure (usage's KindStorage).
func (s *Service) Stored(ctx context.Context, workspace string) ([]Stored, error) {
	rows, err := s.d.DB.QueryContext(ctx, `SELECT project_id, sum(bytes), sum(key_count) FROM memory_stores
		WHERE workspace_id = ? AND status = 'active' GROUP BY project_id ORDER BY project_id`, workspace)
	if err != nil {
		return nil, fmt.Errorf("memory: stored: %w", err)
	}
	defer rows.Close()
	var out []Stored
	for rows.Next() {
		var st Stored
		if err := rows.Scan(&st.Project, &st.Bytes, &st.Keys); err != nil {
			return nil, fmt.Errorf("memory: stored: %w", err)
		}
		out = append(out, st)
	}
	return out, rows.Err()
}
