package vectors

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/svcplatform/platform/controlplane/store"
)

// The states of a collection record.
const (
	statusReady   = "ready"
	statusDeleted = "deleted"
)

// record is a collection's row in the metadata database.
type record struct {
	ID        string
	Workspace string
	Project   string
	Name      string
	Dims      int
	Metric    string
	Status    string
	StoredDay string
	CreatedAt time.Time
}

const recordCols = `id, workspace_id, project_id, name, dimensions, metric, status, stored_day, created_at`

func scanRecord(sc interface{ Scan(...any) error }) (record, error) {
	var r record
	var created string
	err := sc.Scan(&r.ID, &r.Workspace, &r.Project, &r.Name, &r.Dims, &r.Metric, &r.Status, &r.StoredDay, &created)
	r.CreatedAt = store.ParseTime(created)
	return r, err
}

// records reads and writes collection rows.
type records struct{ db *store.DB }

// byID returns collection id of any workspace; store.ErrNotFound when none.
func (rs records) byID(ctx context.Context, id string) (record, error) {
	r, err := scanRecord(rs.db.QueryRowContext(ctx, `SELECT `+recordCols+` FROM vector_collections WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return record{}, store.ErrNotFound
	}
	if err != nil {
		return record{}, fmt.Errorf("vectors: read %s: %w", id, err)
	}
	return r, nil
}

// countLive counts the workspace's collections that are not deleted.
func (rs records) countLive(ctx context.Context, q store.Querier, workspace string) (int, error) {
	var n int
	err := q.QueryRowContext(ctx, `SELECT count(*) FROM vector_collections WHERE workspace_id = ? AND status = ?`, workspace, statusReady).Scan(&n)
	return n, err
}

// insert adds a record through q.
func (rs records) insert(ctx context.Context, q store.Querier, r record) error {
	now := store.FormatTime(r.CreatedAt)
	_, err := q.ExecContext(ctx, `INSERT INTO vector_collections(id, workspace_id, project_id, name, dimensions, metric, status, created_at, updated_at)
		VALUES (?,?,?,?,?,?,?,?,?)`, r.ID, r.Workspace, r.Project, r.Name, r.Dims, r.Metric, r.Status, now, now)
	return err
}

// markDeleted turns a record into a tombstone through q.
func (rs records) markDeleted(ctx context.Context, q store.Querier, id string, at time.Time) error {
	t := store.FormatTime(at)
	_, err := q.ExecContext(ctx, `UPDATE vector_collections SET status = ?, updated_at = ?, deleted_at = ? WHERE id = ?`, statusDeleted, t, t, id)
	return err
}

// setStoredDay records that the stored vectors of day were metered.
func (rs records) setStoredDay(ctx context.Context, id, day string) error {
	_, err := rs.db.ExecContext(ctx, `UPDATE vector_collections SET stored_day = ? WHERE id = ?`, day, id)
	return err
}

// list returns the ids of the collections matching where (a condition on
// one bound argument).
func (rs records) list(ctx context.Context, where string, args ...any) ([]record, error) {
	rows, err := rs.db.QueryContext(ctx, `SELECT `+recordCols+` FROM vector_collections WHERE `+where+` ORDER BY created_at, id`, args...)
	if err != nil {
		return nil, fmt.Errorf("vectors: list: %w", err)
	}
	out, err := store.AppendRows[record](nil, rows, scanRecord)
	if err != nil {
		return nil, fmt.Errorf("vectors: list: %w", err)
	}
	return out, nil
}

// inProject lists the live collections of a project.
func (rs records) inProject(ctx context.Context, project string) ([]record, error) {
	return rs.list(ctx, `project_id = ? AND status = ?`, project, statusReady)
}

// ready lists every live collection.
func (rs records) ready(ctx context.Context) ([]record, error) {
	return rs.list(ctx, `status = ?`, statusReady)
}
