// Package metering records usage events: every metered operation of every
// area (deploys, database queries and rows, AI requests, agent runs, ...)
// calls Record once, and the usage report sums the events by metric, project
// and UTC day.
package metering

import (
	"context"
	"fmt"
	"time"

	"github.com/svcplatform/platform/controlplane/store"
)

// Metric names a measured quantity. Areas add their own constants here so
// the usage report has one list of what is measured.
type Metric string

// The metrics recorded so far.
const (
	Projects        Metric = "projects_created"
	Deploys         Metric = "deploys"
	BuildSeconds    Metric = "build_seconds"
	DatabaseQueries Metric = "database_queries"
	RowsRead        Metric = "database_rows_read"
	RowsWritten     Metric = "database_rows_written"
	APIKeyCalls     Metric = "api_key_calls"
)

// Event is one measured quantity.
type Event struct {
	Workspace string
	Project   string
	Metric    Metric
	Quantity  float64
	At        time.Time // zero means now
}

// Recorder records usage events.
type Recorder interface {
	Record(ctx context.Context, e Event) error
}

// Meter records events in the metadata database.
type Meter struct {
	db  *store.DB
	now func() time.Time
}

var _ Recorder = (*Meter)(nil)

// New returns a Meter over db.
func New(db *store.DB, now func() time.Time) *Meter { return &Meter{db: db, now: now} }

// Record stores e. A zero quantity is not stored.
func (m *Meter) Record(ctx context.Context, e Event) error {
	if e.Quantity == 0 {
		return nil
	}
	if e.Workspace == "" || e.Metric == "" {
		return fmt.Errorf("metering: event needs a workspace and a metric")
	}
	at := e.At
	if at.IsZero() {
		at = m.now()
	}
	_, err := m.db.ExecContext(ctx, `INSERT INTO usage_events(workspace_id, project_id, metric, quantity, at, day) VALUES (?,?,?,?,?,?)`,
		e.Workspace, e.Project, string(e.Metric), e.Quantity, store.FormatTime(at), at.UTC().Format("2006-01-02"))
	if err != nil {
		return fmt.Errorf("metering: record %s: %w", e.Metric, err)
	}
	return nil
}

// Total sums metric for the workspace over [from, to) (project "" for all).
func (m *Meter) Total(ctx context.Context, workspace, project string, metric Metric, from, to time.Time) (float64, error) {
	q := `SELECT coalesce(sum(quantity),0) FROM usage_events WHERE workspace_id = ? AND metric = ? AND at >= ? AND at < ?`
	args := []any{workspace, string(metric), store.FormatTime(from), store.FormatTime(to)}
	if project != "" {
		q += ` AND project_id = ?`
		args = append(args, project)
	}
	var total float64
	if err := m.db.QueryRowContext(ctx, q, args...).Scan(&total); err != nil {
		return 0, fmt.Errorf("metering: total: %w", err)
	}
	return total, nil
}
