package ai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"time"
	"unicode/utf8"

	"github.com/svcplatform/platform/controlplane/ai/provider"
	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/store"
)

// Limits of a request's shape that the specification leaves open (ours).
const (
	// MaxMessages is the most turns of one conversation.
	MaxMessages = 2000
	// MaxTools is the most tools one request may offer.
	MaxTools = 128
)

// Surfaces a chat request arrives through, as the history names them.
const (
	SurfaceChat       = "chat"
	SurfacePlayground = "playground"
	SurfaceCompatible = "compatible"
	SurfaceEmbeddings = "embeddings"
	SurfaceInProcess  = "in_process"
)

// ChatInput is one chat request as the service takes it; both HTTP surfaces
// and in-process callers (agents) build one.
type ChatInput struct {
	// Model is a catalogue id, or service-1 / auto / empty for the router.
	Model string
	// Tier is fast, balanced (default) or deep, for the router.
	Tier        string
	System      string
	Messages    []provider.Message
	MaxTokens   int // 0 means DefaultMaxTokens
	Temperature *float64
	Tools       []provider.Tool
	ToolChoice  string
	// Project attributes the spend ("" for the workspace).
	Project string
	Surface string
}

// Meta says which model answers; it comes before the first piece.
type Meta struct {
	ID           string `json:"id"`
	Model        string `json:"model"`
	Provider     string `json:"provider"`
	Requested    string `json:"requested"`
	FellBackFrom string `json:"fellBackFrom,omitempty"`
	// upstream is how long the request waited on upstreams until the
	// first piece (HeaderGatewayMs).
	upstream time.Duration
}

// Sink receives a streamed answer. An error from it means the client is
// gone: the stream stops and is charged for what was delivered.
type Sink interface {
	Meta(m Meta) error
	Delta(d provider.Delta) error
}

// Answer is a finished chat request.
type Answer struct {
	ID           string              `json:"id"`
	Output       string              `json:"output"`
	ToolCalls    []provider.ToolCall `json:"toolCalls,omitempty"`
	ModelUsed    string              `json:"modelUsed"`
	Provider     string              `json:"provider"`
	FinishReason string              `json:"finishReason"`
	Truncated    bool                `json:"truncated"`
	Note         string              `json:"note,omitempty"`
	TokensIn     int64               `json:"tokensIn"`
	TokensOut    int64               `json:"tokensOut"`
	Cost         USD                 `json:"cost"`
	CostMicros   Micros              `json:"costMicros"`
	LatencyMs    int64               `json:"latencyMs"`
	FellBackFrom string              `json:"fellBackFrom,omitempty"`
	ProjectID    string              `json:"projectId,omitempty"`
	// upstream is how long the request waited on upstreams, every
	// candidate tried (HeaderGatewayMs).
	upstream time.Duration
}

const truncatedNote = "the answer stopped at max_tokens; ask again with a higher max_tokens (at most 8,192; 2,048 on edge models), or send the answer back as an assistant message and ask to continue"

