package agents

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/svcplatform/platform/controlplane/ai/provider"
	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/jobs"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/store"
)

// runPayload is the job that starts a queued run.
type runPayload struct {
	Run string `json:"run"`
}

// queueCap is how many runs of a mode may wait per agent (0: no cap).
func queueCap(mode string) int {
	switch mode {
	case ModeBackground:
		return MaxQueued
	case ModeEvent:
		return MaxEventsQueued
	}
	return 0
}

// enqueueRun stores a queued run and its job in one transaction, and wakes
// the workers so that it starts at once when the plan allows.
func (s *Service) enqueueRun(ctx context.Context, a Agent, st starter, mode, input string) (Run, error) {
	x, _, err := s.enqueue(ctx, a, st, mode, input, eventRef{})
	return x, err
}

// eventRef is what identifies a signed app event: the sender's delivery id
// and the event key (eventKey) of what its signature covers.
type eventRef struct {
	delivery, key, eventType string
}

// duplicateOf returns the run an event already started: one of the same
// delivery id or of the same event key (the same signed timestamp and
// body, replayed under another delivery id).
func (s *Service) duplicateOf(ctx context.Context, q store.Querier, agentID string, ev eventRef) (Run, bool, error) {
	where, args := []string{}, []any{agentID}
	if ev.delivery != "" {
		where, args = append(where, "delivery_id = ?"), append(args, ev.delivery)
	}
	if ev.key != "" {
		where, args = append(where, "event_key = ?"), append(args, ev.key)
	}
	if len(where) == 0 {
		return Run{}, false, nil
	}
	prev, err := s.st.runs(ctx, q, `agent_id = ? AND (`+strings.Join(where, " OR ")+`) ORDER BY seq LIMIT 1`, args...)
	if err != nil || len(prev) == 0 {
		return Run{}, false, err
	}
	return prev[0], true, nil
}

// enqueue is enqueueRun for a run that ev may have started already: a
// delivery id or event key seen before answers the first run (dup true)
// and queues nothing.
func (s *Service) enqueue(ctx context.Context, a Agent, st starter, mode, input string, ev eventRef) (Run, bool, error) {
	now := s.now()
	x := Run{ID: store.NewID("run"), AgentID: a.ID, Mode: mode, Status: RunQueued, Input: input, Steps: []Step{}, CreatedAt: now,
		EventType: ev.eventType, workspace: a.workspace, project: a.ProjectID, starter: st, eventKey: ev.key}
	dup := false
	err := s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		prev, seen, err := s.duplicateOf(ctx, tx, a.ID, ev)
		if err != nil {
			return err
		}
		if dup = seen; dup { // fn may run again after a serialization failure
			x = prev
			return nil
		}
		if c := queueCap(mode); c > 0 {
			waiting, err := s.st.count(ctx, tx, `SELECT count(*) FROM agent_runs WHERE agent_id = ? AND mode = ? AND status = 'queued'`, a.ID, mode)
			if err != nil {
				return err
			}
			if waiting >= c {
				return api.E(api.KindRateLimited, "queue_full", "at most %d %s runs may wait per agent and %d are waiting; try again once some have run", c, mode, waiting).
					With("limit", c).With("current", waiting)
			}
		}
		if err := s.st.insertRun(ctx, tx, x, ev.delivery, ""); err != nil {
			return err
		}
		_, err = s.d.Jobs.Enqueue(ctx, tx, jobRun, runPayload{Run: x.ID}, jobs.EnqueueOptions{Key: x.ID})
		return err
	})
	if err != nil && store.IsUniqueViolation(err) {
		// The same event committed meanwhile (the unique indexes on the
		// delivery id and the event key): answer its run.
		if prev, seen, derr := s.duplicateOf(ctx, s.d.DB, a.ID, ev); derr == nil && seen {
			return prev, true, nil
		}
	}
	if err != nil {
		return Run{}, false, err
	}
	if !dup {
		s.d.Jobs.Wake()
	}
	return x, dup, nil
}

// runJob starts one queued run when its agent is active and the plan has
// room; otherwise the run stays queued and a later kick or tick starts it.
func (s *Service) runJob(ctx context.Context, j jobs.Job) error {
	var p runPayload
	if err := json.Unmarshal(j.Payload, &p); err != nil {
		return jobs.Permanent(fmt.Errorf("agents: run payload: %w", err))
	}
	return s.startQueued(ctx, p.Run)
}

// startQueued claims and executes a queued run; it returns nil when the
// run is not (or no longer) startable.
func (s *Service) startQueued(ctx context.Context, runID string) error {
	x, err := s.st.run(ctx, s.d.DB, runID)
	if err != nil {
		if api.AsError(err).Kind == api.KindNotFound {
			return nil
		}
		return err
	}
	if x.Status != RunQueued {
		return nil
	}
	a, err := s.st.agent(ctx, s.d.DB, x.AgentID)
	if err != nil {
		if api.AsError(err).Kind == api.KindNotFound {
			return nil
		}
		return err
	}
	if a.Status == StatusPaused {
		return nil
	}
	claimed, err := s.claim(ctx, &x)
	if err != nil || !claimed {
		return err
	}
	timeout := s.cfg.BackgroundRunTime
	if err := s.execute(ctx, a, &x, []provider.Message{{Role: "user", Content: x.Input}}, timeout); err != nil {
		return err
	}
	if x.Status == RunFailed && (x.Mode == ModeSchedule || x.Mode == ModeEvent) && (x.StopReason == StopCredits || x.StopReason == StopSpendLimit || len(x.Steps) == 0) {
		s.st.setLastError(context.WithoutCancel(ctx), a.ID, x.Mode+": "+x.Output, s.now())
	}
	return nil
}

