package mcp

import (
	"encoding/base64"
	"net/http"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// The connector's own limits on one push_files call (spec: Limits, Repos:
// one push_files connector call, 300 files of about 600 KB each). The REST
// push's limits (500 files, 10 MB a file, 25 MB in all) still apply.
const (
	// MaxPushFiles is the most files one push_files call carries.
	MaxPushFiles = 300
	// MaxPushFileBytes is the largest file of a push_files call, after
	// base64 decoding.
	MaxPushFileBytes = 600 << 10
)

type pushIn struct {
	RepoID  string     `json:"repoId" jsonschema:"the repo's id (repo_...), from list_repos or create_repo"`
	Message string     `json:"message" jsonschema:"the commit message: what changed and why"`
	Files   []pushFile `json:"files" jsonschema:"every file of the new snapshot (at most 300)"`
}

type pushFile struct {
	Path    string `json:"path" jsonschema:"the file's path in the repo with / between directories, e.g. index.html or src/app.js; no leading /, no .."`
	Content string `json:"content" jsonschema:"the file's content: text as is, or standard padded base64 when base64 is true; at most about 600 KB"`
	Base64  bool   `json:"base64,omitempty" jsonschema:"true when content is base64 (binary files such as images)"`
}

// pushBody is the body of POST /api/repos/{id}/commits.
type pushBody struct {
	Message string     `json:"message"`
	Files   []pushFile `json:"files"`
}

// pushSchema bounds the files list for the assistant; buildPush enforces
// the same bounds with the REST codes.
func pushSchema(s *jsonschema.Schema) {
	f := s.Properties["files"]
	f.Types, f.Type = nil, "array"
	one, most := 1, MaxPushFiles
	f.MinItems, f.MaxItems = &one, &most
}

// buildPush checks the connector's limits before anything reaches the API:
// nothing is sent, so nothing is stored, on a refusal.
func buildPush(in pushIn) (Request, error) {
	id, err := pathID("repoId", in.RepoID)
	if err != nil {
		return Request{}, err
	}
	if err := checkPush(in.Files); err != nil {
		return Request{}, err
	}
	return Request{Method: http.MethodPost, Path: "/api/repos/" + id + "/commits", Body: pushBody{Message: in.Message, Files: in.Files}}, nil
}

// checkPush enforces MaxPushFiles and MaxPushFileBytes.
func checkPush(files []pushFile) error {
	if n := len(files); n > MaxPushFiles {
		r := refuse(http.StatusBadRequest, "too_many_files",
			"one push_files call carries at most %d files; this one has %d (the REST API takes up to 500 per push)", MaxPushFiles, n)
		r.Fields = map[string]any{"limit": MaxPushFiles, "files": n}
		return r
	}
	for i, f := range files {
		if size := fileSize(f); size > MaxPushFileBytes {
			r := refuse(http.StatusRequestEntityTooLarge, "file_too_large",
				"files[%d] %s: %d bytes; one push_files call takes files of at most %d bytes (600 KB) each", i, f.Path, size, MaxPushFileBytes)
			r.Fields = map[string]any{"limit": MaxPushFileBytes, "index": i}
			return r
		}
	}
	return nil
}

// fileSize is the size of f's content once decoded; for base64 it is
// computed from the length (invalid base64 is refused by the API itself).
func fileSize(f pushFile) int {
	if !f.Base64 {
		return len(f.Content)
	}
	n := base64.StdEncoding.DecodedLen(len(f.Content))
	return n - (len(f.Content) - len(strings.TrimRight(f.Content, "=")))
}
