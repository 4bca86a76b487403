package backup

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/blobs"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/placement"
	"github.com/svcplatform/platform/controlplane/seal"
	"github.com/svcplatform/platform/controlplane/store"
)

// ProjectEntry is the project archive's description of the project, a
// file of the archive like the others (and checked against the manifest).
const ProjectEntry = "project.json"

// ProjectInfo is what a project archive holds besides files: the
// project's settings, its environment variables (in clear: the archive is
// as secret as they are), and the records of its databases, vector
// collections and repos, whose files are in the archive under databases/,
// vectors/ and blobs/.
type ProjectInfo struct {
	ID             string `json:"id"`
	Name           string `json:"name"`
	Slug           string `json:"slug"`
	RepoURL        string `json:"repoUrl,omitempty"`
	RepoBranch     string `json:"repoBranch,omitempty"`
	MailSenderName string `json:"mailSenderName,omitempty"`
	MailFrom       string `json:"mailFrom,omitempty"`
	MailReplyTo    string `json:"mailReplyTo,omitempty"`
	CreatedAt      string `json:"createdAt"`
	// Workspace is the workspace it was exported from.
	Workspace string           `json:"workspace"`
	Env       []EnvVar         `json:"env"`
	Databases []DatabaseInfo   `json:"databases"`
	Vectors   []CollectionInfo `json:"vectors"`
	Repos     []RepoInfo       `json:"repos"`
}

// EnvVar is one environment variable.
type EnvVar struct {
	Key       string `json:"key"`
	Value     string `json:"value"`
	CreatedAt string `json:"createdAt"`
	UpdatedAt string `json:"updatedAt"`
}

// DatabaseInfo is a customer database; its file is databases/<ID>.db.
type DatabaseInfo struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Engine    string `json:"engine"`
	CreatedAt string `json:"createdAt"`
}

// CollectionInfo is a vector collection; its file is vectors/<ID>.db.
type CollectionInfo struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	Dimensions int    `json:"dimensions"`
	Metric     string `json:"metric"`
	CreatedAt  string `json:"createdAt"`
}

// RepoInfo is a repo the project deploys from (its repoUrl names it, or a
// deployment came from it), with every commit; file contents are blobs
// under blobs/<sha256>.
type RepoInfo struct {
	ID          string       `json:"id"`
	Name        string       `json:"name"`
	Description string       `json:"description"`
	CreatedAt   string       `json:"createdAt"`
	UpdatedAt   string       `json:"updatedAt"`
	Commits     []CommitInfo `json:"commits"`
}

// CommitInfo is one numbered snapshot of a repo.
type CommitInfo struct {
	Number    int        `json:"number"`
	Message   string     `json:"message"`
	FileCount int        `json:"fileCount"`
	TotalSize int64      `json:"totalSize"`
	NewBytes  int64      `json:"newBytes"`
	Author    string     `json:"author"`
	CreatedAt string     `json:"createdAt"`
	Files     []RepoFile `json:"files"`
}

// RepoFile is one file of a commit (SHA256 empty: an environment file,
// whose content is never kept).
type RepoFile struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
	Binary bool   `json:"binary"`
}

// Installation is one side of a project export or import: an
// installation's metadata, seal key, blobs and data directory.
type Installation struct {
	DB      *store.DB
	Sealer  *seal.Sealer
	Blobs   blobs.Backend
	DataDir string
	// NodeID is the control-plane node whose data directory DataDir is,
	// when it has one (DataDir/node-id): imported databases are placed on it.
	NodeID   string
	Platform string
	Clock    clock.Clock
	Logger   *slog.Logger
	// Audit records an import in the target workspace's audit log (when
	// set), naming Operator as who ran it.
	Audit    *audit.Log
	Operator string
}

// Errors of project archives.
var (
	// ErrNoProject is returned by ExportProject for an unknown project.
	ErrNoProject = errors.New("backup: no such project")
	// ErrConflict is returned by ImportProject when the target already
	// has the project, one of its resources, its slug or a repo name.
	ErrConflict = errors.New("backup: the target installation already has it")
)

