package buckets

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/svcplatform/platform/controlplane/store"
)

// bucketRow is a row of storage_buckets.
type bucketRow struct {
	ID, Workspace, Project, Name string
	Public                       bool
	SigningKey                   []byte // sealed
	Objects, Bytes, UploadBytes  int64
	CreatedAt, UpdatedAt         time.Time
}

const bucketCols = `id, workspace_id, project_id, name, public, signing_key_sealed, object_count, object_bytes, upload_bytes, created_at, updated_at`

func scanBucket(row interface{ Scan(...any) error }) (bucketRow, error) {
	var b bucketRow
	var public int
	var created, updated string
	err := row.Scan(&b.ID, &b.Workspace, &b.Project, &b.Name, &public, &b.SigningKey, &b.Objects, &b.Bytes, &b.UploadBytes, &created, &updated)
	b.Public = public != 0
	b.CreatedAt, b.UpdatedAt = store.ParseTime(created), store.ParseTime(updated)
	return b, err
}

func getBucket(ctx context.Context, q store.Querier, id string) (bucketRow, error) {
	b, err := scanBucket(q.QueryRowContext(ctx, `SELECT `+bucketCols+` FROM storage_buckets WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return b, store.ErrNotFound
	}
	return b, err
}

func bucketByName(ctx context.Context, q store.Querier, project, name string) (bucketRow, error) {
	b, err := scanBucket(q.QueryRowContext(ctx, `SELECT `+bucketCols+` FROM storage_buckets WHERE project_id = ? AND name = ?`, project, name))
	if errors.Is(err, sql.ErrNoRows) {
		return b, store.ErrNotFound
	}
	return b, err
}

func queryBuckets(ctx context.Context, q store.Querier, where string, args ...any) ([]bucketRow, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+bucketCols+` FROM storage_buckets WHERE `+where+` ORDER BY name, id`, args...)
	if err != nil {
		return nil, err
	}
	return store.AppendRows(nil, rows, scanBucket)
}

// workspaceBytes is what a workspace's buckets hold: objects and
// unfinished uploads' parts.
func workspaceBytes(ctx context.Context, q store.Querier, workspace string) (int64, error) {
	var n sql.NullInt64
	err := q.QueryRowContext(ctx, `SELECT sum(object_bytes + upload_bytes) FROM storage_buckets WHERE workspace_id = ?`, workspace).Scan(&n)
	return n.Int64, err
}

// addCounts moves a bucket's counters by the deltas.
func addCounts(ctx context.Context, q store.Querier, bucket string, objects, bytes, uploadBytes int64, now time.Time) error {
	_, err := q.ExecContext(ctx, `UPDATE storage_buckets SET object_count = object_count + ?, object_bytes = object_bytes + ?,
		upload_bytes = upload_bytes + ?, updated_at = ? WHERE id = ?`, objects, bytes, uploadBytes, store.FormatTime(now), bucket)
	return err
}

// objectRow is a row of storage_objects, with its parts when it has them
// (loaded by objectParts).
type objectRow struct {
	ID, Bucket, Key, Sum                                   string
	Size                                                   int64
	Parts                                                  int
	ETag, ContentType, CacheControl, Disposition, Encoding string
	Metadata                                               map[string]string
	CreatedAt                                              time.Time
}

const objectCols = `id, bucket_id, object_key, sha256, size, parts, etag, content_type, cache_control, content_disposition, content_encoding, metadata, created_at`

func scanObject(row interface{ Scan(...any) error }) (objectRow, error) {
	var o objectRow
	var md, created string
	err := row.Scan(&o.ID, &o.Bucket, &o.Key, &o.Sum, &o.Size, &o.Parts, &o.ETag, &o.ContentType, &o.CacheControl, &o.Disposition, &o.Encoding, &md, &created)
	if err != nil {
		return o, err
	}
	o.CreatedAt = store.ParseTime(created)
	if err := json.Unmarshal([]byte(md), &o.Metadata); err != nil {
		return o, fmt.Errorf("buckets: metadata of %s: %w", o.ID, err)
	}
	if o.Metadata == nil {
		o.Metadata = map[string]string{}
	}
	return o, nil
}

func getObject(ctx context.Context, q store.Querier, bucket, key string) (objectRow, error) {
	o, err := scanObject(q.QueryRowContext(ctx, `SELECT `+objectCols+` FROM storage_objects WHERE bucket_id = ? AND object_key = ?`, bucket, key))
	if errors.Is(err, sql.ErrNoRows) {
		return o, store.ErrNotFound
	}
	return o, err
}

// listObjectRows returns up to limit objects of bucket in key order whose
// keys are at least from (after it when exclusive) and below until (no
// bound when empty).
func listObjectRows(ctx context.Context, q store.Querier, bucket, from string, exclusive bool, until string, limit int) ([]objectRow, error) {
	cond, args := `bucket_id = ?`, []any{bucket}
	if exclusive {
		cond, args = cond+` AND object_key > ?`, append(args, from)
	} else if from != "" {
		cond, args = cond+` AND object_key >= ?`, append(args, from)
	}
	if until != "" {
		cond, args = cond+` AND object_key < ?`, append(args, until)
	}
	args = append(args, limit)
	rows, err := q.QueryContext(ctx, `SELECT `+objectCols+` FROM storage_objects WHERE `+cond+` ORDER BY object_key LIMIT ?`, args...)
	if err != nil {
		return nil, err
	}
	return store.AppendRows(nil, rows, scanObject)
}

// partRow is one blob of an object made by a multipart upload.
type partRow struct {
	Sum  string
	Size int64
}

func objectParts(ctx context.Context, q store.Querier, objectID string) ([]partRow, error) {
	rows, err := q.QueryContext(ctx, `SELECT sha256, size FROM storage_object_parts WHERE object_id = ? ORDER BY part`, objectID)
	if err != nil {
		return nil, err
	}
	return store.AppendRows(nil, rows, func(sc store.RowScanner) (p partRow, err error) {
		err = sc.Scan(&p.Sum, &p.Size)
		return p, err
	})
}

// deleteObject removes the object row id and its parts.
func deleteObject(ctx context.Context, q store.Querier, id string) error {
	if _, err := q.ExecContext(ctx, `DELETE FROM storage_object_parts WHERE object_id = ?`, id); err != nil {
		return err
	}
	_, err := q.ExecContext(ctx, `DELETE FROM storage_objects WHERE id = ?`, id)
	return err
}

// insertObject writes o (and parts, for a multipart object).
func insertObject(ctx context.Context, q store.Querier, o objectRow, parts []partRow) error {
	md, err := json.Marshal(o.Metadata)
	if err != nil {
		return err
	}
	if _, err := q.ExecContext(ctx, `INSERT INTO storage_objects (`+objectCols+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)`,
		o.ID, o.Bucket, o.Key, o.Sum, o.Size, o.Parts, o.ETag, o.ContentType, o.CacheControl, o.Disposition, o.Encoding, string(md),
		store.FormatTime(o.CreatedAt)); err != nil {
		return err
	}
	for i, p := range parts {
		if _, err := q.ExecContext(ctx, `INSERT INTO storage_object_parts (object_id, part, sha256, size) VALUES (?,?,?,?)`,
			o.ID, i, p.Sum, p.Size); err != nil {
			return err
		}
	}
	return nil
}

// uploadRow is a row of storage_uploads.
type uploadRow struct {
	ID, Bucket, Key                                  string
	ContentType, CacheControl, Disposition, Encoding string
	Metadata                                         map[string]string
	CreatedAt, ExpiresAt                             time.Time
}

const uploadCols = `id, bucket_id, object_key, content_type, cache_control, content_disposition, content_encoding, metadata, created_at, expires_at`

func scanUpload(row interface{ Scan(...any) error }) (uploadRow, error) {
	var u uploadRow
	var md, created, expires string
	err := row.Scan(&u.ID, &u.Bucket, &u.Key, &u.ContentType, &u.CacheControl, &u.Disposition, &u.Encoding, &md, &created, &expires)
	if err != nil {
		return u, err
	}
	u.CreatedAt, u.ExpiresAt = store.ParseTime(created), store.ParseTime(expires)
	if err := json.Unmarshal([]byte(md), &u.Metadata); err != nil {
		return u, fmt.Errorf("buckets: metadata of upload %s: %w", u.ID, err)
	}
	if u.Metadata == nil {
		u.Metadata = map[string]string{}
	}
	return u, nil
}

func getUpload(ctx context.Context, q store.Querier, id string) (uploadRow, error) {
	u, err := scanUpload(q.QueryRowContext(ctx, `SELECT `+uploadCols+` FROM storage_uploads WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return u, store.ErrNotFound
	}
	return u, err
}

func insertUpload(ctx context.Context, q store.Querier, u uploadRow) error {
	md, err := json.Marshal(u.Metadata)
	if err != nil {
		return err
	}
	_, err = q.ExecContext(ctx, `INSERT INTO storage_uploads (`+uploadCols+`) VALUES (?,?,?,?,?,?,?,?,?,?)`,
		u.ID, u.Bucket, u.Key, u.ContentType, u.CacheControl, u.Disposition, u.Encoding, string(md),
		store.FormatTime(u.CreatedAt), store.FormatTime(u.ExpiresAt))
	return err
}

// uploadPart is a row of storage_upload_parts.
type uploadPart struct {
	Number    int
	Sum       string
	Size      int64
	ETag      string
	CreatedAt time.Time
}

func uploadParts(ctx context.Context, q store.Querier, upload string) ([]uploadPart, error) {
	rows, err := q.QueryContext(ctx, `SELECT part_number, sha256, size, etag, created_at FROM storage_upload_parts WHERE upload_id = ? ORDER BY part_number`, upload)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []uploadPart
	for rows.Next() {
		var p uploadPart
		var created string
		if err := rows.Scan(&p.Number, &p.Sum, &p.Size, &p.ETag, &created); err != nil {
			return nil, err
		}
		p.CreatedAt = store.ParseTime(created)
		out = append(out, p)
	}
	return out, rows.Err()
}

// dropUpload removes an upload and its parts and takes their bytes off
// the bucket's count.
func dropUpload(ctx context.Context, q store.Querier, u uploadRow, now time.Time) error {
	var n sql.NullInt64
	if err := q.QueryRowContext(ctx, `SELECT sum(size) FROM storage_upload_parts WHERE upload_id = ?`, u.ID).Scan(&n); err != nil {
		return err
	}
	if err := deleteUploadRows(ctx, q, u.ID); err != nil {
		return err
	}
	return addCounts(ctx, q, u.Bucket, 0, 0, -n.Int64, now)
}

// deleteUploadRows removes an upload and its parts, counters untouched.
func deleteUploadRows(ctx context.Context, q store.Querier, id string) error {
	if _, err := q.ExecContext(ctx, `DELETE FROM storage_upload_parts WHERE upload_id = ?`, id); err != nil {
		return err
	}
	_, err := q.ExecContext(ctx, `DELETE FROM storage_uploads WHERE id = ?`, id)
	return err
}

// keyRow is a row of storage_access_keys.
type keyRow struct {
	ID, Workspace, Project, Name string
	Secret                       []byte // sealed
	ReadOnly                     bool
	Buckets                      []string // nil: every bucket
	CreatedBy                    string
	CreatedAt, LastUsedAt        time.Time
}

const keyCols = `id, workspace_id, project_id, name, secret_sealed, read_only, buckets, created_by, created_at, last_used_at`

func scanKey(row interface{ Scan(...any) error }) (keyRow, error) {
	var k keyRow
	var ro int
	var bkts, created, used string
	err := row.Scan(&k.ID, &k.Workspace, &k.Project, &k.Name, &k.Secret, &ro, &bkts, &k.CreatedBy, &created, &used)
	if err != nil {
		return k, err
	}
	k.ReadOnly = ro != 0
	k.CreatedAt, k.LastUsedAt = store.ParseTime(created), store.ParseTime(used)
	if bkts != "" {
		if err := json.Unmarshal([]byte(bkts), &k.Buckets); err != nil {
			return k, fmt.Errorf("buckets: access key %s: %w", k.ID, err)
		}
	}
	return k, nil
}

func getKey(ctx context.Context, q store.Querier, id string) (keyRow, error) {
	k, err := scanKey(q.QueryRowContext(ctx, `SELECT `+keyCols+` FROM storage_access_keys WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return k, store.ErrNotFound
	}
	return k, err
}

func projectKeys(ctx context.Context, q store.Querier, project string) ([]keyRow, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+keyCols+` FROM storage_access_keys WHERE project_id = ? ORDER BY created_at, id`, project)
	if err != nil {
		return nil, err
	}
	return store.AppendRows(nil, rows, scanKey)
}

func isNotFound(err error) bool { return errors.Is(err, store.ErrNotFound) }
