package accounts

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/plans"
)

// SwapPlanTx sets workspace's plan inside tx, another area's transaction
// (the billing ledger pays for the plan in the same one), records ev there
// and returns the plan it replaced. Every replica drops the workspace's
// cached plan once tx commits (PlanChannel); call PlanChanged after the
// commit so that this replica never answers from the old plan.
func (s *Service) SwapPlanTx(ctx context.Context, tx *sql.Tx, workspace string, plan plans.Name, ev audit.Event) (plans.Name, error) {
	return s.store.SwapPlanTx(ctx, tx, workspace, plan, ev)
}

// PlanChanged drops workspace's cached plan.
func (s *Service) PlanChanged(workspace string) { s.plans.drop(workspace) }

// SwapPlanTx implements Store.
func (s *SQLStore) SwapPlanTx(ctx context.Context, tx *sql.Tx, workspace string, plan plans.Name, ev audit.Event) (plans.Name, error) {
	var from string
	err := tx.QueryRowContext(ctx, `SELECT plan FROM workspaces WHERE id = ? AND deleted_at = ''`, workspace).Scan(&from)
	if errors.Is(err, sql.ErrNoRows) {
		return "", api.NotFound("workspace")
	}
	if err != nil {
		return "", fmt.Errorf("accounts: plan: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE workspaces SET plan = ? WHERE id = ?`, string(plan), workspace); err != nil {
		return "", fmt.Errorf("accounts: plan: %w", err)
	}
	if err := s.db.Notifier().Notify(ctx, tx, PlanChannel, workspace); err != nil {
		return "", err
	}
	return plans.Name(from), s.audit.Record(ctx, tx, ev)
}
