package buckets

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/svcplatform/platform/controlplane/store"
)

// Upload is an unfinished multipart upload as the REST API shows it.
type Upload struct {
	ID          string            `json:"id"`
	Key         string            `json:"key"`
	ContentType string            `json:"contentType"`
	Metadata    map[string]string `json:"metadata"`
	CreatedAt   time.Time         `json:"createdAt"`
	// ExpiresAt is when the upload and its parts are removed unless
	// completed before.
	ExpiresAt time.Time `json:"expiresAt" doc:"when the upload and its parts are removed unless completed before"`
	Parts     []Part    `json:"parts" doc:"the parts received so far, by part number: what a resumed upload still has to send"`
}

// Part is one received part of an upload.
type Part struct {
	PartNumber   int       `json:"partNumber"`
	Size         int64     `json:"size"`
	ETag         string    `json:"etag" doc:"hex MD5 of the part, to give back when completing"`
	LastModified time.Time `json:"lastModified"`
}

// CompletePart names a part in a complete request.
type CompletePart struct {
	PartNumber int    `json:"partNumber"`
	ETag       string `json:"etag"`
}

func uploadView(u uploadRow, parts []uploadPart) Upload {
	v := Upload{ID: u.ID, Key: u.Key, ContentType: u.ContentType, Metadata: u.Metadata, CreatedAt: u.CreatedAt, ExpiresAt: u.ExpiresAt,
		Parts: make([]Part, 0, len(parts))}
	for _, p := range parts {
		v.Parts = append(v.Parts, Part{PartNumber: p.Number, Size: p.Size, ETag: p.ETag, LastModified: p.CreatedAt})
	}
	return v
}

// createUpload starts a multipart upload of key in b.
func (s *Service) createUpload(ctx context.Context, b bucketRow, key string, h headers) (uploadRow, error) {
	if err := ValidateKey(key); err != nil {
		return uploadRow{}, errKey(err)
	}
	if err := h.check(); err != nil {
		return uploadRow{}, err
	}
	if err := s.writable(ctx, b); err != nil {
		return uploadRow{}, err
	}
	now := s.now()
	u := uploadRow{ID: store.NewID("upl"), Bucket: b.ID, Key: key, ContentType: h.ContentType, CacheControl: h.CacheControl,
		Disposition: h.Disposition, Encoding: h.Encoding, Metadata: h.Metadata, CreatedAt: now, ExpiresAt: now.Add(s.cfg.UploadTTL)}
	if err := insertUpload(ctx, s.d.DB, u); err != nil {
		return uploadRow{}, errInternal(err)
	}
	return u, nil
}

// liveUpload returns upload id of b (and of key, when key is given) while
// it has not expired; anything else is errNoSuchUpload.
func (s *Service) liveUpload(ctx context.Context, q store.Querier, b bucketRow, id, key string) (uploadRow, error) {
	u, err := getUpload(ctx, q, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && (u.Bucket != b.ID || (key != "" && u.Key != key) || !s.now().Before(u.ExpiresAt))) {
		return uploadRow{}, errNoSuchUpload()
	}
	if err != nil {
		return uploadRow{}, errInternal(err)
	}
	return u, nil
}