// validateChat checks a request against the specification's limits and
// fills defaults. It returns the input's size in bytes.
func validateChat(in *ChatInput) (int, error) {
	if len(in.Messages) == 0 {
		return 0, api.Invalid("messages (or prompt) is required")
	}
	if len(in.Messages) > MaxMessages {
		return 0, api.Invalid("at most %d messages", MaxMessages)
	}
	if in.MaxTokens == 0 {
		in.MaxTokens = DefaultMaxTokens
	}
	if in.MaxTokens < 1 || in.MaxTokens > MaxTokens {
		return 0, api.E(api.KindInvalid, "invalid_request", "max_tokens must be 1 to %d (default %d; 2,048 on edge models)", MaxTokens, DefaultMaxTokens).With("field", "max_tokens")
	}
	if t := in.Temperature; t != nil && (math.IsNaN(*t) || *t < 0 || *t > MaxTemperature) {
		return 0, api.E(api.KindInvalid, "invalid_request", "temperature must be 0 to 2").With("field", "temperature")
	}
	in.Tier = lower(in.Tier)
	if in.Tier != "" && in.Tier != TierFast && in.Tier != TierBalanced && in.Tier != TierDeep {
		return 0, api.E(api.KindInvalid, "invalid_request", "tier must be fast, balanced or deep").With("field", "tier")
	}
	chars := utf8.RuneCountInString(in.System)
	size := len(in.System)
	user := false
	for i, m := range in.Messages {
		switch m.Role {
		case "system", "assistant":
		case "user":
			user = true
		case "tool":
			if m.ToolCallID == "" {
				return 0, api.Invalid("messages[%d]: a tool message needs tool_call_id", i)
			}
		default:
			return 0, api.E(api.KindInvalid, "invalid_request", "messages[%d]: role must be system, user, assistant or tool, not %q", i, m.Role).With("field", "messages")
		}
		if len(m.ToolCalls) > 0 && m.Role != "assistant" {
			return 0, api.Invalid("messages[%d]: only assistant messages carry tool_calls", i)
		}
		chars += utf8.RuneCountInString(m.Content)
		size += len(m.Content)
		for _, tc := range m.ToolCalls {
			if tc.ID == "" || tc.Name == "" {
				return 0, api.Invalid("messages[%d]: a tool call needs id and function name", i)
			}
			chars += utf8.RuneCountInString(tc.Arguments)
			size += len(tc.Arguments) + len(tc.Name)
		}
		if chars > MaxInputChars {
			break
		}
	}
	if chars > MaxInputChars {
		return 0, api.E(api.KindTooLarge, "ai_input_too_large", "the input is %d characters or more; at most %d are accepted", chars, MaxInputChars).With("limit", MaxInputChars)
	}
	if !user {
		return 0, api.Invalid("messages need at least one user message")
	}
	if len(in.Tools) > MaxTools {
		return 0, api.Invalid("at most %d tools", MaxTools)
	}
	names := map[string]bool{}
	for i, t := range in.Tools {
		if !validToolName(t.Name) {
			return 0, api.Invalid("tools[%d]: function name must be 1 to 64 letters, digits, _ or -", i)
		}
		if names[t.Name] {
			return 0, api.Invalid("tools[%d]: function %s appears twice", i, t.Name)
		}
		names[t.Name] = true
		if len(t.Parameters) > 0 {
			var obj map[string]any
			if json.Unmarshal(t.Parameters, &obj) != nil {
				return 0, api.Invalid("tools[%d]: parameters must be a JSON Schema object", i)
			}
		}
		size += len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	switch in.ToolChoice {
	case "", "auto", "none", "required":
	default:
		if !names[in.ToolChoice] {
			return 0, api.Invalid("tool_choice names %q, which is not among tools", in.ToolChoice)
		}
	}
	return size, nil
}

func validToolName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// route is the ordered list of models that may answer a request.
type route struct {
	requested  string
	router     bool
	candidates []*Model
}

// route picks the models: for the router, the tier's models in fallback
// order (edge models only while a hobby owner's e-mail is unverified); for
// a pinned model, that model first, then the rest of its tier.
func (s *Service) route(ctx context.Context, ws string, plan plans.Name, st *Settings, in *ChatInput) (*route, error) {
	restricted, err := s.emailRestricted(ctx, ws, plan)
	if err != nil {
		return nil, err
	}
	id := in.Model
	if id == "" || id == RouterAlias {
		id = Router
	}
	usable := func(m *Model) bool {
		return m.Kind == KindChat && st.modelOn(m) && s.reachable(m) && (!restricted || m.Edge)
	}
	if id == Router {
		tier := in.Tier
		if tier == "" {
			tier = TierBalanced
		}
		rt := &route{requested: Router, router: true}
		for _, m := range s.cat.Models() {
			if m.Tier == tier && usable(m) {
				rt.candidates = append(rt.candidates, m)
			}
		}
		if restricted {
			for _, m := range s.cat.Models() {
				if m.Tier != tier && usable(m) {
					rt.candidates = append(rt.candidates, m)
				}
			}
		}
		if len(rt.candidates) == 0 {
			if restricted {
				return nil, api.E(api.KindPaymentRequired, "email_unverified",
					"no edge model is available and vendor models need the workspace owner's verified e-mail on the hobby plan")
			}
			return nil, api.E(api.KindBadGateway, "ai_unavailable",
				"no enabled model of tier %s has a configured provider; configure one in --ai-config or enable a model (PUT /api/ai/settings)", tier)
		}
		return rt, nil
	}
	m, ok := s.cat.Get(id)
	if !ok || m.Kind != KindChat {
		return nil, api.E(api.KindInvalid, "unknown_model", "no chat model %q; GET /api/ai/chat lists the models, or use service-1", id).With("field", "model")
	}
	if !st.modelOn(m) {
		return nil, api.Forbidden("ai_model_off", "model %s is switched off for this workspace; an admin can enable it (PUT /api/ai/settings)", m.ID)
	}
	if restricted && !m.Edge {
		return nil, errEmailUnverified(m.ID)
	}
	if in.MaxTokens > m.maxTokens() {
		return nil, api.E(api.KindInvalid, "invalid_request", "max_tokens must be at most %d on %s", m.maxTokens(), m.ID).With("field", "max_tokens")
	}
	if in.Temperature != nil && *in.Temperature > m.temperatureMax() {
		return nil, api.E(api.KindInvalid, "invalid_request", "temperature must be at most %g on %s (its family's cap)", m.temperatureMax(), m.ID).With("field", "temperature")
	}
	rt := &route{requested: m.ID}
	if s.reachable(m) {
		rt.candidates = append(rt.candidates, m)
	}
	for _, o := range s.cat.Models() {
		if o != m && o.Tier == m.Tier && usable(o) {
			rt.candidates = append(rt.candidates, o)
		}
	}
	if len(rt.candidates) == 0 {
		return nil, api.E(api.KindBadGateway, "ai_unavailable",
			"model %s's provider %q is not configured in --ai-config and no other model of its tier can answer", m.ID, m.Provider)
	}
	return rt, nil
}

// maxTokensFor is the output budget sent to m.
func maxTokensFor(in *ChatInput, m *Model) int {
	if in.MaxTokens > m.maxTokens() {
		return m.maxTokens()
	}
	return in.MaxTokens
}

// temperatureFor caps the temperature at m's family's cap (the router
// chose the family, not the caller).
func temperatureFor(in *ChatInput, m *Model) *float64 {
	if in.Temperature == nil || *in.Temperature <= m.temperatureMax() {
		return in.Temperature
	}
	t := m.temperatureMax()
	return &t
}

// reserveTokens is the input size a reservation assumes: a token per three
// bytes (generous against real tokenizers), plus per-message framing.
func reserveTokens(size, messages int) int64 { return int64((size+2)/3 + 4*messages + 8) }

// estimate is the most a request may cost on m.
func (s *Service) estimate(in *ChatInput, size int, m *Model) Micros {
	return Cost(m.InputPerMTok, m.OutputPerMTok, reserveTokens(size, len(in.Messages)), int64(maxTokensFor(in, m)), s.markup(m))
}

// exchange is one request in flight.
type exchange struct {
	id      string
	ws      string
	in      *ChatInput
	size    int
	rt      *route
	res     []Reservation
	plan    plans.Name
	started time.Time
	stream  bool
	// upstream adds up the time spent waiting on upstreams: each
	// candidate's call until its answer (plain) or its first piece
	// (stream).
	upstream time.Duration
}

// Chat answers one chat request: validation, the admin switches, the rate
// limit, routing, a reservation of the estimate, the upstream call with
// fallback, and the exact charge. With a sink the answer is streamed; the
// returned Answer is then the summary. For budget_exhausted and a broken
// stream both an Answer (what was charged) and the error are returned.
func (s *Service) Chat(ctx context.Context, p *auth.Principal, in ChatInput, sink Sink) (*Answer, error) {
	started := time.Now()
	if err := requireWorkspaceKey(p); err != nil {
		return nil, err
	}
	return s.chat(ctx, p.WorkspaceID, &in, sink, started)
}

// ChatAs answers a request for a workspace without an HTTP caller (agents
// call it with the run's workspace after their own permission checks).
func (s *Service) ChatAs(ctx context.Context, workspace string, in ChatInput, sink Sink) (*Answer, error) {
	if in.Surface == "" {
		in.Surface = SurfaceInProcess
	}
	return s.chat(ctx, workspace, &in, sink, time.Now())
}

func (s *Service) chat(ctx context.Context, ws string, in *ChatInput, sink Sink, started time.Time) (*Answer, error) {
	size, err := validateChat(in)
	if err != nil {
		return nil, err
	}
	if err := s.checkProject(ctx, ws, in.Project); err != nil {
		return nil, err
	}
	st, err := s.settings(ctx, ws)
	if err != nil {
		return nil, err
	}
	if !st.Enabled {
		return nil, api.Forbidden("ai_gateway_off", "the AI gateway is switched off for this workspace; an admin can switch it on (PUT /api/ai/settings)")
	}
	if !s.configured() {
		return nil, errUnconfigured()
	}
	plan := s.d.Plans.Plan(ctx, ws)
	if err := s.rateLimit(ctx, ws, bucketChat, plan); err != nil {
		return nil, err
	}
	rt, err := s.route(ctx, ws, plan, st, in)
	if err != nil {
		return nil, err
	}
	amount := s.estimate(in, size, rt.candidates[0])
	if rt.router {
		for _, m := range rt.candidates[1:] {
			amount = max(amount, s.estimate(in, size, m))
		}
	}
	x := &exchange{id: store.NewID("air"), ws: ws, in: in, size: size, rt: rt, started: started, stream: sink != nil, plan: plan}
	limit := maxReserve(plan)
	if amount > limit {
		return nil, api.E(api.KindPaymentRequired, "ai_request_too_large",
			"this request may cost up to %s dollars, above the %s dollars one request may reserve on the %s plan; lower max_tokens or shorten the input",
			amount, limit, plan).With("estimate", USD(amount)).With("limit", USD(limit))
	}
	res, err := s.d.Ledger.Reserve(ctx, ReserveRequest{Workspace: ws, Project: in.Project, Purpose: purposeChat, Ref: x.id, Amount: amount, MaxPerRequest: limit})
	if err != nil {
		return nil, ledgerError(err)
	}
	x.res = append(x.res, res)
	return s.run(ctx, x, sink)
}

// held is what the request's reservations hold together.
func (x *exchange) held() Micros {
	var n Micros
	for _, r := range x.res {
		n += r.Amount
	}
	return n
}

// cover makes sure the reservations cover need before a dearer fallback
// model is called, reserving the difference; a refusal skips that model.
func (s *Service) cover(ctx context.Context, x *exchange, need Micros) error {
	held := x.held()
	if need <= held {
		return nil
	}
	limit := maxReserve(x.plan)
	if need > limit {
		return api.E(api.KindPaymentRequired, "ai_request_too_large", "fallback model's estimate is above the per-request cap")
	}
	res, err := s.d.Ledger.Reserve(ctx, ReserveRequest{Workspace: x.ws, Project: x.in.Project, Purpose: purposeChat, Ref: x.id,
		Amount: need - held, MaxPerRequest: limit - held})
	if err != nil {
		return err
	}
	x.res = append(x.res, res)
	return nil
}

// settle charges cost across the reservations (the last one takes any
// excess, up to what the ledger has) and releases the rest.
func (s *Service) settle(ctx context.Context, x *exchange, cost Micros) {
	ctx = context.WithoutCancel(ctx)
	for i, r := range x.res {
		part := min(cost, r.Amount)
		if i == len(x.res)-1 {
			part = cost
		}
		cost -= part
		if err := s.d.Ledger.Settle(ctx, r.ID, part); err != nil {
			s.d.Logger.Error("ai: settle reservation", "reservation", r.ID, "request", x.id, "err", err)
		}
	}
}

// ledgerError passes the ledger's api-coded refusals through and hides
// anything else as internal.
func ledgerError(err error) error {
	var e *api.Error
	if errors.As(err, &e) {
		return e
	}
	if c := api.AsError(err); c.Kind != api.KindInternal {
		return c
	}
	return api.Internal(fmt.Errorf("ai: reserve: %w", err))
}

// run calls the candidates in order until one answers.
func (s *Service) run(ctx context.Context, x *exchange, sink Sink) (*Answer, error) {
	var failures []error
	for i, m := range x.rt.candidates {
		if i > 0 {
			if err := s.cover(ctx, x, s.estimate(x.in, x.size, m)); err != nil {
				failures = append(failures, err)
				continue
			}
		}
		prov := s.providers[m.Provider]
		req := &provider.ChatRequest{Model: m.upstream(), System: x.in.System, Messages: x.in.Messages, MaxTokens: maxTokensFor(x.in, m),
			Temperature: temperatureFor(x.in, m), Tools: x.in.Tools, ToolChoice: x.in.ToolChoice}
		cctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
		var (
			resp   *provider.ChatResponse
			stream provider.Stream
			err    error
		)
		called := time.Now()
		if sink == nil {
			resp, err = prov.Chat(cctx, req)
		} else {
			stream, err = prov.Stream(cctx, req)
		}
		x.upstream += time.Since(called)
		if err != nil {
			cancel()
			if ctx.Err() != nil {
				return nil, s.abandon(ctx, x, m, StatusClientClosed, "", ctx.Err())
			}
			if provider.Retryable(err) {
				s.d.Logger.Warn("ai: model failed, trying the next", "model", m.ID, "provider", m.Provider, "err", err)
				failures = append(failures, err)
				continue
			}
			return nil, s.refuse(ctx, x, m, err)
		}
		if sink == nil {
			cancel()
			return s.finish(ctx, x, m, resp, true, len(resp.Text)+toolBytes(resp.ToolCalls), nil)
		}
		// Nothing reaches the client before the stream's first piece: a
		// stream that breaks before it may still fall back.
		waited := time.Now()
		first, ferr := stream.Next()
		x.upstream += time.Since(waited)
		if ferr != nil && ferr != io.EOF && ctx.Err() == nil {
			stream.Close()
			cancel()
			if provider.Retryable(ferr) {
				s.d.Logger.Warn("ai: stream failed before its first piece, trying the next model", "model", m.ID, "provider", m.Provider, "err", ferr)
				failures = append(failures, ferr)
				continue
			}
			return nil, s.refuse(ctx, x, m, ferr)
		}
		ans, err := s.pump(ctx, x, m, stream, sink, first, ferr)
		cancel()
		return ans, err
	}
	return nil, s.abandon(ctx, x, nil, StatusFailed, "", noAnswer(failures))
}

// noAnswer is the error when every candidate failed.
func noAnswer(failures []error) error {
	code := "ai_unavailable"
	for _, f := range failures {
		var pe *provider.Error
		if errors.As(f, &pe) && !errors.Is(f, provider.ErrUnreachable) && !errors.Is(f, provider.ErrRateLimited) {
			code = "ai_provider_error"
		}
	}
	e := api.E(api.KindBadGateway, code, "no model could answer (%d tried); nothing was charged, try again shortly", len(failures))
	if len(failures) > 0 {
		e.Err = errors.Join(failures...)
	}
	return e
}

func toolBytes(calls []provider.ToolCall) int {
	n := 0
	for _, c := range calls {
		n += len(c.Name) + len(c.Arguments)
	}
	return n
}

// pump relays a stream whose first piece (or end, or error) is d, err to
// the sink and charges what was delivered. Meta goes out with the first
// piece; after it the stream cannot fall back.
func (s *Service) pump(ctx context.Context, x *exchange, m *Model, st provider.Stream, sink Sink, d provider.Delta, err error) (*Answer, error) {
	defer st.Close()
	if bs, ok := sink.(batchSink); ok {
		if w, ok := st.(provider.Waiter); ok {
			bs.setLazy(true)
			w.OnWait(bs.flush)
		}
	}
	if err == nil || err == io.EOF {
		meta := Meta{ID: x.id, Model: m.ID, Provider: m.Provider, Requested: x.rt.requested, FellBackFrom: x.fellBackFrom(m), upstream: x.upstream}
		if serr := sink.Meta(meta); serr != nil {
			return s.finishPartial(ctx, x, m, st, 0, StatusClientClosed, serr)
		}
	}
	delivered := 0
	for {
		if err == io.EOF {
			res := st.Result()
			return s.finish(ctx, x, m, &res, true, delivered, nil)
		}
		if err != nil {
			status := StatusStreamError
			if ctx.Err() != nil {
				status = StatusClientClosed
			}
			return s.finishPartial(ctx, x, m, st, delivered, status, err)
		}
		if serr := sink.Delta(d); serr != nil {
			return s.finishPartial(ctx, x, m, st, delivered, StatusClientClosed, serr)
		}
		delivered += len(d.Text)
		if d.ToolCall != nil {
			delivered += len(d.ToolCall.Name) + len(d.ToolCall.Arguments)
		}
		d, err = st.Next()
	}
}

func (x *exchange) fellBackFrom(m *Model) string {
	if first := x.rt.candidates[0]; first != m {
		return first.ID
	}
	if x.rt.requested != m.ID && !x.rt.router {
		return x.rt.requested
	}
	return ""
}

// finishPartial charges a stream that ended early for what was delivered.
func (s *Service) finishPartial(ctx context.Context, x *exchange, m *Model, st provider.Stream, delivered int, status string, cause error) (*Answer, error) {
	res := st.Result()
	res.Usage.Reported = false
	ans, _ := s.finish(ctx, x, m, &res, false, delivered, nil)
	ans.FinishReason = status
	x.rec(s, ans, m, status, status)
	if status == StatusClientClosed {
		return ans, fmt.Errorf("ai: client went away: %w", cause)
	}
	e := api.E(api.KindBadGateway, "stream_error", "the model's stream broke after %d bytes; you were charged for what was delivered only", delivered)
	e.Err = cause
	return ans, e
}

// finish charges a finished answer exactly. complete is false for a stream
// cut short, whose output is counted from the bytes delivered.
func (s *Service) finish(ctx context.Context, x *exchange, m *Model, r *provider.ChatResponse, complete bool, delivered int, _ error) (*Answer, error) {
	tin, tout := r.Usage.InputTokens, r.Usage.OutputTokens
	if !complete || !r.Usage.Reported {
		if tin <= 0 {
			tin = int64((x.size + 3) / 4)
		}
		tout = int64((delivered + 3) / 4)
	}
	cost := Cost(m.InputPerMTok, m.OutputPerMTok, tin, tout, s.markup(m))
	s.settle(ctx, x, cost)
	ans := &Answer{ID: x.id, Output: r.Text, ToolCalls: r.ToolCalls, ModelUsed: m.ID, Provider: m.Provider, FinishReason: r.FinishReason,
		TokensIn: tin, TokensOut: tout, Cost: USD(cost), CostMicros: cost, LatencyMs: time.Since(x.started).Milliseconds(),
		FellBackFrom: x.fellBackFrom(m), ProjectID: x.in.Project, upstream: x.upstream}
	if !complete {
		return ans, nil
	}
	if r.FinishReason == provider.FinishLength {
		if r.Text == "" && len(r.ToolCalls) == 0 {
			x.rec(s, ans, m, StatusBudgetExhausted, "budget_exhausted")
			return ans, api.E(api.KindUnprocessable, "budget_exhausted",
				"the model spent all %d max_tokens without answering; the %d tokens used were charged; raise max_tokens", maxTokensFor(x.in, m), tout).
				With("tokensIn", tin).With("tokensOut", tout).With("cost", USD(cost)).With("costMicros", cost).With("modelUsed", m.ID)
		}
		ans.Truncated, ans.Note = true, truncatedNote
		x.rec(s, ans, m, StatusTruncated, "")
		return ans, nil
	}
	x.rec(s, ans, m, StatusOK, "")
	return ans, nil
}

// rec adds the request to the history.
func (x *exchange) rec(s *Service, a *Answer, m *Model, status, code string) {
	r := Record{ID: x.id, workspace: x.ws, ProjectID: x.in.Project, Kind: "chat", Surface: x.in.Surface, ModelRequested: x.rt.requested,
		Status: status, ErrorCode: code, Stream: x.stream, At: s.d.Clock.Now(), LatencyMs: time.Since(x.started).Milliseconds()}
	if m != nil {
		r.ModelUsed, r.Provider, r.FellBackFrom = m.ID, m.Provider, x.fellBackFrom(m)
	}
	if a != nil {
		r.TokensIn, r.TokensOut, r.CostMicros = a.TokensIn, a.TokensOut, a.CostMicros
	}
	s.rec.add(r)
}

// abandon releases the reservation of a request no model answered.
func (s *Service) abandon(ctx context.Context, x *exchange, m *Model, status, code string, err error) error {
	for _, r := range x.res {
		if rerr := s.d.Ledger.Release(context.WithoutCancel(ctx), r.ID); rerr != nil {
			s.d.Logger.Error("ai: release reservation", "reservation", r.ID, "err", rerr)
		}
	}
	if code == "" {
		if e := api.AsError(err); e.Kind != api.KindInternal {
			code = e.Code
		}
	}
	x.rec(s, nil, m, status, code)
	return err
}

// refuse ends a request the upstream would not take (not retried).
func (s *Service) refuse(ctx context.Context, x *exchange, m *Model, err error) error {
	switch {
	case errors.Is(err, provider.ErrRefused):
		e := api.E(api.KindInvalid, "ai_request_refused", "model %s refused the request; nothing was charged", m.ID)
		e.Err = err
		return s.abandon(ctx, x, m, StatusRefused, e.Code, e)
	case errors.Is(err, provider.ErrTooLong):
		e := api.E(api.KindTooLarge, "ai_request_refused", "model %s refused the request as too long for its context; nothing was charged", m.ID)
		e.Err = err
		return s.abandon(ctx, x, m, StatusRefused, e.Code, e)
	}
	e := api.E(api.KindBadGateway, "ai_provider_error", "model %s's provider failed; nothing was charged", m.ID)
	e.Err = err
	return s.abandon(ctx, x, m, StatusFailed, e.Code, e)
}
