package buckets

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/store"
)

// S3 access keys: an access key id (20 characters, public) and a secret
// (40 characters) a project's S3 clients sign requests with. SigV4 needs
// the secret itself to check a signature, so it is kept sealed
// (controlplane/seal, bound to the key id), shown once when made, and
// never readable again. A key belongs to its project, not to the member
// who made it: it works until revoked or the project is deleted.

// AccessKey is an S3 access key as the API shows it (never its secret).
type AccessKey struct {
	ID        string `json:"id" doc:"the access key id S3 clients send"`
	ProjectID string `json:"projectId"`
	Name      string `json:"name"`
	ReadOnly  bool   `json:"readOnly" doc:"list, head and get only"`
	// Buckets are the names of the buckets the key reaches; empty: all of
	// the project's.
	Buckets    []string   `json:"buckets" doc:"the bucket names it reaches; empty: every bucket of the project"`
	CreatedAt  time.Time  `json:"createdAt"`
	LastUsedAt *time.Time `json:"lastUsedAt" doc:"the last request it signed, to the minute; null when never used"`
}

// CreateKeyRequest is the body of POST /api/projects/{id}/storage-keys.
type CreateKeyRequest struct {
	Name     string   `json:"name"`
	ReadOnly bool     `json:"readOnly,omitempty"`
	Buckets  []string `json:"buckets,omitempty" doc:"limit the key to these bucket names (at most 100); empty: every bucket"`
}

// CreatedKey is the answer of making a key: the only time the secret is
// shown.
type CreatedKey struct {
	Key             AccessKey `json:"key"`
	SecretAccessKey string    `json:"secretAccessKey" doc:"shown once: store it now; it cannot be read again"`
	// Region is what to configure in clients (any region is accepted).
	Region string `json:"region"`
}

// KeyList is a project's access keys, oldest first.
type KeyList struct {
	Keys []AccessKey `json:"keys"`
}

// MaxKeyName bounds an access key's name.
const MaxKeyName = 64

func keyView(k keyRow) AccessKey {
	v := AccessKey{ID: k.ID, ProjectID: k.Project, Name: k.Name, ReadOnly: k.ReadOnly, Buckets: k.Buckets, CreatedAt: k.CreatedAt}
	if v.Buckets == nil {
		v.Buckets = []string{}
	}
	if !k.LastUsedAt.IsZero() {
		t := k.LastUsedAt
		v.LastUsedAt = &t
	}
	return v
}

// randomString draws n characters of alphabet uniformly.
func randomString(alphabet string, n int) string {
	out := make([]byte, 0, n)
	buf := make([]byte, 64)
	limit := 256 - 256%len(alphabet)
	for len(out) < n {
		rand.Read(buf)
		for _, c := range buf {
			if int(c) < limit && len(out) < n {
				out = append(out, alphabet[int(c)%len(alphabet)])
			}
		}
	}
	return string(out)
}

// newKeyID makes an access key id: "SVC" and 17 of A-Z, 2-7 (85 bits).
func newKeyID() string { return "SVC" + randomString("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 17) }

// newSecret makes a secret: 40 of A-Z, a-z, 0-9 (238 bits).
func newSecret() string {
	return randomString("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", 40)
}

func secretAAD(id string) []byte { return []byte("storage-access-key:" + id) }

// CreateKey issues an S3 access key for a project.
func (s *Service) CreateKey(ctx context.Context, pr *auth.Principal, projectID string, req CreateKeyRequest) (CreatedKey, error) {
	p, err := s.d.Projects.Writable(ctx, pr.WorkspaceID, projectID)
	if err != nil {
		return CreatedKey{}, err
	}
	name := strings.TrimSpace(req.Name)
	if name == "" || len(name) > MaxKeyName || !headerValue(name) {
		return CreatedKey{}, api.Invalid("name must be 1 to %d printable characters", MaxKeyName)
	}
	if len(req.Buckets) > 100 {
		return CreatedKey{}, api.Invalid("a key names at most 100 buckets")
	}
	var names []string
	for _, n := range req.Buckets {
		if err := ValidateBucketName(n); err != nil {
			return CreatedKey{}, api.E(api.KindInvalid, "invalid_bucket_name", "%s", trimScope(err))
		}
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	bkts := ""
	if len(names) > 0 {
		raw, _ := json.Marshal(names)
		bkts = string(raw)
	}
	secret := newSecret()
	now := s.now()
	k := keyRow{ID: newKeyID(), Workspace: p.WorkspaceID, Project: p.ID, Name: name, ReadOnly: req.ReadOnly, Buckets: names,
		CreatedBy: pr.MemberID, CreatedAt: now}
	k.Secret = s.d.Sealer.Seal([]byte(secret), secretAAD(k.ID))
	err = s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM storage_access_keys WHERE project_id = ?`, p.ID).Scan(&n); err != nil {
			return err
		}
		if n >= s.cfg.KeysPerProject {
			return api.Conflict("key_limit", "a project holds at most %d storage access keys: revoke one first", s.cfg.KeysPerProject).
				With("limit", s.cfg.KeysPerProject)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO storage_access_keys (`+keyCols+`) VALUES (?,?,?,?,?,?,?,?,?,'')`,
			k.ID, k.Workspace, k.Project, k.Name, k.Secret, k.ReadOnly, bkts, k.CreatedBy, store.FormatTime(now)); err != nil {
			return err
		}
		access := "read and write"
		if k.ReadOnly {
			access = "read-only"
		}
		return s.d.Audit.Record(ctx, tx, audit.Event{Workspace: k.Workspace, Actor: pr, Action: "bucket.access_key_create", Category: audit.CategoryKey,
			TargetType: "storage_access_key", TargetID: k.ID, ProjectID: k.Project,
			Summary: fmt.Sprintf("storage access key %s (%s) created, %s", k.Name, k.ID, access), Details: map[string]any{"readOnly": k.ReadOnly, "buckets": names}})
	})
	if err != nil {
		return CreatedKey{}, err
	}
	return CreatedKey{Key: keyView(k), SecretAccessKey: secret, Region: s.cfg.Region}, nil
}

