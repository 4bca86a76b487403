package ai

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/metering"
	"github.com/svcplatform/platform/controlplane/store"
)

// The metrics the gateway records for the usage report. (They belong in
// controlplane/metering's list; they are declared here until they move.)
const (
	MetricRequests   metering.Metric = "ai_requests"
	MetricTokensIn   metering.Metric = "ai_tokens_in"
	MetricTokensOut  metering.Metric = "ai_tokens_out"
	MetricEmbeddings metering.Metric = "ai_embeddings"
	MetricCost       metering.Metric = "ai_cost_micros"
)

// Request statuses in the history.
const (
	StatusOK              = "ok"
	StatusTruncated       = "truncated"
	StatusBudgetExhausted = "budget_exhausted"
	StatusStreamError     = "stream_error"
	StatusClientClosed    = "client_closed"
	StatusRefused         = "refused"
	StatusFailed          = "failed"
)

// Record is one call in the history: what was asked of which model and what
// it cost; never the prompt or the answer.
type Record struct {
	ID             string    `json:"id"`
	ProjectID      string    `json:"projectId,omitempty"`
	Kind           string    `json:"kind"`
	Surface        string    `json:"surface"`
	ModelRequested string    `json:"model"`
	ModelUsed      string    `json:"modelUsed,omitempty"`
	Provider       string    `json:"provider,omitempty"`
	FellBackFrom   string    `json:"fellBackFrom,omitempty"`
	Status         string    `json:"status"`
	ErrorCode      string    `json:"errorCode,omitempty"`
	Stream         bool      `json:"stream"`
	TokensIn       int64     `json:"tokensIn"`
	TokensOut      int64     `json:"tokensOut"`
	Inputs         int       `json:"inputs,omitempty"`
	Cost           USD       `json:"cost"`
	CostMicros     Micros    `json:"costMicros"`
	LatencyMs      int64     `json:"latencyMs"`
	TokensPerSec   int64     `json:"tokensPerSecond,omitempty"`
	At             time.Time `json:"at"`
	workspace      string
}

// recorder writes history rows, month totals and meter events in batches,
// off the request path: one transaction per flush. A crash loses at most
// one flush interval of history; money never goes through it.
type recorder struct {
	db     *store.DB
	meter  metering.Recorder
	log    *slog.Logger
	clk    clock.Clock
	mu     sync.Mutex
	buf    []Record
	flushM sync.Mutex
	purged time.Time
}

func newRecorder(db *store.DB, meter metering.Recorder, log *slog.Logger, clk clock.Clock) *recorder {
	return &recorder{db: db, meter: meter, log: log, clk: clk}
}

// run writes what is buffered every interval until ctx ends.
func (r *recorder) run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := r.flush(ctx); err != nil && ctx.Err() == nil {
				r.log.Error("ai: write request history", "err", err)
			}
		}
	}
}

func (r *recorder) add(rec Record) {
	r.mu.Lock()
	r.buf = append(r.buf, rec)
	r.mu.Unlock()
}

// close writes what is still buffered.
func (r *recorder) close() {
	if err := r.flush(context.Background()); err != nil {
		r.log.Error("ai: write request history", "err", err)
	}
}

type meterKey struct {
	ws, project string
	metric      metering.Metric
}