// ExportProject writes an archive of one project to w: its settings and
// environment, its databases and vector collections (consistent SQLite
// snapshots), and the repos it deploys from with their files. It may run
// while the platform serves.
func ExportProject(ctx context.Context, src Installation, projectID string, w io.Writer) (Manifest, ProjectInfo, error) {
	src.defaults()
	p, err := readProject(ctx, src, projectID)
	if err != nil {
		return Manifest{}, ProjectInfo{}, err
	}
	a, err := newWriter(w, Header{Format: Format, Version: Version, Kind: KindProject, CreatedAt: src.Clock.Now().UTC(), Platform: src.Platform})
	if err != nil {
		return Manifest{}, ProjectInfo{}, err
	}
	stage, err := os.MkdirTemp(src.DataDir, ".backup-")
	if err != nil {
		return Manifest{}, ProjectInfo{}, fmt.Errorf("backup: staging directory in %s: %w", src.DataDir, err)
	}
	defer os.RemoveAll(stage)
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return Manifest{}, ProjectInfo{}, err
	}
	info := filepath.Join(stage, ProjectEntry)
	if err := os.WriteFile(info, b, 0o600); err != nil {
		return Manifest{}, ProjectInfo{}, fmt.Errorf("backup: %w", err)
	}
	if err := a.addFile(info, ProjectEntry, src.Logger); err != nil {
		return Manifest{}, ProjectInfo{}, err
	}
	files := []string{}
	for _, d := range p.Databases {
		files = append(files, "databases/"+d.ID+".db")
	}
	for _, c := range p.Vectors {
		files = append(files, "vectors/"+c.ID+".db")
	}
	for _, rel := range files {
		at := filepath.Join(src.DataDir, filepath.FromSlash(rel))
		if _, err := os.Stat(at); err != nil {
			return Manifest{}, ProjectInfo{}, fmt.Errorf("backup: %s is not in %s (run the export on the node that holds it): %w", rel, src.DataDir, err)
		}
		if err := a.addSQLite(ctx, at, rel, stage); err != nil {
			return Manifest{}, ProjectInfo{}, err
		}
	}
	for _, sum := range repoBlobs(p) {
		data, err := src.Blobs.Read(sum)
		if err != nil {
			return Manifest{}, ProjectInfo{}, fmt.Errorf("backup: repo file %s: %w", sum, err)
		}
		f := filepath.Join(stage, "blob")
		if err := os.WriteFile(f, data, 0o600); err != nil {
			return Manifest{}, ProjectInfo{}, fmt.Errorf("backup: %w", err)
		}
		if err := a.addFile(f, "blobs/"+sum, src.Logger); err != nil {
			return Manifest{}, ProjectInfo{}, err
		}
	}
	m, err := a.close()
	return m, p, err
}

func (i *Installation) defaults() {
	if i.Clock == nil {
		i.Clock = clock.System{}
	}
	if i.Logger == nil {
		i.Logger = slog.New(slog.DiscardHandler)
	}
}

