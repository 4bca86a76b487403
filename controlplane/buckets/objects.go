package buckets

import (
	"bytes"
	"context"
	"crypto/md5"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/svcplatform/platform/controlplane/store"
)

// DefaultContentType is the content type of an object stored without one.
const DefaultContentType = "application/octet-stream"

// Object is an object as the REST API shows it.
type Object struct {
	Key  string `json:"key"`
	Size int64  `json:"size"`
	// ETag is the MD5 of the bytes in hex, or for an object made by a
	// multipart upload the MD5 of its parts' MD5s followed by -<parts>
	// (S3's rule); unquoted here, quoted in headers.
	ETag               string            `json:"etag" doc:"hex MD5 of the bytes, or for a multipart object the MD5 of the parts' MD5s and -<part count> (unquoted)"`
	ContentType        string            `json:"contentType"`
	CacheControl       string            `json:"cacheControl,omitempty"`
	ContentDisposition string            `json:"contentDisposition,omitempty"`
	ContentEncoding    string            `json:"contentEncoding,omitempty"`
	Metadata           map[string]string `json:"metadata" doc:"user metadata, names in lower case"`
	Parts              int               `json:"parts,omitempty" doc:"parts of an object made by a multipart upload"`
	LastModified       time.Time         `json:"lastModified"`
	// URL is where a public bucket serves the object.
	URL string `json:"url,omitempty" doc:"where the object is served, in a public bucket"`
}

func (s *Service) objectView(b bucketRow, o objectRow) Object {
	v := Object{Key: o.Key, Size: o.Size, ETag: o.ETag, ContentType: o.ContentType, CacheControl: o.CacheControl,
		ContentDisposition: o.Disposition, ContentEncoding: o.Encoding, Metadata: o.Metadata, Parts: o.Parts, LastModified: o.CreatedAt}
	if b.Public {
		v.URL = s.objectURL(b.ID, o.Key)
	}
	return v
}

// headers are the stored headers of an object, set at put.
type headers struct {
	ContentType, CacheControl, Disposition, Encoding string
	Metadata                                         map[string]string
}

// check validates the headers and fills the default content type.
func (h *headers) check() error {
	if h.ContentType == "" {
		h.ContentType = DefaultContentType
	}
	for name, v := range map[string]string{"Content-Type": h.ContentType, "Cache-Control": h.CacheControl,
		"Content-Disposition": h.Disposition, "Content-Encoding": h.Encoding} {
		if !headerValue(v) {
			return errInvalidArgument("%s must be printable ASCII of at most %d bytes", name, MaxHeaderValue)
		}
	}
	md, err := ValidateMetadata(h.Metadata)
	if err != nil {
		return errMetadata(err)
	}
	h.Metadata = md
	return nil
}

// putInput is an object to store.
type putInput struct {
	Key string
	headers
	Body io.Reader
	// Size is the length announced (-1: unknown, bounded by the limit).
	Size int64
	// Limit is the most the body may hold, and the limit errLimit names.
	Limit    int64
	errLimit func(int64) *opError
	// ContentMD5, SHA256 and Checksum, when set, are what the body must
	// match: Content-MD5 (raw bytes), x-amz-content-sha256 (hex) and an
	// additional checksum.
	ContentMD5 []byte
	SHA256     string
	Checksum   *checksum
}

// stored is what a body was stored as.
type stored struct {
	Sum  string
	Size int64
	MD5  []byte
}

