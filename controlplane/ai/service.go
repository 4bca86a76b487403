package ai

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/svcplatform/platform/controlplane/ratelimit"

	"github.com/svcplatform/platform/controlplane/ai/provider"
	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/metering"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/store"
)

// Deps are the services the gateway is built on.
type Deps struct {
	// DB is the metadata database (history, month totals, switches).
	DB *store.DB
	// Clock dates records and drives the rate limit.
	Clock clock.Clock
	// Limiter is the per-workspace rate limit, shared by the replicas on
	// PostgreSQL (ratelimit.For(DB, Clock) when nil).
	Limiter ratelimit.Limiter
	// Audit records admins' switches.
	Audit *audit.Log
	// Meter receives requests, tokens, embeddings and cost.
	Meter metering.Recorder
	// Ledger holds and charges money.
	Ledger Ledger
	// Plans tells each workspace's plan.
	Plans plans.Source
	// Email tells whether the owner's e-mail is verified; without it no
	// hobby workspace counts as verified.
	Email EmailVerifier
	// Projects checks spend attribution; without it any id is accepted.
	Projects Projects
	// Logger receives what goes wrong in the background.
	Logger *slog.Logger
	// HTTPClient makes the calls to providers (dial policy, TLS roots).
	HTTPClient *http.Client
}

// Service is the AI gateway.
type Service struct {
	cfg       Config
	d         Deps
	cat       *Catalogue
	providers map[string]provider.Provider
	limiter   ratelimit.Limiter
	sets      settingsCache
	rec       *recorder
	// transport is the upstream transport the service made (nil when the
	// caller's client has its own kind of RoundTripper).
	transport *http.Transport
}

// MaxIdleUpstreamConns is how many idle connections to one provider host
// the gateway keeps open between calls.
const MaxIdleUpstreamConns = 64

// upstreamClient returns a copy of c whose transport keeps connections to
// providers open between calls: net/http's default keeps two idle ones per
// host, so concurrent calls to one provider would dial (and handshake TLS)
// again on nearly every request. The dial policy, proxy and TLS settings of
// c's *http.Transport are kept; another kind of RoundTripper is used as is.
func upstreamClient(c *http.Client) (*http.Client, *http.Transport) {
	var t *http.Transport
	switch rt := c.Transport.(type) {
	case nil:
		dt, ok := http.DefaultTransport.(*http.Transport)
		if !ok {
			return c, nil
		}
		t = dt.Clone()
	case *http.Transport:
		t = rt.Clone()
	default:
		return c, nil
	}
	t.MaxIdleConnsPerHost = max(t.MaxIdleConnsPerHost, MaxIdleUpstreamConns)
	if t.MaxIdleConns != 0 {
		t.MaxIdleConns = max(t.MaxIdleConns, 4*MaxIdleUpstreamConns)
	}
	cc := *c
	cc.Transport = t
	return &cc, t
}

// check names what is missing.
func (d *Deps) check() error {
	var missing []string
	for name, ok := range map[string]bool{"DB": d.DB != nil, "Ledger": d.Ledger != nil, "Plans": d.Plans != nil} {
		if !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return fmt.Errorf("%w: %s", ErrNotConfigured, strings.Join(missing, ", "))
	}
	return nil
}

// ErrNotConfigured is returned by New when a dependency is missing.
var ErrNotConfigured = errors.New("ai: missing dependencies")

// New builds the gateway from its configuration: the catalogue with the
// file's overrides, and one client per configured provider. It starts
// nothing: Run writes the request history.
func New(cfg Config, d Deps) (*Service, error) {
	if cfg.Providers == nil {
		cfg.Providers = map[string]ProviderConfig{}
	} else {
		p := make(map[string]ProviderConfig, len(cfg.Providers))
		for k, v := range cfg.Providers {
			p[k] = v
		}
		cfg.Providers = p
	}
	cfg.Provision()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := d.check(); err != nil {
		return nil, err
	}
	if d.Clock == nil {
		d.Clock = clock.System{}
	}
	if d.Limiter == nil {
		d.Limiter = ratelimit.For(d.DB, d.Clock)
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.HTTPClient == nil {
		d.HTTPClient = &http.Client{}
	}
	var own *http.Transport
	d.HTTPClient, own = upstreamClient(d.HTTPClient)
	cat, err := buildCatalogue(cfg.Models)
	if err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, d: d, cat: cat, providers: map[string]provider.Provider{}, limiter: d.Limiter,
		sets: settingsCache{m: map[string]*Settings{}}, transport: own}
	for name, pc := range cfg.Providers {
		p, err := provider.New(provider.Config{Name: name, Protocol: pc.Protocol, BaseURL: pc.BaseURL, APIKey: pc.APIKey,
			HTTP: d.HTTPClient, FirstByteTimeout: cfg.FirstByteTimeout, IdleTimeout: cfg.IdleTimeout})
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
		s.providers[name] = p
	}
	for _, m := range cat.Models() {
		if _, ok := s.providers[m.Provider]; !ok {
			if _, builtin := builtinProviders[m.Provider]; !builtin {
				return nil, fmt.Errorf("%w: model %s names provider %q, which is neither configured nor built in", ErrConfig, m.ID, m.Provider)
			}
		}
	}
	s.rec = newRecorder(d.DB, d.Meter, d.Logger, d.Clock)
	return s, nil
}

