// Package upstreamtest runs in-process mock AI vendors that speak the real
// wire protocols (OpenAI Chat Completions and Embeddings, Anthropic
// Messages) over real sockets, for tests and benchmarks of the gateway: plain
// and streamed answers, tool calls, slow streams, streams cut midway,
// 429/5xx answers, refusals, token-budget stops and hung upstreams.
package upstreamtest

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ToolCall is a tool call a mock answers with.
type ToolCall struct {
	ID, Name, Arguments string
}

// Reply scripts how a mock answers one model.
type Reply struct {
	// Text is the answer; streamed as one chunk per word (Chunks overrides).
	Text   string
	Chunks []string
	// ToolCalls are asked for after the text.
	ToolCalls []ToolCall
	// Finish is stop (default), length, tool_calls or refusal.
	Finish string
	// InputTokens and OutputTokens are the usage reported; zero means
	// computed (a token per four input bytes, one per chunk).
	InputTokens, OutputTokens int64
	// NoUsage leaves usage out (servers that never report it).
	NoUsage bool
	// Status answers with an error of this HTTP status instead.
	Status int
	// ErrorCode and ErrorMessage fill the error body.
	ErrorCode, ErrorMessage string
	// RetryAfter sets Retry-After (seconds) on an error.
	RetryAfter int
	// Refuse makes the model refuse (OpenAI: message.refusal; Anthropic:
	// stop_reason refusal).
	Refuse bool
	// HeaderDelay waits before answering at all; Hang waits until the
	// caller gives up.
	HeaderDelay time.Duration
	Hang        bool
	// ChunkDelay waits before each streamed chunk after the first.
	ChunkDelay time.Duration
	// CutAfter closes the connection after that many chunks (0: never).
	CutAfter int
	// CutBeforeFirst closes the connection after the headers (and the
	// vendor's opening event) but before the first chunk.
	CutBeforeFirst bool
	// FirstDelay waits before the first chunk (a stream that stalls
	// before saying anything).
	FirstDelay time.Duration
	// HoldAfter and Hold pause the stream after HoldAfter chunks until
	// Hold is closed or the caller goes away.
	HoldAfter int
	Hold      chan struct{}
	// Dimensions is the length of the vectors of an embeddings answer.
	Dimensions int
}

// Call is one request a mock received.
type Call struct {
	Path   string
	Model  string
	Stream bool
	Body   map[string]any
	Header http.Header
}

// Server is a mock vendor.
type Server struct {
	*httptest.Server
	// Key is the API key the mock expects (empty: any).
	Key      string
	protocol string
	mu       sync.Mutex
	replies  map[string]Reply
	def      Reply
	calls    []Call
}

// NewOpenAI starts a mock speaking the OpenAI protocol; its base URL (as
// a provider's baseUrl) is URL()+"/v1".
func NewOpenAI() *Server { return start("openai") }

// NewAnthropic starts a mock speaking Anthropic Messages; its base URL is URL().
func NewAnthropic() *Server { return start("anthropic") }

func start(protocol string) *Server {
	s := &Server{protocol: protocol, replies: map[string]Reply{}, def: Reply{Text: "Hello from the mock."}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.openAIChat)
	mux.HandleFunc("POST /v1/embeddings", s.openAIEmbed)
	mux.HandleFunc("POST /v1/messages", s.anthropic)
	s.Server = httptest.NewServer(mux)
	return s
}

// BaseURL is what a provider configuration names as baseUrl.
func (s *Server) BaseURL() string {
	if s.protocol == "openai" {
		return s.URL + "/v1"
	}
	return s.URL
}

// Set scripts the answer for model ("" for every model without its own).
func (s *Server) Set(model string, r Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if model == "" {
		s.def = r
		return
	}
	s.replies[model] = r
}

// Calls returns the requests received so far.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// Reset forgets recorded calls.
func (s *Server) Reset() {
	s.mu.Lock()
	s.calls = nil
	s.mu.Unlock()
}

