package buckets

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/store"
)

// Bucket is a bucket as the API shows it.
type Bucket struct {
	ID        string `json:"id"`
	ProjectID string `json:"projectId"`
	// Name is unique in the project; the S3 surface addresses the bucket
	// by it.
	Name string `json:"name"`
	// Public buckets serve every object to anyone at publicUrl + key;
	// private ones only through signed URLs and credentials.
	Public bool `json:"public"`
	// PublicURL is where the bucket's objects are served (append the
	// key), null while the bucket is private.
	PublicURL   *string   `json:"publicUrl" doc:"base URL of the objects (append the URL-encoded key), null while the bucket is private"`
	Objects     int64     `json:"objects"`
	Bytes       int64     `json:"bytes" doc:"bytes of the objects the bucket holds"`
	UploadBytes int64     `json:"uploadBytes" doc:"bytes of the parts of unfinished multipart uploads, which count against the plan until completed, aborted or expired"`
	CreatedAt   time.Time `json:"createdAt"`
	UpdatedAt   time.Time `json:"updatedAt"`
}

// CreateBucketRequest is the body of POST /api/projects/{id}/buckets.
type CreateBucketRequest struct {
	Name   string `json:"name" doc:"3-63 of a-z, 0-9 and - (not first or last), unique in the project"`
	Public bool   `json:"public,omitempty" doc:"serve every object to anyone (default false: private)"`
}

// UpdateBucketRequest is the body of PATCH /api/buckets/{id}.
type UpdateBucketRequest struct {
	Public *bool `json:"public,omitempty"`
}

// BucketAnswer wraps one bucket.
type BucketAnswer struct {
	Bucket Bucket `json:"bucket"`
}

// BucketList is a project's buckets, by name.
type BucketList struct {
	Buckets []Bucket `json:"buckets"`
}

func (s *Service) view(b bucketRow) Bucket {
	v := Bucket{ID: b.ID, ProjectID: b.Project, Name: b.Name, Public: b.Public, Objects: b.Objects, Bytes: b.Bytes,
		UploadBytes: b.UploadBytes, CreatedAt: b.CreatedAt, UpdatedAt: b.UpdatedAt}
	if b.Public {
		u := s.cfg.PublicBaseURL + "/storage/" + b.ID + "/"
		v.PublicURL = &u
	}
	return v
}

// newSigningKey makes a bucket's signed-URL key, sealed to the bucket.
func (s *Service) newSigningKey(bucketID string) []byte {
	key := make([]byte, 32)
	rand.Read(key)
	return s.d.Sealer.Seal(key, []byte("bucket-signing:"+bucketID))
}

// load returns bucket id when pr's workspace holds it and pr may do op on
// its project; anything else is 404 or the permission table's refusal.
func (s *Service) load(ctx context.Context, pr *auth.Principal, id string, op auth.Op) (bucketRow, error) {
	if pr == nil {
		return bucketRow{}, api.NotFound("bucket")
	}
	b, err := getBucket(ctx, s.d.DB, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && b.Workspace != pr.WorkspaceID) {
		return bucketRow{}, api.NotFound("bucket")
	}
	if err != nil {
		return bucketRow{}, fmt.Errorf("buckets: load %s: %w", id, err)
	}
	if err := auth.Authorize(pr, op, b.Project); err != nil {
		return bucketRow{}, err
	}
	return b, nil
}

// writable checks that the bucket's project accepts changes.
func (s *Service) writable(ctx context.Context, b bucketRow) error {
	_, err := s.d.Projects.Writable(ctx, b.Workspace, b.Project)
	return err
}

