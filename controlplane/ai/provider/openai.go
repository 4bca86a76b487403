package provider

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sort"
	"strings"
)

// OpenAI speaks the OpenAI Chat Completions and Embeddings protocol.
type OpenAI struct {
	cfg Config
	// chat and auth are made once by New (the chat URL and the
	// Authorization header's value).
	chat string
	auth []string
}

func newOpenAI(cfg Config) *OpenAI {
	p := &OpenAI{cfg: cfg}
	p.chat = p.url("/chat/completions")
	if cfg.APIKey != "" {
		p.auth = []string{"Bearer " + cfg.APIKey}
	}
	return p
}

func (p *OpenAI) chatURL() string {
	if p.chat != "" {
		return p.chat
	}
	return p.url("/chat/completions")
}

var _ Provider = (*OpenAI)(nil)

// Name is the configured name.
func (p *OpenAI) Name() string { return p.cfg.Name }

type oaRequest struct {
	Model         string       `json:"model"`
	Messages      []oaMessage  `json:"messages"`
	MaxTokens     int          `json:"max_tokens,omitempty"`
	Temperature   *float64     `json:"temperature,omitempty"`
	Stream        bool         `json:"stream,omitempty"`
	StreamOptions *oaStreamOpt `json:"stream_options,omitempty"`
	Tools         []oaTool     `json:"tools,omitempty"`
	ToolChoice    any          `json:"tool_choice,omitempty"`
}

type oaStreamOpt struct {
	IncludeUsage bool `json:"include_usage"`
}

type oaMessage struct {
	Role       string       `json:"role"`
	Content    *string      `json:"content"`
	ToolCalls  []oaToolCall `json:"tool_calls,omitempty"`
	ToolCallID string       `json:"tool_call_id,omitempty"`
}

type oaToolCall struct {
	Index    *int       `json:"index,omitempty"`
	ID       string     `json:"id,omitempty"`
	Type     string     `json:"type,omitempty"`
	Function oaFunction `json:"function"`
}

type oaFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type oaTool struct {
	Type     string        `json:"type"`
	Function oaFunctionDef `json:"function"`
}

type oaFunctionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

type oaAnswer struct {
	Model   string     `json:"model"`
	Choices []oaChoice `json:"choices"`
	Usage   *oaUsage   `json:"usage"`
	Error   *oaError   `json:"error"`
}

type oaChoice struct {
	Message      oaOut   `json:"message"`
	Delta        oaOut   `json:"delta"`
	FinishReason *string `json:"finish_reason"`
}

type oaOut struct {
	Content   *string      `json:"content"`
	Refusal   *string      `json:"refusal"`
	ToolCalls []oaToolCall `json:"tool_calls"`
}

type oaUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
}

type oaError struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
}

func (p *OpenAI) body(r *ChatRequest, stream bool) *oaRequest {
	msgs := make([]oaMessage, 0, len(r.Messages)+1)
	if r.System != "" {
		sys := r.System
		msgs = append(msgs, oaMessage{Role: "system", Content: &sys})
	}
	for i := range r.Messages {
		m := &r.Messages[i]
		om := oaMessage{Role: m.Role, ToolCallID: m.ToolCallID}
		if m.Content != "" || len(m.ToolCalls) == 0 {
			om.Content = &m.Content
		}
		for _, tc := range m.ToolCalls {
			om.ToolCalls = append(om.ToolCalls, oaToolCall{ID: tc.ID, Type: "function", Function: oaFunction{Name: tc.Name, Arguments: tc.Arguments}})
		}
		msgs = append(msgs, om)
	}
	b := &oaRequest{Model: r.Model, Messages: msgs, MaxTokens: r.MaxTokens, Temperature: r.Temperature}
	if stream {
		b.Stream, b.StreamOptions = true, &oaStreamOpt{IncludeUsage: true}
	}
	for _, t := range r.Tools {
		b.Tools = append(b.Tools, oaTool{Type: "function", Function: oaFunctionDef(t)})
	}
	switch r.ToolChoice {
	case "":
	case "auto", "none", "required":
		b.ToolChoice = r.ToolChoice
	default:
		b.ToolChoice = map[string]any{"type": "function", "function": map[string]string{"name": r.ToolChoice}}
	}
	return b
}

// request is the body to post: appended by hand when it has the plain
// shape, else built for encoding/json.
func (p *OpenAI) request(r *ChatRequest, stream bool) any {
	if fastBodyOK(r) {
		return oaFastBody{r: r, stream: stream}
	}
	return p.body(r, stream)
}

func (p *OpenAI) header(h http.Header) {
	switch {
	case p.auth != nil:
		h["Authorization"] = p.auth // shared, never modified
	case p.cfg.APIKey != "":
		h.Set("Authorization", "Bearer "+p.cfg.APIKey)
	}
}

func (p *OpenAI) url(path string) string { return strings.TrimRight(p.cfg.BaseURL, "/") + path }

