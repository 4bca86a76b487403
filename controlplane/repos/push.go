package repos

import (
	"context"
	"database/sql"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
)

// PushRequest is the JSON body of POST /api/repos/{id}/commits.
type PushRequest struct {
	Message string     `json:"message"`
	Files   []PushFile `json:"files"`
}

// PushFile is one file of a JSON push.
type PushFile struct {
	Path    string `json:"path"`
	Content string `json:"content"`
	// Base64 marks content as base64 (standard alphabet, padded) binary.
	Base64 bool `json:"base64,omitempty"`
}

// candidate is one file of a push before validation: its bytes, or, for a
// file named by sum in a manifest, only the sum and the size it declares.
type candidate struct {
	// name is the path as given, for messages.
	name string
	size int64
	// data is nil for a reference (sum set) and for an archive entry over
	// the file limit (never read).
	data []byte
	// sum, when not empty, names a blob the workspace already holds.
	sum string
}

// pushed is a validated file ready to store.
type pushed struct {
	path string
	size int64
	data []byte
	// sum is set for a file named by sum: its bytes are not in the push.
	sum string
	env bool
}

// mb renders a byte count in megabytes for messages ("12.5 MB").
func mb(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/(1<<20)) }

func tooManyFiles(n int) error {
	return api.E(api.KindInvalid, "too_many_files", "a push holds at most %d files; this one has %d, %d over: leave out generated or ignored files",
		MaxFilesPerPush, n, n-MaxFilesPerPush).With("limit", MaxFilesPerPush).With("files", n)
}

// fileTooLarge refuses a file over MaxFileBytes, saying by how much.
func fileTooLarge(where, path string, size int64) *api.Error {
	return api.E(api.KindTooLarge, "file_too_large", "%s is %d bytes (%s); a file is at most %d bytes (10 MB): %d bytes over",
		where, size, mb(size), MaxFileBytes, size-MaxFileBytes).With("path", path).With("limit", MaxFileBytes).With("size", size)
}

// checkFiles applies the push limits and path rules to every file of a
// snapshot before anything is stored, and returns the files sorted by
// their canonical paths. where(i) names file i in messages: "files[3]" for
// a JSON or manifest push, the entry for an archive. Each limit's refusal
// says which limit and by how much the push passes it.
func checkFiles(cs []candidate, where func(i int) string) ([]pushed, error) {
	switch n := len(cs); {
	case n == 0:
		return nil, api.E(api.KindInvalid, "no_files", "the push holds no file: each commit is a full snapshot of the repo, send at least one")
	case n > MaxFilesPerPush:
		return nil, tooManyFiles(n)
	}
	out := make([]pushed, 0, len(cs))
	seen := make(map[string]string, len(cs))
	var total int64
	for i, c := range cs {
		clean, err := CleanPath(c.name)
		if err != nil {
			return nil, api.E(api.KindInvalid, "invalid_path", "%s: %v", where(i), err).With("index", i)
		}
		if first, dup := seen[clean]; dup {
			return nil, api.E(api.KindInvalid, "duplicate_path", "%s: path %q is the same file as %q given earlier", where(i), c.name, first).With("index", i)
		}
		seen[clean] = c.name
		if c.size < 0 {
			return nil, api.E(api.KindInvalid, "invalid_size", "%s: size must not be negative", where(i)).With("index", i)
		}
		if c.size > MaxFileBytes {
			return nil, fileTooLarge(where(i), clean, c.size).With("index", i)
		}
		total += c.size
		out = append(out, pushed{path: clean, size: c.size, data: c.data, sum: c.sum, env: IsEnvFile(clean)})
	}
	if total > MaxPushBytes {
		return nil, api.E(api.KindTooLarge, "push_too_large", "a push carries at most %d bytes of files (25 MB); this one carries %d (%s), %d bytes over",
			MaxPushBytes, total, mb(total), total-MaxPushBytes).With("limit", MaxPushBytes).With("size", total)
	}
	slices.SortFunc(out, func(a, b pushed) int { return strings.Compare(a.path, b.path) })
	// A path cannot be both a file and a directory.
	for i := 1; i < len(out); i++ {
		if strings.HasPrefix(out[i].path, out[i-1].path+"/") {
			return nil, api.E(api.KindInvalid, "path_conflict", "%q is a file and also a directory of %q", out[i-1].path, out[i].path)
		}
	}
	return out, nil
}

