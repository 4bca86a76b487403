package repos

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/url"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/blobs"
)

// Besides the JSON body, a push can come as a tar archive (a whole
// snapshot, gzip-compressed or not) or as a manifest naming every file of
// the snapshot by path, SHA-256 and size plus an archive of only the files
// whose bytes the workspace does not hold yet (multipart/form-data). The
// same limits apply to every form, counted on the snapshot: 500 files,
// 10 MB per file, 25 MB in all.

// Archive content types of a push (the body is a tar archive; gzip is told
// by its first bytes whatever the type says).
var archiveTypes = map[string]bool{
	"application/gzip": true, "application/x-gzip": true, "application/x-tar": true,
	"application/x-gtar": true, "application/tar": true, "application/tar+gzip": true,
}

// IsArchiveType reports whether a push with this media type (parameters
// removed, lower case) is an archive.
func IsArchiveType(mediaType string) bool { return archiveTypes[mediaType] }

// HeaderMessage is the request header that may carry an archive push's
// commit message, percent-encoded UTF-8 (the message query parameter is
// the other way).
const HeaderMessage = "X-Commit-Message"

// MaxManifestBytes bounds the manifest part of a multipart push.
const MaxManifestBytes = 2 << 20

// archiveMessage reads the commit message of an archive push: the message
// query parameter or the X-Commit-Message header, not both.
func archiveMessage(query url.Values, header string) (string, error) {
	q, hasQuery := query["message"]
	switch {
	case hasQuery && header != "":
		return "", api.Invalid("give the commit message once: the message query parameter or the %s header", HeaderMessage)
	case hasQuery:
		return validText("message", q[0], MaxMessageLen, true)
	case header != "":
		m, err := url.PathUnescape(header)
		if err != nil {
			return "", api.Invalid("the %s header must be percent-encoded UTF-8: %v", HeaderMessage, err)
		}
		return validText("message", m, MaxMessageLen, true)
	}
	return "", api.Invalid("message is required: add ?message=... (URL-encoded) or the %s header", HeaderMessage)
}

// PushArchive stores a snapshot sent as a tar or tar.gz archive. A refused
// push stores nothing.
func (s *Service) PushArchive(ctx context.Context, pr *auth.Principal, repoID, message string, body io.Reader) (Commit, error) {
	cs, err := readArchive(body)
	if err != nil {
		return Commit{}, err
	}
	files, err := checkFiles(cs, func(i int) string { return "archive entry " + quote(cs[i].name) })
	if err != nil {
		return Commit{}, err
	}
	return s.commit(ctx, pr, repoID, message, files)
}

// Manifest is the manifest part of a multipart push: the commit message and
// every file of the snapshot.
type Manifest struct {
	Message string         `json:"message"`
	Files   []ManifestFile `json:"files" doc:"every file of the snapshot; those not in the archive part must be held by the workspace"`
}

// ManifestFile names one file of the snapshot by its bytes' SHA-256 and
// size. Its bytes come in the archive part, or not at all when the
// workspace already holds them (POST /api/repos/{id}/blobs/missing says
// which it does not).
type ManifestFile struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256" doc:"lower-case hex SHA-256 of the file's bytes"`
	Size   int64  `json:"size" doc:"the file's size in bytes"`
}

// ManifestPushSchema documents the multipart/form-data push for the OpenAPI
// document: a part named manifest (JSON) first, then an optional part named
// archive (tar or tar.gz).
type ManifestPushSchema struct {
	Manifest Manifest `json:"manifest"`
	// Archive is a tar or tar.gz of the files whose bytes the workspace
	// does not hold, at their manifest paths.
	Archive []byte `json:"archive,omitempty"`
}

