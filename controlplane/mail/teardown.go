package mail

import (
	"context"
	"database/sql"

	"github.com/svcplatform/platform/controlplane/projects"
)

var _ projects.Dependent = (*Service)(nil)

// Name implements projects.Dependent.
func (s *Service) Name() string { return "e-mail" }

// Blockers implements projects.Dependent: nothing stops a project's
// deletion; queued messages are dropped with it.
func (s *Service) Blockers(context.Context, string) ([]projects.Blocker, error) { return nil, nil }

// Remove implements projects.Dependent: the project's messages (queued
// ones are not sent), its bounce reports and suppression list, and its
// sending domains with their keys go.
func (s *Service) Remove(ctx context.Context, projectID string) error {
	return s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM mail_messages WHERE project_id = ?`, projectID); err != nil {
			return err
		}
		for _, t := range []string{"mail_domains", "mail_events", "mail_suppressions"} {
			if _, err := tx.ExecContext(ctx, `DELETE FROM `+t+` WHERE project_id = ?`, projectID); err != nil {
				return err
			}
		}
		return nil
	})
}