// openAIError reads {"error": {message, type, code}}.
func openAIError(_ int, body []byte) (string, string) {
	var e struct {
		Error oaError `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil {
		return "", strings.TrimSpace(string(truncate(body, 300)))
	}
	code := strings.Trim(string(e.Error.Code), `"`)
	if code == "" || code == "null" {
		code = e.Error.Type
	}
	return code, e.Error.Message
}

func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

// Chat asks for a whole answer.
func (p *OpenAI) Chat(ctx context.Context, r *ChatRequest) (*ChatResponse, error) {
	c, err := post(ctx, &p.cfg, p.chatURL(), p.request(r, false), p.header, openAIError)
	if err != nil {
		return nil, err
	}
	data, err := c.readAll(p.cfg.Name)
	if err != nil {
		return nil, err
	}
	if fa, ok := decodeFastAnswer(data); ok {
		return p.fastAnswer(&fa)
	}
	return p.answer(data)
}

// answer decodes a whole answer with encoding/json.
func (p *OpenAI) answer(data []byte) (*ChatResponse, error) {
	var a oaAnswer
	if err := json.Unmarshal(data, &a); err != nil {
		return nil, &Error{Provider: p.cfg.Name, Kind: ErrProtocol, Err: err}
	}
	if len(a.Choices) == 0 {
		return nil, &Error{Provider: p.cfg.Name, Kind: ErrProtocol, Message: "answer has no choices"}
	}
	ch := a.Choices[0]
	out := &ChatResponse{Model: a.Model, FinishReason: FinishStop}
	if ch.Message.Content != nil {
		out.Text = *ch.Message.Content
	}
	if ch.FinishReason != nil {
		out.FinishReason = normalizeOpenAIFinish(*ch.FinishReason)
	}
	if ch.Message.Refusal != nil && *ch.Message.Refusal != "" && out.Text == "" {
		return nil, &Error{Provider: p.cfg.Name, Kind: ErrRefused, Message: *ch.Message.Refusal}
	}
	if out.FinishReason == FinishRefusal && out.Text == "" {
		return nil, &Error{Provider: p.cfg.Name, Kind: ErrRefused, Message: "the model's content filter stopped the answer"}
	}
	for _, tc := range ch.Message.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	if a.Usage != nil {
		out.Usage = Usage{InputTokens: a.Usage.PromptTokens, OutputTokens: a.Usage.CompletionTokens, Reported: true}
	}
	return out, nil
}

// fastAnswer is Chat's answer from what decodeFastAnswer read (a plain
// answer: no tool calls, no refusal text).
func (p *OpenAI) fastAnswer(fa *fastAnswer) (*ChatResponse, error) {
	out := &ChatResponse{Model: string(fa.model), FinishReason: FinishStop}
	if fa.hasContent {
		out.Text = string(fa.content)
	}
	if fa.hasFinish {
		out.FinishReason = normalizeOpenAIFinish(string(fa.finish))
	}
	if out.FinishReason == FinishRefusal && out.Text == "" {
		return nil, &Error{Provider: p.cfg.Name, Kind: ErrRefused, Message: "the model's content filter stopped the answer"}
	}
	if fa.usage {
		out.Usage = Usage{InputTokens: fa.in, OutputTokens: fa.out, Reported: true}
	}
	return out, nil
}

func normalizeOpenAIFinish(s string) string {
	switch s {
	case "length":
		return FinishLength
	case "tool_calls", "function_call":
		return FinishToolCalls
	case "content_filter":
		return FinishRefusal
	}
	return FinishStop
}

// Stream asks for a streamed answer.
func (p *OpenAI) Stream(ctx context.Context, r *ChatRequest) (Stream, error) {
	c, err := post(ctx, &p.cfg, p.chatURL(), p.request(r, true), p.header, openAIError)
	if err != nil {
		return nil, err
	}
	return &oaStream{name: p.cfg.Name, c: c, sse: NewSSEReader(c.resp.Body)}, nil
}

type oaStream struct {
	name    string
	wait    func()
	c       *call
	sse     *SSEReader
	res     ChatResponse
	text    strings.Builder
	calls   []ToolCall
	pending []Delta
	chunk   oaAnswer
	done    bool
	closed  bool
}

// OnWait implements Waiter.
func (s *oaStream) OnWait(wait func()) { s.wait = wait }

func (s *oaStream) Next() (Delta, error) {
	for {
		if len(s.pending) > 0 {
			d := s.pending[0]
			s.pending = s.pending[1:]
			return d, nil
		}
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
			if err == io.EOF && s.res.FinishReason != "" {
				s.finish()
				return Delta{}, io.EOF
			}
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return Delta{}, s.c.readErr(s.name, err)
		}
		if string(data) == "[DONE]" {
			s.finish()
			return Delta{}, io.EOF
		}
		if fc, ok := decodeFastChunk(data); ok {
			// The plain chunk, read without encoding/json (fastchunk.go).
			if len(fc.model) > 0 && string(fc.model) != s.res.Model {
				s.res.Model = string(fc.model)
			}
			if fc.choices == 0 {
				continue
			}
			if fc.hasFinish && len(fc.finish) > 0 {
				s.res.FinishReason = normalizeOpenAIFinish(string(fc.finish))
			}
			if fc.hasContent && len(fc.content) > 0 {
				text := string(fc.content)
				s.text.WriteString(text)
				return Delta{Text: text}, nil
			}
			continue
		}
		s.chunk = oaAnswer{}
		if err := json.Unmarshal(data, &s.chunk); err != nil {
			return Delta{}, &Error{Provider: s.name, Kind: ErrProtocol, Err: err}
		}
		if e := s.chunk.Error; e != nil {
			return Delta{}, &Error{Provider: s.name, Kind: ErrServer, Code: e.Type, Message: e.Message}
		}
		if s.chunk.Model != "" {
			s.res.Model = s.chunk.Model
		}
		if u := s.chunk.Usage; u != nil {
			s.res.Usage = Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, Reported: true}
		}
		if len(s.chunk.Choices) == 0 {
			continue
		}
		ch := &s.chunk.Choices[0]
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			s.res.FinishReason = normalizeOpenAIFinish(*ch.FinishReason)
		}
		if ref := ch.Delta.Refusal; ref != nil && *ref != "" && s.text.Len() == 0 && len(s.calls) == 0 {
			return Delta{}, &Error{Provider: s.name, Kind: ErrRefused, Message: *ref}
		}
		for _, tc := range ch.Delta.ToolCalls {
			idx := len(s.calls)
			if tc.Index != nil {
				idx = *tc.Index
			}
			if idx < 0 || idx > 128 {
				return Delta{}, &Error{Provider: s.name, Kind: ErrProtocol, Message: "tool call index out of range"}
			}
			for len(s.calls) <= idx {
				s.calls = append(s.calls, ToolCall{})
			}
			if tc.ID != "" {
				s.calls[idx].ID = tc.ID
			}
			s.calls[idx].Name += tc.Function.Name
			s.calls[idx].Arguments += tc.Function.Arguments
			s.pending = append(s.pending, Delta{ToolCall: &ToolCallDelta{Index: idx, ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments}})
		}
		if c := ch.Delta.Content; c != nil && *c != "" {
			s.text.WriteString(*c)
			return Delta{Text: *c}, nil
		}
	}
}