// PushManifest stores a snapshot sent as a multipart body: a part named
// manifest first, then optionally a part named archive. Every archive
// entry must be in the manifest with the same size and SHA-256; every
// manifest file not in the archive must be held by the workspace (else 409
// missing_files lists the sums to send). A refused push stores nothing.
func (s *Service) PushManifest(ctx context.Context, pr *auth.Principal, repoID string, mr *multipart.Reader) (Commit, error) {
	m, err := readManifest(mr)
	if err != nil {
		return Commit{}, err
	}
	msg, err := validText("message", m.Message, MaxMessageLen, true)
	if err != nil {
		return Commit{}, err
	}
	if len(m.Files) > MaxFilesPerPush {
		return Commit{}, tooManyFiles(len(m.Files))
	}
	cs := make([]candidate, len(m.Files))
	for i, f := range m.Files {
		if !blobs.ValidSum(f.SHA256) {
			return Commit{}, api.E(api.KindInvalid, "invalid_sha256", "files[%d] %s: sha256 must be 64 lower-case hex digits", i, f.Path).With("index", i)
		}
		cs[i] = candidate{name: f.Path, size: f.Size, sum: f.SHA256}
	}
	files, err := checkFiles(cs, func(i int) string { return fmt.Sprintf("files[%d] %s", i, m.Files[i].Path) })
	if err != nil {
		return Commit{}, err
	}
	part, err := mr.NextPart()
	if errors.Is(err, io.EOF) {
		return s.commit(ctx, pr, repoID, msg, files)
	}
	if err != nil {
		return Commit{}, multipartError(err)
	}
	if part.FormName() != "archive" {
		return Commit{}, api.Invalid("the part after manifest must be named archive (a tar or tar.gz of the files to send), not %q", part.FormName())
	}
	entries, err := readArchive(part)
	if err != nil {
		return Commit{}, err
	}
	if _, err := mr.NextPart(); !errors.Is(err, io.EOF) {
		return Commit{}, api.Invalid("a push holds two parts, manifest then archive; remove the others")
	}
	if err := fillFromArchive(files, entries); err != nil {
		return Commit{}, err
	}
	return s.commit(ctx, pr, repoID, msg, files)
}

// readManifest reads the first part, which must be the manifest.
func readManifest(mr *multipart.Reader) (Manifest, error) {
	var m Manifest
	part, err := mr.NextPart()
	if err != nil {
		return m, multipartError(err)
	}
	if part.FormName() != "manifest" {
		return m, api.Invalid("the first part must be named manifest (JSON: {message, files: [{path, sha256, size}]}), not %q", part.FormName())
	}
	data, err := io.ReadAll(io.LimitReader(part, MaxManifestBytes+1))
	if err != nil {
		return m, multipartError(err)
	}
	if len(data) > MaxManifestBytes {
		return m, api.E(api.KindTooLarge, "manifest_too_large", "the manifest is larger than %d bytes", MaxManifestBytes)
	}
	return m, api.DecodeBytes(data, &m, false)
}

func multipartError(err error) error {
	if e := archiveError(err); api.AsError(e).Code != "invalid_archive" {
		return e // the body's size limit
	}
	return api.Invalid("the body is not readable multipart/form-data: %v", err)
}

// fillFromArchive puts each archive entry's bytes in the manifest file of
// its path, after checking its size and SHA-256 against the manifest, and
// in every other manifest file of the same sum; the files it fills are
// then written as blobs rather than named by sum.
func fillFromArchive(files []pushed, entries []candidate) error {
	index := make(map[string]int, len(files))
	for i, f := range files {
		index[f.path] = i
	}
	filled := make(map[string]bool, len(entries))
	sent := make(map[string][]byte, len(entries))
	for _, e := range entries {
		clean, err := CleanPath(e.name)
		if err != nil {
			return api.E(api.KindInvalid, "invalid_path", "archive entry %v", err)
		}
		i, ok := index[clean]
		if !ok {
			return api.E(api.KindInvalid, "manifest_mismatch", "archive entry %s is not a file of the manifest: list every file of the snapshot in it", quote(e.name)).With("path", clean)
		}
		if filled[clean] {
			return api.E(api.KindInvalid, "duplicate_path", "archive entry %s is in the archive twice", quote(e.name)).With("path", clean)
		}
		filled[clean] = true
		f := &files[i]
		if e.data == nil {
			return api.E(api.KindTooLarge, "push_too_large", "the archive carries more than %d bytes of files (25 MB) at entry %s", MaxPushBytes, quote(e.name)).With("limit", MaxPushBytes)
		}
		if e.size != f.size {
			return api.E(api.KindInvalid, "manifest_mismatch", "archive entry %s is %d bytes; the manifest says %d", quote(e.name), e.size, f.size).With("path", clean)
		}
		sum := sha256.Sum256(e.data)
		if got := hex.EncodeToString(sum[:]); got != f.sum {
			return api.E(api.KindInvalid, "manifest_mismatch", "archive entry %s has sha256 %s; the manifest says %s", quote(e.name), got, f.sum).With("path", clean)
		}
		sent[f.sum] = e.data
		f.data, f.sum = e.data, ""
	}
	// A file named by a sum whose bytes came with another path needs no
	// copy of its own in the archive.
	for i := range files {
		if data, ok := sent[files[i].sum]; ok {
			files[i].data, files[i].sum = data, ""
		}
	}
	return nil
}
