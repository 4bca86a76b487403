package domains

import (
	"context"
	"database/sql"

	"github.com/svcplatform/platform/controlplane/projects"
)

var _ projects.Dependent = (*Service)(nil)

// Name implements projects.Dependent.
func (s *Service) Name() string { return "custom domains" }

// Blockers implements projects.Dependent: nothing stops a project's
// deletion.
func (s *Service) Blockers(context.Context, string) ([]projects.Blocker, error) { return nil, nil }

// Remove implements projects.Dependent: the project's domain connections
// go, and the edges stop answering at their hosts (another project may
// then add them). Safe to call again.
func (s *Service) Remove(ctx context.Context, projectID string) error {
	return s.d.Pub.Change(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM domain_hosts WHERE project_id = ?`, projectID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM domain_certs WHERE domain_id IN (SELECT id FROM domains WHERE project_id = ?)`, projectID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM domains WHERE project_id = ?`, projectID)
		return err
	})
}
