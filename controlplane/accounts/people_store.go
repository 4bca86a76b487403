package accounts

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/store"
)

func insertPerson(ctx context.Context, tx *sql.Tx, p Person) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO people(id, email, name, password_hash, password_set_at, created_at) VALUES (?,?,?,?,?,?)`,
		p.ID, p.Email, p.Name, p.passwordHash, passwordSetAt(p), store.FormatTime(p.CreatedAt))
	if store.IsUniqueViolation(err) {
		return api.Conflict("account_exists", "%s already has an account: sign in instead", p.Email)
	}
	return err
}

func passwordSetAt(p Person) string {
	if p.passwordHash == "" {
		return ""
	}
	return store.FormatTime(p.CreatedAt)
}

// PersonOfMember implements Store.
func (s *SQLStore) PersonOfMember(ctx context.Context, member string) (Person, error) {
	var p Person
	var created string
	err := s.db.QueryRowContext(ctx, `SELECT p.id, p.email, p.name, p.email_verified, p.created_at
		FROM members m JOIN people p ON p.id = m.person_id WHERE m.id = ?`, member).Scan(&p.ID, &p.Email, &p.Name, &p.EmailVerified, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return p, store.ErrNotFound
	}
	if err != nil {
		return p, fmt.Errorf("accounts: person: %w", err)
	}
	p.CreatedAt = store.ParseTime(created)
	return p, nil
}

// Memberships implements Store.
func (s *SQLStore) Memberships(ctx context.Context, member string) ([]Membership, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT w.id, w.name, w.plan, w.created_at, w.verification_required, m2.id, m2.role
		FROM members m JOIN members m2 ON m2.person_id = m.person_id JOIN workspaces w ON w.id = m2.workspace_id
		WHERE m.id = ? AND m.person_id <> '' AND m2.status = 'active' AND w.deleted_at = '' ORDER BY m2.created_at, m2.id`, member)
	if err != nil {
		return nil, fmt.Errorf("accounts: workspaces: %w", err)
	}
	defer rows.Close()
	out := []Membership{}
	for rows.Next() {
		var ms Membership
		var plan, created, role string
		if err := rows.Scan(&ms.Workspace.ID, &ms.Workspace.Name, &plan, &created, &ms.Workspace.VerificationRequired, &ms.MemberID, &role); err != nil {
			return nil, fmt.Errorf("accounts: workspaces: %w", err)
		}
		ms.Workspace.Plan, ms.Workspace.CreatedAt = plans.Name(plan), store.ParseTime(created)
		ms.Role, _ = auth.ParseRole(role)
		out = append(out, ms)
	}
	return out, rows.Err()
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

// SwitchSession implements Store.
func (s *SQLStore) SwitchSession(ctx context.Context, tokenHash []byte, workspace string, ev func(Member) audit.Event) (Member, error) {
	var m Member
	err := s.db.Tx(ctx, func(tx *sql.Tx) error {
		var target string
		err := tx.QueryRowContext(ctx, `SELECT m2.id FROM sessions se JOIN members m ON m.id = se.member_id
			JOIN members m2 ON m2.person_id = m.person_id
			WHERE se.token_hash = ? AND m.person_id <> '' AND m2.workspace_id = ? AND m2.status = 'active'`, tokenHash, workspace).Scan(&target)
		if errors.Is(err, sql.ErrNoRows) {
			return api.NotFound("workspace")
		}
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE sessions SET member_id = ?, workspace_id = ? WHERE token_hash = ?`, target, workspace, tokenHash); err != nil {
			return err
		}
		if m, err = scanMember(tx.QueryRowContext(ctx, `SELECT `+memberCols+memberFrom+` WHERE m.id = ?`, target)); err != nil {
			return err
		}
		return s.audit.Record(ctx, tx, ev(m))
	})
	return m, err
}

// WorkspacesNamed implements Store.
func (s *SQLStore) WorkspacesNamed(ctx context.Context, name string) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id FROM workspaces WHERE name = ? AND deleted_at = '' ORDER BY id`, name)
	if err != nil {
		return nil, fmt.Errorf("accounts: workspaces: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}
