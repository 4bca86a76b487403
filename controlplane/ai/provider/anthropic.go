package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// AnthropicVersion is the API version header sent to Anthropic.
const AnthropicVersion = "2023-06-01"

// Anthropic speaks the Anthropic Messages protocol.
type Anthropic struct{ cfg Config }

var _ Provider = (*Anthropic)(nil)

// Name is the configured name.
func (p *Anthropic) Name() string { return p.cfg.Name }

type anRequest struct {
	Model       string      `json:"model"`
	MaxTokens   int         `json:"max_tokens"`
	System      string      `json:"system,omitempty"`
	Messages    []anMessage `json:"messages"`
	Temperature *float64    `json:"temperature,omitempty"`
	Stream      bool        `json:"stream,omitempty"`
	Tools       []anTool    `json:"tools,omitempty"`
	ToolChoice  *anChoice   `json:"tool_choice,omitempty"`
}

type anMessage struct {
	Role    string    `json:"role"`
	Content []anBlock `json:"content"`
}

type anBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   string          `json:"content,omitempty"`
}

type anTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type anChoice struct {
	Type string `json:"type"`
	Name string `json:"name,omitempty"`
}

type anUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
}

type anAnswer struct {
	Model      string    `json:"model"`
	Content    []anBlock `json:"content"`
	StopReason string    `json:"stop_reason"`
	Usage      anUsage   `json:"usage"`
}

var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

