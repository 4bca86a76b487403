package ai

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/svcplatform/platform/controlplane/ai/provider"
	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/internal/jsonesc"
)

// The chat-completions-compatible surface under /api/ai/v1: an OpenAI SDK
// pointed at {base}/api/ai/v1 works unchanged for chat (plain and
// streamed), embeddings and the model list. Errors are
// {"error": {"message", "type", "code"}}.

// CompletionRequest is the body of POST /api/ai/v1/chat/completions. Fields
// the gateway does not act on (top_p, user, seed, ...) are accepted and
// ignored, as SDKs send them.
type CompletionRequest struct {
	Model               string      `json:"model"`
	Messages            []MessageIn `json:"messages"`
	MaxTokens           *int        `json:"max_tokens,omitempty"`
	MaxCompletionTokens *int        `json:"max_completion_tokens,omitempty"`
	Temperature         *float64    `json:"temperature,omitempty"`
	Stream              bool        `json:"stream,omitempty"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options,omitempty"`
	Tools      []ToolIn        `json:"tools,omitempty"`
	ToolChoice json.RawMessage `json:"tool_choice,omitempty"`
	N          *int            `json:"n,omitempty"`
	// Tier and ProjectID are the service's own extensions.
	Tier      string `json:"tier,omitempty"`
	ProjectID string `json:"projectId,omitempty"`
}

// ServiceInfo is the extra field service of compatible replies.
type ServiceInfo struct {
	ID           string `json:"id"`
	Provider     string `json:"provider"`
	ModelUsed    string `json:"modelUsed"`
	Requested    string `json:"requested,omitempty"`
	FellBackFrom string `json:"fellBackFrom,omitempty"`
	Cost         USD    `json:"cost"`
	CostMicros   Micros `json:"costMicros"`
	Truncated    bool   `json:"truncated"`
	LatencyMs    int64  `json:"latencyMs"`
}

type compatUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}

type compatToolCall struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type compatMessage struct {
	Role      string           `json:"role"`
	Content   *string          `json:"content"`
	Refusal   *string          `json:"refusal"`
	ToolCalls []compatToolCall `json:"tool_calls,omitempty"`
}

type compatChoice struct {
	Index        int           `json:"index"`
	Message      compatMessage `json:"message"`
	FinishReason string        `json:"finish_reason"`
	Logprobs     *struct{}     `json:"logprobs"`
}

// Completion is a compatible chat reply.
type Completion struct {
	ID      string         `json:"id"`
	Object  string         `json:"object"`
	Created int64          `json:"created"`
	Model   string         `json:"model"`
	Choices []compatChoice `json:"choices"`
	Usage   compatUsage    `json:"usage"`
	Service ServiceInfo    `json:"service"`
}

// compatError writes err in the compatible shape.
func (h Handlers) compatError(w http.ResponseWriter, r *http.Request, err error) {
	e := api.AsError(err)
	status := e.Kind.Status()
	if status >= 500 {
		h.S.d.Logger.Error("ai: compatible request failed", "path", r.URL.Path, "status", status, "err", err)
	}
	typ := "invalid_request_error"
	switch {
	case status == http.StatusUnauthorized:
		typ = "authentication_error"
	case status == http.StatusPaymentRequired:
		typ = "insufficient_quota"
	case status == http.StatusForbidden:
		typ = "permission_error"
	case status == http.StatusNotFound:
		typ = "not_found_error"
	case status == http.StatusTooManyRequests:
		typ = "rate_limit_error"
	case status >= 500:
		typ = "api_error"
	}
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", retryAfterSeconds(e.RetryAfter))
	}
	obj := map[string]any{"message": e.Message, "type": typ, "code": e.Code, "param": nil}
	if f, ok := e.Fields["field"]; ok {
		obj["param"] = f
	}
	api.WriteJSON(w, status, map[string]any{"error": obj})
}

// Completions answers POST /api/ai/v1/chat/completions.
func (h Handlers) Completions(w http.ResponseWriter, r *http.Request) error {
	if err := h.completions(w, r); err != nil {
		h.compatError(w, r, err)
	}
	return nil
}