// uploadPartBody stores part number n of an upload, replacing a part of
// that number.
func (s *Service) uploadPartBody(ctx context.Context, b bucketRow, uploadID, key string, n int, in putInput) (uploadPart, error) {
	if n < 1 || n > MaxParts {
		return uploadPart{}, errInvalidArgument("the part number must be a whole number from 1 to %d", MaxParts)
	}
	if err := s.writable(ctx, b); err != nil {
		return uploadPart{}, err
	}
	u, err := s.liveUpload(ctx, s.d.DB, b, uploadID, key)
	if err != nil {
		return uploadPart{}, err
	}
	in.Limit, in.errLimit = s.cfg.MaxPartBytes, errPartTooLarge
	if in.Size > in.Limit {
		return uploadPart{}, errPartTooLarge(in.Limit)
	}
	if in.Size > 0 {
		if err := s.checkQuota(ctx, s.d.DB, b.Workspace, in.Size); err != nil {
			return uploadPart{}, err
		}
	}
	st, err := s.storeBody(ctx, in)
	if err != nil {
		return uploadPart{}, err
	}
	p := uploadPart{Number: n, Sum: st.Sum, Size: st.Size, ETag: hex.EncodeToString(st.MD5), CreatedAt: s.now()}
	err = s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		if _, err := s.liveUpload(ctx, tx, b, u.ID, ""); err != nil {
			return err
		}
		var old sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT size FROM storage_upload_parts WHERE upload_id = ? AND part_number = ?`, u.ID, n).Scan(&old); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		delta := p.Size - old.Int64
		if err := s.checkQuota(ctx, tx, b.Workspace, delta); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM storage_upload_parts WHERE upload_id = ? AND part_number = ?`, u.ID, n); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO storage_upload_parts (upload_id, part_number, sha256, size, etag, created_at) VALUES (?,?,?,?,?,?)`,
			u.ID, n, p.Sum, p.Size, p.ETag, store.FormatTime(p.CreatedAt)); err != nil {
			return err
		}
		return addCounts(ctx, tx, b.ID, 0, 0, delta, p.CreatedAt)
	})
	if err != nil {
		return uploadPart{}, err
	}
	return p, nil
}

// completeUpload makes the object from the parts named, in order: each
// must have been received with the ETag given, every part but the last at
// least Config.MinPartBytes. Parts not named are dropped. The object
// names the parts' blobs; no bytes are copied.
func (s *Service) completeUpload(ctx context.Context, b bucketRow, uploadID, key string, named []CompletePart) (objectRow, error) {
	if len(named) == 0 {
		return objectRow{}, errMalformed("name at least one part to complete the upload")
	}
	if len(named) > MaxParts {
		return objectRow{}, errMalformed("at most %d parts", MaxParts)
	}
	for i := 1; i < len(named); i++ {
		if named[i].PartNumber <= named[i-1].PartNumber {
			return objectRow{}, errInvalidPartOrder()
		}
	}
	if err := s.writable(ctx, b); err != nil {
		return objectRow{}, err
	}
	var out objectRow
	err := s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		u, err := s.liveUpload(ctx, tx, b, uploadID, key)
		if err != nil {
			return err
		}
		have, err := uploadParts(ctx, tx, u.ID)
		if err != nil {
			return err
		}
		byNumber := make(map[int]uploadPart, len(have))
		var all int64
		for _, p := range have {
			byNumber[p.Number] = p
			all += p.Size
		}
		parts := make([]partRow, 0, len(named))
		md5s := make([][]byte, 0, len(named))
		var size int64
		for i, n := range named {
			p, ok := byNumber[n.PartNumber]
			if !ok || !strings.EqualFold(strings.Trim(strings.TrimSpace(n.ETag), `"`), p.ETag) {
				return errInvalidPart(n.PartNumber)
			}
			if i < len(named)-1 && p.Size < s.cfg.MinPartBytes {
				return errPartTooSmall(p.Number, p.Size, s.cfg.MinPartBytes)
			}
			m, err := hex.DecodeString(p.ETag)
			if err != nil {
				return fmt.Errorf("part %d: etag: %w", p.Number, err)
			}
			md5s = append(md5s, m)
			parts = append(parts, partRow{Sum: p.Sum, Size: p.Size})
			size += p.Size
		}
		if size > s.cfg.MaxObjectBytes {
			return errObjectTooLarge(size, s.cfg.MaxObjectBytes)
		}
		o := objectRow{ID: store.NewID("obj"), Bucket: b.ID, Key: u.Key, Size: size, Parts: len(parts), ETag: multipartETag(md5s),
			ContentType: u.ContentType, CacheControl: u.CacheControl, Disposition: u.Disposition, Encoding: u.Encoding,
			Metadata: u.Metadata, CreatedAt: s.now()}
		if err := deleteUploadRows(ctx, tx, u.ID); err != nil {
			return err
		}
		// The parts named move from the upload's bytes to the object's; the
		// others are dropped.
		if err := s.record(ctx, tx, b, o, parts, size); err != nil {
			return err
		}
		out = o
		return addCounts(ctx, tx, b.ID, 0, 0, -(all - size), o.CreatedAt)
	})
	return out, err
}

// abortUpload drops an upload and its parts.
func (s *Service) abortUpload(ctx context.Context, b bucketRow, uploadID, key string) error {
	return s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		u, err := s.liveUpload(ctx, tx, b, uploadID, key)
		if err != nil {
			return err
		}
		return dropUpload(ctx, tx, u, s.now())
	})
}

// listUploadParts reads an upload and the parts it received.
func (s *Service) listUploadParts(ctx context.Context, b bucketRow, uploadID, key string) (uploadRow, []uploadPart, error) {
	u, err := s.liveUpload(ctx, s.d.DB, b, uploadID, key)
	if err != nil {
		return uploadRow{}, nil, err
	}
	parts, err := uploadParts(ctx, s.d.DB, u.ID)
	if err != nil {
		return uploadRow{}, nil, errInternal(err)
	}
	return u, parts, nil
}

// Sweep removes the multipart uploads that have expired, with their
// parts, and returns how many; their blobs go with the next blob cleanup.
// The hourly job JobSweep calls it.
func (s *Service) Sweep(ctx context.Context) (int, error) {
	n := 0
	for {
		rows, err := s.d.DB.QueryContext(ctx, `SELECT `+uploadCols+` FROM storage_uploads WHERE expires_at <= ? ORDER BY expires_at LIMIT 100`,
			store.FormatTime(s.now()))
		if err != nil {
			return n, fmt.Errorf("buckets: sweep: %w", err)
		}
		var batch []uploadRow
		for rows.Next() {
			u, err := scanUpload(rows)
			if err != nil {
				rows.Close()
				return n, fmt.Errorf("buckets: sweep: %w", err)
			}
			batch = append(batch, u)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return n, fmt.Errorf("buckets: sweep: %w", err)
		}
		for _, u := range batch {
			err := s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
				if _, err := getUpload(ctx, tx, u.ID); errors.Is(err, store.ErrNotFound) {
					return nil // completed or aborted meanwhile
				} else if err != nil {
					return err
				}
				return dropUpload(ctx, tx, u, s.now())
			})
			if err != nil {
				return n, fmt.Errorf("buckets: sweep %s: %w", u.ID, err)
			}
			n++
		}
		if len(batch) < 100 {
			return n, nil
		}
	}
}
