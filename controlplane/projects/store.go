package projects

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/store"
)

// Store is the persistence of the projects area. Every method that changes
// something writes its audit row in the same transaction as the change.
// SQLStore implements it on the platform's SQLite database; another SQL
// database is another implementation, with no change to the service or the
// handlers.
type Store interface {
	// Project returns a project of the workspace, or a 404 error.
	Project(ctx context.Context, workspace, id string) (Project, error)
	// ProjectByID returns a project of any workspace, or a 404 error.
	ProjectByID(ctx context.Context, id string) (Project, error)
	// ProjectBySlug returns the workspace's project with slug, or a 404 error.
	ProjectBySlug(ctx context.Context, workspace, slug string) (Project, error)
	// CountVariables counts the variables of the workspace's projects.
	CountVariables(ctx context.Context, workspace string) (int, error)
	// Projects lists the workspace's projects (only id when not empty).
	Projects(ctx context.Context, workspace, id string) ([]Project, error)
	// CreateProject stores p under the first free slug of base, base-2,
	// base-3, ... and sets p.Slug.
	CreateProject(ctx context.Context, p *Project, base string, ev func(Project) audit.Event) error
	// UpdateProject loads a project, lets apply change it, and stores it when
	// apply names changed fields.
	UpdateProject(ctx context.Context, workspace, id string, apply func(*Project) ([]string, error), ev func(Project, []string) audit.Event) (Project, error)
	// MarkTeardownFailed keeps a project whose deletion did not finish.
	MarkTeardownFailed(ctx context.Context, id, reason string, now time.Time, ev audit.Event) error
	// DeleteProject removes a project, its variables, and revokes its keys.
	DeleteProject(ctx context.Context, id string, now time.Time, ev audit.Event) error

	// Variables returns the project's variables, values still sealed.
	Variables(ctx context.Context, projectID string) ([]SealedVariable, error)
	// SetVariable creates or replaces key; seal seals a value for the key.
	SetVariable(ctx context.Context, projectID, key string, sealed []byte, now time.Time, max int, ev func(v SealedVariable, created bool) audit.Event) (SealedVariable, bool, error)
	// UpdateVariable loads a variable, lets apply change it, and stores it.
	UpdateVariable(ctx context.Context, projectID, id string, apply func(*SealedVariable) error, ev func(SealedVariable) audit.Event) (SealedVariable, error)
	// DeleteVariable removes a variable.
	DeleteVariable(ctx context.Context, projectID, id string, ev func(key string) audit.Event) error
}

// SealedVariable is a variable as stored: its value sealed.
type SealedVariable struct {
	ID        string
	Key       string
	Sealed    []byte
	CreatedAt time.Time
	UpdatedAt time.Time
}

// SQLStore is Store on the metadata database.
type SQLStore struct {
	DB    *store.DB
	Audit *audit.Log
	// Address renders a slug's address (Project.URL).
	Address func(slug string) string
	// Keys revokes a deleted project's keys in the delete's transaction
	// (the accounts area owns the keys).
	Keys KeyRevoker
}

// KeyRevoker revokes the API keys limited to a project, inside the
// caller's transaction.
type KeyRevoker interface {
	RevokeProjectKeys(ctx context.Context, q store.Querier, projectID string, now time.Time) error
}

var _ Store = (*SQLStore)(nil)

const projectCols = `id, workspace_id, name, slug, repo_url, repo_branch, mail_sender_name, mail_from, mail_reply_to, status, teardown_error, created_at, updated_at`

func (s *SQLStore) scan(sc interface{ Scan(...any) error }) (Project, error) {
	var p Project
	var created, updated string
	err := sc.Scan(&p.ID, &p.WorkspaceID, &p.Name, &p.Slug, &p.RepoURL, &p.RepoBranch, &p.MailSenderName, &p.MailFrom, &p.MailReplyTo,
		&p.Status, &p.TeardownError, &created, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return p, api.NotFound("project")
	}
	if err != nil {
		return p, fmt.Errorf("projects: %w", err)
	}
	p.CreatedAt, p.UpdatedAt = store.ParseTime(created), store.ParseTime(updated)
	p.URL = s.Address(p.Slug)
	return p, nil
}