func (h Handlers) completions(w http.ResponseWriter, r *http.Request) error {
	arrived := time.Now()
	var req CompletionRequest
	if err := decodeCompletion(r, &req); err != nil {
		return err
	}
	if req.N != nil && *req.N != 1 {
		return api.E(api.KindInvalid, "invalid_request", "n must be 1").With("field", "n")
	}
	in := ChatInput{Model: strings.TrimSpace(req.Model), Tier: req.Tier, Temperature: req.Temperature, Surface: SurfaceCompatible}
	var err error
	if in.Project, err = projectOf(req.ProjectID, r.Header.Get("X-Service-Project")); err != nil {
		return err
	}
	if in.Messages, err = convertMessages(req.Messages); err != nil {
		return err
	}
	mt := req.MaxCompletionTokens
	if mt == nil {
		mt = req.MaxTokens
	}
	if mt != nil {
		if *mt < 1 {
			return api.E(api.KindInvalid, "invalid_request", "max_tokens must be 1 to %d", MaxTokens).With("field", "max_tokens")
		}
		in.MaxTokens = *mt
	}
	if in.Tools, in.ToolChoice, err = convertTools(req.Tools, req.ToolChoice); err != nil {
		return err
	}
	ctx, p := r.Context(), api.PrincipalFrom(r.Context())
	created := h.S.d.Clock.Now().Unix()
	if !req.Stream {
		ans, err := h.S.Chat(ctx, p, in, nil)
		if err != nil {
			if ctx.Err() != nil && !isAPIError(err) {
				return nil
			}
			return err
		}
		setGatewayTime(w, arrived, ans.upstream)
		writeCompletion(w, ans, in.Model, created)
		return nil
	}
	sink := &compatSink{w: w, rc: http.NewResponseController(w), created: created, buf: make([]byte, 0, 512),
		usage: req.StreamOptions != nil && req.StreamOptions.IncludeUsage, arrived: arrived}
	ans, err := h.S.Chat(ctx, p, in, sink)
	switch {
	case !sink.started:
		if err == nil || (ctx.Err() != nil && !isAPIError(err)) {
			return nil
		}
		return err
	case err != nil:
		if ctx.Err() == nil && isAPIError(err) {
			sink.fail(err)
		}
		return nil
	}
	sink.done(ans, in.Model)
	return nil
}

// readBody decodes a compatible request within the route's size limit.
func readBody(r *http.Request, dst any) error {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if ok := asMaxBytes(err, &mbe); ok {
			return api.E(api.KindTooLarge, "body_too_large", "request body is larger than %d bytes", mbe.Limit)
		}
		return api.Invalid("reading request body: %v", err)
	}
	return unmarshalBody(data, dst)
}

func asMaxBytes(err error, target **http.MaxBytesError) bool {
	e, ok := err.(*http.MaxBytesError)
	if ok {
		*target = e
	}
	return ok
}

func compatFinish(a *Answer) string {
	switch a.FinishReason {
	case provider.FinishLength, provider.FinishToolCalls, provider.FinishRefusal:
		return a.FinishReason
	}
	return "stop"
}

func serviceInfo(a *Answer, requested string) ServiceInfo {
	if requested == "" {
		requested = Router
	}
	return ServiceInfo{ID: a.ID, Provider: a.Provider, ModelUsed: a.ModelUsed, Requested: requested, FellBackFrom: a.FellBackFrom,
		Cost: a.Cost, CostMicros: a.CostMicros, Truncated: a.Truncated, LatencyMs: a.LatencyMs}
}

func completion(a *Answer, requested string, created int64) Completion {
	text := a.Output
	msg := compatMessage{Role: "assistant", Content: &text}
	for _, tc := range a.ToolCalls {
		c := compatToolCall{ID: tc.ID, Type: "function"}
		c.Function.Name, c.Function.Arguments = tc.Name, tc.Arguments
		msg.ToolCalls = append(msg.ToolCalls, c)
	}
	return Completion{ID: "chatcmpl-" + a.ID, Object: "chat.completion", Created: created, Model: a.ModelUsed,
		Choices: []compatChoice{{Index: 0, Message: msg, FinishReason: compatFinish(a)}},
		Usage:   compatUsage{PromptTokens: a.TokensIn, CompletionTokens: a.TokensOut, TotalTokens: a.TokensIn + a.TokensOut},
		Service: serviceInfo(a, requested)}
}