// Keys lists a project's access keys.
func (s *Service) Keys(ctx context.Context, pr *auth.Principal, projectID string) (KeyList, error) {
	if _, err := s.d.Projects.Get(ctx, pr.WorkspaceID, projectID); err != nil {
		return KeyList{}, err
	}
	rows, err := projectKeys(ctx, s.d.DB, projectID)
	if err != nil {
		return KeyList{}, errInternal(err)
	}
	out := KeyList{Keys: make([]AccessKey, 0, len(rows))}
	for _, k := range rows {
		out.Keys = append(out.Keys, keyView(k))
	}
	return out, nil
}

// DeleteKey revokes an access key: the next request it signs is refused.
func (s *Service) DeleteKey(ctx context.Context, pr *auth.Principal, id string) error {
	k, err := getKey(ctx, s.d.DB, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && k.Workspace != pr.WorkspaceID) {
		return api.NotFound("storage access key")
	}
	if err != nil {
		return errInternal(err)
	}
	if err := auth.Authorize(pr, OpWrite, k.Project); err != nil {
		return err
	}
	return s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM storage_access_keys WHERE id = ?`, k.ID)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			if err != nil {
				return err
			}
			return api.NotFound("storage access key")
		}
		return s.d.Audit.Record(ctx, tx, audit.Event{Workspace: k.Workspace, Actor: pr, Action: "bucket.access_key_delete", Category: audit.CategoryKey,
			TargetType: "storage_access_key", TargetID: k.ID, ProjectID: k.Project, Summary: fmt.Sprintf("storage access key %s (%s) revoked", k.Name, k.ID)})
	})
}

// s3Caller is who signed an S3 request: an access key with its secret.
type s3Caller struct {
	key    keyRow
	secret string
}

// reaches tells whether the caller's key may use bucket name.
func (c s3Caller) reaches(name string) bool {
	return len(c.key.Buckets) == 0 || slices.Contains(c.key.Buckets, name)
}

// lookupKey finds an access key by id and opens its secret; the last use
// is recorded at most once a minute.
func (s *Service) lookupKey(ctx context.Context, id string) (s3Caller, error) {
	k, err := getKey(ctx, s.d.DB, id)
	if errors.Is(err, store.ErrNotFound) {
		return s3Caller{}, errUnknownKey()
	}
	if err != nil {
		return s3Caller{}, errInternal(err)
	}
	secret, err := s.d.Sealer.Open(k.Secret, secretAAD(k.ID))
	if err != nil {
		return s3Caller{}, errInternal(fmt.Errorf("access key %s: %w", k.ID, err))
	}
	return s3Caller{key: k, secret: string(secret)}, nil
}

// touchKey records that a key signed a request now (once a minute at
// most; a failure is logged, never refused).
func (s *Service) touchKey(ctx context.Context, k keyRow) {
	now := s.now()
	if now.Sub(k.LastUsedAt) < time.Minute {
		return
	}
	if _, err := s.d.DB.ExecContext(ctx, `UPDATE storage_access_keys SET last_used_at = ? WHERE id = ? AND last_used_at < ?`,
		store.FormatTime(now.Truncate(time.Minute)), k.ID, store.FormatTime(now.Add(-time.Minute))); err != nil {
		s.d.Logger.Warn("buckets: record access key use", "key", k.ID, "err", err)
	}
}