func (s *oaStream) finish() {
	s.done = true
	if s.res.FinishReason == "" {
		s.res.FinishReason = FinishStop
	}
	s.Close()
}

func (s *oaStream) Result() ChatResponse {
	r := s.res
	r.Text = s.text.String()
	r.ToolCalls = s.calls
	if r.FinishReason == FinishRefusal && r.Text == "" {
		r.FinishReason = FinishStop
	}
	return r
}

func (s *oaStream) Close() error {
	if !s.closed {
		s.closed = true
		s.c.close()
	}
	return nil
}

type oaEmbedRequest struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	EncodingFormat string   `json:"encoding_format"`
}

type oaEmbedAnswer struct {
	Data []struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
	Usage *oaUsage `json:"usage"`
}

// Embed embeds inputs with model.
func (p *OpenAI) Embed(ctx context.Context, model string, inputs []string) (*Embeddings, error) {
	c, err := post(ctx, &p.cfg, p.url("/embeddings"), &oaEmbedRequest{Model: model, Input: inputs, EncodingFormat: "float"}, p.header, openAIError)
	if err != nil {
		return nil, err
	}
	data, err := c.readAll(p.cfg.Name)
	if err != nil {
		return nil, err
	}
	var a oaEmbedAnswer
	if err := json.Unmarshal(data, &a); err != nil {
		return nil, &Error{Provider: p.cfg.Name, Kind: ErrProtocol, Err: err}
	}
	if len(a.Data) != len(inputs) {
		return nil, &Error{Provider: p.cfg.Name, Kind: ErrProtocol, Message: "answer has a different number of embeddings than inputs"}
	}
	sort.SliceStable(a.Data, func(i, j int) bool { return a.Data[i].Index < a.Data[j].Index })
	out := &Embeddings{Vectors: make([][]float32, len(a.Data))}
	for i, d := range a.Data {
		if d.Index != i {
			return nil, &Error{Provider: p.cfg.Name, Kind: ErrProtocol, Message: "embedding indexes do not match the inputs"}
		}
		out.Vectors[i] = d.Embedding
	}
	if a.Usage != nil {
		out.Usage = Usage{InputTokens: a.Usage.PromptTokens, Reported: true}
	}
	return out, nil
}

// ErrNoEmbeddings is returned by providers whose protocol has no embeddings.
var ErrNoEmbeddings = errors.New("provider: the protocol has no embeddings endpoint")
