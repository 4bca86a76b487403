package agents

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/jobs"
	"github.com/svcplatform/platform/controlplane/store"
)

// PatchRequest is the body of PATCH /api/agents/{id}: any of the agent's
// fields, an action (pause, resume), or one start mode's settings. Absent
// members change nothing.
type PatchRequest struct {
	Name         *string   `json:"name,omitempty"`
	Model        *string   `json:"model,omitempty"`
	Instructions *string   `json:"instructions,omitempty"`
	Tools        *[]string `json:"tools,omitempty"`
	MaxSteps     *int      `json:"maxSteps,omitempty"`
	AllowWrites  *bool     `json:"allowWrites,omitempty"`
	Trigger      *Trigger  `json:"trigger,omitempty"`
	Purpose      *string   `json:"purpose,omitempty"`
	// Action is pause or resume.
	Action string `json:"action,omitempty"`
	// Schedule is cron text, {cron, input}, or null to remove it.
	Schedule json.RawMessage `json:"schedule,omitempty"`
	// Events is true (turn on; answers the secret once), "rotate" or false.
	Events json.RawMessage `json:"events,omitempty"`
	// Chat is true, {allowedOrigins, dailyLimit}, "rotate" or false.
	Chat json.RawMessage `json:"chat,omitempty"`
}

// ScheduleRequest is the object form of a schedule.
type ScheduleRequest struct {
	Cron  string `json:"cron"`
	Input string `json:"input,omitempty"`
}

// ChatRequest is the object form of chat settings.
type ChatRequest struct {
	AllowedOrigins []string `json:"allowedOrigins,omitempty"`
	DailyLimit     *int     `json:"dailyLimit,omitempty"`
}

// SecretPrefix starts every events signing secret; ChatPrefix every chat id.
const (
	SecretPrefix = "svcwhsec_"
	ChatPrefix   = "svcchat_"
)

