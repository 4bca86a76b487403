package repos

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/store"
)

const repoCols = `id, name, description, commit_count, created_at, updated_at`

func scanRepo(sc interface{ Scan(...any) error }) (Repo, error) {
	var r Repo
	var created, updated string
	err := sc.Scan(&r.ID, &r.Name, &r.Description, &r.Commits, &created, &updated)
	r.CreatedAt, r.UpdatedAt = store.ParseTime(created), store.ParseTime(updated)
	return r, err
}

func getRepo(ctx context.Context, q store.Querier, workspace, id string) (Repo, error) {
	r, err := scanRepo(q.QueryRowContext(ctx, `SELECT `+repoCols+` FROM repos WHERE id = ? AND workspace_id = ?`, id, workspace))
	if errors.Is(err, sql.ErrNoRows) {
		return r, api.NotFound("repo")
	}
	if err != nil {
		return r, fmt.Errorf("repos: get: %w", err)
	}
	return r, nil
}

func listRepos(ctx context.Context, q store.Querier, workspace string) ([]Repo, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+repoCols+` FROM repos WHERE workspace_id = ? ORDER BY created_at, id`, workspace)
	if err != nil {
		return nil, fmt.Errorf("repos: list: %w", err)
	}
	out, err := store.AppendRows([]Repo{}, rows, scanRepo)
	if err != nil {
		return nil, fmt.Errorf("repos: list: %w", err)
	}
	return out, nil
}

func listCommits(ctx context.Context, q store.Querier, repoID string) ([]Commit, error) {
	rows, err := q.QueryContext(ctx, `SELECT number, message, file_count, total_size, new_bytes, author, created_at
		FROM repo_commits WHERE repo_id = ? ORDER BY number DESC`, repoID)
	if err != nil {
		return nil, fmt.Errorf("repos: commits: %w", err)
	}
	defer rows.Close()
	out := []Commit{}
	for rows.Next() {
		var c Commit
		var created string
		if err := rows.Scan(&c.Number, &c.Message, &c.Files, &c.Size, &c.StoredBytes, &c.Author, &created); err != nil {
			return nil, fmt.Errorf("repos: commits: %w", err)
		}
		c.CreatedAt = store.ParseTime(created)
		out = append(out, c)
	}
	return out, rows.Err()
}

type fileRow struct {
	path   string
	sha    string
	size   int64
	binary bool
}

func insertCommit(ctx context.Context, tx *sql.Tx, repoID string, c Commit, files []fileRow) error {
	now := store.FormatTime(c.CreatedAt)
	if _, err := tx.ExecContext(ctx, `INSERT INTO repo_commits(repo_id, number, message, file_count, total_size, new_bytes, author, created_at)
		VALUES (?,?,?,?,?,?,?,?)`, repoID, c.Number, c.Message, c.Files, c.Size, c.StoredBytes, c.Author, now); err != nil {
		return fmt.Errorf("repos: commit: %w", err)
	}
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO repo_files(repo_id, number, path, sha256, size, "binary") VALUES (?,?,?,?,?,?)`)
	if err != nil {
		return fmt.Errorf("repos: commit: %w", err)
	}
	defer stmt.Close()
	for _, f := range files {
		if _, err := stmt.ExecContext(ctx, repoID, c.Number, f.path, f.sha, f.size, f.binary); err != nil {
			return fmt.Errorf("repos: commit %s: %w", f.path, err)
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE repos SET commit_count = ?, updated_at = ? WHERE id = ?`, c.Number, now, repoID); err != nil {
		return fmt.Errorf("repos: commit: %w", err)
	}
	return nil
}

// listFiles returns the files of a commit sorted by path, or only the file
// at path when path is not empty.
func listFiles(ctx context.Context, q store.Querier, repoID string, number int, path string) ([]File, error) {
	query := `SELECT path, sha256, size, "binary" FROM repo_files WHERE repo_id = ? AND number = ?`
	args := []any{repoID, number}
	if path != "" {
		query += ` AND path = ?`
		args = append(args, path)
	}
	rows, err := q.QueryContext(ctx, query+` ORDER BY path`, args...)
	if err != nil {
		return nil, fmt.Errorf("repos: files: %w", err)
	}
	defer rows.Close()
	out := []File{}
	for rows.Next() {
		var f File
		if err := rows.Scan(&f.Path, &f.SHA256, &f.Size, &f.Binary); err != nil {
			return nil, fmt.Errorf("repos: files: %w", err)
		}
		switch {
		case IsEnvFile(f.Path):
			f.Reason = "environment file: never readable back"
		case f.Binary:
			f.Reason = "binary file: listed with its size"
		case f.Size > MaxReadBytes:
			f.Reason = "text file over 512 KB: listed with its size"
		default:
			f.Readable = true
		}
		out = append(out, f)
	}
	return out, rows.Err()
}
