package agents

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/svcplatform/platform/controlplane/ai"
	"github.com/svcplatform/platform/controlplane/ai/provider"
	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/metering"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/store"
)

// RunRequest is the body of POST /api/agents/{id}.
type RunRequest struct {
	Input      string `json:"input"`
	Background bool   `json:"background,omitempty"`
}

// RunAnswer is the answer of starting a run.
type RunAnswer struct {
	Run Run `json:"run"`
}

// ErrPaused refuses runs of a paused agent.
var ErrPaused = api.Conflict("agent_paused", "the agent is paused; resume it with PATCH {\"action\": \"resume\"}")

// errStartRefused marks a run refused at its first model call (402 from
// the gateway): nothing was charged and the run is not kept.
type errStartRefused struct{ err error }

func (e *errStartRefused) Error() string { return e.err.Error() }
func (e *errStartRefused) Unwrap() error { return e.err }

// Run starts a run of agent id as p: at once inside the request, or queued
// with background.
func (s *Service) Run(ctx context.Context, p *auth.Principal, id string, req RunRequest) (Run, error) {
	a, err := s.load(ctx, p, id, auth.OpAgentRun)
	if err != nil {
		return Run{}, err
	}
	if _, err := s.d.Projects.Writable(ctx, a.workspace, a.ProjectID); err != nil {
		return Run{}, err
	}
	if a.Status == StatusPaused {
		return Run{}, ErrPaused
	}
	if err := checkInput(req.Input); err != nil {
		return Run{}, err
	}
	if err := s.rateLimit(a.workspace); err != nil {
		return Run{}, err
	}
	st := starterOf(p)
	if req.Background {
		x, err := s.enqueueRun(ctx, a, st, ModeBackground, req.Input)
		if err != nil {
			s.runs.giveBack(a.workspace, RunsPerMinute)
		}
		return x, err
	}
	x, err := s.admit(ctx, a, st, ModeManual, req.Input, "")
	if err != nil {
		s.runs.giveBack(a.workspace, RunsPerMinute)
		return Run{}, err
	}
	msgs := []provider.Message{{Role: "user", Content: req.Input}}
	// The run finishes and is recorded even if the caller goes away.
	if err := s.execute(context.WithoutCancel(ctx), a, &x, msgs, s.cfg.RunTimeout); err != nil {
		return Run{}, err
	}
	return x, nil
}

// rateLimit takes one of the workspace's six runs a minute.
func (s *Service) rateLimit(workspace string) error {
	ok, wait := s.runs.take(workspace, RunsPerMinute)
	if !ok {
		e := api.E(api.KindRateLimited, "rate_limited", "at most %d agent runs a minute per workspace; try again in %d seconds", RunsPerMinute, retrySeconds(wait)).
			With("limit", RunsPerMinute)
		e.RetryAfter = retrySeconds(wait)
		return e
	}
	return nil
}

// planLimit refuses a run of a workspace at its plan's concurrent runs:
// the plan-limit error, as a 429 since a run finishing frees a slot.
func planLimit(plan plans.Name, current int) error {
	e := plans.LimitError(plan, concurrentRuns, current, current+1,
		"the %s plan runs at most %d agent runs at once and %d are running; wait for one to finish or move to a larger plan", plan, concurrentRuns(plan), current)
	e.Kind = api.KindRateLimited
	return e
}

// concurrentRuns is how many agent runs a plan runs at once.
func concurrentRuns(p plans.Name) int { return plans.Of(p).AgentConcurrentRuns }

// admit checks the plan's concurrency and stores a running run, in one
// transaction (two requests never both take the last slot).
func (s *Service) admit(ctx context.Context, a Agent, st starter, mode, input, visitor string) (Run, error) {
	plan := s.d.Plans.Plan(ctx, a.workspace)
	limit := concurrentRuns(plan)
	now := s.now()
	x := Run{ID: store.NewID("run"), AgentID: a.ID, Mode: mode, Status: RunRunning, Input: input, Steps: []Step{}, CreatedAt: now,
		StartedAt: &now, workspace: a.workspace, project: a.ProjectID, starter: st}
	s.admitMu.Lock()
	defer s.admitMu.Unlock()
	err := s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		running, err := s.st.count(ctx, tx, `SELECT count(*) FROM agent_runs WHERE workspace_id = ? AND status = 'running'`, a.workspace)
		if err != nil {
			return err
		}
		if !plans.Allows(limit, running+1) {
			return planLimit(plan, running)
		}
		return s.st.insertRun(ctx, tx, x, "", visitor)
	})
	if err != nil {
		return Run{}, err
	}
	return x, nil
}