// limitReader refuses bodies longer than n with the limit's error, so the
// blob write stops and nothing is stored.
type limitReader struct {
	r   io.Reader
	n   int64
	err *opError
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.n < 0 {
		return 0, l.err
	}
	if int64(len(p)) > l.n+1 {
		p = p[:l.n+1]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	if l.n < 0 {
		return 0, l.err
	}
	return n, err
}

// storeBody writes a body to the blob store, checking its length and the
// digests it announced. A refused body leaves at most an unreferenced
// blob, which the daily blob cleanup removes.
func (s *Service) storeBody(ctx context.Context, in putInput) (stored, error) {
	if in.Size > in.Limit {
		return stored{}, in.errLimit(in.Limit)
	}
	md5h := md5.New()
	w := []io.Writer{md5h}
	if in.Checksum != nil {
		w = append(w, in.Checksum.h)
	}
	body := io.TeeReader(&limitReader{r: in.Body, n: in.Limit, err: in.errLimit(in.Limit)}, io.MultiWriter(w...))
	info, _, err := s.d.Blobs.PutReader(ctx, body)
	if err != nil {
		var oe *opError
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &oe):
			return stored{}, oe
		case errors.As(err, &mbe):
			return stored{}, in.errLimit(in.Limit)
		case errors.Is(err, io.ErrUnexpectedEOF):
			return stored{}, errIncomplete(-1, in.Size)
		}
		return stored{}, errInternal(err)
	}
	if in.Size >= 0 && info.Size != in.Size {
		return stored{}, errIncomplete(info.Size, in.Size)
	}
	st := stored{Sum: info.Sum, Size: info.Size, MD5: md5h.Sum(nil)}
	if in.ContentMD5 != nil && !bytes.Equal(in.ContentMD5, st.MD5) {
		return stored{}, errBadDigest("Content-MD5")
	}
	if in.SHA256 != "" && in.SHA256 != st.Sum {
		return stored{}, errSHA256Mismatch()
	}
	if in.Checksum != nil {
		if err := in.Checksum.verify(); err != nil {
			return stored{}, err
		}
	}
	return st, nil
}

// quota returns the plan's byte cap of b's workspace and what its buckets
// hold, through q.
func (s *Service) quota(ctx context.Context, q store.Querier, workspace string) (limit, used int64, plan string, err error) {
	p := s.d.Plans.Plan(ctx, workspace)
	limit = s.cfg.bytesCap(p)
	used, err = workspaceBytes(ctx, q, workspace)
	return limit, used, string(p), err
}

// checkQuota refuses adding bytes to the workspace of b past its plan's
// cap (nothing to check when adding is not positive or there is no cap).
func (s *Service) checkQuota(ctx context.Context, q store.Querier, workspace string, adding int64) error {
	if adding <= 0 {
		return nil
	}
	limit, used, plan, err := s.quota(ctx, q, workspace)
	if err != nil {
		return errInternal(err)
	}
	if limit >= 0 && used+adding > limit {
		return errQuota(plan, limit, used, adding)
	}
	return nil
}

// putObject stores an object in b under in.Key, replacing what the key
// held. The project must accept changes; the plan's byte cap is checked
// before the body is read when its length is known, and again when the
// object is recorded.
func (s *Service) putObject(ctx context.Context, b bucketRow, in putInput) (objectRow, error) {
	if err := ValidateKey(in.Key); err != nil {
		return objectRow{}, errKey(err)
	}
	if err := in.check(); err != nil {
		return objectRow{}, err
	}
	if err := s.writable(ctx, b); err != nil {
		return objectRow{}, err
	}
	if in.Limit <= 0 {
		in.Limit, in.errLimit = s.cfg.MaxPutBytes, errTooLarge
	}
	if in.Size > in.Limit {
		return objectRow{}, in.errLimit(in.Limit)
	}
	if in.Size > 0 {
		var old int64
		if o, err := getObject(ctx, s.d.DB, b.ID, in.Key); err == nil {
			old = o.Size
		}
		if err := s.checkQuota(ctx, s.d.DB, b.Workspace, in.Size-old); err != nil {
			return objectRow{}, err
		}
	}
	st, err := s.storeBody(ctx, in)
	if err != nil {
		return objectRow{}, err
	}
	o := objectRow{ID: store.NewID("obj"), Bucket: b.ID, Key: in.Key, Sum: st.Sum, Size: st.Size, ETag: hex.EncodeToString(st.MD5),
		ContentType: in.ContentType, CacheControl: in.CacheControl, Disposition: in.Disposition, Encoding: in.Encoding,
		Metadata: in.Metadata, CreatedAt: s.now()}
	err = s.d.DB.Tx(ctx, func(tx *sql.Tx) error { return s.record(ctx, tx, b, o, nil, 0) })
	if err != nil {
		return objectRow{}, err
	}
	return o, nil
}

