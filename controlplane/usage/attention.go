package usage

import (
	"context"
	"sort"
	"time"

	"github.com/svcplatform/platform/controlplane/auth"
)

// Source is one area's contribution to the attention list.
type Source interface {
	Attention(ctx context.Context, workspace string) ([]Item, error)
}

// SourceFunc adapts a function to Source.
type SourceFunc func(ctx context.Context, workspace string) ([]Item, error)

// Attention calls f.
func (f SourceFunc) Attention(ctx context.Context, workspace string) ([]Item, error) {
	return f(ctx, workspace)
}

// Severity says how urgent an item is.
type Severity string

// The severities, most urgent first.
const (
	// Critical: something is broken or refused now (a failed deploy with
	// nothing live, a limit reached, credit used up, a stuck teardown).
	Critical Severity = "critical"
	// Warning: something will break or is half done (near a limit, low
	// credit, a failed deploy with an older one still live, failing
	// webhooks, refunds owed).
	Warning Severity = "warning"
	// Info: worth doing (verify the e-mail, leave log-only mode).
	Info Severity = "info"
)

func (s Severity) rank() int {
	switch s {
	case Critical:
		return 0
	case Warning:
		return 1
	default:
		return 2
	}
}

// The kinds of item, in the order they rank within a severity.
const (
	KindTeardownFailed  = "teardown_failed"
	KindDeployFailed    = "deploy_failed"
	KindPlanLimit       = "plan_limit"
	KindAICredit        = "ai_credit_low"
	KindRefundsOwed     = "refunds_owed"
	KindWebhooksFailing = "webhooks_failing"
	KindDeployStuck     = "deploy_stuck"
	KindFunctionsBehind = "functions_behind"
	KindEmailUnverified = "email_unverified"
	KindShieldLogOnly   = "shield_log_only"
	// KindMailFailed and KindSendingDomain are the mail area's: messages
	// that failed, and sending domains that do not (or no longer) verify.
	KindMailFailed    = "mail_failed"
	KindSendingDomain = "sending_domain"
	// KindDomainUnverified, KindDomainMisconfigured and
	// KindDomainCertificate are custom domains' (controlplane/domains):
	// records not published after a day, records that stopped pointing at
	// the edges, and certificates missing or not renewed.
	KindDomainUnverified    = "domain_unverified"
	KindDomainMisconfigured = "domain_misconfigured"
	KindDomainCertificate   = "domain_certificate"
)

// kindOrder ranks kinds within a severity: what blocks users and money
// first, then what is half done, then housekeeping.
var kindOrder = []string{
	KindTeardownFailed, KindDeployFailed, KindPlanLimit, KindAICredit, KindRefundsOwed,
	KindWebhooksFailing, KindMailFailed, KindDomainCertificate, KindDomainMisconfigured, KindDeployStuck, KindFunctionsBehind,
	KindSendingDomain, KindDomainUnverified, KindEmailUnverified, KindShieldLogOnly,
}

func kindRank(k string) int {
	for i, x := range kindOrder {
		if x == k {
			return i
		}
	}
	return len(kindOrder)
}

// Link says where an item is fixed: the API call (method and path) and the
// dashboard page.
type Link struct {
	Method    string `json:"method"`
	API       string `json:"api"`
	Dashboard string `json:"dashboard"`
}

// Item is one entry of the attention list.
type Item struct {
	Kind     string   `json:"kind"`
	Severity Severity `json:"severity"`
	// Reason is one line saying what is wrong and what to do.
	Reason    string `json:"reason"`
	ProjectID string `json:"projectId,omitempty"`
	Link      Link   `json:"link"`
	// Since is when the condition began, when known.
	Since *time.Time `json:"since,omitempty"`
}

// Attention is the answer of GET /api/attention.
type Attention struct {
	Items []Item `json:"items"`
	// Unavailable names the sources that failed this time; their items
	// are missing, not cleared.
	Unavailable []string `json:"unavailable"`
}

// Rank orders items: by severity (critical, warning, info), then by kind
// (kindOrder: teardown_failed, deploy_failed, plan_limit, ai_credit_low,
// refunds_owed, webhooks_failing, deploy_stuck, functions_behind,
// email_unverified, shield_log_only; unknown kinds last), then the oldest
// condition first (items without a time after those with one), then by
// project and reason so the order is stable.
func Rank(items []Item) {
	sort.SliceStable(items, func(i, j int) bool {
		a, b := items[i], items[j]
		if ra, rb := a.Severity.rank(), b.Severity.rank(); ra != rb {
			return ra < rb
		}
		if ka, kb := kindRank(a.Kind), kindRank(b.Kind); ka != kb {
			return ka < kb
		}
		switch {
		case a.Since != nil && b.Since != nil && !a.Since.Equal(*b.Since):
			return a.Since.Before(*b.Since)
		case (a.Since == nil) != (b.Since == nil):
			return a.Since != nil
		}
		if a.ProjectID != b.ProjectID {
			return a.ProjectID < b.ProjectID
		}
		return a.Reason < b.Reason
	})
}

// Attention gathers every source's items for p's workspace and ranks them.
// A source that fails is named in Unavailable (and logged); the others
// still answer. A key limited to a project sees only that project's items
// and the workspace-wide ones.
func (s *Service) Attention(ctx context.Context, p *auth.Principal) (Attention, error) {
	names := make([]string, 0, len(s.d.Sources)+1)
	for n := range s.d.Sources {
		names = append(names, n)
	}
	sort.Strings(names)
	out := Attention{Items: []Item{}, Unavailable: []string{}}
	add := func(name string, src Source) {
		items, err := src.Attention(ctx, p.WorkspaceID)
		if err != nil {
			s.d.Logger.Warn("usage: attention source failed", "source", name, "workspace", p.WorkspaceID, "err", err)
			out.Unavailable = append(out.Unavailable, name)
			return
		}
		for _, it := range items {
			if p.ProjectID != "" && it.ProjectID != "" && it.ProjectID != p.ProjectID {
				continue
			}
			out.Items = append(out.Items, it)
		}
	}
	add("limits", SourceFunc(s.limitItems))
	for _, n := range names {
		add(n, s.d.Sources[n])
	}
	Rank(out.Items)
	return out, nil
}