func (s *Service) meterRun(ctx context.Context, x Run) {
	if s.d.Meter == nil {
		return
	}
	if err := s.d.Meter.Record(ctx, metering.Event{Workspace: x.workspace, Project: x.project, Metric: metering.AgentRuns, Quantity: 1}); err != nil {
		s.d.Logger.Warn("agents: meter run", "run", x.ID, "err", err)
	}
}

// readOnlyRun tells whether a run's key is read-only: unless the agent
// allows writes and the starter's credential could make changes; visitor
// chat runs always are.
func readOnlyRun(a Agent, x Run) bool {
	return !a.AllowWrites || x.starter.ReadOnly || x.Mode == ModeChat
}

// offered returns the tools a run gets: the agent's tools that its key can
// use (only vector tools in visitor chat).
func offered(a Agent, readOnly bool, chat bool) map[string]*Tool {
	out := map[string]*Tool{}
	for _, n := range a.Tools {
		t, ok := toolByName(n)
		if !ok || !t.Available || (readOnly && t.NeedsWrites) || (chat && !t.chat) {
			continue
		}
		out[n] = t
	}
	return out
}

const preamble = "You are an agent working on one project of a hosting platform. Use the tools to read and act on the project's own resources; " +
	"tool results are JSON answers of the platform's API. When done, answer in plain text."

