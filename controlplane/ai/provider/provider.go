// Package provider speaks the wire protocols of AI model vendors: the OpenAI
// Chat Completions and Embeddings protocol (also spoken by Groq, Together,
// vLLM, llama.cpp's server and Ollama) and Anthropic Messages, plain and
// streamed, with tool calls carried through both ways.
//
// A Provider turns one normalized ChatRequest into one upstream call and
// normalizes the answer (text, tool calls, finish reason, exact token usage)
// and the upstream's errors (kinds the router decides fallback on). It
// knows nothing of prices, workspaces or HTTP handlers.
package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// The protocols a provider may speak.
const (
	ProtocolOpenAI    = "openai"
	ProtocolAnthropic = "anthropic"
)

// Normalized finish reasons.
const (
	FinishStop      = "stop"
	FinishLength    = "length"
	FinishToolCalls = "tool_calls"
	FinishRefusal   = "content_filter"
)

// Message is one turn of a conversation, in the OpenAI shape: roles system,
// user, assistant and tool; an assistant turn may carry tool calls and a
// tool turn answers one by ToolCallID.
type Message struct {
	Role       string
	Content    string
	ToolCalls  []ToolCall
	ToolCallID string
}

// ToolCall is a function call the model asked for. Arguments is JSON text.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Tool is a function the model may call. Parameters is a JSON Schema.
type Tool struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// ChatRequest is one call to a chat model.
type ChatRequest struct {
	// Model is the provider's own name of the model.
	Model string
	// System is the system prompt (Anthropic sends it apart; OpenAI as the
	// first message).
	System      string
	Messages    []Message
	MaxTokens   int
	Temperature *float64
	Tools       []Tool
	// ToolChoice is "", "auto", "none", "required" or a tool's name.
	ToolChoice string
}

// Usage is the exact token count the upstream reported.
type Usage struct {
	InputTokens  int64
	OutputTokens int64
	// Reported is false when the upstream said nothing (a cut stream):
	// the counts are then the caller's to estimate.
	Reported bool
}

// ChatResponse is a finished answer.
type ChatResponse struct {
	Text         string
	ToolCalls    []ToolCall
	FinishReason string
	Usage        Usage
	// Model is the upstream's name of the model that answered.
	Model string
}

// Delta is one piece of a streamed answer: text, or a part of a tool call
// (Index says which call; ID and Name come with its first part).
type Delta struct {
	Text     string
	ToolCall *ToolCallDelta
}

// ToolCallDelta is a streamed part of a tool call.
type ToolCallDelta struct {
	Index     int    `json:"index"`
	ID        string `json:"id,omitempty"`
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments,omitempty"`
}

// Stream is an answer arriving piece by piece. Next returns io.EOF once the
// upstream finished; Result is then complete. After an error, Result holds
// what arrived before it. Close releases the connection.
type Stream interface {
	Next() (Delta, error)
	Result() ChatResponse
	Close() error
}

// Waiter is a Stream that tells before Next may wait on the network: wait
// is called when no whole upstream event is buffered. A relay writes the
// pieces that arrived together and flushes them in one write from wait,
// never holding a piece back while the upstream is silent.
type Waiter interface {
	OnWait(wait func())
}

// Embeddings is the answer of an embeddings call.
type Embeddings struct {
	Vectors [][]float32
	Usage   Usage
}

// Provider is one configured upstream.
type Provider interface {
	// Name is the configured name of the provider.
	Name() string
	// Chat asks for a whole answer.
	Chat(ctx context.Context, r *ChatRequest) (*ChatResponse, error)
	// Stream asks for a streamed answer; it returns once the upstream
	// accepted the request (so a refusal or an outage is an error here,
	// before any piece).
	Stream(ctx context.Context, r *ChatRequest) (Stream, error)
	// Embed embeds inputs with model.
	Embed(ctx context.Context, model string, inputs []string) (*Embeddings, error)
}

