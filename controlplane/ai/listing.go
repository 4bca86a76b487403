package ai

import (
	"context"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/plans"
)

// ModelView is one model as GET /api/ai/chat lists it.
type ModelView struct {
	ID             string    `json:"id"`
	Kind           string    `json:"kind"`
	Provider       string    `json:"provider"`
	Tier           string    `json:"tier,omitempty"`
	Family         string    `json:"family,omitempty"`
	Edge           bool      `json:"edge"`
	Enabled        bool      `json:"enabled"`
	Available      bool      `json:"available"`
	Reason         string    `json:"reason,omitempty"`
	Price          PriceView `json:"price"`
	MaxTokens      int       `json:"maxTokens,omitempty"`
	TemperatureMax float64   `json:"temperatureMax,omitempty"`
	Dimensions     int       `json:"dimensions,omitempty"`
}

// PriceView is a model's price per million tokens, markup included.
type PriceView struct {
	InputPerMTok        PerMTok `json:"inputPerMTok"`
	OutputPerMTok       PerMTok `json:"outputPerMTok"`
	InputMicrosPerMTok  int64   `json:"inputMicrosPerMTok"`
	OutputMicrosPerMTok int64   `json:"outputMicrosPerMTok"`
	MarkupBasisPoints   int     `json:"markupBasisPoints"`
	PriceDate           string  `json:"priceDate,omitempty"`
	Currency            string  `json:"currency"`
}

// RouterView describes service-1.
type RouterView struct {
	ID      string              `json:"id"`
	Aliases []string            `json:"aliases"`
	Tiers   map[string][]string `json:"tiers"`
	Default string              `json:"defaultTier"`
}

// LimitsView is the workspace's AI limits.
type LimitsView struct {
	MaxTokensDefault    int     `json:"maxTokensDefault"`
	MaxTokens           int     `json:"maxTokens"`
	MaxTokensEdge       int     `json:"maxTokensEdge"`
	TemperatureMax      float64 `json:"temperatureMax"`
	InputChars          int     `json:"inputChars"`
	EmbeddingInputs     int     `json:"embeddingInputs"`
	RequestsPerMinute   int     `json:"requestsPerMinute"`
	MaxPerRequest       USD     `json:"maxPerRequest"`
	MaxPerRequestMicros Micros  `json:"maxPerRequestMicros"`
	HistoryDays         int     `json:"historyDays"`
}

// ChatListing is the answer of GET /api/ai/chat.
type ChatListing struct {
	Plan           plans.Name `json:"plan"`
	Configured     bool       `json:"configured"`
	Providers      []string   `json:"providers"`
	GatewayEnabled bool       `json:"gatewayEnabled"`
	// EmailRestricted is set while a hobby owner's e-mail is unverified:
	// only edge models answer.
	EmailRestricted bool           `json:"emailRestricted"`
	Models          []ModelView    `json:"models"`
	Router          RouterView     `json:"router"`
	Limits          LimitsView     `json:"limits"`
	Credits         *CreditSummary `json:"credits"`
	Note            string         `json:"note,omitempty"`
}

// List answers GET /api/ai/chat: the catalogue as this workspace sees it
// (answered even with no provider configured) and its limits.
func (s *Service) List(ctx context.Context, p *auth.Principal) (*ChatListing, error) {
	if err := requireWorkspaceKey(p); err != nil {
		return nil, err
	}
	ws := p.WorkspaceID
	st, err := s.settings(ctx, ws)
	if err != nil {
		return nil, err
	}
	plan := s.d.Plans.Plan(ctx, ws)
	restricted, err := s.emailRestricted(ctx, ws, plan)
	if err != nil {
		return nil, err
	}
	out := &ChatListing{Plan: plan, Configured: s.configured(), Providers: s.providerNames(), GatewayEnabled: st.Enabled,
		EmailRestricted: restricted, Models: []ModelView{},
		Router: RouterView{ID: Router, Aliases: []string{RouterAlias}, Tiers: s.modelsByTier(), Default: TierBalanced}}
	limit := maxReserve(plan)
	out.Limits = LimitsView{MaxTokensDefault: DefaultMaxTokens, MaxTokens: MaxTokens, MaxTokensEdge: MaxTokensEdge, TemperatureMax: MaxTemperature,
		InputChars: MaxInputChars, EmbeddingInputs: MaxEmbeddingInputs, RequestsPerMinute: plans.Of(plan).AIRequestsPerMinute,
		MaxPerRequest: USD(limit), MaxPerRequestMicros: limit, HistoryDays: HistoryDays}
	for _, m := range s.cat.Models() {
		bp := s.markup(m)
		in, outp := Cost(m.InputPerMTok, 0, 1_000_000, 0, bp), Cost(0, m.OutputPerMTok, 0, 1_000_000, bp)
		v := ModelView{ID: m.ID, Kind: m.Kind, Provider: m.Provider, Tier: m.Tier, Family: m.Family, Edge: m.Edge, Enabled: st.modelOn(m),
			Available: true, Dimensions: m.Dimensions,
			Price: PriceView{InputPerMTok: PerMTok(in), OutputPerMTok: PerMTok(outp), InputMicrosPerMTok: int64(in), OutputMicrosPerMTok: int64(outp),
				MarkupBasisPoints: bp, PriceDate: m.PriceDate, Currency: "usd"}}
		if m.Kind == KindChat {
			v.MaxTokens, v.TemperatureMax = m.maxTokens(), m.temperatureMax()
		}
		switch {
		case !st.Enabled:
			v.Available, v.Reason = false, "ai_gateway_off"
		case !v.Enabled:
			v.Available, v.Reason = false, "ai_model_off"
		case !s.reachable(m):
			v.Available, v.Reason = false, "provider "+m.Provider+" is not configured (--ai-config)"
		case restricted && !m.Edge:
			v.Available, v.Reason = false, "email_unverified"
		}
		out.Models = append(out.Models, v)
	}
	if !s.configured() {
		out.Note = "no AI provider is configured: start the platform with --ai-config FILE (or PLATFORM_AI_CONFIG)"
	}
	if sum, err := s.d.Ledger.Summary(ctx, ws); err == nil {
		out.Credits = &sum
	} else {
		s.d.Logger.Warn("ai: credit summary", "workspace", ws, "err", err)
	}
	return out, nil
}

// RequestsPage is the answer of GET /api/ai/requests.
type RequestsPage struct {
	Requests []Record `json:"requests"`
	Month    Month    `json:"month"`
	// KeptDays is how long calls are kept.
	KeptDays int `json:"keptDays"`
}

// Requests lists recent calls (30 days; never prompts or answers) and this
// month's spend by model and project.
func (s *Service) Requests(ctx context.Context, p *auth.Principal, project string, limit int) (*RequestsPage, error) {
	if err := requireWorkspaceKey(p); err != nil {
		return nil, err
	}
	if err := s.checkProject(ctx, p.WorkspaceID, project); err != nil {
		return nil, err
	}
	if err := s.rec.flush(ctx); err != nil {
		return nil, api.Internal(err)
	}
	now := s.d.Clock.Now()
	recs, err := listRecords(ctx, s.d.DB, p.WorkspaceID, project, now.Add(-HistoryDays*24*time.Hour), limit)
	if err != nil {
		return nil, api.Internal(err)
	}
	month, err := monthSpend(ctx, s.d.DB, p.WorkspaceID, project, now)
	if err != nil {
		return nil, api.Internal(err)
	}
	return &RequestsPage{Requests: recs, Month: month, KeptDays: HistoryDays}, nil
}
