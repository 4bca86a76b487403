package databases

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/svcplatform/platform/controlplane/store"
)

// The states of a database record.
const (
	StatusCreating = "creating"
	StatusReady    = "ready"
	StatusFailed   = "failed"
	StatusDeleted  = "deleted"
)

// record is a database's row in the metadata database.
type record struct {
	ID        string
	Workspace string
	Project   string
	Name      string
	Engine    string
	Status    string
	Error     string
	SizeBytes int64
	CreatedAt time.Time
}

// records reads and writes database rows, keeping the ones read in memory:
// on a single node this process is the only writer of the table, so the
// copy stays exact and a query costs no metadata read. Among several
// replicas (shared) another replica may change a row (a project deleted
// there deletes its databases), so every read goes to the table.
type records struct {
	db     *store.DB
	shared atomic.Bool
	mu     sync.Mutex
	m      map[string]record
	// gen counts changes, so that a row read before a change committed
	// is not kept after it.
	gen uint64
}

// maxCachedRecords bounds the in-memory copy; it is dropped whole beyond.
const maxCachedRecords = 10_000

func newRecords(db *store.DB) *records { return &records{db: db, m: map[string]record{}} }

const recordCols = `id, workspace_id, project_id, name, engine, status, error, size_bytes, created_at`

func scanRecord(sc interface{ Scan(...any) error }) (record, error) {
	var r record
	var created string
	err := sc.Scan(&r.ID, &r.Workspace, &r.Project, &r.Name, &r.Engine, &r.Status, &r.Error, &r.SizeBytes, &created)
	r.CreatedAt = store.ParseTime(created)
	return r, err
}

// get returns database id of workspace; store.ErrNotFound when there is
// none (also for another workspace's).
func (rs *records) get(ctx context.Context, workspace, id string) (record, error) {
	r, err := rs.byID(ctx, id)
	if err == nil && r.Workspace != workspace {
		return record{}, store.ErrNotFound
	}
	return r, err
}