func randomToken(prefix string, n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return prefix + base64.RawURLEncoding.EncodeToString(b)
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

func (s *Service) secretAAD(id string) []byte { return []byte("agent-events:" + id) }

// activeStart names the start mode that is on other than except ("" when none).
func activeStart(a Agent, except string) string {
	switch {
	case except != ModeSchedule && a.schedule.Cron != "":
		return "schedule"
	case except != ModeEvent && len(a.secret) > 0:
		return "events"
	case except != ModeChat && a.chat.ID != "":
		return "chat"
	}
	return ""
}

func startConflict(on, want string) error {
	return api.Conflict("start_mode_active", "%s is already this agent's start; only one of schedule, events and chat is active at a time: turn %s off first", on, on).
		With("active", on)
}

// patchResult gathers what a patch's parts did: the answer's extras (the
// events secret, shown once; the chat settings), the audit summary, and
// whether a new schedule slot must be queued.
type patchResult struct {
	ans         AgentAnswer
	summary     []string
	enqueueSlot bool
}

func (r *patchResult) did(what string) { r.summary = append(r.summary, what) }

// Patch changes an agent: fields, pause/resume, schedule, events or chat.
// Each part is checked in that order and a refusal stores nothing; what
// passes is saved with its audit row (and a schedule's first slot) in one
// transaction.
func (s *Service) Patch(ctx context.Context, p *auth.Principal, id string, req PatchRequest) (AgentAnswer, error) {
	a, err := s.load(ctx, p, id, auth.OpAgentWrite)
	if err != nil {
		return AgentAnswer{}, err
	}
	if _, err := s.d.Projects.Writable(ctx, a.workspace, a.ProjectID); err != nil {
		return AgentAnswer{}, err
	}
	fields := req.hasFields()
	if !fields && req.Action == "" && req.Schedule == nil && req.Events == nil && req.Chat == nil {
		return AgentAnswer{}, api.Invalid("nothing to change: send fields, action, schedule, events or chat")
	}
	var res patchResult
	now := s.now()
	if fields {
		if err := s.patchFields(&a, req, &res); err != nil {
			return AgentAnswer{}, err
		}
	}
	if err := patchAction(&a, req.Action, &res); err != nil {
		return AgentAnswer{}, err
	}
	if req.Schedule != nil {
		if err := s.patchSchedule(p, &a, req.Schedule, now, &res); err != nil {
			return AgentAnswer{}, err
		}
	}
	if req.Events != nil {
		if err := s.patchEvents(p, &a, req.Events, &res); err != nil {
			return AgentAnswer{}, err
		}
	}
	if req.Chat != nil {
		if err := s.patchChat(p, &a, req.Chat, &res.summary); err != nil {
			return AgentAnswer{}, err
		}
		if a.chat.ID != "" {
			v := chatView(a)
			res.ans.Chat = &v
		}
	}
	a.UpdatedAt = now
	if err := s.savePatch(ctx, p, a, &res); err != nil {
		return AgentAnswer{}, err
	}
	res.ans.Agent = a
	return res.ans, nil
}

// hasFields reports whether the request changes any of the agent's fields.
func (req PatchRequest) hasFields() bool {
	return req.Name != nil || req.Model != nil || req.Instructions != nil || req.Tools != nil || req.MaxSteps != nil ||
		req.AllowWrites != nil || req.Trigger != nil || req.Purpose != nil
}

// patchFields sets the fields the request carries and validates the
// result.
func (s *Service) patchFields(a *Agent, req PatchRequest, res *patchResult) error {
	set(&a.Name, req.Name)
	set(&a.Model, req.Model)
	set(&a.Instructions, req.Instructions)
	set(&a.Tools, req.Tools)
	set(&a.MaxSteps, req.MaxSteps)
	set(&a.AllowWrites, req.AllowWrites)
	set(&a.Trigger, req.Trigger)
	set(&a.Purpose, req.Purpose)
	if err := s.validate(a); err != nil {
		return err
	}
	res.did("changed settings")
	return nil
}

// patchAction pauses or resumes the agent ("" does nothing).
func patchAction(a *Agent, action string, res *patchResult) error {
	switch action {
	case "":
	case "pause":
		a.Status = StatusPaused
		res.did("paused")
	case "resume":
		a.Status = StatusActive
		res.did("resumed")
	default:
		return api.Invalid("action must be pause or resume").With("field", "action")
	}
	return nil
}

// patchSchedule removes the schedule (null) or sets it from cron text or
// {cron, input}: refused while another start mode is on, or when the
// caller could not run the agent; a new schedule's first slot is queued
// when the patch is saved.
func (s *Service) patchSchedule(p *auth.Principal, a *Agent, raw json.RawMessage, now time.Time, res *patchResult) error {
	if isNull(raw) {
		a.schedule = scheduleRow{}
		res.did("removed the schedule")
		return nil
	}
	var sr ScheduleRequest
	var text string
	if json.Unmarshal(raw, &text) == nil {
		sr.Cron = text
	} else if err := api.DecodeBytes(raw, &sr, false); err != nil {
		return api.Invalid("schedule must be cron text, {cron, input} or null").With("field", "schedule")
	}
	if on := activeStart(*a, ModeSchedule); on != "" {
		return startConflict(on, "schedule")
	}
	sched, spec, err := ParseSchedule(sr.Cron)
	if err != nil {
		return err
	}
	if sr.Input != "" {
		if err := checkInput(sr.Input); err != nil {
			return err
		}
	}
	if err := s.canStart(p, *a); err != nil {
		return err
	}
	a.schedule = scheduleRow{Cron: spec, Input: sr.Input, Next: sched.Next(now)}
	a.setup = starterOf(p)
	res.enqueueSlot = true
	res.did("set the schedule " + spec)
	return nil
}

// patchEvents turns signed app events off, on (a new secret, answered
// once) or rotates the secret.
func (s *Service) patchEvents(p *auth.Principal, a *Agent, raw json.RawMessage, res *patchResult) error {
	on, rotate, err := switchValue(raw, "events")
	if err != nil {
		return err
	}
	if !on {
		a.secret = nil
		res.did("turned events off")
		return nil
	}
	if o := activeStart(*a, ModeEvent); o != "" {
		return startConflict(o, "events")
	}
	if err := s.canStart(p, *a); err != nil {
		return err
	}
	if len(a.secret) != 0 && !rotate {
		return api.Conflict("events_on", "events are already on; send {\"events\": \"rotate\"} for a new secret (the current one is not shown again)")
	}
	res.ans.Secret = randomToken(SecretPrefix, 24)
	a.secret = s.d.Sealer.Seal([]byte(res.ans.Secret), s.secretAAD(a.ID))
	res.did("issued an events secret")
	a.setup = starterOf(p)
	return nil
}

// savePatch stores the changed agent, queues a new schedule's first slot
// and records the audit row, in one transaction.
func (s *Service) savePatch(ctx context.Context, p *auth.Principal, a Agent, res *patchResult) error {
	err := s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		if err := s.st.saveAgent(ctx, tx, a); err != nil {
			if store.IsUniqueViolation(err) {
				return api.Conflict("conflict", "try again")
			}
			return err
		}
		if res.enqueueSlot {
			if err := s.enqueueSlot(ctx, tx, a); err != nil {
				return err
			}
		}
		return s.d.Audit.Record(ctx, tx, s.event(p, a, "agent.update", a.Name+": "+strings.Join(res.summary, ", ")))
	})
	if err != nil {
		return err
	}
	if res.enqueueSlot {
		s.d.Jobs.Wake()
	}
	return nil
}