// compatSink writes chat.completion.chunk events and [DONE].
type compatSink struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	buf     []byte
	prefix  []byte // `data: {"id":"chatcmpl-…","object":"chat.completion.chunk","created":…,"model":"…","choices":[{"index":0,`
	created int64
	usage   bool
	started bool
	lazy    bool
	// arrived is when the handler got the request (HeaderGatewayMs).
	arrived time.Time
}

var _ Sink = (*compatSink)(nil)

func (s *compatSink) send() error {
	if _, err := s.w.Write(s.buf); err != nil {
		return err
	}
	if s.lazy {
		return nil
	}
	return s.rc.Flush()
}

func (s *compatSink) setLazy(on bool) { s.lazy = on }
func (s *compatSink) flush()          { s.rc.Flush() }

// Meta starts the stream with the assistant role.
func (s *compatSink) Meta(m Meta) error {
	setGatewayTime(s.w, s.arrived, m.upstream)
	sseHeaders(s.w)
	s.started = true
	p := append([]byte(nil), `data: {"id":"chatcmpl-`...)
	p = append(p, m.ID...)
	p = append(p, `","object":"chat.completion.chunk","created":`...)
	p = strconv.AppendInt(p, s.created, 10)
	p = append(p, `,"model":`...)
	p = jsonesc.Append(p, m.Model)
	p = append(p, `,"choices":[{"index":0,`...)
	s.prefix = p
	s.buf = append(append(s.buf[:0], s.prefix...), `"delta":{"role":"assistant","content":""},"finish_reason":null}]}`+"\n\n"...)
	return s.send()
}

// Delta writes one chunk.
func (s *compatSink) Delta(d provider.Delta) error {
	s.buf = append(s.buf[:0], s.prefix...)
	if tc := d.ToolCall; tc != nil {
		c := compatToolCall{Index: &tc.Index, ID: tc.ID}
		if tc.ID != "" {
			c.Type = "function"
		}
		c.Function.Name, c.Function.Arguments = tc.Name, tc.Arguments
		data, err := json.Marshal([]compatToolCall{c})
		if err != nil {
			return err
		}
		s.buf = append(s.buf, `"delta":{"tool_calls":`...)
		s.buf = append(s.buf, data...)
	} else {
		s.buf = append(s.buf, `"delta":{"content":`...)
		s.buf = jsonesc.Append(s.buf, d.Text)
	}
	s.buf = append(s.buf, `},"finish_reason":null}]}`+"\n\n"...)
	return s.send()
}

func (s *compatSink) done(a *Answer, requested string) error {
	s.lazy = false
	s.buf = append(s.buf[:0], s.prefix...)
	s.buf = append(s.buf, `"delta":{},"finish_reason":`...)
	s.buf = jsonesc.Append(s.buf, compatFinish(a))
	s.buf = append(s.buf, `}],"service":`...)
	s.buf = appendServiceInfo(s.buf, a, requested)
	s.buf = append(s.buf, "}\n\n"...)
	if s.usage {
		// The usage chunk has no choices; cut the prefix before them.
		head := s.prefix[:bytes.LastIndex(s.prefix, []byte(`"choices":`))]
		s.buf = append(s.buf, head...)
		s.buf = append(s.buf, `"choices":[],"usage":{"prompt_tokens":`...)
		s.buf = strconv.AppendInt(s.buf, a.TokensIn, 10)
		s.buf = append(s.buf, `,"completion_tokens":`...)
		s.buf = strconv.AppendInt(s.buf, a.TokensOut, 10)
		s.buf = append(s.buf, `,"total_tokens":`...)
		s.buf = strconv.AppendInt(s.buf, a.TokensIn+a.TokensOut, 10)
		s.buf = append(s.buf, `},"service":`...)
		s.buf = appendServiceInfo(s.buf, a, requested)
		s.buf = append(s.buf, "}\n\n"...)
	}
	s.buf = append(s.buf, "data: [DONE]\n\n"...)
	return s.send()
}

func (s *compatSink) fail(err error) error {
	s.lazy = false
	e := api.AsError(err)
	code, msg := e.Code, e.Message
	if e.Kind == api.KindInternal {
		code, msg = "stream_error", "the stream failed"
	}
	data, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": "api_error", "code": code}})
	s.buf = append(append(append(s.buf[:0], "data: "...), data...), "\n\n"...)
	return s.send()
}

