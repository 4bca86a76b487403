// Package repos is the repos area: workspace-wide code storage. Each push
// saves a full numbered snapshot (commit 1, 2, 3 ... per repo) whose files
// are content-addressed blobs, so an unchanged file costs nothing in the next
// commit. Files can be listed and text files read back at any commit; the
// deploys area builds deployments from commits.
package repos

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/blobs"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/store"
)

// Limits of a push (spec: Limits, Repos) and of reading back.
const (
	// MaxFilesPerPush is the most files one commit may hold.
	MaxFilesPerPush = 500
	// MaxFileBytes is the largest file, after base64 decoding.
	MaxFileBytes = 10 << 20
	// MaxPushBytes is the most file bytes one push may carry in total.
	MaxPushBytes = 25 << 20
	// MaxReadBytes is the largest text file read back one by one.
	MaxReadBytes = 512 << 10
	// MaxPushBody bounds the request body of a push: base64 grows content
	// by a third, JSON escapes and names add more.
	MaxPushBody = 64 << 20
	// MaxNameLen bounds a repo name.
	MaxNameLen = 100
	// MaxDescriptionLen bounds a repo description.
	MaxDescriptionLen = 1000
	// MaxMessageLen bounds a commit message.
	MaxMessageLen = 5000
)

// Repo is a repo as the API shows it.
type Repo struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	// Commits is how many commits the repo holds; the latest is number Commits.
	Commits   int       `json:"commits"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// Commit is one numbered snapshot.
type Commit struct {
	Number  int    `json:"commit"`
	Message string `json:"message"`
	// Files is how many files the snapshot holds.
	Files int `json:"files"`
	// Size is the snapshot's total size in bytes.
	Size int64 `json:"size"`
	// StoredBytes is what the push added to storage: files already stored
	// (unchanged since an earlier commit) cost nothing.
	StoredBytes int64     `json:"storedBytes"`
	Author      string    `json:"author"`
	CreatedAt   time.Time `json:"createdAt"`
}

// File is one file of a snapshot as the tree lists it.
type File struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	Binary bool   `json:"binary"`
	// Readable is true for text files up to 512 KB that are not
	// environment files: GET .../files?path= returns their content.
	Readable bool `json:"readable"`
	// Reason says why a file is not readable.
	Reason string `json:"reason,omitempty"`
	// SHA256 names the blob (empty for environment files, never kept).
	SHA256 string `json:"-"`
}

// Service is the repos area.
type Service struct {
	db    *store.DB
	blobs blobs.Backend
	clock clock.Clock
	audit *audit.Log
}

// Config is the area's configuration. It has no settings yet: the limits
// are this package's constants.
type Config struct{}

// Deps are what the area is built on.
type Deps struct {
	DB *store.DB
	// Blobs holds the files of every commit.
	Blobs blobs.Backend
	// Clock dates commits (clock.System when nil).
	Clock clock.Clock
	// Audit records changes (audit.New over DB when nil).
	Audit *audit.Log
}

// check names what is missing.
func (d *Deps) check() error {
	var missing []string
	for name, ok := range map[string]bool{"DB": d.DB != nil, "Blobs": d.Blobs != nil} {
		if !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return fmt.Errorf("%w: %s", ErrNotConfigured, strings.Join(missing, ", "))
	}
	return nil
}

// ErrNotConfigured is returned by New when a dependency is missing.
var ErrNotConfigured = errors.New("repos: missing dependencies")

// New returns the repos service.
func New(_ Config, d Deps) (*Service, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	if d.Clock == nil {
		d.Clock = clock.System{}
	}
	if d.Audit == nil {
		d.Audit = audit.New(d.DB, d.Clock)
	}
	return &Service{db: d.DB, blobs: d.Blobs, clock: d.Clock, audit: d.Audit}, nil
}

// CreateRequest is the body of POST /api/repos.
type CreateRequest struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

func validText(field, v string, max int, required bool) (string, error) {
	v = strings.TrimSpace(v)
	switch {
	case required && v == "":
		return "", api.Invalid("%s is required", field)
	case utf8.RuneCountInString(v) > max:
		return "", api.Invalid("%s is at most %d characters", field, max)
	case !utf8.ValidString(v):
		return "", api.Invalid("%s is not valid UTF-8", field)
	}
	return v, nil
}

// Create makes an empty repo; names are unique in a workspace.
func (s *Service) Create(ctx context.Context, pr *auth.Principal, req CreateRequest) (Repo, error) {
	name, err := validText("name", req.Name, MaxNameLen, true)
	if err != nil {
		return Repo{}, err
	}
	if strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return Repo{}, api.Invalid("name must not hold control characters")
	}
	desc, err := validText("description", req.Description, MaxDescriptionLen, false)
	if err != nil {
		return Repo{}, err
	}
	now := s.clock.Now()
	r := Repo{ID: store.NewID("repo"), Name: name, Description: desc, CreatedAt: now, UpdatedAt: now}
	err = s.db.Tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO repos(id, workspace_id, name, description, created_at, updated_at) VALUES (?,?,?,?,?,?)`,
			r.ID, pr.WorkspaceID, name, desc, store.FormatTime(now), store.FormatTime(now))
		if store.IsUniqueViolation(err) {
			return api.Conflict("repo_exists", "a repo named %q already exists in this workspace", name)
		}
		if err != nil {
			return fmt.Errorf("repos: create: %w", err)
		}
		return s.audit.Record(ctx, tx, audit.Event{Workspace: pr.WorkspaceID, Actor: pr, Action: "repo.create", Category: audit.CategoryDeploy,
			TargetType: "repo", TargetID: r.ID, Summary: "created repo " + name})
	})
	return r, err
}

