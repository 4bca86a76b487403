// Package metering records usage events: every metered operation of every
// area (deploys, database queries and rows, AI requests, agent runs, ...)
// calls Record once, and the usage report sums the events by metric, project
// and UTC day.
package metering

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/store"
)

// Metric names a measured quantity. Areas add their own constants here so
// the usage report has one list of what is measured.
type Metric string

// The metrics recorded so far. The names of areas that declare their own
// constants (vectors, ai, payments, media) are repeated here with the same
// value so that the usage report has one list; README.md names who records
// each one.
const (
	Projects        Metric = "projects_created"
	Deploys         Metric = "deploys"
	BuildSeconds    Metric = "build_seconds"
	DatabaseQueries Metric = "database_queries"
	RowsRead        Metric = "database_rows_read"
	RowsWritten     Metric = "database_rows_written"
	APIKeyCalls     Metric = "api_key_calls"

	VectorOperations      Metric = "vector_operations"
	VectorQueriedDims     Metric = "vector_queried_dimensions"
	VectorsStored         Metric = "vectors_stored"
	CheckoutSessions      Metric = "checkout_sessions"
	Payments              Metric = "payments"
	AIRequests            Metric = "ai_requests"
	AITokensIn            Metric = "ai_tokens_in"
	AITokensOut           Metric = "ai_tokens_out"
	AIEmbeddings          Metric = "ai_embeddings"
	AICostMicros          Metric = "ai_cost_micros"
	AgentRuns             Metric = "agent_runs"
	MediaMinutesProcessed Metric = "media_minutes_processed"
	MediaStoredBytes      Metric = "media_stored_bytes"
	FunctionTestRuns      Metric = "function_test_runs"
	FunctionInvocations   Metric = "function_invocations"
	AppRunSeconds         Metric = "app_run_seconds"
	MemoryOperations      Metric = "memory_operations"
	Emails                Metric = "emails"
	EndUserLogins         Metric = "end_user_logins"
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

// BatchRecorder records a batch of events at most once: a second call with
// the same id (a flush retried after its answer was lost) writes nothing.
type BatchRecorder interface {
	RecordBatch(ctx context.Context, id string, events []Event) error
}

// Sink records single events and batches; *Meter is one.
type Sink interface {
	Recorder
	BatchRecorder
}

// ErrInvalidEvent is returned for an event without a workspace or metric.
var ErrInvalidEvent = errors.New("metering: event needs a workspace and a metric")

// BatchRetention is how long written batch ids are remembered; a flush is
// retried within seconds, never this late.
const BatchRetention = 7 * 24 * time.Hour

// Meter records events in the metadata database.
type Meter struct {
	db  *store.DB
	clk clock.Clock
}

var (
	_ Recorder      = (*Meter)(nil)
	_ BatchRecorder = (*Meter)(nil)
)

// New returns a Meter over db, stamping events by clk (clock.System when
// nil).
func New(db *store.DB, clk clock.Clock) *Meter {
	if clk == nil {
		clk = clock.System{}
	}
	return &Meter{db: db, clk: clk}
}

// Now is the meter's clock.
func (m *Meter) Now() time.Time { return m.clk.Now() }

// Record stores e. A zero quantity is not stored.
func (m *Meter) Record(ctx context.Context, e Event) error {
	if e.Quantity == 0 {
		return nil
	}
	if e.Workspace == "" || e.Metric == "" {
		return ErrInvalidEvent
	}
	if err := m.insert(ctx, m.db, e); err != nil {
		return fmt.Errorf("metering: record %s: %w", e.Metric, err)
	}
	return nil
}

func (m *Meter) insert(ctx context.Context, q store.Querier, e Event) error {
	at := e.At
	if at.IsZero() {
		at = m.clk.Now()
	}
	_, err := q.ExecContext(ctx, `INSERT INTO usage_events(workspace_id, project_id, metric, quantity, at, day) VALUES (?,?,?,?,?,?)`,
		e.Workspace, e.Project, string(e.Metric), e.Quantity, store.FormatTime(at), DayOf(at))
	return err
}

// RecordBatch stores events and the batch id in one transaction; when id
// was already written it stores nothing and returns nil. Events with a
// zero quantity are skipped; one without a workspace or metric refuses the
// whole batch (ErrInvalidEvent). Batch ids older than BatchRetention are
// forgotten on the way.
func (m *Meter) RecordBatch(ctx context.Context, id string, events []Event) error {
	if id == "" {
		return fmt.Errorf("metering: batch needs an id")
	}
	for _, e := range events {
		if e.Quantity != 0 && (e.Workspace == "" || e.Metric == "") {
			return ErrInvalidEvent
		}
	}
	now := m.clk.Now()
	err := m.db.Tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO usage_batches(id, events, at) VALUES (?,?,?) ON CONFLICT(id) DO NOTHING`,
			id, len(events), store.FormatTime(now))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err // written by an earlier attempt
		}
		for _, e := range events {
			if e.Quantity == 0 {
				continue
			}
			if err := m.insert(ctx, tx, e); err != nil {
				return err
			}
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM usage_batches WHERE at < ?`, store.FormatTime(now.Add(-BatchRetention)))
		return err
	})
	if err != nil {
		return fmt.Errorf("metering: record batch %s: %w", id, err)
	}
	return nil
}

// DayOf is the UTC day of t as events store it ("2006-01-02").
func DayOf(t time.Time) string { return t.UTC().Format(time.DateOnly) }

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

// DaySum is the sum of one metric of one project on one UTC day.
type DaySum struct {
	Day      string // "2006-01-02"
	Project  string // "" for events of the workspace itself
	Metric   Metric
	Quantity float64
}

// Sums returns the workspace's events summed by UTC day, project and
// metric for the days in [fromDay, toDay) (both "2006-01-02"); project ""
// means every project. Rows come ordered by day, project and metric.
func (m *Meter) Sums(ctx context.Context, workspace, project, fromDay, toDay string) ([]DaySum, error) {
	q := `SELECT day, project_id, metric, sum(quantity) FROM usage_events WHERE workspace_id = ? AND day >= ? AND day < ?`
	args := []any{workspace, fromDay, toDay}
	if project != "" {
		q += ` AND project_id = ?`
		args = append(args, project)
	}
	q += ` GROUP BY day, project_id, metric ORDER BY day, project_id, metric`
	rows, err := m.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("metering: sums: %w", err)
	}
	defer rows.Close()
	var out []DaySum
	for rows.Next() {
		var d DaySum
		var metric string
		if err := rows.Scan(&d.Day, &d.Project, &metric, &d.Quantity); err != nil {
			return nil, fmt.Errorf("metering: sums: %w", err)
		}
		d.Metric = Metric(metric)
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("metering: sums: %w", err)
	}
	return out, nil
}