// flush writes what is buffered.
func (r *recorder) flush(ctx context.Context) error {
	r.flushM.Lock()
	defer r.flushM.Unlock()
	r.mu.Lock()
	batch := r.buf
	r.buf = nil
	r.mu.Unlock()
	now := r.clk.Now()
	if len(batch) == 0 && now.Sub(r.purged) < time.Hour {
		return nil
	}
	err := r.db.Tx(ctx, func(tx *sql.Tx) error {
		if err := insertRecords(ctx, tx, batch); err != nil {
			return err
		}
		if now.Sub(r.purged) >= time.Hour {
			cut := store.FormatTime(now.AddDate(0, 0, -HistoryDays))
			if _, err := tx.ExecContext(ctx, `DELETE FROM ai_requests WHERE created_at < ?`, cut); err != nil {
				return fmt.Errorf("ai: purge history: %w", err)
			}
			month := now.AddDate(0, -13, 0).Format("2006-01")
			if _, err := tx.ExecContext(ctx, `DELETE FROM ai_spend_month WHERE month < ?`, month); err != nil {
				return fmt.Errorf("ai: purge month totals: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		// Put the batch back so the next flush tries again.
		r.mu.Lock()
		r.buf = append(batch, r.buf...)
		r.mu.Unlock()
		return err
	}
	if now.Sub(r.purged) >= time.Hour {
		r.purged = now
	}
	if r.meter == nil {
		return nil
	}
	sums := map[meterKey]float64{}
	for _, rec := range batch {
		add := func(m metering.Metric, q int64) {
			if q != 0 {
				sums[meterKey{rec.workspace, rec.ProjectID, m}] += float64(q)
			}
		}
		if rec.Kind == "embeddings" {
			add(MetricEmbeddings, int64(rec.Inputs))
		} else {
			add(MetricRequests, 1)
		}
		add(MetricTokensIn, rec.TokensIn)
		add(MetricTokensOut, rec.TokensOut)
		add(MetricCost, int64(rec.CostMicros))
	}
	for k, q := range sums {
		if err := r.meter.Record(ctx, metering.Event{Workspace: k.ws, Project: k.project, Metric: k.metric, Quantity: q, At: now}); err != nil {
			r.log.Error("ai: meter", "metric", k.metric, "err", err)
		}
	}
	return nil
}

// recordCols is the number of columns of one ai_requests row.
const recordCols = 18

// maxRowsPerInsert bounds the rows of one multi-row INSERT (18 values
// each: well under SQLite's and PostgreSQL's parameter limits).
const maxRowsPerInsert = 64

// insertRecords writes batch's history rows with multi-row INSERTs, then
// each month total touched once with the batch's sums.
func insertRecords(ctx context.Context, tx *sql.Tx, batch []Record) error {
	args := make([]any, 0, min(len(batch), maxRowsPerInsert)*recordCols)
	// The few distinct workspaces, models, providers and statuses of a
	// batch are each put in an interface once, not once per row.
	box := store.Boxes{}.Box
	for start := 0; start < len(batch); start += maxRowsPerInsert {
		rows := batch[start:min(start+maxRowsPerInsert, len(batch))]
		args = args[:0]
		for i := range rows {
			rec := &rows[i]
			args = append(args, rec.ID, box(rec.workspace), box(rec.ProjectID), box(rec.Kind), box(rec.Surface), box(rec.ModelRequested),
				box(rec.ModelUsed), box(rec.Provider), box(rec.FellBackFrom), box(rec.Status), box(rec.ErrorCode), rec.Stream, rec.TokensIn,
				rec.TokensOut, rec.Inputs, int64(rec.CostMicros), rec.LatencyMs, store.FormatTime(rec.At))
		}
		if _, err := tx.ExecContext(ctx, insertRecordsSQL(len(rows)), args...); err != nil {
			return fmt.Errorf("ai: insert %d requests from %s: %w", len(rows), rows[0].ID, err)
		}
	}
	type monthKey struct{ ws, month, model, project string }
	type sums struct{ requests, in, out, cost int64 }
	totals := map[monthKey]*sums{}
	var keys []monthKey // in the batch's order: the same statements every time
	for i := range batch {
		rec := &batch[i]
		if rec.ModelUsed == "" && rec.CostMicros == 0 {
			continue
		}
		model := rec.ModelUsed
		if model == "" {
			model = rec.ModelRequested
		}
		k := monthKey{rec.workspace, rec.At.UTC().Format("2006-01"), model, rec.ProjectID}
		t := totals[k]
		if t == nil {
			t = &sums{}
			totals[k] = t
			keys = append(keys, k)
		}
		t.requests++
		t.in += rec.TokensIn
		t.out += rec.TokensOut
		t.cost += int64(rec.CostMicros)
	}
	for _, k := range keys {
		t := totals[k]
		_, err := tx.ExecContext(ctx, `INSERT INTO ai_spend_month (workspace_id, month, model, project_id, requests, tokens_in, tokens_out, cost_micros)
		VALUES (?,?,?,?,?,?,?,?)
		ON CONFLICT (workspace_id, month, model, project_id) DO UPDATE SET
			requests = ai_spend_month.requests + excluded.requests, tokens_in = ai_spend_month.tokens_in + excluded.tokens_in,
			tokens_out = ai_spend_month.tokens_out + excluded.tokens_out, cost_micros = ai_spend_month.cost_micros + excluded.cost_micros`,
			k.ws, k.month, k.model, k.project, t.requests, t.in, t.out, t.cost)
		if err != nil {
			return fmt.Errorf("ai: month totals: %w", err)
		}
	}
	return nil
}

// insertSQL caches the multi-row INSERT text by row count.
var insertSQL sync.Map // int -> string

func insertRecordsSQL(rows int) string {
	if q, ok := insertSQL.Load(rows); ok {
		return q.(string)
	}
	var b strings.Builder
	b.WriteString(`INSERT INTO ai_requests
		(id, workspace_id, project_id, kind, surface, model_requested, model_used, provider, fell_back_from, status, error_code,
		 stream, tokens_in, tokens_out, inputs, cost_micros, latency_ms, created_at) VALUES `)
	row := "(" + strings.TrimSuffix(strings.Repeat("?,", recordCols), ",") + ")"
	for i := 0; i < rows; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(row)
	}
	q := b.String()
	insertSQL.Store(rows, q)
	return q
}

// listRecords returns the newest calls of the last 30 days.
func listRecords(ctx context.Context, db *store.DB, ws, project string, since time.Time, limit int) ([]Record, error) {
	q := `SELECT id, project_id, kind, surface, model_requested, model_used, provider, fell_back_from, status, error_code,
		stream, tokens_in, tokens_out, inputs, cost_micros, latency_ms, created_at
		FROM ai_requests WHERE workspace_id = ? AND created_at >= ?`
	args := []any{ws, store.FormatTime(since)}
	if project != "" {
		q += ` AND project_id = ?`
		args = append(args, project)
	}
	q += ` ORDER BY created_at DESC, id DESC LIMIT ?`
	args = append(args, limit)
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("ai: list requests: %w", err)
	}
	defer rows.Close()
	out := []Record{}
	for rows.Next() {
		var r Record
		var at string
		var cost int64
		if err := rows.Scan(&r.ID, &r.ProjectID, &r.Kind, &r.Surface, &r.ModelRequested, &r.ModelUsed, &r.Provider, &r.FellBackFrom,
			&r.Status, &r.ErrorCode, &r.Stream, &r.TokensIn, &r.TokensOut, &r.Inputs, &cost, &r.LatencyMs, &at); err != nil {
			return nil, fmt.Errorf("ai: scan request: %w", err)
		}
		r.At = store.ParseTime(at)
		r.CostMicros, r.Cost = Micros(cost), USD(cost)
		if r.LatencyMs > 0 && r.TokensOut > 0 {
			r.TokensPerSec = r.TokensOut * 1000 / r.LatencyMs
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// SpendLine is one model's or one project's spend in a month.
type SpendLine struct {
	Model      string `json:"model,omitempty"`
	ProjectID  string `json:"projectId,omitempty"`
	Requests   int64  `json:"requests"`
	TokensIn   int64  `json:"tokensIn"`
	TokensOut  int64  `json:"tokensOut"`
	Cost       USD    `json:"cost"`
	CostMicros Micros `json:"costMicros"`
}

// Month is a calendar month's spend (UTC).
type Month struct {
	Month      string      `json:"month"`
	From       time.Time   `json:"from"`
	To         time.Time   `json:"to"`
	Requests   int64       `json:"requests"`
	Cost       USD         `json:"cost"`
	CostMicros Micros      `json:"costMicros"`
	ByModel    []SpendLine `json:"byModel"`
	ByProject  []SpendLine `json:"byProject"`
}

func monthSpend(ctx context.Context, db *store.DB, ws, project string, now time.Time) (Month, error) {
	from := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	m := Month{Month: from.Format("2006-01"), From: from, To: from.AddDate(0, 1, 0), ByModel: []SpendLine{}, ByProject: []SpendLine{}}
	q := `SELECT model, project_id, requests, tokens_in, tokens_out, cost_micros FROM ai_spend_month WHERE workspace_id = ? AND month = ?`
	args := []any{ws, m.Month}
	if project != "" {
		q += ` AND project_id = ?`
		args = append(args, project)
	}
	q += ` ORDER BY model, project_id`
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return m, fmt.Errorf("ai: month spend: %w", err)
	}
	defer rows.Close()
	byModel, byProject := map[string]*SpendLine{}, map[string]*SpendLine{}
	var models, projects []string
	for rows.Next() {
		var l SpendLine
		var cost int64
		if err := rows.Scan(&l.Model, &l.ProjectID, &l.Requests, &l.TokensIn, &l.TokensOut, &cost); err != nil {
			return m, fmt.Errorf("ai: month spend: %w", err)
		}
		l.CostMicros = Micros(cost)
		m.Requests += l.Requests
		m.CostMicros += l.CostMicros
		if byModel[l.Model] == nil {
			byModel[l.Model] = &SpendLine{Model: l.Model}
			models = append(models, l.Model)
		}
		if byProject[l.ProjectID] == nil {
			byProject[l.ProjectID] = &SpendLine{ProjectID: l.ProjectID}
			projects = append(projects, l.ProjectID)
		}
		for _, t := range []*SpendLine{byModel[l.Model], byProject[l.ProjectID]} {
			t.Requests += l.Requests
			t.TokensIn += l.TokensIn
			t.TokensOut += l.TokensOut
			t.CostMicros += l.CostMicros
		}
	}
	if err := rows.Err(); err != nil {
		return m, fmt.Errorf("ai: month spend: %w", err)
	}
	for _, k := range models {
		l := byModel[k]
		l.Cost = USD(l.CostMicros)
		m.ByModel = append(m.ByModel, *l)
	}
	for _, k := range projects {
		l := byProject[k]
		l.Cost = USD(l.CostMicros)
		m.ByProject = append(m.ByProject, *l)
	}
	m.Cost = USD(m.CostMicros)
	return m, nil
}