// repoBlobs are the distinct contents of p's repo files, sorted.
func repoBlobs(p ProjectInfo) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range p.Repos {
		for _, c := range r.Commits {
			for _, f := range c.Files {
				if f.SHA256 != "" && !seen[f.SHA256] {
					seen[f.SHA256] = true
					out = append(out, f.SHA256)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// readProject reads the project's records from the source's metadata.
func readProject(ctx context.Context, src Installation, id string) (ProjectInfo, error) {
	db := src.DB
	p := ProjectInfo{ID: id, Env: []EnvVar{}, Databases: []DatabaseInfo{}, Vectors: []CollectionInfo{}, Repos: []RepoInfo{}}
	err := db.QueryRowContext(ctx, `SELECT workspace_id, name, slug, repo_url, repo_branch, mail_sender_name, mail_from, mail_reply_to, created_at
		FROM projects WHERE id = ?`, id).Scan(&p.Workspace, &p.Name, &p.Slug, &p.RepoURL, &p.RepoBranch, &p.MailSenderName, &p.MailFrom, &p.MailReplyTo, &p.CreatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return p, fmt.Errorf("%w %s", ErrNoProject, id)
	}
	if err != nil {
		return p, fmt.Errorf("backup: read project %s: %w", id, err)
	}
	if err := each(ctx, db, `SELECT key, value_enc, created_at, updated_at FROM env_vars WHERE project_id = ? ORDER BY key`, []any{id}, func(rows *sql.Rows) error {
		var v EnvVar
		var sealed []byte
		if err := rows.Scan(&v.Key, &sealed, &v.CreatedAt, &v.UpdatedAt); err != nil {
			return err
		}
		plain, err := src.Sealer.Open(sealed, envAAD(id, v.Key))
		if err != nil {
			return fmt.Errorf("variable %s does not open with this installation's seal key: %w", v.Key, err)
		}
		v.Value = string(plain)
		p.Env = append(p.Env, v)
		return nil
	}); err != nil {
		return p, err
	}
	if err := each(ctx, db, `SELECT id, name, engine, created_at FROM databases WHERE project_id = ? AND status = 'ready' ORDER BY created_at, id`, []any{id}, func(rows *sql.Rows) error {
		var d DatabaseInfo
		if err := rows.Scan(&d.ID, &d.Name, &d.Engine, &d.CreatedAt); err != nil {
			return err
		}
		p.Databases = append(p.Databases, d)
		return nil
	}); err != nil {
		return p, err
	}
	if err := each(ctx, db, `SELECT id, name, dimensions, metric, created_at FROM vector_collections WHERE project_id = ? AND status = 'ready' ORDER BY created_at, id`, []any{id}, func(rows *sql.Rows) error {
		var c CollectionInfo
		if err := rows.Scan(&c.ID, &c.Name, &c.Dimensions, &c.Metric, &c.CreatedAt); err != nil {
			return err
		}
		p.Vectors = append(p.Vectors, c)
		return nil
	}); err != nil {
		return p, err
	}
	repoIDs := []string{}
	if r := linkedRepoID(p.RepoURL); r != "" {
		repoIDs = append(repoIDs, r)
	}
	if err := each(ctx, db, `SELECT DISTINCT repo_id FROM deployments WHERE project_id = ? AND repo_id <> ''`, []any{id}, func(rows *sql.Rows) error {
		var r string
		if err := rows.Scan(&r); err != nil {
			return err
		}
		if !slices.Contains(repoIDs, r) {
			repoIDs = append(repoIDs, r)
		}
		return nil
	}); err != nil {
		return p, err
	}
	for _, rid := range repoIDs {
		r := RepoInfo{ID: rid, Commits: []CommitInfo{}}
		err := db.QueryRowContext(ctx, `SELECT name, description, created_at, updated_at FROM repos WHERE id = ? AND workspace_id = ?`, rid, p.Workspace).
			Scan(&r.Name, &r.Description, &r.CreatedAt, &r.UpdatedAt)
		if errors.Is(err, sql.ErrNoRows) {
			continue // deleted since
		}
		if err != nil {
			return p, fmt.Errorf("backup: read repo %s: %w", rid, err)
		}
		if err := each(ctx, db, `SELECT number, message, file_count, total_size, new_bytes, author, created_at FROM repo_commits WHERE repo_id = ? ORDER BY number`, []any{rid}, func(rows *sql.Rows) error {
			var c CommitInfo
			if err := rows.Scan(&c.Number, &c.Message, &c.FileCount, &c.TotalSize, &c.NewBytes, &c.Author, &c.CreatedAt); err != nil {
				return err
			}
			c.Files = []RepoFile{}
			r.Commits = append(r.Commits, c)
			return nil
		}); err != nil {
			return p, err
		}
		for i := range r.Commits {
			c := &r.Commits[i]
			if err := each(ctx, db, `SELECT path, sha256, size, binary FROM repo_files WHERE repo_id = ? AND number = ? ORDER BY path`, []any{rid, c.Number}, func(rows *sql.Rows) error {
				var f RepoFile
				if err := rows.Scan(&f.Path, &f.SHA256, &f.Size, &f.Binary); err != nil {
					return err
				}
				c.Files = append(c.Files, f)
				return nil
			}); err != nil {
				return p, err
			}
		}
		p.Repos = append(p.Repos, r)
	}
	return p, nil
}

// envAAD binds a sealed variable to its project and key, as the projects
// area seals them.
func envAAD(projectID, key string) []byte { return []byte(projectID + "\x00" + key) }

// linkedRepoID is the repo id a project's repoUrl names (a path ending in
// /repos/<id>), as the deploys area reads it.
func linkedRepoID(repoURL string) string {
	u, err := url.Parse(repoURL)
	if err != nil {
		return ""
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	if n := len(parts); n >= 2 && parts[n-2] == "repos" && parts[n-1] != "" {
		return parts[n-1]
	}
	return ""
}

func each(ctx context.Context, q store.Querier, query string, args []any, fn func(*sql.Rows) error) error {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return fmt.Errorf("backup: %w", err)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	return nil
}

// ImportProject reads a project archive into the target installation's
// workspace: the project keeps its id, slug and the ids of its databases,
// collections and repos (so code that names them works unchanged), its
// variables are sealed with the target's key, its files are put in the
// target's data directory and blobs, and its records are written in one
// transaction. Anything the target already has (the project, a resource
// id, the slug, a repo name in the workspace) is refused with ErrConflict
// before anything is written.
func ImportProject(ctx context.Context, r io.Reader, t Installation, workspace string) (ProjectInfo, error) {
	t.defaults()
	if err := os.MkdirAll(t.DataDir, 0o750); err != nil {
		return ProjectInfo{}, fmt.Errorf("backup: %w", err)
	}
	stage, err := os.MkdirTemp(t.DataDir, ".backup-")
	if err != nil {
		return ProjectInfo{}, fmt.Errorf("backup: staging directory in %s: %w", t.DataDir, err)
	}
	defer os.RemoveAll(stage)
	m, err := extract(ctx, r, stage, KindProject)
	if err != nil {
		return ProjectInfo{}, err
	}
	var p ProjectInfo
	b, err := os.ReadFile(filepath.Join(stage, ProjectEntry))
	if err != nil {
		return ProjectInfo{}, fmt.Errorf("%w: no %s", ErrFormat, ProjectEntry)
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return ProjectInfo{}, fmt.Errorf("%w: %s: %v", ErrFormat, ProjectEntry, err)
	}
	if err := p.check(m); err != nil {
		return ProjectInfo{}, err
	}
	if err := checkTarget(ctx, t.DB, p, workspace); err != nil {
		return ProjectInfo{}, err
	}
	// Blobs first (content-addressed, harmless if the import fails), then
	// the files, then the records.
	for _, sum := range repoBlobs(p) {
		data, err := os.ReadFile(filepath.Join(stage, "blobs", sum))
		if err != nil {
			return ProjectInfo{}, fmt.Errorf("%w: repo file %s is missing", ErrFormat, sum)
		}
		if _, _, err := t.Blobs.Put(data); err != nil {
			return ProjectInfo{}, fmt.Errorf("backup: store repo file %s: %w", sum, err)
		}
	}
	var placed []string
	undo := func() {
		for _, p := range placed {
			os.Remove(p)
		}
	}
	place := func(dir, id string) error {
		to := filepath.Join(t.DataDir, dir, id+".db")
		if err := os.MkdirAll(filepath.Dir(to), 0o750); err != nil {
			return err
		}
		if _, err := os.Stat(to); err == nil {
			return fmt.Errorf("%w: %s exists", ErrConflict, to)
		}
		if err := os.Rename(filepath.Join(stage, dir, id+".db"), to); err != nil {
			return err
		}
		placed = append(placed, to)
		return nil
	}
	for _, d := range p.Databases {
		if err := place("databases", d.ID); err != nil {
			undo()
			return ProjectInfo{}, fmt.Errorf("backup: database %s: %w", d.ID, err)
		}
	}
	for _, c := range p.Vectors {
		if err := place("vectors", c.ID); err != nil {
			undo()
			return ProjectInfo{}, fmt.Errorf("backup: vector collection %s: %w", c.ID, err)
		}
	}
	if err := t.DB.Tx(ctx, func(tx *sql.Tx) error { return insertProject(ctx, tx, t, p, workspace) }); err != nil {
		undo()
		return ProjectInfo{}, err
	}
	return p, nil
}

// check refuses a project description that names files the archive lacks
// or ids that are not plain identifiers.
func (p ProjectInfo) check(m Manifest) error {
	has := map[string]bool{}
	for _, f := range m.Files {
		has[f.Path] = true
	}
	ids := []string{p.ID}
	for _, d := range p.Databases {
		ids = append(ids, d.ID)
		if !has["databases/"+d.ID+".db"] {
			return fmt.Errorf("%w: database %s has no file", ErrFormat, d.ID)
		}
	}
	for _, c := range p.Vectors {
		ids = append(ids, c.ID)
		if !has["vectors/"+c.ID+".db"] {
			return fmt.Errorf("%w: vector collection %s has no file", ErrFormat, c.ID)
		}
	}
	for _, r := range p.Repos {
		ids = append(ids, r.ID)
	}
	for _, sum := range repoBlobs(p) {
		ids = append(ids, sum)
		if !has["blobs/"+sum] {
			return fmt.Errorf("%w: repo file %s has no content", ErrFormat, sum)
		}
	}
	for _, id := range ids {
		if !plainID(id) {
			return fmt.Errorf("%w: %q is not an id", ErrFormat, id)
		}
	}
	if p.Slug == "" || p.Name == "" {
		return fmt.Errorf("%w: the project has no name or slug", ErrFormat)
	}
	return nil
}

// plainID: 1-100 of a-z, A-Z, 0-9, _ and -.
func plainID(s string) bool {
	if s == "" || len(s) > 100 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// checkTarget refuses an import the target cannot take.
func checkTarget(ctx context.Context, db *store.DB, p ProjectInfo, workspace string) error {
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM workspaces WHERE id = ?`, workspace).Scan(&n); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("backup: no workspace %s in the target installation", workspace)
	}
	checks := []struct {
		q    string
		args []any
		what string
	}{
		{`SELECT count(*) FROM projects WHERE id = ?`, []any{p.ID}, "project " + p.ID},
		{`SELECT count(*) FROM projects WHERE slug = ?`, []any{p.Slug}, "a project at " + p.Slug},
	}
	for _, d := range p.Databases {
		checks = append(checks, struct {
			q    string
			args []any
			what string
		}{`SELECT count(*) FROM databases WHERE id = ?`, []any{d.ID}, "database " + d.ID})
	}
	for _, c := range p.Vectors {
		checks = append(checks, struct {
			q    string
			args []any
			what string
		}{`SELECT count(*) FROM vector_collections WHERE id = ?`, []any{c.ID}, "vector collection " + c.ID})
	}
	for _, r := range p.Repos {
		checks = append(checks, struct {
			q    string
			args []any
			what string
		}{`SELECT count(*) FROM repos WHERE id = ? OR (workspace_id = ? AND name = ?)`, []any{r.ID, workspace, r.Name}, "repo " + r.ID + " or a repo named " + r.Name})
	}
	for _, c := range checks {
		if err := db.QueryRowContext(ctx, c.q, c.args...).Scan(&n); err != nil {
			return fmt.Errorf("backup: %w", err)
		}
		if n > 0 {
			return fmt.Errorf("%w: %s", ErrConflict, c.what)
		}
	}
	return nil
}

// insertProject writes p's records into the target's workspace.
func insertProject(ctx context.Context, tx *sql.Tx, t Installation, p ProjectInfo, workspace string) error {
	now := store.FormatTime(t.Clock.Now())
	exec := func(q string, args ...any) error {
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("backup: import: %w", err)
		}
		return nil
	}
	if err := exec(`INSERT INTO projects(id, workspace_id, name, slug, repo_url, repo_branch, mail_sender_name, mail_from, mail_reply_to, created_at, updated_at)
		VALUES (?,?,?,?,?,?,?,?,?,?,?)`, p.ID, workspace, p.Name, p.Slug, p.RepoURL, p.RepoBranch, p.MailSenderName, p.MailFrom, p.MailReplyTo, p.CreatedAt, now); err != nil {
		return err
	}
	for _, v := range p.Env {
		if err := exec(`INSERT INTO env_vars(id, project_id, key, value_enc, created_at, updated_at) VALUES (?,?,?,?,?,?)`,
			store.NewID("env"), p.ID, v.Key, t.Sealer.Seal([]byte(v.Value), envAAD(p.ID, v.Key)), v.CreatedAt, v.UpdatedAt); err != nil {
			return err
		}
	}
	for _, d := range p.Databases {
		if err := exec(`INSERT INTO databases(id, workspace_id, project_id, name, engine, status, created_at, updated_at) VALUES (?,?,?,?,?,'ready',?,?)`,
			d.ID, workspace, p.ID, d.Name, d.Engine, d.CreatedAt, now); err != nil {
			return err
		}
		if t.NodeID != "" {
			if err := exec(`INSERT INTO placements(kind, resource_id, node_id, created_at) VALUES (?,?,?,?)`, placement.KindDatabase, d.ID, t.NodeID, now); err != nil {
				return err
			}
		}
	}
	for _, c := range p.Vectors {
		if err := exec(`INSERT INTO vector_collections(id, workspace_id, project_id, name, dimensions, metric, status, created_at, updated_at) VALUES (?,?,?,?,?,?,'ready',?,?)`,
			c.ID, workspace, p.ID, c.Name, c.Dimensions, c.Metric, c.CreatedAt, now); err != nil {
			return err
		}
	}
	if t.Audit != nil {
		if err := t.Audit.Record(ctx, tx, audit.Event{Workspace: workspace, Action: "project.import", Category: audit.CategoryProject,
			TargetType: "project", TargetID: p.ID, ProjectID: p.ID,
			Summary: fmt.Sprintf("project %s imported by %s from an archive of workspace %s", p.Name, t.Operator, p.Workspace),
			Details: map[string]any{"operator": t.Operator, "databases": len(p.Databases), "vectors": len(p.Vectors), "repos": len(p.Repos), "variables": len(p.Env)}}); err != nil {
			return err
		}
	}
	for _, r := range p.Repos {
		if err := exec(`INSERT INTO repos(id, workspace_id, name, description, commit_count, created_at, updated_at) VALUES (?,?,?,?,?,?,?)`,
			r.ID, workspace, r.Name, r.Description, len(r.Commits), r.CreatedAt, r.UpdatedAt); err != nil {
			return err
		}
		for _, c := range r.Commits {
			if err := exec(`INSERT INTO repo_commits(repo_id, number, message, file_count, total_size, new_bytes, author, created_at) VALUES (?,?,?,?,?,?,?,?)`,
				r.ID, c.Number, c.Message, c.FileCount, c.TotalSize, c.NewBytes, c.Author, c.CreatedAt); err != nil {
				return err
			}
			for _, f := range c.Files {
				if err := exec(`INSERT INTO repo_files(repo_id, number, path, sha256, size, binary) VALUES (?,?,?,?,?,?)`,
					r.ID, c.Number, f.Path, f.SHA256, f.Size, f.Binary); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