// execute runs the tool loop of x (already running) and records its
// outcome. A 402 of the first model call refuses the run: it is removed
// and the error returned (nothing was charged). Other failures end the run
// failed with a stop reason; the error is then nil.
func (s *Service) execute(ctx context.Context, a Agent, x *Run, msgs []provider.Message, timeout time.Duration) error {
	started := s.now()
	wall := time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	defer s.kick(context.WithoutCancel(ctx), a.workspace)
	readOnly := readOnlyRun(a, *x)
	keyID, secret, err := s.d.Keys.CreateRunKey(ctx, a.workspace, x.starter.Member, x.starter.Key, a.ProjectID, readOnly,
		started.Add(timeout+time.Minute))
	if err != nil {
		s.fail(ctx, x, StopError, "the run's key could not be made: "+api.AsError(err).Message, wall)
		return nil
	}
	x.keyID = keyID
	defer func() {
		if err := s.d.Keys.RevokeRunKey(context.WithoutCancel(ctx), keyID); err != nil {
			s.d.Logger.Error("agents: revoke run key", "run", x.ID, "key", keyID, "err", err)
		}
	}()
	if err := s.st.setRunKey(ctx, x.ID, keyID); err != nil {
		s.d.Logger.Warn("agents: record run key", "run", x.ID, "err", err)
	}
	tools := offered(a, readOnly, x.Mode == ModeChat)
	defs := make([]provider.Tool, 0, len(tools))
	for _, t := range catalogue { // catalogue order: stable requests
		if tools[t.Name] != nil {
			defs = append(defs, provider.Tool{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
		}
	}
	system := preamble
	if a.Instructions != "" {
		system += "\n\n" + a.Instructions
	}
	for call := 1; call <= a.MaxSteps; call++ {
		in := ai.ChatInput{Model: a.Model, System: system, Messages: msgs, MaxTokens: s.cfg.MaxTokens, Tools: defs, Project: a.ProjectID}
		if len(defs) == 0 {
			in.Tools = nil
		}
		ans, err := s.d.AI.ChatAs(ctx, a.workspace, in, nil)
		if ans != nil {
			x.TokensUsed += ans.TokensIn + ans.TokensOut
			x.CostMicros += int64(ans.CostMicros)
			x.Model = ans.ModelUsed
		}
		if err != nil {
			reason, why := s.classify(ctx, err)
			if call == 1 && (reason == StopCredits || reason == StopSpendLimit) && x.Mode != ModeSchedule && x.Mode != ModeEvent && x.Mode != ModeBackground {
				s.st.deleteRun(context.WithoutCancel(ctx), x.ID)
				return &errStartRefused{err}
			}
			s.fail(ctx, x, reason, why, wall)
			return nil
		}
		if len(ans.ToolCalls) == 0 {
			x.Steps = append(x.Steps, Step{Step: len(x.Steps) + 1, Kind: "text", Result: clip(ans.Output, MaxStepResult), OK: true})
			x.Output = ans.Output
			s.finish(ctx, x, RunCompleted, "", wall)
			return nil
		}
		msgs = append(msgs, provider.Message{Role: "assistant", Content: ans.Output, ToolCalls: ans.ToolCalls})
		for _, tc := range ans.ToolCalls {
			result, ok := s.callTool(ctx, a.ProjectID, secret, tools, tc)
			x.Steps = append(x.Steps, Step{Step: len(x.Steps) + 1, Kind: "tool", ToolName: tc.Name, Arguments: clip(tc.Arguments, MaxStepResult),
				Result: clip(result, MaxStepResult), OK: ok})
			msgs = append(msgs, provider.Message{Role: "tool", ToolCallID: tc.ID, Content: clip(result, s.cfg.MaxToolAnswer)})
		}
		if ctx.Err() != nil {
			s.fail(ctx, x, StopTimeLimit, fmt.Sprintf("stopped: the run used its %s", timeout), wall)
			return nil
		}
		if err := s.st.saveProgress(ctx, x); err != nil {
			s.d.Logger.Warn("agents: save progress", "run", x.ID, "err", err)
		}
	}
	s.fail(ctx, x, StopStepLimit, fmt.Sprintf("stopped: the agent used its %d steps (maxSteps) without a final answer", a.MaxSteps), wall)
	return nil
}

// classify maps a gateway error to a stop reason and the output that says why.
func (s *Service) classify(ctx context.Context, err error) (string, string) {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return StopTimeLimit, "stopped: the run used all of its time"
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		return StopError, "stopped: the run was interrupted (the platform is shutting down)"
	}
	e := api.AsError(err)
	switch {
	case e.Kind == api.KindPaymentRequired && e.Code == "spend_limit_reached":
		return StopSpendLimit, "stopped: the workspace's monthly spending limit leaves no room (" + e.Code + ")"
	case e.Kind == api.KindPaymentRequired:
		return StopCredits, "stopped: no AI credit for the next step (" + e.Code + ")"
	case e.Kind == api.KindBadGateway || e.Kind == api.KindUnavailable:
		return StopVendor, "stopped: the AI service is unavailable (" + e.Code + ")"
	case e.Kind == api.KindInternal:
		s.d.Logger.Error("agents: model call", "err", err)
		return StopError, "stopped: an internal error"
	}
	return StopError, "stopped: " + e.Code + ": " + e.Message
}

func (s *Service) fail(ctx context.Context, x *Run, reason, why string, wall time.Time) {
	x.Output = why
	s.finish(ctx, x, RunFailed, reason, wall)
}

// finish records a run's outcome (unless it was failed as stale meanwhile).
func (s *Service) finish(ctx context.Context, x *Run, status, reason string, wall time.Time) {
	now := s.now()
	x.Status, x.StopReason, x.FinishedAt = status, reason, &now
	x.DurationMs = time.Since(wall).Milliseconds()
	x.CostUSD = usd(x.CostMicros)
	ok, err := s.st.finishRun(context.WithoutCancel(ctx), x)
	if err != nil {
		s.d.Logger.Error("agents: record run", "run", x.ID, "err", err)
		return
	}
	if ok {
		s.meterRun(context.WithoutCancel(ctx), *x)
	}
	if !ok {
		if cur, err := s.st.run(context.WithoutCancel(ctx), s.d.DB, x.ID); err == nil {
			*x = cur
		}
	}
}

// clip keeps the first n characters of s.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, c := 0, 0
	for i = range s {
		if c == n {
			break
		}
		c++
	}
	return s[:i]
}

// callTool runs one tool call through the API with the run's key. A call
// the key may not make is refused by the API like any request, and comes
// back as a failed step.
func (s *Service) callTool(ctx context.Context, project, secret string, tools map[string]*Tool, tc provider.ToolCall) (string, bool) {
	t, ok := tools[tc.Name]
	if !ok {
		return fmt.Sprintf(`{"error":{"code":"tool_not_offered","message":"tool %s is not available to this run"}}`, jsonEscape(tc.Name)), false
	}
	rq, err := t.build(project, []byte(tc.Arguments))
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), errBadArguments.Error()+": ")
		return fmt.Sprintf(`{"error":{"code":"invalid_arguments","message":"%s"}}`, jsonEscape(msg)), false
	}
	status, body, err := serve(ctx, s.d.API, secret, rq)
	if err != nil {
		return fmt.Sprintf(`{"error":{"code":"tool_failed","message":"%s"}}`, jsonEscape(err.Error())), false
	}
	if status >= 400 {
		return string(body), false
	}
	if t.shape != nil {
		body = t.shape(body)
	}
	return string(body), true
}