func set[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// starterOf is the access a start mode's runs are cut from.
func starterOf(p *auth.Principal) starter {
	return starter{Member: p.MemberID, Key: p.KeyID, ReadOnly: p.ReadOnly}
}

// canStart refuses setting up a start mode for a caller who could not run
// the agent itself.
func (s *Service) canStart(p *auth.Principal, a Agent) error {
	return auth.Authorize(p, auth.OpAgentRun, a.ProjectID)
}

// switchValue reads true, false or "rotate".
func switchValue(raw json.RawMessage, field string) (on, rotate bool, err error) {
	var b bool
	if json.Unmarshal(raw, &b) == nil {
		return b, false, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil && s == "rotate" {
		return true, true, nil
	}
	return false, false, api.Invalid("%s must be true, \"rotate\" or false", field).With("field", field)
}

func (s *Service) patchChat(p *auth.Principal, a *Agent, raw json.RawMessage, summary *[]string) error {
	var settings *ChatRequest
	on, rotate, err := switchValue(raw, "chat")
	if err != nil {
		var cr ChatRequest
		if derr := api.DecodeBytes(raw, &cr, false); derr != nil {
			return api.Invalid("chat must be true, {allowedOrigins, dailyLimit}, \"rotate\" or false").With("field", "chat")
		}
		on, settings = true, &cr
	}
	if !on {
		a.chat = chatRow{DailyLimit: a.chat.DailyLimit}
		*summary = append(*summary, "turned chat off")
		return nil
	}
	if o := activeStart(*a, ModeChat); o != "" {
		return startConflict(o, "chat")
	}
	if err := s.canStart(p, *a); err != nil {
		return err
	}
	if settings != nil {
		if len(settings.AllowedOrigins) > MaxOrigins {
			return api.Invalid("at most %d allowedOrigins", MaxOrigins).With("field", "allowedOrigins")
		}
		origins := make([]string, 0, len(settings.AllowedOrigins))
		for _, o := range settings.AllowedOrigins {
			n, err := normalOrigin(o)
			if err != nil {
				return err
			}
			origins = append(origins, n)
		}
		a.chat.Origins = origins
		if settings.DailyLimit != nil {
			if *settings.DailyLimit < 1 || *settings.DailyLimit > MaxChatDailyLimit {
				return api.Invalid("dailyLimit must be 1 to %d (default %d)", MaxChatDailyLimit, DefaultChatDailyLimit).With("field", "dailyLimit")
			}
			a.chat.DailyLimit = *settings.DailyLimit
		}
	}
	if a.chat.DailyLimit == 0 {
		a.chat.DailyLimit = DefaultChatDailyLimit
	}
	if a.chat.ID == "" || rotate {
		a.chat.ID = randomToken(ChatPrefix, 18)
		*summary = append(*summary, "issued a chat id")
	} else {
		*summary = append(*summary, "changed chat settings")
	}
	a.setup = starterOf(p)
	return nil
}

// normalOrigin checks an allowed origin (scheme://host[:port]) and
// returns it in canonical form.
func normalOrigin(o string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(o))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		return "", api.Invalid("allowedOrigins: %q is not an origin such as https://example.com", o).With("field", "allowedOrigins")
	}
	return strings.ToLower(u.Scheme + "://" + u.Host), nil
}

// enqueueSlot puts the agent's next scheduled slot on the job queue, in tx.
func (s *Service) enqueueSlot(ctx context.Context, q store.Querier, a Agent) error {
	if a.schedule.Cron == "" || a.schedule.Next.IsZero() {
		return nil
	}
	slot := slotPayload{Agent: a.ID, Slot: a.schedule.Next}
	_, err := s.d.Jobs.Enqueue(ctx, q, jobSchedule, slot, jobs.EnqueueOptions{RunAt: a.schedule.Next, Key: a.ID + "@" + slot.Slot.UTC().Format("20060102T1504")})
	if err != nil {
		return fmt.Errorf("agents: enqueue schedule slot: %w", err)
	}
	return nil
}