// Run writes the request history and meters every Config.FlushEvery until
// ctx ends (Close writes the rest).
func (s *Service) Run(ctx context.Context) error {
	s.rec.run(ctx, s.cfg.FlushEvery)
	return nil
}

// Close writes the history still buffered and closes idle upstream
// connections. Call it after Run has returned.
func (s *Service) Close() error {
	s.rec.close()
	if s.transport != nil {
		s.transport.CloseIdleConnections()
	}
	return nil
}

// Flush writes buffered history and meters now.
func (s *Service) Flush(ctx context.Context) error { return s.rec.flush(ctx) }

// Catalogue returns the models.
func (s *Service) Catalogue() *Catalogue { return s.cat }

// configured tells whether any provider is configured.
func (s *Service) configured() bool { return len(s.providers) > 0 }

// errUnconfigured is the 502 ai_unavailable of a gateway with no provider
// (the specification's status for "no model could answer").
func errUnconfigured() error {
	return api.E(api.KindBadGateway, "ai_unavailable",
		"no AI provider is configured: start the platform with --ai-config FILE (or PLATFORM_AI_CONFIG) naming providers and their keys; see controlplane/ai/README.md")
}

// reachable tells whether m's provider is configured.
func (s *Service) reachable(m *Model) bool {
	_, ok := s.providers[m.Provider]
	return ok
}

// requireWorkspaceKey refuses keys limited to a project (the AI gateway
// is workspace-wide).
func requireWorkspaceKey(p *auth.Principal) error {
	if p == nil || p.WorkspaceID == "" {
		return api.E(api.KindUnauthenticated, "", "missing credentials: send Authorization: Bearer <API key>")
	}
	if p.ProjectID != "" {
		return api.Forbidden("workspace_key_required", "the AI gateway needs a workspace key, not a key limited to a project; send X-Service-Project or projectId to attribute spend to a project")
	}
	return nil
}

// checkProject validates spend attribution.
func (s *Service) checkProject(ctx context.Context, ws, project string) error {
	if project == "" || s.d.Projects == nil {
		return nil
	}
	ok, err := s.d.Projects.Exists(ctx, ws, project)
	if err != nil {
		return api.Internal(fmt.Errorf("ai: project %s: %w", project, err))
	}
	if !ok {
		return api.E(api.KindNotFound, "project_not_found", "project %q not found in this workspace (projectId / X-Service-Project)", project)
	}
	return nil
}

// emailRestricted tells whether the workspace may use only edge models:
// hobby before the owner verified their e-mail.
func (s *Service) emailRestricted(ctx context.Context, ws string, plan plans.Name) (bool, error) {
	if plan != plans.Hobby {
		return false, nil
	}
	if s.d.Email == nil {
		return true, nil
	}
	ok, err := s.d.Email.OwnerEmailVerified(ctx, ws)
	if err != nil {
		return false, api.Internal(fmt.Errorf("ai: e-mail verification: %w", err))
	}
	return !ok, nil
}

func errEmailUnverified(model string) error {
	return api.E(api.KindPaymentRequired, "email_unverified",
		"vendor model %s needs the workspace owner's verified e-mail on the hobby plan; service-1 answers from edge models meanwhile", model)
}

// maxReserve is the plan's per-request reservation cap.
func maxReserve(plan plans.Name) Micros {
	return Micros(plans.Of(plan).AIReservationCents) * 10_000
}

// markup is the basis points added to m's list price.
func (s *Service) markup(m *Model) int {
	if m.Edge || !m.ThirdParty {
		return 0
	}
	return s.cfg.MarkupBasisPoints
}

// modelsByTier lists chat model ids per tier, in fallback order.
func (s *Service) modelsByTier() map[string][]string {
	out := map[string][]string{TierFast: {}, TierBalanced: {}, TierDeep: {}}
	for _, m := range s.cat.Models() {
		if m.Kind == KindChat {
			out[m.Tier] = append(out[m.Tier], m.ID)
		}
	}
	return out
}

// providerNames lists the configured providers.
func (s *Service) providerNames() []string {
	out := make([]string, 0, len(s.providers))
	for n := range s.providers {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func lower(s string) string { return strings.ToLower(strings.TrimSpace(s)) }
