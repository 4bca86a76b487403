package agents

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
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
// the workers so that it starts at once when the plan allows. A delivery id
// seen before answers the first run (dup true) and queues nothing.
func (s *Service) enqueueRun(ctx context.Context, a Agent, st starter, mode, input, delivery, eventType, visitor string) (Run, error) {
	x, _, err := s.enqueue(ctx, a, st, mode, input, delivery, eventType, visitor)
	return x, err
}

func (s *Service) enqueue(ctx context.Context, a Agent, st starter, mode, input, delivery, eventType, visitor string) (Run, bool, error) {
	now := s.now()
	x := Run{ID: store.NewID("run"), AgentID: a.ID, Mode: mode, Status: RunQueued, Input: input, Steps: []Step{}, CreatedAt: now,
		EventType: eventType, workspace: a.workspace, project: a.ProjectID, starter: st}
	dup := false
	err := s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		dup = false // fn may run again after a serialization failure
		if delivery != "" {
			prev, err := s.st.runs(ctx, tx, `agent_id = ? AND delivery_id = ?`, a.ID, delivery)
			if err != nil {
				return err
			}
			if len(prev) > 0 {
				x, dup = prev[0], true
				return nil
			}
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
		if err := s.st.insertRun(ctx, tx, x, delivery, visitor); err != nil {
			return err
		}
		_, err := s.d.Jobs.Enqueue(ctx, tx, jobRun, runPayload{Run: x.ID}, jobs.EnqueueOptions{Key: x.ID})
		return err
	})
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
