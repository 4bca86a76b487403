package agents

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/svcplatform/platform/controlplane/ai"
	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/controlplane/store"
)

// AgentAnswer is the answer of create and change: the agent, and the
// events secret or chat settings when a change just made them.
type AgentAnswer struct {
	Agent Agent `json:"agent"`
	// Secret is the events signing secret, shown once.
	Secret string    `json:"secret,omitempty"`
	Chat   *ChatView `json:"chat,omitempty"`
}

// AgentDetail is the answer of GET /api/agents/{id}.
type AgentDetail struct {
	Agent    Agent         `json:"agent"`
	Runs     []Run         `json:"runs"`
	Schedule *ScheduleView `json:"schedule"`
	Events   EventsView    `json:"events"`
	Chat     ChatView      `json:"chat"`
}

// ScheduleView is an agent's schedule: its next run and what the last
// scheduled run did.
type ScheduleView struct {
	Cron    string   `json:"cron"`
	Input   string   `json:"input"`
	NextRun *string  `json:"next_run"`
	Last    *LastRun `json:"last"`
}

// LastRun is what the last run of a start mode did.
type LastRun struct {
	RunID      string `json:"run_id"`
	Status     string `json:"status"`
	StopReason string `json:"stop_reason"`
	At         string `json:"at"`
}

// EventsView is whether signed app events start runs, and where to send them.
type EventsView struct {
	Enabled bool   `json:"enabled"`
	URL     string `json:"url,omitempty"`
}

// ChatView is an agent's visitor chat settings.
type ChatView struct {
	Enabled        bool     `json:"enabled"`
	ID             string   `json:"id,omitempty"`
	URL            string   `json:"url,omitempty"`
	AllowedOrigins []string `json:"allowedOrigins"`
	DailyLimit     int      `json:"dailyLimit"`
}

// AgentList is the answer of GET /api/projects/{id}/agents.
type AgentList struct {
	Agents []Agent `json:"agents"`
}

func (s *Service) checkModel(model string) error {
	if err := checkText("model", model, MaxName, true); err != nil {
		return err
	}
	switch strings.ToLower(model) {
	case ai.Router, "auto":
		return nil
	}
	if s.d.Models != nil && !s.d.Models(model) {
		return api.E(api.KindInvalid, "unknown_model", "model %q is not a chat model of the AI gateway; GET /api/ai/chat lists them", model).With("field", "model")
	}
	return nil
}

// validate checks every field of a (create or merged change).
func (s *Service) validate(a *Agent) error {
	a.Name = strings.TrimSpace(a.Name)
	if err := checkText("name", a.Name, MaxName, true); err != nil {
		return err
	}
	if err := s.checkModel(a.Model); err != nil {
		return err
	}
	if err := checkText("instructions", a.Instructions, MaxInstructions, false); err != nil {
		return err
	}
	if err := checkSteps(a.MaxSteps); err != nil {
		return err
	}
	if err := checkTrigger(&a.Trigger); err != nil {
		return err
	}
	if err := checkText("purpose", a.Purpose, MaxPurpose, false); err != nil {
		return err
	}
	tools, err := checkTools(a.Tools, a.AllowWrites)
	if err != nil {
		return err
	}
	a.Tools = tools
	return nil
}

// Create makes an agent in a project.
func (s *Service) Create(ctx context.Context, p *auth.Principal, projectID string, req CreateRequest) (Agent, error) {
	if _, err := s.d.Projects.Writable(ctx, p.WorkspaceID, projectID); err != nil {
		return Agent{}, err
	}
	a, err := s.newAgent(p.WorkspaceID, projectID, req)
	if err != nil {
		return Agent{}, err
	}
	err = s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		if err := s.st.insertAgent(ctx, tx, a); err != nil {
			return err
		}
		return s.d.Audit.Record(ctx, tx, s.event(p, a, "agent.create", "created agent "+a.Name))
	})
	return a, err
}

func (s *Service) newAgent(workspace, projectID string, req CreateRequest) (Agent, error) {
	now := s.now()
	a := Agent{ID: store.NewID("agt"), workspace: workspace, ProjectID: projectID, Name: req.Name, Model: req.Model,
		Instructions: req.Instructions, Tools: req.Tools, MaxSteps: DefaultSteps, AllowWrites: req.AllowWrites,
		Trigger: Trigger{Kind: "manual"}, Purpose: req.Purpose, Status: StatusActive, CreatedAt: now, UpdatedAt: now}
	if a.Tools == nil {
		a.Tools = []string{}
	}
	if req.MaxSteps != nil {
		a.MaxSteps = *req.MaxSteps
	}
	if req.Trigger != nil {
		a.Trigger = *req.Trigger
	}
	a.chat.DailyLimit = DefaultChatDailyLimit
	if err := s.validate(&a); err != nil {
		return Agent{}, err
	}
	return a, nil
}

func (s *Service) event(p *auth.Principal, a Agent, action, summary string) audit.Event {
	return audit.Event{Workspace: a.workspace, Actor: p, Action: action, Category: audit.CategorySettings, TargetType: "agent",
		TargetID: a.ID, ProjectID: a.ProjectID, Summary: summary}
}

