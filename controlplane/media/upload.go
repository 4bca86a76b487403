package media

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"path/filepath"

	"github.com/svcplatform/platform/controlplane/api"
)

// Upload refusals.
var (
	// ErrUploadUsed refuses a second use of an upload URL.
	ErrUploadUsed = api.E(api.KindGone, "upload_url_used", "this upload URL was already used: ask POST /api/media/{id}/upload for a fresh one while the video waits for its file")
	// ErrUploadExpired refuses an upload URL past its expiry.
	ErrUploadExpired = api.E(api.KindGone, "upload_url_expired", "this upload URL has expired: ask POST /api/media/{id}/upload for a fresh one")
	// ErrUploadUnknown refuses a token that names no upload URL (never
	// issued, or replaced by a fresh one).
	ErrUploadUnknown = api.E(api.KindNotFound, "upload_url_unknown", "no upload URL matches: it was replaced by a fresh one or never issued")
)

// validToken tells whether tok has the shape newToken makes.
func validToken(tok string) bool {
	if len(tok) != 43 {
		return false
	}
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// errUploadInProgress refuses a second upload while a file arrives.
var errUploadInProgress = api.Conflict("upload_in_progress", "a file is arriving at this upload URL now")

// claim marks the upload URL of tok taken and its video receiving, and
// returns the video's id. A used, expired or unknown URL is refused, and
// one whose file is arriving now is 409 upload_in_progress.
func (s *Service) claim(ctx context.Context, tok string) (string, error) {
	if !validToken(tok) {
		return "", ErrUploadUnknown
	}
	h := hashToken(tok)
	now := s.d.Clock.Now()
	s.claimMu.Lock()
	defer s.claimMu.Unlock()
	var id string
	err := s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		rs, err := queryRecords(ctx, tx, `upload_token_hash = ?`, h)
		if err != nil {
			return err
		}
		if len(rs) == 0 {
			return ErrUploadUnknown
		}
		r := rs[0]
		s.mu.Lock()
		busy := s.receiving[r.ID]
		s.mu.Unlock()
		switch {
		case busy:
			return errUploadInProgress
		case !r.UploadClaimedAt.IsZero() || r.Status != StatusPendingUpload:
			return ErrUploadUsed
		case !now.Before(r.UploadExpiresAt):
			return ErrUploadExpired
		}
		id = r.ID
		_, err = update(ctx, tx, r.ID, map[string]any{"upload_claimed_at": now, "updated_at": now}, "")
		return err
	})
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	s.receiving[id] = true
	s.mu.Unlock()
	return id, nil
}

// release gives back the upload URL of tok after a refused upload (nothing
// was stored), unless a fresh URL replaced it meanwhile.
func (s *Service) release(ctx context.Context, id, tok string) {
	ctx = context.WithoutCancel(ctx)
	if _, err := update(ctx, s.d.DB, id, map[string]any{"upload_claimed_at": ""},
		"status = ? AND upload_token_hash = ?", StatusPendingUpload, hashToken(tok)); err != nil {
		s.d.Logger.Error("media: release upload URL", "asset", id, "err", err)
	}
}

// Receive takes the file of the upload URL tok from a multipart/form-data
// request (field file), streaming it to disk, and returns the video's id.
// The URL is used up when the file has arrived completely: a refused
// upload (no field file, an empty or too large file, a broken body) stores
// nothing and leaves the URL usable. While a file arrives, another upload
// to the URL is 409. A complete file moves the video to processing and
// wakes the pool.
func (s *Service) Receive(ctx context.Context, tok string, r *http.Request) (string, error) {
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return "", api.Invalid("send the file as multipart/form-data with the field file")
	}
	id, err := s.claim(ctx, tok)
	if err != nil {
		return "", err
	}
	complete := false
	defer func() {
		if !complete {
			s.release(ctx, id, tok)
		}
		s.mu.Lock()
		delete(s.receiving, id)
		s.mu.Unlock()
	}()
	dir := s.assetDir(id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", api.Internal(fmt.Errorf("media: upload dir: %w", err))
	}
	part := filepath.Join(dir, "source.part")
	n, err := s.copyFile(r, part)
	if err != nil {
		os.Remove(part)
		return "", err
	}
	if err := os.Rename(part, filepath.Join(dir, sourceFile)); err != nil {
		os.Remove(part)
		return "", api.Internal(fmt.Errorf("media: upload: %w", err))
	}
	now := s.d.Clock.Now()
	ok, err := update(ctx, s.d.DB, id, map[string]any{"status": StatusProcessing, "source_bytes": n, "uploaded_at": now,
		"attempts": 0, "updated_at": now}, "status = ? AND upload_token_hash = ?", StatusPendingUpload, hashToken(tok))
	if err != nil {
		os.Remove(filepath.Join(dir, sourceFile))
		return "", err
	}
	if !ok { // deleted meanwhile
		os.RemoveAll(dir)
		return "", errNotFound
	}
	complete = true
	s.wake()
	return id, nil
}

// copyFile streams the multipart field file to path and returns its size.
func (s *Service) copyFile(r *http.Request, path string) (int64, error) {
	mr, err := r.MultipartReader()
	if err != nil {
		return 0, api.Invalid("send the file as multipart/form-data with the field file: %v", err)
	}
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return 0, api.Invalid("the multipart body has no field named file")
		}
		if err != nil {
			return 0, bodyError(err)
		}
		if p.FormName() != "file" {
			p.Close()
			continue
		}
		f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
		if err != nil {
			return 0, api.Internal(fmt.Errorf("media: upload file: %w", err))
		}
		n, err := io.Copy(f, io.LimitReader(p, s.cfg.MaxUploadBytes+1))
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return 0, bodyError(err)
		}
		if n > s.cfg.MaxUploadBytes {
			return 0, tooLarge(s.cfg.MaxUploadBytes)
		}
		if n == 0 {
			return 0, api.Invalid("the file is empty")
		}
		return n, nil
	}
}

func tooLarge(limit int64) error {
	return api.E(api.KindTooLarge, "file_too_large", "the file is larger than the %d-byte upload limit", limit).With("limit", limit)
}

// bodyError classifies a failure reading the request body.
func bodyError(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return api.E(api.KindTooLarge, "file_too_large", "the upload is larger than the %d-byte limit", mbe.Limit-multipartSlack).
			With("limit", mbe.Limit-multipartSlack)
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		return api.Internal(fmt.Errorf("media: upload write: %w", err))
	}
	return api.Invalid("reading the upload: %v", err)
}