func (s *Server) begin(w http.ResponseWriter, r *http.Request) (Reply, map[string]any, bool) {
	body := map[string]any{}
	data, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(data, &body); err != nil {
		s.fail(w, 400, "invalid_request_error", "malformed JSON: "+err.Error(), 0)
		return Reply{}, nil, false
	}
	model, _ := body["model"].(string)
	stream, _ := body["stream"].(bool)
	s.mu.Lock()
	s.calls = append(s.calls, Call{Path: r.URL.Path, Model: model, Stream: stream, Body: body, Header: r.Header.Clone()})
	rep, ok := s.replies[model]
	if !ok {
		rep = s.def
	}
	s.mu.Unlock()
	if s.Key != "" {
		got := r.Header.Get("x-api-key")
		if s.protocol == "openai" {
			got = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		}
		if got != s.Key {
			s.fail(w, 401, "authentication_error", "invalid api key", 0)
			return Reply{}, nil, false
		}
	}
	if s.protocol == "anthropic" && r.Header.Get("anthropic-version") == "" {
		s.fail(w, 400, "invalid_request_error", "anthropic-version header is required", 0)
		return Reply{}, nil, false
	}
	if rep.Hang {
		<-r.Context().Done()
		return Reply{}, nil, false
	}
	if rep.HeaderDelay > 0 {
		select {
		case <-time.After(rep.HeaderDelay):
		case <-r.Context().Done():
			return Reply{}, nil, false
		}
	}
	if rep.Status != 0 {
		s.fail(w, rep.Status, rep.ErrorCode, rep.ErrorMessage, rep.RetryAfter)
		return Reply{}, nil, false
	}
	return rep, body, true
}

func (s *Server) fail(w http.ResponseWriter, status int, code, msg string, retryAfter int) {
	if msg == "" {
		msg = http.StatusText(status)
	}
	if retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if s.protocol == "anthropic" {
		if code == "" {
			switch status {
			case 400:
				code = "invalid_request_error"
			case 401:
				code = "authentication_error"
			case 403:
				code = "permission_error"
			case 413:
				code = "request_too_large"
			case 429:
				code = "rate_limit_error"
			case 529:
				code = "overloaded_error"
			default:
				code = "api_error"
			}
		}
		json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]any{"type": code, "message": msg}})
		return
	}
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error", "code": code}})
}

func (rep Reply) chunks() []string {
	if rep.Chunks != nil {
		return rep.Chunks
	}
	if rep.Text == "" {
		return nil
	}
	words := strings.SplitAfter(rep.Text, " ")
	return words
}

func inputBytes(body map[string]any) int {
	n := 0
	if s, ok := body["system"].(string); ok {
		n += len(s)
	}
	msgs, _ := body["messages"].([]any)
	for _, m := range msgs {
		mm, _ := m.(map[string]any)
		switch c := mm["content"].(type) {
		case string:
			n += len(c)
		case []any:
			for _, b := range c {
				bb, _ := b.(map[string]any)
				if t, ok := bb["text"].(string); ok {
					n += len(t)
				}
				if t, ok := bb["content"].(string); ok {
					n += len(t)
				}
			}
		}
	}
	if in, ok := body["input"].([]any); ok {
		for _, x := range in {
			if t, ok := x.(string); ok {
				n += len(t)
			}
		}
	}
	return n
}

func (rep Reply) usage(body map[string]any) (int64, int64) {
	in, out := rep.InputTokens, rep.OutputTokens
	if in == 0 {
		in = int64(inputBytes(body)+3)/4 + 1
	}
	if out == 0 {
		out = int64(len(rep.chunks()) + len(rep.ToolCalls)*8)
	}
	return in, out
}

// pace waits before chunk i; it reports false when the stream must stop
// (the caller left, or the stream is scripted to be cut here).
func (rep Reply) pace(r *http.Request, i int) bool {
	if rep.CutAfter > 0 && i >= rep.CutAfter || i == 0 && rep.CutBeforeFirst {
		return false
	}
	if i == 0 && rep.FirstDelay > 0 {
		select {
		case <-time.After(rep.FirstDelay):
		case <-r.Context().Done():
			return false
		}
	}
	if rep.Hold != nil && i == rep.HoldAfter {
		select {
		case <-rep.Hold:
		case <-r.Context().Done():
			return false
		}
	}
	if i > 0 && rep.ChunkDelay > 0 {
		select {
		case <-time.After(rep.ChunkDelay):
		case <-r.Context().Done():
			return false
		}
	}
	return r.Context().Err() == nil
}

