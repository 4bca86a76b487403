package agents

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/store"
)

// sqlStore is the area's SQL: the agents and agent_runs tables.
type sqlStore struct{ db *store.DB }

const agentCols = `id, workspace_id, project_id, name, model, instructions, tools, max_steps, allow_writes, trigger_kind,
	trigger_label, purpose, status, setup_member, setup_key, setup_read_only, schedule_cron, schedule_input, schedule_next,
	events_secret, chat_id, chat_origins, chat_daily_limit, last_error, last_error_at, created_at, updated_at`

type scanner interface{ Scan(...any) error }

func scanAgent(r scanner) (Agent, error) {
	var a Agent
	var tools, next, origins, lastErrAt, created, updated string
	var chatID sql.NullString
	var allow, setupRO int
	err := r.Scan(&a.ID, &a.workspace, &a.ProjectID, &a.Name, &a.Model, &a.Instructions, &tools, &a.MaxSteps, &allow, &a.Trigger.Kind,
		&a.Trigger.Label, &a.Purpose, &a.Status, &a.setup.Member, &a.setup.Key, &setupRO, &a.schedule.Cron, &a.schedule.Input, &next,
		&a.secret, &chatID, &origins, &a.chat.DailyLimit, &a.LastError, &lastErrAt, &created, &updated)
	if err != nil {
		return a, err
	}
	a.AllowWrites, a.setup.ReadOnly = allow == 1, setupRO == 1
	a.Tools = []string{}
	json.Unmarshal([]byte(tools), &a.Tools)
	json.Unmarshal([]byte(origins), &a.chat.Origins)
	a.schedule.Next = store.ParseTime(next)
	a.chat.ID = chatID.String
	if lastErrAt != "" {
		a.LastErrorAt = &lastErrAt
	}
	a.CreatedAt, a.UpdatedAt = store.ParseTime(created), store.ParseTime(updated)
	return a, nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func optTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return store.FormatTime(t)
}

var errAgentNotFound = api.NotFound("agent")

