package usage

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/svcplatform/platform/controlplane/store"
)

// measurement is one row of usage_measurements.
type measurement struct {
	Day        string
	Project    string
	Resource   string
	Bytes      int64
	Objects    int64
	MeasuredAt time.Time
}

// replaceMeasurements writes a workspace's sizes of kind for day, replacing
// what an earlier run of the same day wrote.
func replaceMeasurements(ctx context.Context, db *store.DB, workspace, kind, day string, at time.Time, sizes []Size) error {
	err := db.Tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM usage_measurements WHERE workspace_id = ? AND kind = ? AND day = ?`,
			workspace, kind, day); err != nil {
			return err
		}
		for _, sz := range sizes {
			_, err := tx.ExecContext(ctx, `INSERT INTO usage_measurements
				(workspace_id, kind, day, project_id, resource_id, bytes, objects, measured_at) VALUES (?,?,?,?,?,?,?,?)
				ON CONFLICT(workspace_id, kind, day, project_id, resource_id) DO UPDATE SET
				bytes = usage_measurements.bytes + excluded.bytes, objects = usage_measurements.objects + excluded.objects`,
				workspace, kind, day, sz.Project, sz.Resource, max(sz.Bytes, 0), max(sz.Objects, 0), store.FormatTime(at))
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("usage: write %s measurements of %s: %w", kind, workspace, err)
	}
	return nil
}

// measurements returns the workspace's rows of kind for the days in
// [fromDay, toDay), oldest first (project "" for every project).
func measurements(ctx context.Context, db *store.DB, workspace, kind, project, fromDay, toDay string) ([]measurement, error) {
	q := `SELECT day, project_id, resource_id, bytes, objects, measured_at FROM usage_measurements
		WHERE workspace_id = ? AND kind = ? AND day >= ? AND day < ?`
	args := []any{workspace, kind, fromDay, toDay}
	if project != "" {
		q += ` AND project_id = ?`
		args = append(args, project)
	}
	rows, err := db.QueryContext(ctx, q+` ORDER BY day, project_id, resource_id`, args...)
	if err != nil {
		return nil, fmt.Errorf("usage: read %s measurements: %w", kind, err)
	}
	defer rows.Close()
	var out []measurement
	for rows.Next() {
		var m measurement
		var at string
		if err := rows.Scan(&m.Day, &m.Project, &m.Resource, &m.Bytes, &m.Objects, &at); err != nil {
			return nil, fmt.Errorf("usage: read %s measurements: %w", kind, err)
		}
		m.MeasuredAt = store.ParseTime(at)
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("usage: read %s measurements: %w", kind, err)
	}
	return out, nil
}