// CreateBucket makes a bucket in a project (projects in teardown_failed
// refuse), at most Config.BucketsPerProject of them.
func (s *Service) CreateBucket(ctx context.Context, pr *auth.Principal, projectID string, req CreateBucketRequest) (Bucket, error) {
	p, err := s.d.Projects.Writable(ctx, pr.WorkspaceID, projectID)
	if err != nil {
		return Bucket{}, err
	}
	if err := ValidateBucketName(req.Name); err != nil {
		return Bucket{}, api.E(api.KindInvalid, "invalid_bucket_name", "%s", trimScope(err))
	}
	now := s.now()
	b := bucketRow{ID: store.NewID("bkt"), Workspace: p.WorkspaceID, Project: p.ID, Name: req.Name, Public: req.Public, CreatedAt: now, UpdatedAt: now}
	b.SigningKey = s.newSigningKey(b.ID)
	err = s.tx(ctx, b.Public, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM storage_buckets WHERE project_id = ?`, p.ID).Scan(&n); err != nil {
			return err
		}
		if n >= s.cfg.BucketsPerProject {
			return api.Conflict("bucket_limit", "a project holds at most %d buckets: delete one first", s.cfg.BucketsPerProject).
				With("limit", s.cfg.BucketsPerProject)
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO storage_buckets (`+bucketCols+`) VALUES (?,?,?,?,?,?,0,0,0,?,?)
			ON CONFLICT (project_id, name) DO NOTHING`, b.ID, b.Workspace, b.Project, b.Name, b.Public, b.SigningKey,
			store.FormatTime(now), store.FormatTime(now))
		if err != nil {
			return err
		}
		if k, err := res.RowsAffected(); err != nil || k == 0 {
			if err != nil {
				return err
			}
			return api.Conflict("bucket_exists", "the project already has a bucket named %s", b.Name)
		}
		return s.d.Audit.Record(ctx, tx, audit.Event{Workspace: b.Workspace, Actor: pr, Action: "bucket.create", Category: audit.CategoryData,
			TargetType: "bucket", TargetID: b.ID, ProjectID: b.Project, Summary: fmt.Sprintf("bucket %s created (%s)", b.Name, visibility(b.Public))})
	})
	if err != nil {
		return Bucket{}, err
	}
	return s.view(b), nil
}

func visibility(public bool) string {
	if public {
		return "public"
	}
	return "private"
}

// Buckets lists a project's buckets by name.
func (s *Service) Buckets(ctx context.Context, pr *auth.Principal, projectID string) (BucketList, error) {
	if _, err := s.d.Projects.Get(ctx, pr.WorkspaceID, projectID); err != nil {
		return BucketList{}, err
	}
	rows, err := queryBuckets(ctx, s.d.DB, `project_id = ?`, projectID)
	if err != nil {
		return BucketList{}, fmt.Errorf("buckets: list: %w", err)
	}
	out := BucketList{Buckets: make([]Bucket, 0, len(rows))}
	for _, b := range rows {
		out.Buckets = append(out.Buckets, s.view(b))
	}
	return out, nil
}

// GetBucket reads a bucket.
func (s *Service) GetBucket(ctx context.Context, pr *auth.Principal, id string) (Bucket, error) {
	b, err := s.load(ctx, pr, id, OpRead)
	if err != nil {
		return Bucket{}, err
	}
	return s.view(b), nil
}

// UpdateBucket makes a bucket public or private. Making it private stops
// serving at once here, and (through Deps.Edge, in the same transaction)
// at the edges, which drop the bucket from what they serve unsigned.
func (s *Service) UpdateBucket(ctx context.Context, pr *auth.Principal, id string, req UpdateBucketRequest) (Bucket, error) {
	b, err := s.load(ctx, pr, id, OpWrite)
	if err != nil {
		return Bucket{}, err
	}
	if err := s.writable(ctx, b); err != nil {
		return Bucket{}, err
	}
	if req.Public == nil || *req.Public == b.Public {
		return s.view(b), nil
	}
	b.Public, b.UpdatedAt = *req.Public, s.now()
	err = s.tx(ctx, true, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE storage_buckets SET public = ?, updated_at = ? WHERE id = ?`, b.Public, store.FormatTime(b.UpdatedAt), b.ID); err != nil {
			return err
		}
		return s.d.Audit.Record(ctx, tx, audit.Event{Workspace: b.Workspace, Actor: pr, Action: "bucket.update", Category: audit.CategoryData,
			TargetType: "bucket", TargetID: b.ID, ProjectID: b.Project, Summary: fmt.Sprintf("bucket %s made %s", b.Name, visibility(b.Public)),
			Details: map[string]any{"public": b.Public}})
	})
	if err != nil {
		return Bucket{}, err
	}
	return s.view(b), nil
}

// RotateSigningKey replaces a bucket's signed-URL key: every signed URL
// issued before stops working.
func (s *Service) RotateSigningKey(ctx context.Context, pr *auth.Principal, id string) (Bucket, error) {
	b, err := s.load(ctx, pr, id, OpWrite)
	if err != nil {
		return Bucket{}, err
	}
	if err := s.writable(ctx, b); err != nil {
		return Bucket{}, err
	}
	b.UpdatedAt = s.now()
	err = s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE storage_buckets SET signing_key_sealed = ?, updated_at = ? WHERE id = ?`,
			s.newSigningKey(b.ID), store.FormatTime(b.UpdatedAt), b.ID); err != nil {
			return err
		}
		return s.d.Audit.Record(ctx, tx, audit.Event{Workspace: b.Workspace, Actor: pr, Action: "bucket.signing_key_rotate", Category: audit.CategoryData,
			TargetType: "bucket", TargetID: b.ID, ProjectID: b.Project, Summary: fmt.Sprintf("bucket %s: signing key replaced; earlier signed URLs no longer work", b.Name)})
	})
	if err != nil {
		return Bucket{}, err
	}
	return s.view(b), nil
}