// byID returns database id of any workspace.
func (rs *records) byID(ctx context.Context, id string) (record, error) {
	shared := rs.shared.Load()
	rs.mu.Lock()
	r, ok := rs.m[id]
	gen := rs.gen
	rs.mu.Unlock()
	if ok && !shared {
		return r, nil
	}
	r, err := scanRecord(rs.db.QueryRowContext(ctx, `SELECT `+recordCols+` FROM databases WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return record{}, store.ErrNotFound
	}
	if err != nil {
		return record{}, fmt.Errorf("databases: read %s: %w", id, err)
	}
	if shared {
		return r, nil
	}
	rs.mu.Lock()
	if rs.gen == gen {
		if len(rs.m) >= maxCachedRecords {
			rs.m = map[string]record{}
		}
		rs.m[r.ID] = r
	}
	rs.mu.Unlock()
	return r, nil
}

// forget drops the copy of id; call it after a change to the row commits.
func (rs *records) forget(id string) {
	rs.mu.Lock()
	delete(rs.m, id)
	rs.gen++
	rs.mu.Unlock()
}

// countLive counts the workspace's databases that hold a place in its plan:
// every one not deleted, failed creates included.
func (rs *records) countLive(ctx context.Context, q store.Querier, workspace string) (int, error) {
	var n int
	err := q.QueryRowContext(ctx, `SELECT count(*) FROM databases WHERE workspace_id = ? AND status <> ?`, workspace, StatusDeleted).Scan(&n)
	return n, err
}

// insert adds a new record through q.
func (rs *records) insert(ctx context.Context, q store.Querier, r record) error {
	now := store.FormatTime(r.CreatedAt)
	_, err := q.ExecContext(ctx, `INSERT INTO databases(id, workspace_id, project_id, name, engine, status, error, created_at, updated_at)
		VALUES (?,?,?,?,?,?,?,?,?)`, r.ID, r.Workspace, r.Project, r.Name, r.Engine, r.Status, r.Error, now, now)
	return err
}

// setStatus changes a record's status and error through q; call forget
// once the change commits.
func (rs *records) setStatus(ctx context.Context, q store.Querier, id, status, reason string, at time.Time) error {
	deletedAt := ""
	if status == StatusDeleted {
		deletedAt = store.FormatTime(at)
	}
	_, err := q.ExecContext(ctx, `UPDATE databases SET status = ?, error = ?, updated_at = ?, deleted_at = ? WHERE id = ?`,
		status, reason, store.FormatTime(at), deletedAt, id)
	return err
}

// readyIDs lists the databases of a workspace that hold data.
func (rs *records) readyIDs(ctx context.Context, workspace string) ([]string, error) {
	return rs.ids(ctx, `SELECT id FROM databases WHERE workspace_id = ? AND status = ? ORDER BY id`, workspace, StatusReady)
}

// storageWorkspaces lists the workspaces that have databases holding data.
func (rs *records) storageWorkspaces(ctx context.Context) ([]string, error) {
	return rs.ids(ctx, `SELECT DISTINCT workspace_id FROM databases WHERE status = ? ORDER BY workspace_id`, StatusReady)
}

// inProject lists the databases of a project that are not deleted.
func (rs *records) inProject(ctx context.Context, project string) ([]string, error) {
	return rs.ids(ctx, `SELECT id FROM databases WHERE project_id = ? AND status <> ? ORDER BY created_at, id`, project, StatusDeleted)
}

func (rs *records) ids(ctx context.Context, q string, args ...any) ([]string, error) {
	rows, err := rs.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("databases: list: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("databases: list: %w", err)
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// failInterrupted marks creates and exports that a stopped process left
// running as failed, so that they can be retried. mine, when set, tells
// the databases this node owns: among replicas only those were this
// process's (another replica's create in progress is left alone).
func (rs *records) failInterrupted(ctx context.Context, now time.Time, mine func(ctx context.Context, id string) (bool, error)) error {
	at := store.FormatTime(now)
	if mine == nil {
		return rs.db.Tx(ctx, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, `UPDATE databases SET status = ?, error = ?, updated_at = ? WHERE status = ?`,
				StatusFailed, reasonInterrupted, at, StatusCreating); err != nil {
				return fmt.Errorf("databases: recover creates: %w", err)
			}
			if _, err := tx.ExecContext(ctx, `UPDATE database_exports SET status = ?, error = ?, completed_at = ? WHERE status = ?`,
				ExportFailed, reasonExportInterrupted, at, ExportActive); err != nil {
				return fmt.Errorf("databases: recover exports: %w", err)
			}
			return nil
		})
	}
	creating, err := rs.ids(ctx, `SELECT id FROM databases WHERE status = ? ORDER BY id`, StatusCreating)
	if err != nil {
		return err
	}
	exporting, err := rs.ids(ctx, `SELECT DISTINCT database_id FROM database_exports WHERE status = ? ORDER BY database_id`, ExportActive)
	if err != nil {
		return err
	}
	for _, id := range creating {
		if ok, err := mine(ctx, id); err != nil || !ok {
			if err != nil {
				return err
			}
			continue
		}
		if _, err := rs.db.ExecContext(ctx, `UPDATE databases SET status = ?, error = ?, updated_at = ? WHERE id = ? AND status = ?`,
			StatusFailed, reasonInterrupted, at, id, StatusCreating); err != nil {
			return fmt.Errorf("databases: recover create of %s: %w", id, err)
		}
	}
	for _, id := range exporting {
		if ok, err := mine(ctx, id); err != nil || !ok {
			if err != nil {
				return err
			}
			continue
		}
		if _, err := rs.db.ExecContext(ctx, `UPDATE database_exports SET status = ?, error = ?, completed_at = ? WHERE database_id = ? AND status = ?`,
			ExportFailed, reasonExportInterrupted, at, id, ExportActive); err != nil {
			return fmt.Errorf("databases: recover exports of %s: %w", id, err)
		}
	}
	return nil
}

// Reasons recorded for work a stopped process left running.
const (
	reasonInterrupted       = "creation was interrupted by a restart"
	reasonExportInterrupted = "the export was interrupted by a restart; start a new one"
)

// readySizes returns the recorded size of each database of the workspace
// that holds data (what the owners last measured).
func (rs *records) readySizes(ctx context.Context, workspace string) (map[string]int64, []string, error) {
	rows, err := rs.db.QueryContext(ctx, `SELECT id, size_bytes FROM databases WHERE workspace_id = ? AND status = ? ORDER BY id`, workspace, StatusReady)
	if err != nil {
		return nil, nil, fmt.Errorf("databases: sizes: %w", err)
	}
	defer rows.Close()
	sizes := map[string]int64{}
	var ids []string
	for rows.Next() {
		var id string
		var n int64
		if err := rows.Scan(&id, &n); err != nil {
			return nil, nil, fmt.Errorf("databases: sizes: %w", err)
		}
		sizes[id] = n
		ids = append(ids, id)
	}
	return sizes, ids, rows.Err()
}

// saveSizes stores measured sizes.
func (rs *records) saveSizes(ctx context.Context, sizes map[string]int64, at time.Time) error {
	return rs.db.Tx(ctx, func(tx *sql.Tx) error {
		for id, size := range sizes {
			if _, err := tx.ExecContext(ctx, `UPDATE databases SET size_bytes = ?, size_measured_at = ? WHERE id = ?`,
				size, store.FormatTime(at), id); err != nil {
				return fmt.Errorf("databases: save size: %w", err)
			}
		}
		return nil
	})
}