// agent loads an agent by id through q (404 when absent).
func (st sqlStore) agent(ctx context.Context, q store.Querier, id string) (Agent, error) {
	a, err := scanAgent(q.QueryRowContext(ctx, `SELECT `+agentCols+` FROM agents WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return a, errAgentNotFound
	}
	if err != nil {
		return a, fmt.Errorf("agents: load %s: %w", id, err)
	}
	return a, nil
}

// agentByChat loads the agent whose chat id is chatID.
func (st sqlStore) agentByChat(ctx context.Context, chatID string) (Agent, error) {
	a, err := scanAgent(st.db.QueryRowContext(ctx, `SELECT `+agentCols+` FROM agents WHERE chat_id = ?`, chatID))
	if errors.Is(err, sql.ErrNoRows) {
		return a, api.NotFound("chat")
	}
	if err != nil {
		return a, fmt.Errorf("agents: load chat: %w", err)
	}
	return a, nil
}

func (st sqlStore) insertAgent(ctx context.Context, q store.Querier, a Agent) error {
	_, err := q.ExecContext(ctx, `INSERT INTO agents(id, workspace_id, project_id, name, model, instructions, tools, max_steps, allow_writes,
		trigger_kind, trigger_label, purpose, status, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
		a.ID, a.workspace, a.ProjectID, a.Name, a.Model, a.Instructions, jsonText(a.Tools), a.MaxSteps, b2i(a.AllowWrites),
		a.Trigger.Kind, a.Trigger.Label, a.Purpose, a.Status, store.FormatTime(a.CreatedAt), store.FormatTime(a.UpdatedAt))
	if err != nil {
		return fmt.Errorf("agents: insert: %w", err)
	}
	return nil
}

// saveAgent writes every changeable column of a.
func (st sqlStore) saveAgent(ctx context.Context, q store.Querier, a Agent) error {
	lastErrAt := ""
	if a.LastErrorAt != nil {
		lastErrAt = *a.LastErrorAt
	}
	_, err := q.ExecContext(ctx, `UPDATE agents SET name=?, model=?, instructions=?, tools=?, max_steps=?, allow_writes=?, trigger_kind=?,
		trigger_label=?, purpose=?, status=?, setup_member=?, setup_key=?, setup_read_only=?, schedule_cron=?, schedule_input=?,
		schedule_next=?, events_secret=?, chat_id=?, chat_origins=?, chat_daily_limit=?, last_error=?, last_error_at=?, updated_at=?
		WHERE id = ?`,
		a.Name, a.Model, a.Instructions, jsonText(a.Tools), a.MaxSteps, b2i(a.AllowWrites), a.Trigger.Kind, a.Trigger.Label, a.Purpose,
		a.Status, a.setup.Member, a.setup.Key, b2i(a.setup.ReadOnly), a.schedule.Cron, a.schedule.Input, optTime(a.schedule.Next),
		a.secret, nullable(a.chat.ID), jsonText(a.chat.Origins), a.chat.DailyLimit, a.LastError, lastErrAt,
		store.FormatTime(a.UpdatedAt), a.ID)
	if err != nil {
		return fmt.Errorf("agents: save %s: %w", a.ID, err)
	}
	return nil
}

// setLastError records why a schedule, events or chat start could not run.
func (st sqlStore) setLastError(ctx context.Context, id, msg string, at time.Time) error {
	_, err := st.db.ExecContext(ctx, `UPDATE agents SET last_error = ?, last_error_at = ? WHERE id = ?`, msg, store.FormatTime(at), id)
	return err
}

const runCols = `id, agent_id, workspace_id, project_id, mode, status, stop_reason, input, output, steps, tokens_used, cost_micros,
	model, duration_ms, starter_member, starter_key, read_only, event_type, key_id, created_at, started_at, finished_at`

func scanRun(r scanner) (Run, error) {
	var x Run
	var steps, created, started, finished string
	var ro int
	err := r.Scan(&x.ID, &x.AgentID, &x.workspace, &x.project, &x.Mode, &x.Status, &x.StopReason, &x.Input, &x.Output, &steps,
		&x.TokensUsed, &x.CostMicros, &x.Model, &x.DurationMs, &x.starter.Member, &x.starter.Key, &ro, &x.EventType, &x.keyID,
		&created, &started, &finished)
	if err != nil {
		return x, err
	}
	x.starter.ReadOnly = ro == 1
	x.Steps = []Step{}
	json.Unmarshal([]byte(steps), &x.Steps)
	x.CostUSD = usd(x.CostMicros)
	x.CreatedAt = store.ParseTime(created)
	if started != "" {
		t := store.ParseTime(started)
		x.StartedAt = &t
	}
	if finished != "" {
		t := store.ParseTime(finished)
		x.FinishedAt = &t
	}
	return x, nil
}

func (st sqlStore) run(ctx context.Context, q store.Querier, id string) (Run, error) {
	x, err := scanRun(q.QueryRowContext(ctx, `SELECT `+runCols+` FROM agent_runs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return x, api.NotFound("run")
	}
	if err != nil {
		return x, fmt.Errorf("agents: load run %s: %w", id, err)
	}
	return x, nil
}

func (st sqlStore) runs(ctx context.Context, q store.Querier, where string, args ...any) ([]Run, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+runCols+` FROM agent_runs WHERE `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("agents: runs: %w", err)
	}
	defer rows.Close()
	out := []Run{}
	for rows.Next() {
		x, err := scanRun(rows)
		if err != nil {
			return nil, fmt.Errorf("agents: runs: %w", err)
		}
		out = append(out, x)
	}
	return out, rows.Err()
}

// insertRun stores a new run (queued, or running with started_at).
func (st sqlStore) insertRun(ctx context.Context, q store.Querier, x Run, deliveryID, visitor string) error {
	started := ""
	if x.StartedAt != nil {
		started = store.FormatTime(*x.StartedAt)
	}
	_, err := q.ExecContext(ctx, `INSERT INTO agent_runs(id, agent_id, workspace_id, project_id, mode, status, input, starter_member,
		starter_key, read_only, delivery_id, event_key, event_type, visitor, created_at, started_at, seq) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,
		(SELECT coalesce(max(seq), 0) + 1 FROM agent_runs WHERE agent_id = ?))`,
		x.ID, x.AgentID, x.workspace, x.project, x.Mode, x.Status, x.Input, x.starter.Member, x.starter.Key, b2i(x.starter.ReadOnly),
		deliveryID, x.eventKey, x.EventType, visitor, store.FormatTime(x.CreatedAt), started, x.AgentID)
	if err != nil {
		return fmt.Errorf("agents: insert run: %w", err)
	}
	return nil
}

// count runs one count query.
func (st sqlStore) count(ctx context.Context, q store.Querier, query string, args ...any) (int, error) {
	var n int
	if err := q.QueryRowContext(ctx, query, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("agents: count: %w", err)
	}
	return n, nil
}

// claimRun moves a queued run to running; false when another starter got
// it first (or it is no longer queued).
func (st sqlStore) claimRun(ctx context.Context, q store.Querier, id string, at time.Time) (bool, error) {
	res, err := q.ExecContext(ctx, `UPDATE agent_runs SET status = 'running', started_at = ? WHERE id = ? AND status = 'queued'`,
		store.FormatTime(at), id)
	if err != nil {
		return false, fmt.Errorf("agents: claim run: %w", err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

func (st sqlStore) setRunKey(ctx context.Context, id, keyID string) error {
	_, err := st.db.ExecContext(ctx, `UPDATE agent_runs SET key_id = ? WHERE id = ?`, keyID, id)
	return err
}

// saveProgress records the steps and totals of a run still running.
func (st sqlStore) saveProgress(ctx context.Context, x *Run) error {
	_, err := st.db.ExecContext(ctx, `UPDATE agent_runs SET steps = ?, tokens_used = ?, cost_micros = ?, model = ? WHERE id = ? AND status = 'running'`,
		jsonText(x.Steps), x.TokensUsed, x.CostMicros, x.Model, x.ID)
	return err
}

// finishRun writes a run's outcome, only while it is still running (a run
// already failed as stale keeps that).
func (st sqlStore) finishRun(ctx context.Context, x *Run) (bool, error) {
	res, err := st.db.ExecContext(ctx, `UPDATE agent_runs SET status = ?, stop_reason = ?, output = ?, steps = ?, tokens_used = ?,
		cost_micros = ?, model = ?, duration_ms = ?, finished_at = ? WHERE id = ? AND status IN ('running','queued')`,
		x.Status, x.StopReason, x.Output, jsonText(x.Steps), x.TokensUsed, x.CostMicros, x.Model, x.DurationMs,
		store.FormatTime(*x.FinishedAt), x.ID)
	if err != nil {
		return false, fmt.Errorf("agents: finish run %s: %w", x.ID, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

func (st sqlStore) deleteRun(ctx context.Context, id string) error {
	_, err := st.db.ExecContext(ctx, `DELETE FROM agent_runs WHERE id = ?`, id)
	return err
}