// cut ends the connection abruptly, as a dying upstream does.
func cut(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

func sse(w http.ResponseWriter, event string, v any) {
	if event != "" {
		fmt.Fprintf(w, "event: %s\n", event)
	}
	data, _ := json.Marshal(v)
	fmt.Fprintf(w, "data: %s\n\n", data)
	w.(http.Flusher).Flush()
}

func (s *Server) openAIChat(w http.ResponseWriter, r *http.Request) {
	rep, body, ok := s.begin(w, r)
	if !ok {
		return
	}
	model, _ := body["model"].(string)
	in, out := rep.usage(body)
	finish := rep.Finish
	if finish == "" {
		finish = "stop"
		if len(rep.ToolCalls) > 0 {
			finish = "tool_calls"
		}
	}
	usage := map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out}
	calls := make([]map[string]any, len(rep.ToolCalls))
	for i, tc := range rep.ToolCalls {
		calls[i] = map[string]any{"index": i, "id": tc.ID, "type": "function", "function": map[string]any{"name": tc.Name, "arguments": tc.Arguments}}
	}
	if stream, _ := body["stream"].(bool); !stream {
		msg := map[string]any{"role": "assistant", "content": rep.Text}
		if rep.Refuse {
			msg["content"], msg["refusal"] = nil, "I can't help with that."
		}
		if len(calls) > 0 {
			msg["tool_calls"] = calls
		}
		ans := map[string]any{"id": "chatcmpl-mock", "object": "chat.completion", "created": time.Now().Unix(), "model": model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}}
		if !rep.NoUsage {
			ans["usage"] = usage
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(ans)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(delta map[string]any, fin any) map[string]any {
		return map[string]any{"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 1, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": fin}}}
	}
	sse(w, "", chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	if rep.Refuse {
		sse(w, "", chunk(map[string]any{"refusal": "I can't help with that."}, nil))
		sse(w, "", chunk(map[string]any{}, "stop"))
		fmt.Fprint(w, "data: [DONE]\n\n")
		return
	}
	for i, c := range rep.chunks() {
		if !rep.pace(r, i) {
			cut(w)
			return
		}
		sse(w, "", chunk(map[string]any{"content": c}, nil))
	}
	for _, tc := range calls {
		sse(w, "", chunk(map[string]any{"tool_calls": []any{tc}}, nil))
	}
	sse(w, "", chunk(map[string]any{}, finish))
	if inc, _ := body["stream_options"].(map[string]any); inc != nil && inc["include_usage"] == true && !rep.NoUsage {
		sse(w, "", map[string]any{"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 1, "model": model, "choices": []any{}, "usage": usage})
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func (s *Server) openAIEmbed(w http.ResponseWriter, r *http.Request) {
	rep, body, ok := s.begin(w, r)
	if !ok {
		return
	}
	inputs, _ := body["input"].([]any)
	dims := rep.Dimensions
	if dims == 0 {
		dims = 768
	}
	data := make([]any, len(inputs))
	for i, x := range inputs {
		text, _ := x.(string)
		vec := make([]float32, dims)
		for j := range vec {
			vec[j] = float32(math.Sin(float64(len(text)+i*31+j))) / 10
		}
		data[i] = map[string]any{"object": "embedding", "index": i, "embedding": vec}
	}
	in, _ := rep.usage(body)
	ans := map[string]any{"object": "list", "data": data, "model": body["model"]}
	if !rep.NoUsage {
		ans["usage"] = map[string]any{"prompt_tokens": in, "total_tokens": in}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(ans)
}

func (s *Server) anthropic(w http.ResponseWriter, r *http.Request) {
	rep, body, ok := s.begin(w, r)
	if !ok {
		return
	}
	model, _ := body["model"].(string)
	in, out := rep.usage(body)
	stop := "end_turn"
	switch {
	case rep.Refuse:
		stop = "refusal"
	case rep.Finish == "length":
		stop = "max_tokens"
	case len(rep.ToolCalls) > 0 || rep.Finish == "tool_calls":
		stop = "tool_use"
	}
	if stream, _ := body["stream"].(bool); !stream {
		content := []any{}
		if rep.Text != "" && !rep.Refuse {
			content = append(content, map[string]any{"type": "text", "text": rep.Text})
		}
		for _, tc := range rep.ToolCalls {
			content = append(content, map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Name, "input": json.RawMessage(tc.Arguments)})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": "msg_mock", "type": "message", "role": "assistant", "model": model,
			"content": content, "stop_reason": stop, "usage": map[string]any{"input_tokens": in, "output_tokens": out}})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	startUsage := map[string]any{"input_tokens": in, "output_tokens": 1}
	if rep.NoUsage {
		startUsage = map[string]any{"input_tokens": 0, "output_tokens": 0}
	}
	sse(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_mock", "type": "message",
		"role": "assistant", "model": model, "content": []any{}, "stop_reason": nil, "usage": startUsage}})
	sse(w, "ping", map[string]any{"type": "ping"})
	idx := 0
	if !rep.Refuse {
		sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		for i, c := range rep.chunks() {
			if !rep.pace(r, i) {
				cut(w)
				return
			}
			sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": c}})
		}
		sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
		idx++
	}
	for _, tc := range rep.ToolCalls {
		sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": idx,
			"content_block": map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Name, "input": map[string]any{}}})
		half := len(tc.Arguments) / 2
		for _, part := range []string{tc.Arguments[:half], tc.Arguments[half:]} {
			sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": idx, "delta": map[string]any{"type": "input_json_delta", "partial_json": part}})
		}
		sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": idx})
		idx++
	}
	md := map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}}
	if !rep.NoUsage {
		md["usage"] = map[string]any{"output_tokens": out}
	}
	sse(w, "message_delta", md)
	sse(w, "message_stop", map[string]any{"type": "message_stop"})
}