// ModelList is the answer of GET /api/ai/v1/models.
type ModelList struct {
	Object string        `json:"object"`
	Data   []CompatModel `json:"data"`
}

// CompatModel is one model in the compatible list.
type CompatModel struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// Models answers GET /api/ai/v1/models: service-1 and the models enabled
// for the workspace.
func (h Handlers) Models(w http.ResponseWriter, r *http.Request) error {
	p := api.PrincipalFrom(r.Context())
	if err := requireWorkspaceKey(p); err != nil {
		h.compatError(w, r, err)
		return nil
	}
	st, err := h.S.settings(r.Context(), p.WorkspaceID)
	if err != nil {
		h.compatError(w, r, err)
		return nil
	}
	out := ModelList{Object: "list", Data: []CompatModel{{ID: Router, Object: "model", OwnedBy: "service"}}}
	for _, m := range h.S.cat.Models() {
		if st.modelOn(m) {
			out.Data = append(out.Data, CompatModel{ID: m.ID, Object: "model", OwnedBy: m.Provider})
		}
	}
	api.WriteJSON(w, http.StatusOK, out)
	return nil
}

// CompatEmbeddingsRequest is the body of POST /api/ai/v1/embeddings.
type CompatEmbeddingsRequest struct {
	Input          json.RawMessage `json:"input"`
	Model          string          `json:"model"`
	EncodingFormat string          `json:"encoding_format,omitempty"`
	Dimensions     *int            `json:"dimensions,omitempty"`
	ProjectID      string          `json:"projectId,omitempty"`
}

type compatEmbedding struct {
	Object    string `json:"object"`
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"`
}

// CompatEmbeddings answers POST /api/ai/v1/embeddings.
func (h Handlers) CompatEmbeddings(w http.ResponseWriter, r *http.Request) error {
	if err := h.compatEmbeddings(w, r); err != nil {
		h.compatError(w, r, err)
	}
	return nil
}

func (h Handlers) compatEmbeddings(w http.ResponseWriter, r *http.Request) error {
	var req CompatEmbeddingsRequest
	if err := readBody(r, &req); err != nil {
		return err
	}
	var inputs []string
	if len(req.Input) > 0 && req.Input[0] == '"' {
		var one string
		if err := json.Unmarshal(req.Input, &one); err != nil {
			return api.Invalid("input: %v", err)
		}
		inputs = []string{one}
	} else if err := json.Unmarshal(req.Input, &inputs); err != nil {
		return api.E(api.KindInvalid, "invalid_request", "input must be a string or an array of strings").With("field", "input")
	}
	if req.EncodingFormat != "" && req.EncodingFormat != "float" && req.EncodingFormat != "base64" {
		return api.E(api.KindInvalid, "invalid_request", "encoding_format must be float or base64").With("field", "encoding_format")
	}
	project, err := projectOf(req.ProjectID, r.Header.Get("X-Service-Project"))
	if err != nil {
		return err
	}
	ans, err := h.S.Embed(r.Context(), api.PrincipalFrom(r.Context()), EmbedInput{Input: inputs, Model: strings.TrimSpace(req.Model), Project: project, Surface: SurfaceCompatible})
	if err != nil {
		return err
	}
	if req.Dimensions != nil && *req.Dimensions != ans.Dimensions {
		return api.E(api.KindInvalid, "invalid_request", "model %s has %d dimensions, not %d", ans.Model, ans.Dimensions, *req.Dimensions).With("field", "dimensions")
	}
	data := make([]compatEmbedding, len(ans.Embeddings))
	for i, v := range ans.Embeddings {
		data[i] = compatEmbedding{Object: "embedding", Index: i, Embedding: v}
		if req.EncodingFormat == "base64" {
			b := make([]byte, 4*len(v))
			for j, f := range v {
				binary.LittleEndian.PutUint32(b[4*j:], math.Float32bits(f))
			}
			data[i].Embedding = base64.StdEncoding.EncodeToString(b)
		}
	}
	api.WriteJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data, "model": ans.Model,
		"usage":   map[string]int64{"prompt_tokens": ans.TokensIn, "total_tokens": ans.TokensIn},
		"service": map[string]any{"provider": ans.Provider, "cost": ans.Cost, "costMicros": ans.CostMicros, "dimensions": ans.Dimensions}})
	return nil
}
