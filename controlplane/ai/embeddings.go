package ai

import (
	"context"
	"errors"
	"time"
	"unicode/utf8"

	"github.com/svcplatform/platform/controlplane/ai/provider"
	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/store"
)

// EmbedInput is one embeddings request.
type EmbedInput struct {
	Input   []string
	Model   string // bge-small, bge-base (default) or bge-large
	Project string
	Surface string
}

// EmbedAnswer is the answer of an embeddings request.
type EmbedAnswer struct {
	Embeddings [][]float32 `json:"embeddings"`
	Dimensions int         `json:"dimensions"`
	Model      string      `json:"model"`
	Provider   string      `json:"provider"`
	TokensIn   int64       `json:"tokensIn"`
	Cost       USD         `json:"cost"`
	CostMicros Micros      `json:"costMicros"`
	LatencyMs  int64       `json:"latencyMs"`
	ProjectID  string      `json:"projectId,omitempty"`
}

// Embed embeds up to 100 inputs with one embedding model; the vectors'
// length is checked against the catalogue's dimensions. Embedding models
// are never substituted (another model's vectors would not compare).
func (s *Service) Embed(ctx context.Context, p *auth.Principal, in EmbedInput) (*EmbedAnswer, error) {
	if err := requireWorkspaceKey(p); err != nil {
		return nil, err
	}
	return s.embed(ctx, p.WorkspaceID, in)
}

// EmbedAs embeds for a workspace without an HTTP caller (vector collections,
// agents).
func (s *Service) EmbedAs(ctx context.Context, workspace string, in EmbedInput) (*EmbedAnswer, error) {
	if in.Surface == "" {
		in.Surface = SurfaceInProcess
	}
	return s.embed(ctx, workspace, in)
}

func (s *Service) embed(ctx context.Context, ws string, in EmbedInput) (*EmbedAnswer, error) {
	started := time.Now()
	if in.Surface == "" {
		in.Surface = SurfaceEmbeddings
	}
	if len(in.Input) == 0 {
		return nil, api.E(api.KindInvalid, "invalid_request", "input must be an array of 1 to %d strings", MaxEmbeddingInputs).With("field", "input")
	}
	if len(in.Input) > MaxEmbeddingInputs {
		return nil, api.E(api.KindInvalid, "too_many_inputs", "input has %d items; at most %d per call", len(in.Input), MaxEmbeddingInputs).With("limit", MaxEmbeddingInputs)
	}
	chars, size := 0, 0
	for i, t := range in.Input {
		if t == "" {
			return nil, api.Invalid("input[%d] is empty", i)
		}
		chars += utf8.RuneCountInString(t)
		size += len(t)
	}
	if chars > MaxInputChars {
		return nil, api.E(api.KindTooLarge, "ai_input_too_large", "the input is %d characters; at most %d are accepted", chars, MaxInputChars).With("limit", MaxInputChars)
	}
	if in.Model == "" {
		in.Model = DefaultEmbeddingModel
	}
	m, ok := s.cat.Get(in.Model)
	if !ok || m.Kind != KindEmbedding {
		return nil, api.E(api.KindInvalid, "unknown_model", "no embedding model %q; use bge-small (384), bge-base (768) or bge-large (1024)", in.Model).With("field", "model")
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
	if !st.modelOn(m) {
		return nil, api.Forbidden("ai_model_off", "model %s is switched off for this workspace; an admin can enable it (PUT /api/ai/settings)", m.ID)
	}
	if !s.configured() {
		return nil, errUnconfigured()
	}
	plan := s.d.Plans.Plan(ctx, ws)
	if err := s.rateLimit(ctx, ws, bucketEmbeddings, plan); err != nil {
		return nil, err
	}
	if !m.Edge {
		restricted, err := s.emailRestricted(ctx, ws, plan)
		if err != nil {
			return nil, err
		}
		if restricted {
			return nil, errEmailUnverified(m.ID)
		}
	}
	prov, ok := s.providers[m.Provider]
	if !ok {
		return nil, api.E(api.KindBadGateway, "ai_unavailable", "embedding model %s's provider %q is not configured in --ai-config", m.ID, m.Provider)
	}
	id := store.NewID("air")
	amount := Cost(m.InputPerMTok, 0, int64((size+2)/3+2*len(in.Input)), 0, s.markup(m))
	limit := maxReserve(plan)
	res, err := s.d.Ledger.Reserve(ctx, ReserveRequest{Workspace: ws, Project: in.Project, Purpose: purposeEmbeddings, Ref: id, Amount: amount, MaxPerRequest: limit})
	if err != nil {
		return nil, ledgerError(err)
	}
	rec := Record{ID: id, workspace: ws, ProjectID: in.Project, Kind: "embeddings", Surface: in.Surface, ModelRequested: m.ID,
		ModelUsed: m.ID, Provider: m.Provider, Inputs: len(in.Input)}
	cctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	out, err := prov.Embed(cctx, m.upstream(), in.Input)
	cancel()
	fail := func(code string, e error) (*EmbedAnswer, error) {
		if rerr := s.d.Ledger.Release(context.WithoutCancel(ctx), res.ID); rerr != nil {
			s.d.Logger.Error("ai: release reservation", "reservation", res.ID, "err", rerr)
		}
		rec.Status, rec.ErrorCode, rec.At = StatusFailed, code, s.d.Clock.Now()
		rec.LatencyMs = time.Since(started).Milliseconds()
		s.rec.add(rec)
		return nil, e
	}
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return fail("client_closed", ctx.Err())
		case errors.Is(err, provider.ErrUnreachable) || errors.Is(err, provider.ErrRateLimited):
			e := api.E(api.KindBadGateway, "ai_unavailable", "embedding model %s could not be reached; nothing was charged", m.ID)
			e.Err = err
			return fail(e.Code, e)
		case errors.Is(err, provider.ErrTooLong):
			e := api.E(api.KindTooLarge, "ai_request_refused", "model %s refused an input as too long; nothing was charged", m.ID)
			e.Err = err
			return fail(e.Code, e)
		}
		e := api.E(api.KindBadGateway, "ai_provider_error", "embedding model %s's provider failed; nothing was charged", m.ID)
		e.Err = err
		return fail(e.Code, e)
	}
	for i, v := range out.Vectors {
		if len(v) != m.Dimensions {
			e := api.E(api.KindBadGateway, "ai_provider_error", "provider %s returned %d dimensions for input %d; %s has %d; nothing was charged", m.Provider, len(v), i, m.ID, m.Dimensions)
			return fail(e.Code, e)
		}
	}
	tin := out.Usage.InputTokens
	if !out.Usage.Reported || tin <= 0 {
		tin = int64((size + 3) / 4)
	}
	cost := Cost(m.InputPerMTok, 0, tin, 0, s.markup(m))
	if err := s.d.Ledger.Settle(context.WithoutCancel(ctx), res.ID, cost); err != nil {
		s.d.Logger.Error("ai: settle reservation", "reservation", res.ID, "err", err)
	}
	rec.Status, rec.TokensIn, rec.CostMicros, rec.At = StatusOK, tin, cost, s.d.Clock.Now()
	rec.LatencyMs = time.Since(started).Milliseconds()
	s.rec.add(rec)
	return &EmbedAnswer{Embeddings: out.Vectors, Dimensions: m.Dimensions, Model: m.ID, Provider: m.Provider, TokensIn: tin,
		Cost: USD(cost), CostMicros: cost, LatencyMs: rec.LatencyMs, ProjectID: in.Project}, nil
}