// record writes object o (with parts, for a multipart object) in place of
// what its key held, moving the bucket's counters; fromUploads is the
// bytes the object takes over from unfinished uploads (already counted).
func (s *Service) record(ctx context.Context, tx *sql.Tx, b bucketRow, o objectRow, parts []partRow, fromUploads int64) error {
	if _, err := getBucket(ctx, tx, b.ID); errors.Is(err, store.ErrNotFound) {
		return errNoSuchBucket()
	} else if err != nil {
		return err
	}
	var objects, replaced int64 = 1, 0
	old, err := getObject(ctx, tx, b.ID, o.Key)
	switch {
	case err == nil:
		objects, replaced = 0, old.Size
		if err := deleteObject(ctx, tx, old.ID); err != nil {
			return err
		}
	case !errors.Is(err, store.ErrNotFound):
		return err
	}
	if err := s.checkQuota(ctx, tx, b.Workspace, o.Size-replaced-fromUploads); err != nil {
		return err
	}
	if err := insertObject(ctx, tx, o, parts); err != nil {
		return err
	}
	return addCounts(ctx, tx, b.ID, objects, o.Size-replaced, -fromUploads, o.CreatedAt)
}

// headObject reads an object's row.
func (s *Service) headObject(ctx context.Context, b bucketRow, key string) (objectRow, error) {
	if err := ValidateKey(key); err != nil {
		return objectRow{}, errKey(err)
	}
	o, err := getObject(ctx, s.d.DB, b.ID, key)
	if errors.Is(err, store.ErrNotFound) {
		return objectRow{}, errNoSuchKey()
	}
	if err != nil {
		return objectRow{}, errInternal(err)
	}
	return o, nil
}

// deleteObjectKey removes an object; a missing one is errNoSuchKey.
// Deleting is allowed in a project in teardown_failed.
func (s *Service) deleteObjectKey(ctx context.Context, b bucketRow, key string) error {
	if err := ValidateKey(key); err != nil {
		return errKey(err)
	}
	return s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		o, err := getObject(ctx, tx, b.ID, key)
		if errors.Is(err, store.ErrNotFound) {
			return errNoSuchKey()
		}
		if err != nil {
			return err
		}
		if err := deleteObject(ctx, tx, o.ID); err != nil {
			return err
		}
		return addCounts(ctx, tx, b.ID, -1, -o.Size, 0, s.now())
	})
}

// copyObject makes dst a copy of src (another key, possibly in another
// bucket of the project): the copy names the same blobs, so no bytes are
// read or written. Headers are the source's unless replace is given.
func (s *Service) copyObject(ctx context.Context, src bucketRow, srcKey string, dst bucketRow, dstKey string, replace *headers) (objectRow, error) {
	if err := ValidateKey(dstKey); err != nil {
		return objectRow{}, errKey(err)
	}
	if replace != nil {
		if err := replace.check(); err != nil {
			return objectRow{}, err
		}
	}
	if err := s.writable(ctx, dst); err != nil {
		return objectRow{}, err
	}
	var out objectRow
	err := s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		o, err := getObject(ctx, tx, src.ID, srcKey)
		if errors.Is(err, store.ErrNotFound) {
			return errNoSuchKey()
		}
		if err != nil {
			return err
		}
		var parts []partRow
		if o.Parts > 0 {
			if parts, err = objectParts(ctx, tx, o.ID); err != nil {
				return err
			}
		}
		c := o
		c.ID, c.Bucket, c.Key, c.CreatedAt = store.NewID("obj"), dst.ID, dstKey, s.now()
		if replace != nil {
			c.ContentType, c.CacheControl, c.Disposition, c.Encoding, c.Metadata = replace.ContentType, replace.CacheControl,
				replace.Disposition, replace.Encoding, replace.Metadata
		}
		out = c
		return s.record(ctx, tx, dst, c, parts, 0)
	})
	return out, err
}

// openObject opens an object's bytes for reading and seeking: its blob,
// or its parts' blobs one after the other.
func (s *Service) openObject(ctx context.Context, o objectRow) (io.ReadSeekCloser, error) {
	if o.Parts == 0 {
		obj, err := s.d.Blobs.Get(ctx, o.Sum)
		if err != nil {
			return nil, errInternal(fmt.Errorf("object %s: %w", o.ID, err))
		}
		return obj, nil
	}
	parts, err := objectParts(ctx, s.d.DB, o.ID)
	if err != nil {
		return nil, errInternal(err)
	}
	return newPartsReader(ctx, s.d.Blobs, parts), nil
}

// multipartETag is S3's ETag of an object made of parts: the MD5 of the
// concatenated binary MD5s, then -<count>.
func multipartETag(md5s [][]byte) string {
	h := md5.New()
	for _, m := range md5s {
		h.Write(m)
	}
	return fmt.Sprintf("%s-%d", hex.EncodeToString(h.Sum(nil)), len(md5s))
}