// DeleteBucket removes a bucket. One that holds objects or unfinished
// uploads is refused (409 bucket_not_empty) unless force, which removes
// them with it.
func (s *Service) DeleteBucket(ctx context.Context, pr *auth.Principal, id string, force bool) error {
	b, err := s.load(ctx, pr, id, OpWrite)
	if err != nil {
		return err
	}
	return s.tx(ctx, b.Public, func(tx *sql.Tx) error {
		cur, err := getBucket(ctx, tx, b.ID)
		if errors.Is(err, store.ErrNotFound) {
			return api.NotFound("bucket")
		}
		if err != nil {
			return err
		}
		var uploads int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM storage_uploads WHERE bucket_id = ?`, b.ID).Scan(&uploads); err != nil {
			return err
		}
		if !force && (cur.Objects > 0 || uploads > 0) {
			return api.Conflict("bucket_not_empty", "bucket %s holds %d object(s) and %d unfinished upload(s): delete them, or delete with ?force=true to remove them too",
				b.Name, cur.Objects, uploads).With("objects", cur.Objects).With("uploads", uploads)
		}
		if err := removeBuckets(ctx, tx, `id = ?`, b.ID); err != nil {
			return err
		}
		return s.d.Audit.Record(ctx, tx, audit.Event{Workspace: b.Workspace, Actor: pr, Action: "bucket.delete", Category: audit.CategoryData,
			TargetType: "bucket", TargetID: b.ID, ProjectID: b.Project,
			Summary: fmt.Sprintf("bucket %s deleted with %d object(s)", b.Name, cur.Objects), Details: map[string]any{"objects": cur.Objects, "bytes": cur.Bytes}})
	})
}

// removeBuckets deletes the buckets matching where (a condition on
// storage_buckets) with their objects, parts and uploads.
func removeBuckets(ctx context.Context, tx *sql.Tx, where string, args ...any) error {
	sel := `SELECT id FROM storage_buckets WHERE ` + where
	for _, stmt := range []string{
		`DELETE FROM storage_object_parts WHERE object_id IN (SELECT id FROM storage_objects WHERE bucket_id IN (` + sel + `))`,
		`DELETE FROM storage_objects WHERE bucket_id IN (` + sel + `)`,
		`DELETE FROM storage_upload_parts WHERE upload_id IN (SELECT id FROM storage_uploads WHERE bucket_id IN (` + sel + `))`,
		`DELETE FROM storage_uploads WHERE bucket_id IN (` + sel + `)`,
		`DELETE FROM storage_buckets WHERE ` + where,
	} {
		if _, err := tx.ExecContext(ctx, stmt, args...); err != nil {
			return err
		}
	}
	return nil
}

// trimScope drops the "buckets: " scope of a validation error for a
// client's message.
func trimScope(err error) string {
	const scope = "buckets: "
	msg := err.Error()
	if len(msg) > len(scope) && msg[:len(scope)] == scope {
		return msg[len(scope):]
	}
	return msg
}