// Project implements Store.
func (s *SQLStore) Project(ctx context.Context, workspace, id string) (Project, error) {
	return s.scan(s.DB.QueryRowContext(ctx, `SELECT `+projectCols+` FROM projects WHERE id = ? AND workspace_id = ?`, id, workspace))
}

// Projects implements Store.
func (s *SQLStore) Projects(ctx context.Context, workspace, id string) ([]Project, error) {
	q := `SELECT ` + projectCols + ` FROM projects WHERE workspace_id = ?`
	args := []any{workspace}
	if id != "" {
		q += ` AND id = ?`
		args = append(args, id)
	}
	rows, err := s.DB.QueryContext(ctx, q+` ORDER BY created_at, id`, args...)
	if err != nil {
		return nil, fmt.Errorf("projects: list: %w", err)
	}
	defer rows.Close()
	out := []Project{}
	for rows.Next() {
		p, err := s.scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// CreateProject implements Store.
func (s *SQLStore) CreateProject(ctx context.Context, p *Project, base string, ev func(Project) audit.Event) error {
	return s.DB.Tx(ctx, func(tx *sql.Tx) error {
		for i := 1; ; i++ {
			p.Slug = base
			if i > 1 {
				sfx := "-" + strconv.Itoa(i)
				p.Slug = strings.TrimRight(base[:min(len(base), MaxSlugLen-len(sfx))], "-") + sfx
			}
			// ON CONFLICT rather than catching the violation: on PostgreSQL
			// a failed statement ends the transaction.
			res, err := tx.ExecContext(ctx, `INSERT INTO projects(id, workspace_id, name, slug, repo_url, status, created_at, updated_at)
				VALUES (?,?,?,?,?,?,?,?) ON CONFLICT (slug) DO NOTHING`,
				p.ID, p.WorkspaceID, p.Name, p.Slug, p.RepoURL, p.Status, store.FormatTime(p.CreatedAt), store.FormatTime(p.UpdatedAt))
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil {
				return err
			} else if n == 1 {
				break
			}
			if i >= 1000 {
				return api.Conflict("slug_taken", "no free address for %q after %d tries: choose another name", base, i)
			}
		}
		p.URL = s.Address(p.Slug)
		return s.Audit.Record(ctx, tx, ev(*p))
	})
}

// UpdateProject implements Store.
func (s *SQLStore) UpdateProject(ctx context.Context, workspace, id string, apply func(*Project) ([]string, error), ev func(Project, []string) audit.Event) (Project, error) {
	var p Project
	err := s.DB.Tx(ctx, func(tx *sql.Tx) error {
		var err error
		if p, err = s.scan(tx.QueryRowContext(ctx, `SELECT `+projectCols+` FROM projects WHERE id = ? AND workspace_id = ?`, id, workspace)); err != nil {
			return err
		}
		changed, err := apply(&p)
		if err != nil || len(changed) == 0 {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE projects SET name=?, repo_url=?, repo_branch=?, mail_sender_name=?, mail_from=?, mail_reply_to=?, updated_at=?
			WHERE id = ?`, p.Name, p.RepoURL, p.RepoBranch, p.MailSenderName, p.MailFrom, p.MailReplyTo, store.FormatTime(p.UpdatedAt), id); err != nil {
			return err
		}
		return s.Audit.Record(ctx, tx, ev(p, changed))
	})
	return p, err
}

// MarkTeardownFailed implements Store.
func (s *SQLStore) MarkTeardownFailed(ctx context.Context, id, reason string, now time.Time, ev audit.Event) error {
	return s.DB.Tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE projects SET status = ?, teardown_error = ?, updated_at = ? WHERE id = ?`,
			StatusTeardownFailed, reason, store.FormatTime(now), id); err != nil {
			return err
		}
		return s.Audit.Record(ctx, tx, ev)
	})
}

// DeleteProject implements Store.
func (s *SQLStore) DeleteProject(ctx context.Context, id string, now time.Time, ev audit.Event) error {
	return s.DB.Tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM projects WHERE id = ?`, id); err != nil {
			return err
		}
		if s.Keys != nil {
			if err := s.Keys.RevokeProjectKeys(ctx, tx, id, now); err != nil {
				return err
			}
		}
		return s.Audit.Record(ctx, tx, ev)
	})
}

// Variables implements Store.
func (s *SQLStore) Variables(ctx context.Context, projectID string) ([]SealedVariable, error) {
	rows, err := s.DB.QueryContext(ctx, `SELECT id, key, value_enc, created_at, updated_at FROM env_vars WHERE project_id = ? ORDER BY key`, projectID)
	if err != nil {
		return nil, fmt.Errorf("projects: env: %w", err)
	}
	defer rows.Close()
	var out []SealedVariable
	for rows.Next() {
		var v SealedVariable
		var created, updated string
		if err := rows.Scan(&v.ID, &v.Key, &v.Sealed, &created, &updated); err != nil {
			return nil, fmt.Errorf("projects: env: %w", err)
		}
		v.CreatedAt, v.UpdatedAt = store.ParseTime(created), store.ParseTime(updated)
		out = append(out, v)
	}
	return out, rows.Err()
}

// SetVariable implements Store.
func (s *SQLStore) SetVariable(ctx context.Context, projectID, key string, sealed []byte, now time.Time, max int, ev func(SealedVariable, bool) audit.Event) (SealedVariable, bool, error) {
	v := SealedVariable{Key: key, Sealed: sealed, UpdatedAt: now}
	created := false
	err := s.DB.Tx(ctx, func(tx *sql.Tx) error {
		var at string
		err := tx.QueryRowContext(ctx, `SELECT id, created_at FROM env_vars WHERE project_id = ? AND key = ?`, projectID, key).Scan(&v.ID, &at)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM env_vars WHERE project_id = ?`, projectID).Scan(&n); err != nil {
				return err
			}
			if n >= max {
				return api.Conflict("env_limit", "a project holds at most %d variables", max)
			}
			created, v.ID, v.CreatedAt = true, store.NewID("env"), now
			if _, err := tx.ExecContext(ctx, `INSERT INTO env_vars(id, project_id, key, value_enc, created_at, updated_at) VALUES (?,?,?,?,?,?)`,
				v.ID, projectID, key, sealed, store.FormatTime(now), store.FormatTime(now)); err != nil {
				return err
			}
		case err != nil:
			return err
		default:
			v.CreatedAt = store.ParseTime(at)
			if _, err := tx.ExecContext(ctx, `UPDATE env_vars SET value_enc = ?, updated_at = ? WHERE id = ?`, sealed, store.FormatTime(now), v.ID); err != nil {
				return err
			}
		}
		return s.Audit.Record(ctx, tx, ev(v, created))
	})
	return v, created, err
}