func (p *Anthropic) body(r *ChatRequest, stream bool) (*anRequest, error) {
	b := &anRequest{Model: r.Model, MaxTokens: r.MaxTokens, System: r.System, Temperature: r.Temperature, Stream: stream}
	b.Messages = make([]anMessage, 0, len(r.Messages))
	add := func(role string, blk anBlock) {
		if n := len(b.Messages); n > 0 && b.Messages[n-1].Role == role {
			b.Messages[n-1].Content = append(b.Messages[n-1].Content, blk)
			return
		}
		b.Messages = append(b.Messages, anMessage{Role: role, Content: []anBlock{blk}})
	}
	for i := range r.Messages {
		m := &r.Messages[i]
		switch m.Role {
		case "system":
			if b.System != "" {
				b.System += "\n\n"
			}
			b.System += m.Content
		case "user":
			add("user", anBlock{Type: "text", Text: m.Content})
		case "assistant":
			if m.Content != "" {
				add("assistant", anBlock{Type: "text", Text: m.Content})
			}
			for _, tc := range m.ToolCalls {
				in := json.RawMessage(tc.Arguments)
				if len(strings.TrimSpace(tc.Arguments)) == 0 {
					in = json.RawMessage("{}")
				} else if !json.Valid(in) {
					return nil, fmt.Errorf("tool call %s: arguments are not JSON", tc.ID)
				}
				add("assistant", anBlock{Type: "tool_use", ID: tc.ID, Name: tc.Name, Input: in})
			}
		case "tool":
			add("user", anBlock{Type: "tool_result", ToolUseID: m.ToolCallID, Content: m.Content})
		default:
			return nil, fmt.Errorf("unknown role %q", m.Role)
		}
	}
	for _, t := range r.Tools {
		schema := t.Parameters
		if len(schema) == 0 {
			schema = emptySchema
		}
		b.Tools = append(b.Tools, anTool{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	switch r.ToolChoice {
	case "":
	case "auto":
		b.ToolChoice = &anChoice{Type: "auto"}
	case "none":
		b.ToolChoice = &anChoice{Type: "none"}
	case "required":
		b.ToolChoice = &anChoice{Type: "any"}
	default:
		b.ToolChoice = &anChoice{Type: "tool", Name: r.ToolChoice}
	}
	return b, nil
}

func (p *Anthropic) header(h http.Header) {
	h.Set("anthropic-version", AnthropicVersion)
	if p.cfg.APIKey != "" {
		h.Set("x-api-key", p.cfg.APIKey)
	}
}

func (p *Anthropic) url() string { return strings.TrimRight(p.cfg.BaseURL, "/") + "/v1/messages" }

// anthropicError reads {"type":"error","error":{type, message}}.
func anthropicError(_ int, body []byte) (string, string) {
	var e struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil {
		return "", strings.TrimSpace(string(truncate(body, 300)))
	}
	return e.Error.Type, e.Error.Message
}

func normalizeAnthropicStop(s string) string {
	switch s {
	case "max_tokens":
		return FinishLength
	case "tool_use":
		return FinishToolCalls
	case "refusal":
		return FinishRefusal
	}
	return FinishStop
}

func (u anUsage) input() int64 {
	return u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
}

// Chat asks for a whole answer.
func (p *Anthropic) Chat(ctx context.Context, r *ChatRequest) (*ChatResponse, error) {
	body, err := p.body(r, false)
	if err != nil {
		return nil, &Error{Provider: p.cfg.Name, Kind: ErrBadRequest, Err: err}
	}
	c, err := post(ctx, &p.cfg, p.url(), body, p.header, anthropicError)
	if err != nil {
		return nil, err
	}
	data, err := c.readAll(p.cfg.Name)
	if err != nil {
		return nil, err
	}
	var a anAnswer
	if err := json.Unmarshal(data, &a); err != nil {
		return nil, &Error{Provider: p.cfg.Name, Kind: ErrProtocol, Err: err}
	}
	out := &ChatResponse{Model: a.Model, FinishReason: normalizeAnthropicStop(a.StopReason),
		Usage: Usage{InputTokens: a.Usage.input(), OutputTokens: a.Usage.OutputTokens, Reported: true}}
	var text strings.Builder
	for _, b := range a.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			args := string(b.Input)
			if args == "" {
				args = "{}"
			}
			out.ToolCalls = append(out.ToolCalls, ToolCall{ID: b.ID, Name: b.Name, Arguments: args})
		}
	}
	out.Text = text.String()
	if out.FinishReason == FinishRefusal {
		return nil, &Error{Provider: p.cfg.Name, Kind: ErrRefused, Message: "the model declined to answer"}
	}
	return out, nil
}

// Stream asks for a streamed answer.
func (p *Anthropic) Stream(ctx context.Context, r *ChatRequest) (Stream, error) {
	body, err := p.body(r, true)
	if err != nil {
		return nil, &Error{Provider: p.cfg.Name, Kind: ErrBadRequest, Err: err}
	}
	c, err := post(ctx, &p.cfg, p.url(), body, p.header, anthropicError)
	if err != nil {
		return nil, err
	}
	return &anStream{name: p.cfg.Name, c: c, sse: NewSSEReader(c.resp.Body), blocks: map[int]int{}}, nil
}

type anEvent struct {
	Type         string   `json:"type"`
	Index        int      `json:"index"`
	Message      anAnswer `json:"message"`
	ContentBlock anBlock  `json:"content_block"`
	Delta        struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage *anUsage `json:"usage"`
	Error *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

type anStream struct {
	name    string
	wait    func()
	c       *call
	sse     *SSEReader
	res     ChatResponse
	text    strings.Builder
	calls   []ToolCall
	blocks  map[int]int // content block index -> tool call index
	started bool
	done    bool
	closed  bool
	ev      anEvent
}

// OnWait implements Waiter.
func (s *anStream) OnWait(wait func()) { s.wait = wait }

func (s *anStream) Next() (Delta, error) {
	for {
		if s.done {
			return Delta{}, io.EOF
		}
		if s.wait != nil && !s.sse.Ready() {
			s.wait()
		}
		s.c.arm()
		_, data, err := s.sse.Next()
		s.c.disarm()
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return Delta{}, s.c.readErr(s.name, err)
		}
		s.ev = anEvent{}
		if err := json.Unmarshal(data, &s.ev); err != nil {
			return Delta{}, &Error{Provider: s.name, Kind: ErrProtocol, Err: err}
		}
		ev := &s.ev
		switch ev.Type {
		case "message_start":
			s.started = true
			s.res.Model = ev.Message.Model
			s.res.Usage = Usage{InputTokens: ev.Message.Usage.input(), OutputTokens: ev.Message.Usage.OutputTokens}
		case "content_block_start":
			if ev.ContentBlock.Type == "tool_use" {
				idx := len(s.calls)
				s.blocks[ev.Index] = idx
				s.calls = append(s.calls, ToolCall{ID: ev.ContentBlock.ID, Name: ev.ContentBlock.Name})
				return Delta{ToolCall: &ToolCallDelta{Index: idx, ID: ev.ContentBlock.ID, Name: ev.ContentBlock.Name}}, nil
			}
			if ev.ContentBlock.Type == "text" && ev.ContentBlock.Text != "" {
				s.text.WriteString(ev.ContentBlock.Text)
				return Delta{Text: ev.ContentBlock.Text}, nil
			}
		case "content_block_delta":
			switch ev.Delta.Type {
			case "text_delta":
				if ev.Delta.Text != "" {
					s.text.WriteString(ev.Delta.Text)
					return Delta{Text: ev.Delta.Text}, nil
				}
			case "input_json_delta":
				idx, ok := s.blocks[ev.Index]
				if !ok {
					return Delta{}, &Error{Provider: s.name, Kind: ErrProtocol, Message: "tool input for an unknown content block"}
				}
				s.calls[idx].Arguments += ev.Delta.PartialJSON
				if ev.Delta.PartialJSON != "" {
					return Delta{ToolCall: &ToolCallDelta{Index: idx, Arguments: ev.Delta.PartialJSON}}, nil
				}
			}
		case "message_delta":
			if ev.Delta.StopReason != "" {
				s.res.FinishReason = normalizeAnthropicStop(ev.Delta.StopReason)
				if s.res.FinishReason == FinishRefusal && s.text.Len() == 0 && len(s.calls) == 0 {
					return Delta{}, &Error{Provider: s.name, Kind: ErrRefused, Message: "the model declined to answer"}
				}
			}
			if ev.Usage != nil {
				s.res.Usage.OutputTokens = ev.Usage.OutputTokens
				if in := ev.Usage.input(); in > 0 {
					s.res.Usage.InputTokens = in
				}
				s.res.Usage.Reported = s.started
			}
		case "message_stop":
			s.done = true
			if s.res.FinishReason == "" {
				s.res.FinishReason = FinishStop
			}
			s.Close()
			return Delta{}, io.EOF
		case "error":
			e := &Error{Provider: s.name, Kind: ErrServer}
			if ev.Error != nil {
				e.Code, e.Message = ev.Error.Type, ev.Error.Message
				refine(e)
			}
			return Delta{}, e
		}
	}
}

func (s *anStream) Result() ChatResponse {
	r := s.res
	r.Text = s.text.String()
	r.ToolCalls = s.calls
	for i := range r.ToolCalls {
		if r.ToolCalls[i].Arguments == "" {
			r.ToolCalls[i].Arguments = "{}"
		}
	}
	if r.FinishReason == FinishRefusal {
		r.FinishReason = FinishStop
	}
	return r
}

func (s *anStream) Close() error {
	if !s.closed {
		s.closed = true
		s.c.close()
	}
	return nil
}

// Embed is not part of the Anthropic protocol.
func (p *Anthropic) Embed(context.Context, string, []string) (*Embeddings, error) {
	return nil, &Error{Provider: p.cfg.Name, Kind: ErrBadRequest, Err: ErrNoEmbeddings}
}