// validatePush checks a JSON push: its message, base64 contents, every
// limit and path, before anything is stored.
func validatePush(req PushRequest) (string, []pushed, error) {
	msg, err := validText("message", req.Message, MaxMessageLen, true)
	if err != nil {
		return "", nil, err
	}
	if len(req.Files) > MaxFilesPerPush {
		return "", nil, tooManyFiles(len(req.Files))
	}
	cs := make([]candidate, len(req.Files))
	for i, f := range req.Files {
		cs[i] = candidate{name: f.Path, data: []byte(f.Content)}
		if f.Base64 {
			// Refuse an oversize file before decoding it.
			if n := base64.StdEncoding.DecodedLen(len(f.Content)); n > MaxFileBytes+3 {
				cs[i] = candidate{name: f.Path, size: int64(n)}
				continue
			}
			if cs[i].data, err = base64.StdEncoding.DecodeString(f.Content); err != nil {
				return "", nil, api.E(api.KindInvalid, "invalid_base64", "files[%d] %s: content is not valid base64: %v", i, f.Path, err).With("index", i)
			}
		}
		cs[i].size = int64(len(cs[i].data))
	}
	files, err := checkFiles(cs, func(i int) string { return fmt.Sprintf("files[%d] %s", i, req.Files[i].Path) })
	return msg, files, err
}

// isBinary reports whether data is not text: invalid UTF-8 or holding NUL.
func isBinary(data []byte) bool {
	return !utf8.Valid(data) || slices.Contains(data, 0)
}

// Push validates a JSON push, stores its files as blobs and records the
// commit, numbered one past the repo's latest. A refused push stores
// nothing.
func (s *Service) Push(ctx context.Context, pr *auth.Principal, repoID string, req PushRequest) (Commit, error) {
	msg, files, err := validatePush(req)
	if err != nil {
		return Commit{}, err
	}
	return s.commit(ctx, pr, repoID, msg, files)
}

// commit stores a validated snapshot: files named by sum must be held by
// the workspace (checked before any blob is written, and again in the
// transaction that records the commit), the others are written as blobs
// (environment files never are).
func (s *Service) commit(ctx context.Context, pr *auth.Principal, repoID, msg string, files []pushed) (Commit, error) {
	if _, err := s.Get(ctx, pr.WorkspaceID, repoID); err != nil {
		return Commit{}, err
	}
	refs := referenced(files)
	if len(refs) > 0 {
		held, err := heldBlobs(ctx, s.db, pr.WorkspaceID, refs)
		if err != nil {
			return Commit{}, err
		}
		if err := checkHeld(files, held); err != nil {
			return Commit{}, err
		}
	}
	rows := make([]fileRow, len(files))
	c := Commit{Message: msg, Files: len(files), Author: pr.Label(), CreatedAt: s.clock.Now()}
	for i, f := range files {
		rows[i] = fileRow{path: f.path, size: f.size}
		c.Size += f.size
		if f.sum != "" {
			rows[i].sha = f.sum // binary is filled from the held row below
			continue
		}
		rows[i].binary = isBinary(f.data)
		if f.env {
			continue // never kept: never read back, never deployed
		}
		sum, written, err := s.blobs.Put(f.data)
		if err != nil {
			return Commit{}, err
		}
		rows[i].sha = sum
		if written {
			c.StoredBytes += f.size
		}
	}
	err := s.db.Tx(ctx, func(tx *sql.Tx) error {
		r, err := getRepo(ctx, tx, pr.WorkspaceID, repoID)
		if err != nil {
			return err
		}
		if len(refs) > 0 {
			// Checked again where the rows are written: a repo deleted
			// since the first check may have held the only reference.
			held, err := heldBlobs(ctx, tx, pr.WorkspaceID, refs)
			if err != nil {
				return err
			}
			if err := checkHeld(files, held); err != nil {
				return err
			}
			for i, f := range files {
				if f.sum != "" {
					rows[i].binary = held[f.sum].binary
				}
			}
		}
		c.Number = r.Commits + 1
		if err := insertCommit(ctx, tx, repoID, c, rows); err != nil {
			return err
		}
		return s.audit.Record(ctx, tx, audit.Event{Workspace: pr.WorkspaceID, Actor: pr, Action: "repo.commit", Category: audit.CategoryDeploy,
			TargetType: "repo", TargetID: repoID, Summary: fmt.Sprintf("pushed commit %d to %s (%d files)", c.Number, r.Name, c.Files)})
	})
	if err != nil {
		return Commit{}, err
	}
	return c, nil
}