// load returns the caller's workspace's agent id after checking op on its
// project (a key limited to another project gets 403).
func (s *Service) load(ctx context.Context, p *auth.Principal, id string, op auth.Op) (Agent, error) {
	a, err := s.st.agent(ctx, s.d.DB, id)
	if err != nil {
		return a, err
	}
	if a.workspace != p.WorkspaceID {
		return Agent{}, errAgentNotFound
	}
	if err := auth.Authorize(p, op, a.ProjectID); err != nil {
		return Agent{}, err
	}
	return a, nil
}

// List returns a project's agents.
func (s *Service) List(ctx context.Context, p *auth.Principal, projectID string) ([]Agent, error) {
	if _, err := s.d.Projects.Get(ctx, p.WorkspaceID, projectID); err != nil {
		return nil, err
	}
	rows, err := s.d.DB.QueryContext(ctx, `SELECT `+agentCols+` FROM agents WHERE project_id = ? ORDER BY created_at`, projectID)
	if err != nil {
		return nil, fmt.Errorf("agents: list: %w", err)
	}
	defer rows.Close()
	out := []Agent{}
	for rows.Next() {
		a, err := scanAgent(rows)
		if err != nil {
			return nil, fmt.Errorf("agents: list: %w", err)
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// Get returns an agent with its 20 most recent runs, schedule, events and
// chat settings.
func (s *Service) Get(ctx context.Context, p *auth.Principal, id string) (AgentDetail, error) {
	a, err := s.load(ctx, p, id, auth.OpAgentRead)
	if err != nil {
		return AgentDetail{}, err
	}
	return s.detail(ctx, a)
}

func (s *Service) detail(ctx context.Context, a Agent) (AgentDetail, error) {
	runs, err := s.st.runs(ctx, s.d.DB, `agent_id = ? ORDER BY created_at DESC, seq DESC LIMIT ?`, a.ID, RecentRuns)
	if err != nil {
		return AgentDetail{}, err
	}
	d := AgentDetail{Agent: a, Runs: runs, Events: EventsView{Enabled: len(a.secret) > 0}, Chat: chatView(a)}
	if d.Events.Enabled {
		d.Events.URL = "/api/agents/" + a.ID + "/events"
	}
	if a.schedule.Cron != "" {
		sv := &ScheduleView{Cron: a.schedule.Cron, Input: a.schedule.Input}
		if !a.schedule.Next.IsZero() {
			n := store.FormatTime(a.schedule.Next)
			sv.NextRun = &n
		}
		last, err := s.st.runs(ctx, s.d.DB, `agent_id = ? AND mode = 'schedule' ORDER BY created_at DESC LIMIT 1`, a.ID)
		if err != nil {
			return AgentDetail{}, err
		}
		if len(last) == 1 {
			sv.Last = &LastRun{RunID: last[0].ID, Status: last[0].Status, StopReason: last[0].StopReason, At: store.FormatTime(last[0].CreatedAt)}
		}
		d.Schedule = sv
	}
	return d, nil
}

func chatView(a Agent) ChatView {
	v := ChatView{Enabled: a.chat.ID != "", AllowedOrigins: a.chat.Origins, DailyLimit: a.chat.DailyLimit}
	if v.AllowedOrigins == nil {
		v.AllowedOrigins = []string{}
	}
	if v.Enabled {
		v.ID, v.URL = a.chat.ID, "/api/agents/chat/"+a.chat.ID
	}
	return v
}

// Delete removes an agent and its runs.
func (s *Service) Delete(ctx context.Context, p *auth.Principal, id string) error {
	a, err := s.load(ctx, p, id, auth.OpAgentWrite)
	if err != nil {
		return err
	}
	return s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM agents WHERE id = ?`, a.ID); err != nil {
			return fmt.Errorf("agents: delete %s: %w", a.ID, err)
		}
		return s.d.Audit.Record(ctx, tx, s.event(p, a, "agent.delete", "deleted agent "+a.Name))
	})
}

// Dependent is the area's part in deleting a project: its agents and runs go.
func (s *Service) Dependent() projects.Dependent { return dependent{s} }

type dependent struct{ s *Service }

func (d dependent) Name() string { return "agents" }

func (d dependent) Blockers(context.Context, string) ([]projects.Blocker, error) { return nil, nil }

func (d dependent) Remove(ctx context.Context, projectID string) error {
	if _, err := d.s.d.DB.ExecContext(ctx, `DELETE FROM agents WHERE project_id = ?`, projectID); err != nil {
		return fmt.Errorf("agents: remove agents of %s: %w", projectID, err)
	}
	return nil
}

// Service implements projects.Counter: the key of the services object.
func (s *Service) Service() string { return "agents" }

// Count implements projects.Counter.
func (s *Service) Count(ctx context.Context, projectID string) (int, error) {
	return s.st.count(ctx, s.d.DB, `SELECT count(*) FROM agents WHERE project_id = ?`, projectID)
}
