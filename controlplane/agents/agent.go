package agents

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/svcplatform/platform/controlplane/api"
)

// The specification's limits of the area.
const (
	// MaxInstructions is the most characters of an agent's instructions.
	MaxInstructions = 16_000
	// MinSteps, MaxSteps and DefaultSteps bound maxSteps.
	MinSteps, MaxSteps, DefaultSteps = 1, 24, 8
	// MaxInput is the most characters of a run's input.
	MaxInput = 32_000
	// RunsPerMinute is how many runs a workspace may start a minute.
	RunsPerMinute = 6
	// MaxQueued is how many background runs may wait per agent.
	MaxQueued = 20
	// MaxEventBody is the most bytes of a signed app event.
	MaxEventBody = 16 << 10
	// EventsPerMinute is how many events an agent takes a minute.
	EventsPerMinute = 30
	// MaxEventsQueued is how many event runs may wait per agent.
	MaxEventsQueued = 100
	// ChatPerMinute is how many chat messages one visitor address may send
	// a minute.
	ChatPerMinute = 10
	// DefaultChatDailyLimit is the default of chat runs a day per agent.
	DefaultChatDailyLimit = 200
	// MaxChatDailyLimit bounds dailyLimit (ours).
	MaxChatDailyLimit = 100_000
	// ChatRunTime is the time a visitor chat run has.
	ChatRunTime = 60 * time.Second
	// BackgroundRunTime is the time a scheduled, event or background run has.
	BackgroundRunTime = 5 * time.Minute
	// MinScheduleGap is the closest two scheduled runs may be.
	MinScheduleGap = 10 * time.Minute
	// StaleAfter is when a run still running is failed as stale.
	StaleAfter = 60 * time.Minute
	// MaxStepResult is the most characters of a step's result kept.
	MaxStepResult = 4_000
	// RecentRuns is how many runs the agent read returns.
	RecentRuns = 20
	// SignatureTolerance is how far an event's timestamp may be from now.
	SignatureTolerance = 300 * time.Second
	// MaxName is the most characters of a name (ours).
	MaxName = 100
	// MaxPurpose is the most characters of a purpose or trigger label (ours).
	MaxPurpose = 1_000
	// MaxOrigins is the most allowedOrigins of a chat (ours).
	MaxOrigins = 20
)

// Agent statuses.
const (
	StatusActive = "active"
	StatusPaused = "paused"
)

// Run statuses and start modes.
const (
	RunQueued    = "queued"
	RunRunning   = "running"
	RunCompleted = "completed"
	RunFailed    = "failed"

	ModeManual     = "manual"
	ModeBackground = "background"
	ModeSchedule   = "schedule"
	ModeEvent      = "event"
	ModeChat       = "chat"
)

// Stop reasons of a failed run.
const (
	StopStepLimit  = "step_limit"
	StopCredits    = "credits"
	StopSpendLimit = "spend_limit"
	StopError      = "error"
	StopVendor     = "vendor"
	StopTimeLimit  = "time_limit"
	StopStale      = "stale"
)

// Trigger says what starts an agent, as the dashboard shows it.
type Trigger struct {
	// Kind is manual, chat, schedule or event.
	Kind string `json:"kind"`
	// Label describes the trigger for people.
	Label string `json:"label"`
}

// Agent is an agent as the API shows it.
type Agent struct {
	ID           string    `json:"id"`
	ProjectID    string    `json:"projectId"`
	Name         string    `json:"name"`
	Model        string    `json:"model"`
	Instructions string    `json:"instructions"`
	Tools        []string  `json:"tools"`
	MaxSteps     int       `json:"maxSteps"`
	AllowWrites  bool      `json:"allowWrites"`
	Trigger      Trigger   `json:"trigger"`
	Purpose      string    `json:"purpose"`
	Status       string    `json:"status"`
	LastError    string    `json:"last_error"`
	LastErrorAt  *string   `json:"last_error_at"`
	CreatedAt    time.Time `json:"createdAt"`
	UpdatedAt    time.Time `json:"updatedAt"`

	workspace string
	setup     starter
	schedule  scheduleRow
	secret    []byte
	chat      chatRow
}

// starter is whose access a run is cut from.
type starter struct {
	Member   string
	Key      string
	ReadOnly bool
}

type scheduleRow struct {
	Cron, Input string
	Next        time.Time
}

type chatRow struct {
	ID         string
	Origins    []string
	DailyLimit int
}