// UpdateVariable implements Store.
func (s *SQLStore) UpdateVariable(ctx context.Context, projectID, id string, apply func(*SealedVariable) error, ev func(SealedVariable) audit.Event) (SealedVariable, error) {
	var v SealedVariable
	err := s.DB.Tx(ctx, func(tx *sql.Tx) error {
		var created, updated string
		err := tx.QueryRowContext(ctx, `SELECT id, key, value_enc, created_at, updated_at FROM env_vars WHERE id = ? AND project_id = ?`, id, projectID).
			Scan(&v.ID, &v.Key, &v.Sealed, &created, &updated)
		if errors.Is(err, sql.ErrNoRows) {
			return api.NotFound("variable")
		}
		if err != nil {
			return err
		}
		v.CreatedAt, v.UpdatedAt = store.ParseTime(created), store.ParseTime(updated)
		if err := apply(&v); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE env_vars SET key = ?, value_enc = ?, updated_at = ? WHERE id = ?`, v.Key, v.Sealed, store.FormatTime(v.UpdatedAt), v.ID)
		if store.IsUniqueViolation(err) {
			return api.Conflict("env_exists", "variable %s already exists", v.Key)
		}
		if err != nil {
			return err
		}
		return s.Audit.Record(ctx, tx, ev(v))
	})
	return v, err
}

// DeleteVariable implements Store.
func (s *SQLStore) DeleteVariable(ctx context.Context, projectID, id string, ev func(string) audit.Event) error {
	return s.DB.Tx(ctx, func(tx *sql.Tx) error {
		var key string
		err := tx.QueryRowContext(ctx, `SELECT key FROM env_vars WHERE id = ? AND project_id = ?`, id, projectID).Scan(&key)
		if errors.Is(err, sql.ErrNoRows) {
			return api.NotFound("variable")
		}
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM env_vars WHERE id = ?`, id); err != nil {
			return err
		}
		return s.Audit.Record(ctx, tx, ev(key))
	})
}
