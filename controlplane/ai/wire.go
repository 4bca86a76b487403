package ai

import (
	"encoding/json"
	"strings"

	"github.com/svcplatform/platform/controlplane/ai/provider"
	"github.com/svcplatform/platform/controlplane/api"
)

// MessageIn is one message of a request, in the chat-completions shape:
// content is a string or an array of text parts; an assistant message may
// carry tool_calls and a tool message answers one by tool_call_id.
type MessageIn struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content,omitempty"`
	ToolCalls  []ToolCallIn    `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
	Name       string          `json:"name,omitempty"`
}

// ToolCallIn is a tool call in the chat-completions shape.
type ToolCallIn struct {
	ID       string `json:"id"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// ToolIn is an offered function in the chat-completions shape.
type ToolIn struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
	} `json:"function"`
}

// ChatRequest is the body of POST /api/ai/chat and /api/ai/playground.
type ChatRequest struct {
	Model       string          `json:"model,omitempty"`
	Messages    []MessageIn     `json:"messages,omitempty"`
	Prompt      *string         `json:"prompt,omitempty"`
	System      string          `json:"system,omitempty"`
	MaxTokens   *int            `json:"max_tokens,omitempty"`
	Temperature *float64        `json:"temperature,omitempty"`
	Tier        string          `json:"tier,omitempty"`
	Stream      bool            `json:"stream,omitempty"`
	ProjectID   string          `json:"projectId,omitempty"`
	Tools       []ToolIn        `json:"tools,omitempty"`
	ToolChoice  json.RawMessage `json:"tool_choice,omitempty"`
}

// EmbeddingsRequest is the body of POST /api/ai/embeddings.
type EmbeddingsRequest struct {
	Input     []string `json:"input"`
	Model     string   `json:"model,omitempty"`
	ProjectID string   `json:"projectId,omitempty"`
}

// contentText reads a message's content: a string, null, or text parts.
func contentText(raw json.RawMessage, i int) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	switch raw[0] {
	case '"':
		if s, ok := plainString(raw); ok {
			return s, nil
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", api.Invalid("messages[%d].content: %v", i, err)
		}
		return s, nil
	case '[':
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(raw, &parts); err != nil {
			return "", api.Invalid("messages[%d].content must be a string or an array of text parts", i)
		}
		var b strings.Builder
		for j, p := range parts {
			if p.Type != "text" {
				return "", api.Invalid("messages[%d].content[%d]: only text parts are supported, not %q", i, j, p.Type)
			}
			b.WriteString(p.Text)
		}
		return b.String(), nil
	}
	return "", api.Invalid("messages[%d].content must be a string or an array of text parts", i)
}

// convertMessages turns wire messages into the provider's shape.
func convertMessages(in []MessageIn) ([]provider.Message, error) {
	out := make([]provider.Message, len(in))
	for i, m := range in {
		text, err := contentText(m.Content, i)
		if err != nil {
			return nil, err
		}
		out[i] = provider.Message{Role: m.Role, Content: text, ToolCallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			out[i].ToolCalls = append(out[i].ToolCalls, provider.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
	}
	return out, nil
}

// convertTools turns offered functions and tool_choice into the provider's shape.
func convertTools(tools []ToolIn, choice json.RawMessage) ([]provider.Tool, string, error) {
	out := make([]provider.Tool, 0, len(tools))
	for i, t := range tools {
		if t.Type != "" && t.Type != "function" {
			return nil, "", api.Invalid("tools[%d]: type must be function", i)
		}
		out = append(out, provider.Tool{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters})
	}
	if len(choice) == 0 || string(choice) == "null" {
		return out, "", nil
	}
	var s string
	if json.Unmarshal(choice, &s) == nil {
		if s != "auto" && s != "none" && s != "required" {
			return nil, "", api.Invalid("tool_choice must be auto, none, required or {type: function, function: {name}}")
		}
		return out, s, nil
	}
	var obj struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(choice, &obj); err != nil || obj.Function.Name == "" {
		return nil, "", api.Invalid("tool_choice must be auto, none, required or {type: function, function: {name}}")
	}
	return out, obj.Function.Name, nil
}

// projectOf reads the attribution from the body and the X-Service-Project header.
func projectOf(body, header string) (string, error) {
	body, header = strings.TrimSpace(body), strings.TrimSpace(header)
	if body != "" && header != "" && body != header {
		return "", api.Invalid("projectId %q and X-Service-Project %q disagree", body, header)
	}
	if body != "" {
		return body, nil
	}
	return header, nil
}

// input builds the service's request from a native body.
func (r *ChatRequest) input(header, surface string) (ChatInput, error) {
	in := ChatInput{Model: strings.TrimSpace(r.Model), Tier: r.Tier, System: r.System, Temperature: r.Temperature, Surface: surface}
	var err error
	if in.Project, err = projectOf(r.ProjectID, header); err != nil {
		return in, err
	}
	switch {
	case r.Prompt != nil && len(r.Messages) > 0:
		return in, api.Invalid("send messages or prompt, not both")
	case r.Prompt != nil:
		if strings.TrimSpace(*r.Prompt) == "" {
			return in, api.E(api.KindInvalid, "invalid_request", "prompt is empty").With("field", "prompt")
		}
		in.Messages = []provider.Message{{Role: "user", Content: *r.Prompt}}
	default:
		if in.Messages, err = convertMessages(r.Messages); err != nil {
			return in, err
		}
	}
	if r.MaxTokens != nil {
		if *r.MaxTokens < 1 {
			return in, api.E(api.KindInvalid, "invalid_request", "max_tokens must be 1 to %d", MaxTokens).With("field", "max_tokens")
		}
		in.MaxTokens = *r.MaxTokens
	}
	in.Tools, in.ToolChoice, err = convertTools(r.Tools, r.ToolChoice)
	return in, err
}