// claim moves x from queued to running if the plan's concurrency allows.
func (s *Service) claim(ctx context.Context, x *Run) (bool, error) {
	limit := plans.Of(s.d.Plans.Plan(ctx, x.workspace)).AgentConcurrentRuns
	now := s.now()
	s.admitMu.Lock()
	defer s.admitMu.Unlock()
	claimed := false
	err := s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		claimed = false // fn may run again after a serialization failure
		running, err := s.st.count(ctx, tx, `SELECT count(*) FROM agent_runs WHERE workspace_id = ? AND status = 'running'`, x.workspace)
		if err != nil || running >= limit {
			return err
		}
		claimed, err = s.st.claimRun(ctx, tx, x.ID, now)
		return err
	})
	if claimed {
		x.Status, x.StartedAt = RunRunning, &now
	}
	return claimed, err
}

// kick queues a start of the workspace's oldest waiting runs, as many as
// the plan has room for.
func (s *Service) kick(ctx context.Context, workspace string) {
	limit := plans.Of(s.d.Plans.Plan(ctx, workspace)).AgentConcurrentRuns
	running, err := s.st.count(ctx, s.d.DB, `SELECT count(*) FROM agent_runs WHERE workspace_id = ? AND status = 'running'`, workspace)
	if err != nil || running >= limit {
		return
	}
	rows, err := s.d.DB.QueryContext(ctx, `SELECT r.id FROM agent_runs r JOIN agents a ON a.id = r.agent_id
		WHERE r.workspace_id = ? AND r.status = 'queued' AND a.status = 'active' ORDER BY r.created_at, r.seq, r.id LIMIT ?`, workspace, limit-running)
	if err != nil {
		s.d.Logger.Warn("agents: kick", "workspace", workspace, "err", err)
		return
	}
	var ids []string
	for rows.Next() {
		var id string
		if rows.Scan(&id) == nil {
			ids = append(ids, id)
		}
	}
	rows.Close()
	for _, id := range ids {
		if _, err := s.d.Jobs.Enqueue(ctx, nil, jobRun, runPayload{Run: id}, jobs.EnqueueOptions{}); err != nil {
			s.d.Logger.Warn("agents: kick", "run", id, "err", err)
		}
	}
}

// tickJob fails runs running past StaleAfter, queues due schedule slots
// whose job is missing and starts waiting runs the plans have room for.
func (s *Service) tickJob(ctx context.Context, _ jobs.Job) error {
	_, err := s.Tick(ctx)
	return err
}

// TickResult says what a tick did.
type TickResult struct {
	Stale, Slots, Workspaces int
}

// Tick runs the periodic duties once (the agents.tick job).
func (s *Service) Tick(ctx context.Context) (TickResult, error) {
	var res TickResult
	now := s.now()
	stale, err := s.st.runs(ctx, s.d.DB, `status = 'running' AND started_at <> '' AND started_at < ?`, store.FormatTime(now.Add(-StaleAfter)))
	if err != nil {
		return res, err
	}
	for i := range stale {
		x := &stale[i]
		x.Output = "stopped: still running after 60 minutes; failed as stale"
		x.Status, x.StopReason, x.FinishedAt = RunFailed, StopStale, &now
		if x.StartedAt != nil {
			x.DurationMs = now.Sub(*x.StartedAt).Milliseconds()
		}
		ok, err := s.st.finishRun(ctx, x)
		if err != nil {
			return res, err
		}
		if ok {
			res.Stale++
			s.meterRun(ctx, *x)
			if x.keyID != "" {
				if err := s.d.Keys.RevokeRunKey(ctx, x.keyID); err != nil {
					s.d.Logger.Error("agents: revoke stale run key", "run", x.ID, "err", err)
				}
			}
		}
	}
	due, err := s.dueSchedules(ctx, now.Add(s.cfg.TickEvery))
	if err != nil {
		return res, err
	}
	for _, a := range due {
		if err := s.enqueueSlot(ctx, s.d.DB, a); err != nil {
			return res, err
		}
		res.Slots++
	}
	rows, err := s.d.DB.QueryContext(ctx, `SELECT DISTINCT workspace_id FROM agent_runs WHERE status = 'queued'`)
	if err != nil {
		return res, fmt.Errorf("agents: tick: %w", err)
	}
	var wss []string
	for rows.Next() {
		var ws string
		if rows.Scan(&ws) == nil {
			wss = append(wss, ws)
		}
	}
	rows.Close()
	for _, ws := range wss {
		s.kick(ctx, ws)
		res.Workspaces++
	}
	if res.Slots > 0 || res.Workspaces > 0 {
		s.d.Jobs.Wake()
	}
	return res, nil
}

// dueSchedules returns the agents whose next scheduled slot is before t.
func (s *Service) dueSchedules(ctx context.Context, t time.Time) ([]Agent, error) {
	rows, err := s.d.DB.QueryContext(ctx, `SELECT `+agentCols+` FROM agents WHERE schedule_cron <> '' AND schedule_next <> '' AND schedule_next <= ?`,
		store.FormatTime(t))
	if err != nil {
		return nil, fmt.Errorf("agents: due schedules: %w", err)
	}
	defer rows.Close()
	var out []Agent
	for rows.Next() {
		a, err := scanAgent(rows)
		if err != nil {
			return nil, fmt.Errorf("agents: due schedules: %w", err)
		}
		out = append(out, a)
	}
	return out, rows.Err()
}
