package repos

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/blobs"
	"github.com/svcplatform/platform/controlplane/store"
)

// A push may name a file by the SHA-256 of its bytes instead of sending
// them, when the workspace already holds that blob: a commit of one of its
// repos names it. Only the workspace's own commits count, never the blob
// store as a whole (shared by every workspace): a sum never tells one
// workspace whether another holds some content, and knowing a sum never
// lets a workspace read content it did not push itself.

// heldBlob is what the workspace's commits record about a blob.
type heldBlob struct {
	size   int64
	binary bool
}

// heldBlobs returns which of sums the workspace's repos hold.
func heldBlobs(ctx context.Context, q store.Querier, workspace string, sums []string) (map[string]heldBlob, error) {
	out := make(map[string]heldBlob, len(sums))
	if len(sums) == 0 {
		return out, nil
	}
	args := make([]any, 0, len(sums)+1)
	args = append(args, workspace)
	for _, s := range sums {
		args = append(args, s)
	}
	rows, err := q.QueryContext(ctx, `SELECT DISTINCT f.sha256, f.size, f."binary" FROM repo_files f JOIN repos r ON r.id = f.repo_id
		WHERE r.workspace_id = ? AND f.sha256 IN (?`+strings.Repeat(",?", len(sums)-1)+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("repos: held blobs: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var sum string
		var b heldBlob
		if err := rows.Scan(&sum, &b.size, &b.binary); err != nil {
			return nil, fmt.Errorf("repos: held blobs: %w", err)
		}
		out[sum] = b
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("repos: held blobs: %w", err)
	}
	return out, nil
}

// referenced returns the distinct sums the files name instead of sending
// their bytes, sorted.
func referenced(files []pushed) []string {
	var out []string
	for _, f := range files {
		if f.sum != "" {
			out = append(out, f.sum)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// checkHeld refuses a push naming a sum the workspace does not hold (409
// missing_files, listing them: send those files' bytes) or naming a held
// blob with another size than its own (400 size_mismatch). A sum a commit
// names is in the blob store: the cleanup never deletes a referenced blob,
// so no store round trip is spent per file (a HEAD each on S3).
func checkHeld(files []pushed, held map[string]heldBlob) error {
	var missing []string
	for _, f := range files {
		if f.sum == "" {
			continue
		}
		b, ok := held[f.sum]
		if !ok {
			if !slices.Contains(missing, f.sum) {
				missing = append(missing, f.sum)
			}
			continue
		}
		if b.size != f.size {
			return api.E(api.KindInvalid, "size_mismatch", "%s: the blob %s is %d bytes, not %d", f.path, f.sum, b.size, f.size).With("path", f.path)
		}
	}
	if len(missing) > 0 {
		return api.E(api.KindConflict, "missing_files", "%d file(s) named by sha256 are not held by this workspace: send their bytes in the archive", len(missing)).
			With("missing", missing)
	}
	return nil
}

// MissingRequest is the body of POST /api/repos/{id}/blobs/missing.
type MissingRequest struct {
	// SHA256 lists the sums of the files a push would hold (at most 500,
	// lower-case hex).
	SHA256 []string `json:"sha256" doc:"lower-case hex SHA-256 of each file of the push, at most 500"`
}

// MissingAnswer lists the sums a push must send the bytes of.
type MissingAnswer struct {
	// Missing are the asked sums the workspace does not hold, in the order
	// asked, each once.
	Missing []string `json:"missing" doc:"the asked sums this workspace's repos do not hold, in the order asked: send these files' bytes"`
}

// Missing answers which of the sums the workspace's repos do not hold; a
// push names the others by sum and sends only these.
func (s *Service) Missing(ctx context.Context, workspace, repoID string, req MissingRequest) (MissingAnswer, error) {
	if len(req.SHA256) > MaxFilesPerPush {
		return MissingAnswer{}, tooManyFiles(len(req.SHA256)) // a push of these could not be stored either
	}
	for i, sum := range req.SHA256 {
		if !blobs.ValidSum(sum) {
			return MissingAnswer{}, api.E(api.KindInvalid, "invalid_sha256", "sha256[%d] is not 64 lower-case hex digits", i).With("index", i)
		}
	}
	if _, err := s.Get(ctx, workspace, repoID); err != nil {
		return MissingAnswer{}, err
	}
	sums := slices.Clone(req.SHA256)
	slices.Sort(sums)
	held, err := heldBlobs(ctx, s.db, workspace, slices.Compact(sums))
	if err != nil {
		return MissingAnswer{}, err
	}
	out := MissingAnswer{Missing: []string{}}
	for _, sum := range req.SHA256 {
		if _, ok := held[sum]; !ok && !slices.Contains(out.Missing, sum) {
			out.Missing = append(out.Missing, sum)
		}
	}
	return out, nil
}
