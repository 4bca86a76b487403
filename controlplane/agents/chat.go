package agents

import (
	"context"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/svcplatform/platform/controlplane/ai/provider"
	"github.com/svcplatform/platform/controlplane/api"
)

// MaxHistory is the most earlier turns a chat message may carry (ours).
const MaxHistory = 50

// ChatMessage is the body of POST /api/agents/chat/{chatId}.
type ChatMessage struct {
	Message string     `json:"message"`
	History []ChatTurn `json:"history,omitempty"`
}

// ChatTurn is one earlier turn of a visitor conversation.
type ChatTurn struct {
	Role    string `json:"role"` // user or assistant
	Content string `json:"content"`
}

// ChatReply is the answer of a chat message.
type ChatReply struct {
	Reply      string `json:"reply"`
	RunID      string `json:"run_id"`
	Status     string `json:"status"`
	StopReason string `json:"stop_reason"`
}

var errOrigin = api.Forbidden("origin_not_allowed", "this chat answers only pages of the project's own addresses and its allowedOrigins")

// ChatOrigin checks that origin may use chat chatID and returns the agent.
func (s *Service) ChatOrigin(ctx context.Context, chatID, origin string) (Agent, error) {
	if !strings.HasPrefix(chatID, ChatPrefix) {
		return Agent{}, api.NotFound("chat")
	}
	a, err := s.st.agentByChat(ctx, chatID)
	if err != nil {
		return Agent{}, err
	}
	o, err := normalOrigin(origin)
	if err != nil {
		return Agent{}, errOrigin
	}
	for _, allowed := range a.chat.Origins {
		if allowed == o {
			return a, nil
		}
	}
	p, err := s.d.Projects.Get(ctx, a.workspace, a.ProjectID)
	if err != nil {
		return Agent{}, err
	}
	for _, addr := range []string{p.URL, deref(p.LiveURL)} {
		if n, err := normalOrigin(addr); err == nil && n == o {
			return a, nil
		}
	}
	return Agent{}, errOrigin
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func checkChat(m *ChatMessage) ([]provider.Message, error) {
	if strings.TrimSpace(m.Message) == "" {
		return nil, api.Invalid("message is required").With("field", "message")
	}
	if len(m.History) > MaxHistory {
		return nil, api.Invalid("history holds at most %d turns", MaxHistory).With("field", "history")
	}
	total := utf8.RuneCountInString(m.Message)
	msgs := make([]provider.Message, 0, len(m.History)+1)
	for i, t := range m.History {
		if t.Role != "user" && t.Role != "assistant" {
			return nil, api.Invalid("history[%d].role must be user or assistant", i).With("field", "history")
		}
		total += utf8.RuneCountInString(t.Content)
		msgs = append(msgs, provider.Message{Role: t.Role, Content: t.Content})
	}
	if total > MaxInput {
		return nil, api.E(api.KindTooLarge, "input_too_large", "message and history are %d characters; at most %d are accepted", total, MaxInput).
			With("limit", MaxInput)
	}
	return append(msgs, provider.Message{Role: "user", Content: m.Message}), nil
}

// Chat answers a visitor's message with one read-only run that has the
// agent's vector tools and ChatRunTime.
func (s *Service) Chat(ctx context.Context, chatID, origin, visitor string, m ChatMessage) (ChatReply, error) {
	a, err := s.ChatOrigin(ctx, chatID, origin)
	if err != nil {
		return ChatReply{}, err
	}
	if a.Status == StatusPaused {
		return ChatReply{}, ErrPaused
	}
	msgs, err := checkChat(&m)
	if err != nil {
		return ChatReply{}, err
	}
	now := s.now()
	// The key joins agent and visitor with "/": no NUL, which PostgreSQL text cannot hold.
	if ok, wait := s.chats.take(a.ID+"/"+visitor, ChatPerMinute); !ok {
		e := api.E(api.KindRateLimited, "rate_limited", "at most %d messages a minute from one visitor", ChatPerMinute).With("limit", ChatPerMinute)
		e.RetryAfter = retrySeconds(wait)
		return ChatReply{}, e
	}
	day := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	used, err := s.st.count(ctx, s.d.DB, `SELECT count(*) FROM agent_runs WHERE agent_id = ? AND mode = 'chat' AND created_at >= ?`,
		a.ID, day.Format("2006-01-02T15:04:05.000Z07:00"))
	if err != nil {
		return ChatReply{}, err
	}
	if used >= a.chat.DailyLimit {
		e := api.E(api.KindRateLimited, "daily_limit", "this chat answered its %d messages for today (UTC); it answers again tomorrow", a.chat.DailyLimit).
			With("limit", a.chat.DailyLimit).With("current", used)
		e.RetryAfter = retrySeconds(day.Add(24 * time.Hour).Sub(now))
		return ChatReply{}, e
	}
	x, err := s.admit(ctx, a, a.setup, ModeChat, m.Message, visitor)
	if err != nil {
		return ChatReply{}, err
	}
	if err := s.execute(context.WithoutCancel(ctx), a, &x, msgs, s.cfg.ChatRunTime); err != nil {
		var refused *errStartRefused
		if errors.As(err, &refused) {
			s.st.setLastError(context.WithoutCancel(ctx), a.ID, "chat: "+api.AsError(err).Message, now)
		}
		return ChatReply{}, err
	}
	return ChatReply{Reply: x.Output, RunID: x.ID, Status: x.Status, StopReason: x.StopReason}, nil
}