// Config describes one provider.
type Config struct {
	Name     string
	Protocol string
	// BaseURL is the API root: for OpenAI-protocol providers it includes
	// the version (https://api.openai.com/v1), for Anthropic it does not
	// (https://api.anthropic.com).
	BaseURL string
	APIKey  string
	// HTTP is the client used; it carries the dial policy and TLS roots.
	HTTP *http.Client
	// FirstByteTimeout bounds the wait for the upstream's response headers;
	// past it the call fails as unreachable (and the router falls back).
	FirstByteTimeout time.Duration
	// IdleTimeout bounds the wait between two pieces of a stream.
	IdleTimeout time.Duration
}

// New returns the provider cfg describes.
func New(cfg Config) (Provider, error) {
	if cfg.HTTP == nil {
		cfg.HTTP = http.DefaultClient
	}
	if cfg.BaseURL == "" {
		return nil, fmt.Errorf("provider %s: no baseUrl", cfg.Name)
	}
	switch cfg.Protocol {
	case ProtocolOpenAI:
		return newOpenAI(cfg), nil
	case ProtocolAnthropic:
		return &Anthropic{cfg: cfg}, nil
	}
	return nil, fmt.Errorf("provider %s: unknown protocol %q (want openai or anthropic)", cfg.Name, cfg.Protocol)
}

// Sentinels for the kinds of upstream failure; an *Error matches one of
// them with errors.Is.
var (
	// ErrUnreachable: no connection, no answer in time, or a cut connection.
	ErrUnreachable = errors.New("provider: unreachable")
	// ErrRateLimited: the upstream answered 429.
	ErrRateLimited = errors.New("provider: rate limited")
	// ErrServer: the upstream answered 5xx or said it is overloaded.
	ErrServer = errors.New("provider: server error")
	// ErrAuth: the upstream refused the platform's key (401, 403).
	ErrAuth = errors.New("provider: credentials refused")
	// ErrRefused: the model refused the request itself (content policy).
	ErrRefused = errors.New("provider: request refused")
	// ErrTooLong: the input is over the model's context window.
	ErrTooLong = errors.New("provider: input too long for the model")
	// ErrBadRequest: the upstream refused the request as malformed.
	ErrBadRequest = errors.New("provider: bad request")
	// ErrProtocol: the upstream's answer could not be understood.
	ErrProtocol = errors.New("provider: malformed answer")
)

// Error is an upstream failure.
type Error struct {
	Provider string
	// Kind is one of the sentinels above.
	Kind error
	// Status is the upstream's HTTP status (0 when none).
	Status int
	// Code is the upstream's own error type or code.
	Code    string
	Message string
	// RetryAfter is what the upstream asked for on 429 (0 when unsaid).
	RetryAfter time.Duration
	Err        error
}

func (e *Error) Error() string {
	s := fmt.Sprintf("provider %s: %v", e.Provider, e.Kind)
	if e.Status != 0 {
		s += fmt.Sprintf(" (status %d", e.Status)
		if e.Code != "" {
			s += " " + e.Code
		}
		s += ")"
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Is matches the kind sentinel.
func (e *Error) Is(target error) bool { return target == e.Kind }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Retryable reports whether another model may answer instead: outages,
// rate limits, server errors, refused credentials and garbled answers are;
// refusals, over-long input and malformed requests are not.
func Retryable(err error) bool {
	return errors.Is(err, ErrUnreachable) || errors.Is(err, ErrRateLimited) || errors.Is(err, ErrServer) ||
		errors.Is(err, ErrAuth) || errors.Is(err, ErrProtocol)
}

// kindOfStatus classifies an upstream HTTP status.
func kindOfStatus(status int) error {
	switch {
	case status == http.StatusTooManyRequests:
		return ErrRateLimited
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return ErrAuth
	case status == http.StatusRequestEntityTooLarge:
		return ErrTooLong
	case status == http.StatusRequestTimeout:
		return ErrUnreachable
	case status >= 500:
		return ErrServer
	case status >= 400:
		return ErrBadRequest
	}
	return ErrProtocol
}

// transportError wraps a failure to reach the upstream.
func transportError(name string, err error) *Error {
	return &Error{Provider: name, Kind: ErrUnreachable, Err: err}
}