// Step is one recorded step of a run.
type Step struct {
	Step      int    `json:"step"`
	Kind      string `json:"kind"` // tool or text
	ToolName  string `json:"tool_name,omitempty"`
	Arguments string `json:"arguments,omitempty"`
	Result    string `json:"result"`
	OK        bool   `json:"ok"`
}

// Run is one run of an agent.
type Run struct {
	ID         string     `json:"id"`
	AgentID    string     `json:"agent_id"`
	Mode       string     `json:"mode"`
	Status     string     `json:"status"`
	StopReason string     `json:"stop_reason"`
	Input      string     `json:"input"`
	Output     string     `json:"output"`
	Steps      []Step     `json:"steps"`
	TokensUsed int64      `json:"tokens_used"`
	CostMicros int64      `json:"cost_micros"`
	CostUSD    usd        `json:"cost_usd"`
	Model      string     `json:"model"`
	DurationMs int64      `json:"duration_ms"`
	EventType  string     `json:"event_type,omitempty"`
	CreatedAt  time.Time  `json:"created_at"`
	StartedAt  *time.Time `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`

	workspace, project string
	starter            starter
	keyID              string
	// eventKey identifies a signed event run by what its signature covers
	// (eventKey); empty for other runs.
	eventKey string
}

// usd renders integer micro-dollars as a JSON decimal number, exactly.
type usd int64

// MarshalJSON writes the amount as dollars with six decimals.
func (u usd) MarshalJSON() ([]byte, error) {
	m, sign := int64(u), ""
	if m < 0 {
		m, sign = -m, "-"
	}
	return []byte(fmt.Sprintf("%s%d.%06d", sign, m/1_000_000, m%1_000_000)), nil
}

// UnmarshalJSON reads a decimal number of dollars (at most six decimals)
// exactly, never through a float.
func (u *usd) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	neg := strings.HasPrefix(s, "-")
	whole, frac, _ := strings.Cut(strings.TrimPrefix(s, "-"), ".")
	if len(frac) > 6 || whole == "" {
		return fmt.Errorf("agents: bad dollar amount %q", s)
	}
	frac += strings.Repeat("0", 6-len(frac))
	w, err1 := strconv.ParseInt(whole, 10, 64)
	f, err2 := strconv.ParseInt(frac, 10, 64)
	if err1 != nil || err2 != nil || w > 1<<40 {
		return fmt.Errorf("agents: bad dollar amount %q", s)
	}
	v := w*1_000_000 + f
	if neg {
		v = -v
	}
	*u = usd(v)
	return nil
}

// CreateRequest is the body of POST /api/projects/{id}/agents.
type CreateRequest struct {
	Name         string   `json:"name"`
	Model        string   `json:"model"`
	Instructions string   `json:"instructions,omitempty"`
	Tools        []string `json:"tools,omitempty"`
	MaxSteps     *int     `json:"maxSteps,omitempty"`
	AllowWrites  bool     `json:"allowWrites,omitempty"`
	Trigger      *Trigger `json:"trigger,omitempty"`
	Purpose      string   `json:"purpose,omitempty"`
}

// checkText validates a bounded text field.
func checkText(field, v string, max int, required bool) error {
	n := utf8.RuneCountInString(v)
	if required && strings.TrimSpace(v) == "" {
		return api.Invalid("%s is required", field).With("field", field)
	}
	if n > max {
		return api.E(api.KindInvalid, "invalid_request", "%s is %d characters; at most %d are accepted", field, n, max).
			With("field", field).With("limit", max)
	}
	return nil
}

func checkSteps(n int) error {
	if n < MinSteps || n > MaxSteps {
		return api.E(api.KindInvalid, "invalid_request", "maxSteps must be %d to %d (default %d)", MinSteps, MaxSteps, DefaultSteps).
			With("field", "maxSteps")
	}
	return nil
}

func checkTrigger(t *Trigger) error {
	switch t.Kind {
	case "manual", "chat", "schedule", "event":
	default:
		return api.Invalid("trigger.kind must be manual, chat, schedule or event").With("field", "trigger")
	}
	return checkText("trigger.label", t.Label, MaxPurpose, false)
}

// checkInput validates a run's input.
func checkInput(input string) error {
	if strings.TrimSpace(input) == "" {
		return api.Invalid("input is required").With("field", "input")
	}
	if n := utf8.RuneCountInString(input); n > MaxInput {
		return api.E(api.KindTooLarge, "input_too_large", "input is %d characters; at most %d are accepted", n, MaxInput).
			With("field", "input").With("limit", MaxInput)
	}
	return nil
}