// List returns the workspace's repos with their commit counts.
func (s *Service) List(ctx context.Context, workspace string) ([]Repo, error) {
	return listRepos(ctx, s.db, workspace)
}

// Get returns a repo of the workspace (404 for another workspace's).
func (s *Service) Get(ctx context.Context, workspace, id string) (Repo, error) {
	return getRepo(ctx, s.db, workspace, id)
}

// Detail is the answer of GET /api/repos/{id}.
type Detail struct {
	Repo Repo `json:"repo"`
	// Commits is the history, newest first.
	Commits []Commit `json:"commits"`
}

// Read returns a repo and its commit history.
func (s *Service) Read(ctx context.Context, workspace, id string) (Detail, error) {
	r, err := s.Get(ctx, workspace, id)
	if err != nil {
		return Detail{}, err
	}
	cs, err := listCommits(ctx, s.db, id)
	if err != nil {
		return Detail{}, err
	}
	return Detail{Repo: r, Commits: cs}, nil
}

// Delete removes a repo and its history. Deployments built from it keep
// their files and go on serving.
func (s *Service) Delete(ctx context.Context, pr *auth.Principal, id string) error {
	return s.db.Tx(ctx, func(tx *sql.Tx) error {
		r, err := getRepo(ctx, tx, pr.WorkspaceID, id)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM repos WHERE id = ?`, id); err != nil {
			return fmt.Errorf("repos: delete: %w", err)
		}
		return s.audit.Record(ctx, tx, audit.Event{Workspace: pr.WorkspaceID, Actor: pr, Action: "repo.delete", Category: audit.CategoryDeploy,
			TargetType: "repo", TargetID: id, Summary: fmt.Sprintf("deleted repo %s (%d commits)", r.Name, r.Commits)})
	})
}

// resolveCommit returns the commit number asked for (0 for the latest).
func resolveCommit(r Repo, n int) (int, error) {
	if n == 0 {
		if r.Commits == 0 {
			return 0, api.E(api.KindNotFound, "no_commits", "repo %s has no commits yet: push one first", r.Name)
		}
		return r.Commits, nil
	}
	if n < 0 || n > r.Commits {
		return 0, api.E(api.KindNotFound, "commit_not_found", "repo %s has no commit %d (it has %d)", r.Name, n, r.Commits)
	}
	return n, nil
}

// Tree is the answer of GET /api/repos/{id}/files.
type Tree struct {
	RepoID string `json:"repoId"`
	Commit int    `json:"commit"`
	Files  []File `json:"files"`
}

// Tree lists the files of a commit (0 for the latest) sorted by path.
func (s *Service) Tree(ctx context.Context, workspace, repoID string, commit int) (Tree, error) {
	r, err := s.Get(ctx, workspace, repoID)
	if err != nil {
		return Tree{}, err
	}
	if commit == 0 && r.Commits == 0 {
		return Tree{RepoID: repoID, Files: []File{}}, nil
	}
	n, err := resolveCommit(r, commit)
	if err != nil {
		return Tree{}, err
	}
	fs, err := listFiles(ctx, s.db, repoID, n, "")
	if err != nil {
		return Tree{}, err
	}
	return Tree{RepoID: repoID, Commit: n, Files: fs}, nil
}

// FileContent is the answer of GET /api/repos/{id}/files?path=.
type FileContent struct {
	Commit  int    `json:"commit"`
	Path    string `json:"path"`
	Size    int64  `json:"size"`
	Content string `json:"content"`
}

// ErrEnvFile refuses reading an environment file back.
var ErrEnvFile = api.Forbidden("env_file_unreadable", "environment files are never readable back: set the values as project environment variables")

// ReadFile returns one text file of a commit (0 for the latest). Binary
// files and text over 512 KB answer 422 with their size; environment files
// 403.
func (s *Service) ReadFile(ctx context.Context, workspace, repoID string, commit int, path string) (FileContent, error) {
	clean, err := CleanPath(path)
	if err != nil {
		return FileContent{}, api.E(api.KindInvalid, "invalid_path", "%v", err)
	}
	r, err := s.Get(ctx, workspace, repoID)
	if err != nil {
		return FileContent{}, err
	}
	n, err := resolveCommit(r, commit)
	if err != nil {
		return FileContent{}, err
	}
	fs, err := listFiles(ctx, s.db, repoID, n, clean)
	if err != nil {
		return FileContent{}, err
	}
	if len(fs) == 0 {
		return FileContent{}, api.E(api.KindNotFound, "file_not_found", "commit %d of %s has no file %s", n, r.Name, clean)
	}
	f := fs[0]
	switch {
	case IsEnvFile(f.Path):
		return FileContent{}, ErrEnvFile
	case f.Binary:
		return FileContent{}, api.E(api.KindUnprocessable, "binary_file", "%s is a binary file (%d bytes): binary files are listed with their size, not read back", f.Path, f.Size).With("size", f.Size)
	case f.Size > MaxReadBytes:
		return FileContent{}, api.E(api.KindUnprocessable, "file_too_large_to_read", "%s is %d bytes: text files are read back up to %d bytes (512 KB)", f.Path, f.Size, MaxReadBytes).With("size", f.Size)
	}
	data, err := s.blobs.Read(f.SHA256)
	if err != nil {
		return FileContent{}, err
	}
	return FileContent{Commit: n, Path: f.Path, Size: f.Size, Content: string(data)}, nil
}

// Snapshot is a commit's files as a deploy reads them.
type Snapshot struct {
	Repo   Repo
	Commit int
	Files  []File
}

// ErrNoCommits is returned by Snapshot for a repo without commits.
var ErrNoCommits = errors.New("repos: no commits")

// Snapshot returns a commit's files (0 for the latest) for a deploy.
func (s *Service) Snapshot(ctx context.Context, workspace, repoID string, commit int) (Snapshot, error) {
	r, err := s.Get(ctx, workspace, repoID)
	if err != nil {
		return Snapshot{}, err
	}
	n, err := resolveCommit(r, commit)
	if err != nil {
		return Snapshot{}, err
	}
	fs, err := listFiles(ctx, s.db, repoID, n, "")
	if err != nil {
		return Snapshot{}, err
	}
	return Snapshot{Repo: r, Commit: n, Files: fs}, nil
}

// Blob returns the bytes of a file of a snapshot.
func (s *Service) Blob(sum string) ([]byte, error) { return s.blobs.Read(sum) }
