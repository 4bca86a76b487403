package accounts

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/store"
)

// Workspace rows: reading one, its plan, and the first workspace of a new
// installation.

// FirstWorkspace is what CreateFirstWorkspace stores.
type FirstWorkspace struct {
	Workspace Workspace
	Person    Person
	Owner     MemberRecord
	Key       KeyRecord
}

// Workspace implements Store.
func (s *SQLStore) Workspace(ctx context.Context, id string) (Workspace, error) {
	var w Workspace
	var created, plan string
	err := s.db.QueryRowContext(ctx, `SELECT id, name, plan, created_at,
			EXISTS (SELECT 1 FROM members m JOIN people p ON p.id = m.person_id
				WHERE m.workspace_id = workspaces.id AND m.role = 'owner' AND m.status = 'active' AND p.email_verified = 1),
			verification_required
		FROM workspaces WHERE id = ? AND deleted_at = ''`, id).
		Scan(&w.ID, &w.Name, &plan, &created, &w.OwnerEmailVerified, &w.VerificationRequired)
	if errors.Is(err, sql.ErrNoRows) {
		return w, api.NotFound("workspace")
	}
	if err != nil {
		return w, fmt.Errorf("accounts: workspace: %w", err)
	}
	w.Plan, w.CreatedAt = plans.Name(plan), store.ParseTime(created)
	return w, nil
}

// SetPlan implements Store.
func (s *SQLStore) SetPlan(ctx context.Context, id string, plan plans.Name, ev audit.Event) error {
	return s.db.Tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE workspaces SET plan = ? WHERE id = ?`, string(plan), id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return api.NotFound("workspace")
		}
		if err := s.db.Notifier().Notify(ctx, tx, PlanChannel, id); err != nil {
			return err
		}
		return s.audit.Record(ctx, tx, ev)
	})
}

// CreateFirstWorkspace implements Store.
func (s *SQLStore) CreateFirstWorkspace(ctx context.Context, first func() FirstWorkspace, ev func(FirstWorkspace) audit.Event) (bool, error) {
	created := false
	err := s.db.Tx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM workspaces`).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
		f := first()
		if _, err := tx.ExecContext(ctx, `INSERT INTO workspaces(id, name, plan, created_at) VALUES (?,?,?,?)`,
			f.Workspace.ID, f.Workspace.Name, string(f.Workspace.Plan), store.FormatTime(f.Workspace.CreatedAt)); err != nil {
			return err
		}
		if err := insertPerson(ctx, tx, f.Person); err != nil {
			return err
		}
		if err := insertMember(ctx, tx, f.Owner); err != nil {
			return err
		}
		if err := insertKey(ctx, tx, f.Key); err != nil {
			return err
		}
		if err := s.audit.Record(ctx, tx, ev(f)); err != nil {
			return err
		}
		created = true
		return nil
	})
	return created && err == nil, err
}

// CreateWorkspace implements Store.
func (s *SQLStore) CreateWorkspace(ctx context.Context, w Workspace, person *Person, owner MemberRecord, check func(owned int) error, ev audit.Event) error {
	return s.db.Tx(ctx, func(tx *sql.Tx) error {
		if person != nil {
			if err := insertPerson(ctx, tx, *person); err != nil {
				return err
			}
		}
		var owned int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM members WHERE person_id = ? AND role = 'owner' AND status = 'active'`,
			owner.PersonID).Scan(&owned); err != nil {
			return err
		}
		if err := check(owned); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO workspaces(id, name, plan, created_at, verification_required) VALUES (?,?,?,?,?)`,
			w.ID, w.Name, string(w.Plan), store.FormatTime(w.CreatedAt), w.VerificationRequired); err != nil {
			return err
		}
		if err := insertMember(ctx, tx, owner); err != nil {
			return err
		}
		return s.audit.Record(ctx, tx, ev)
	})
}

// WorkspacesNamed implements Store.
func (s *SQLStore) WorkspacesNamed(ctx context.Context, name string) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id FROM workspaces WHERE name = ? AND deleted_at = '' ORDER BY id`, name)
	if err != nil {
		return nil, fmt.Errorf("accounts: workspaces: %w", err)
	}
	return store.AppendRows(nil, rows, store.ScanString)
}
