package media

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/store"
)

// Kinds and states of an asset.
const (
	KindVideo = "video"
	KindLive  = "live"

	StatusPendingUpload = "pending_upload"
	StatusProcessing    = "processing"
	StatusReady         = "ready"
	StatusFailed        = "failed"
	// Live channel states: idle (no one may publish), live (the stream key
	// is accepted), ended (go-live again to reopen).
	StatusIdle  = "idle"
	StatusLive  = "live"
	StatusEnded = "ended"
)

// Failure codes of a video that could not be processed.
const (
	FailNotVideo    = "not_a_video"
	FailCorrupt     = "corrupt"
	FailTooLong     = "too_long"
	FailInterrupted = "interrupted"
	// FailFormat: the container is not one that holds its own media (a
	// playlist, a list of other files, ...); nothing else of it was read.
	FailFormat = "unsupported_format"
)

// record is one media_assets row.
type record struct {
	ID, Workspace, Project, Name, Kind, Status string
	FailureCode, Failure                       string
	SourceBytes, StoredBytes                   int64
	DurationMS                                 int64
	Width, Height                              int
	Renditions                                 string
	Attempts                                   int
	UploadTokenHash                            string
	UploadExpiresAt, UploadClaimedAt           time.Time
	UploadedAt, ReadyAt                        time.Time
	StoredDay                                  string
	StreamKeySealed                            []byte
	StreamKeyHash                              string
	// LiveSince (live_since) is when playback started to work: a live
	// channel's going live, a video's first published segments.
	LiveSince            time.Time
	CreatedAt, UpdatedAt time.Time
}

const recordCols = `id, workspace_id, project_id, name, kind, status, failure_code, failure, source_bytes, stored_bytes,
	duration_ms, width, height, renditions, attempts, upload_token_hash, upload_expires_at, upload_claimed_at,
	uploaded_at, ready_at, stored_day, stream_key_sealed, stream_key_hash, live_since, created_at, updated_at`

type scanner interface{ Scan(dest ...any) error }

func scanRecord(sc scanner) (record, error) {
	var r record
	var exp, claimed, up, ready, since, created, updated string
	err := sc.Scan(&r.ID, &r.Workspace, &r.Project, &r.Name, &r.Kind, &r.Status, &r.FailureCode, &r.Failure,
		&r.SourceBytes, &r.StoredBytes, &r.DurationMS, &r.Width, &r.Height, &r.Renditions, &r.Attempts,
		&r.UploadTokenHash, &exp, &claimed, &up, &ready, &r.StoredDay, &r.StreamKeySealed, &r.StreamKeyHash, &since,
		&created, &updated)
	if err != nil {
		return r, err
	}
	r.UploadExpiresAt, r.UploadClaimedAt = store.ParseTime(exp), store.ParseTime(claimed)
	r.UploadedAt, r.ReadyAt, r.LiveSince = store.ParseTime(up), store.ParseTime(ready), store.ParseTime(since)
	r.CreatedAt, r.UpdatedAt = store.ParseTime(created), store.ParseTime(updated)
	return r, nil
}

func insertRecord(ctx context.Context, q store.Querier, r record) error {
	_, err := q.ExecContext(ctx, `INSERT INTO media_assets(`+recordCols+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
		r.ID, r.Workspace, r.Project, r.Name, r.Kind, r.Status, r.FailureCode, r.Failure, r.SourceBytes, r.StoredBytes,
		r.DurationMS, r.Width, r.Height, r.Renditions, r.Attempts, r.UploadTokenHash, fmtTime(r.UploadExpiresAt),
		fmtTime(r.UploadClaimedAt), fmtTime(r.UploadedAt), fmtTime(r.ReadyAt), r.StoredDay, r.StreamKeySealed,
		r.StreamKeyHash, fmtTime(r.LiveSince), fmtTime(r.CreatedAt), fmtTime(r.UpdatedAt))
	if err != nil {
		return fmt.Errorf("media: insert: %w", err)
	}
	return nil
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return store.FormatTime(t)
}

// errNotFound is the 404 of an unknown asset (or another workspace's).
var errNotFound = api.NotFound("media asset")

// getRecord loads an asset by id (errNotFound when none).
func getRecord(ctx context.Context, q store.Querier, id string) (record, error) {
	r, err := scanRecord(q.QueryRowContext(ctx, `SELECT `+recordCols+` FROM media_assets WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return r, errNotFound
	}
	if err != nil {
		return r, fmt.Errorf("media: load %s: %w", id, err)
	}
	return r, nil
}

// queryRecords loads the rows a WHERE clause selects.
func queryRecords(ctx context.Context, q store.Querier, where string, args ...any) ([]record, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+recordCols+` FROM media_assets WHERE `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("media: query: %w", err)
	}
	defer rows.Close()
	var out []record
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return nil, fmt.Errorf("media: scan: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("media: query: %w", err)
	}
	return out, nil
}

// countWorkspace counts a workspace's videos and live channels.
func countWorkspace(ctx context.Context, q store.Querier, workspace string) (int, error) {
	var n int
	if err := q.QueryRowContext(ctx, `SELECT count(*) FROM media_assets WHERE workspace_id = ?`, workspace).Scan(&n); err != nil {
		return 0, fmt.Errorf("media: count: %w", err)
	}
	return n, nil
}

// update sets columns of one row; cond adds to "id = ?" (e.g. "status = ?").
func update(ctx context.Context, q store.Querier, id string, set map[string]any, cond string, condArgs ...any) (bool, error) {
	cols := make([]string, 0, len(set))
	args := make([]any, 0, len(set)+1+len(condArgs))
	for k, v := range set {
		cols = append(cols, k+" = ?")
		if t, ok := v.(time.Time); ok {
			v = fmtTime(t)
		}
		args = append(args, v)
	}
	args = append(args, id)
	where := "id = ?"
	if cond != "" {
		where += " AND " + cond
		args = append(args, condArgs...)
	}
	res, err := q.ExecContext(ctx, `UPDATE media_assets SET `+strings.Join(cols, ", ")+` WHERE `+where, args...)
	if err != nil {
		return false, fmt.Errorf("media: update %s: %w", id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("media: update %s: %w", id, err)
	}
	return n > 0, nil
}
