package usage

import (
	"context"
	"fmt"
	"time"

	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/billing"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/deploys"
	"github.com/svcplatform/platform/controlplane/metering"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/rules"
)

// The attention sources below are small adapters over the areas' own
// services; the assembly builds them with those services.

// workspaceProjects lists every project of workspace.
func workspaceProjects(ctx context.Context, p Projects, workspace string) ([]projects.Project, error) {
	return p.List(ctx, &auth.Principal{WorkspaceID: workspace})
}

// ProjectsSource reports projects left in teardown_failed by a delete.
type ProjectsSource struct {
	Projects Projects
}

// Attention implements Source.
func (s ProjectsSource) Attention(ctx context.Context, workspace string) ([]Item, error) {
	prjs, err := workspaceProjects(ctx, s.Projects, workspace)
	if err != nil {
		return nil, err
	}
	var out []Item
	for _, p := range prjs {
		if p.Status != projects.StatusTeardownFailed {
			continue
		}
		since := p.UpdatedAt
		reason := fmt.Sprintf("project %s was only partly deleted; only reads and deletes are accepted until the delete is retried", p.Name)
		if p.TeardownError != "" {
			reason += " (" + p.TeardownError + ")"
		}
		out = append(out, Item{Kind: KindTeardownFailed, Severity: Critical, ProjectID: p.ID, Since: &since, Reason: reason,
			Link: Link{Method: "DELETE", API: "/api/projects/" + p.ID, Dashboard: "/projects/" + p.ID + "/settings"}})
	}
	return out, nil
}

// Deployments is what DeploysSource needs of *deploys.Service.
type Deployments interface {
	List(ctx context.Context, workspace, projectID string) (deploys.ProjectDeployments, error)
	FunctionsBehind(ctx context.Context, projectID string) ([]string, error)
}

// DefaultStuckAfter is when a deploy still running is stuck.
const DefaultStuckAfter = 15 * time.Minute

// DeploysSource reports, per project, a failed latest deploy (critical when
// nothing is live, warning when an older deployment still serves), a
// deploy running longer than StuckAfter, and functions running older
// environment variables (functions_behind).
type DeploysSource struct {
	Projects    Projects
	Deployments Deployments
	Clock       clock.Clock
	// StuckAfter is DefaultStuckAfter when 0.
	StuckAfter time.Duration
}

// Attention implements Source.
func (s DeploysSource) Attention(ctx context.Context, workspace string) ([]Item, error) {
	prjs, err := workspaceProjects(ctx, s.Projects, workspace)
	if err != nil {
		return nil, err
	}
	stuck := s.StuckAfter
	if stuck <= 0 {
		stuck = DefaultStuckAfter
	}
	now := s.Clock.Now()
	var out []Item
	for _, p := range prjs {
		if p.Status == projects.StatusTeardownFailed {
			continue
		}
		list, err := s.Deployments.List(ctx, workspace, p.ID)
		if err != nil {
			return nil, err
		}
		if len(list.Deployments) > 0 {
			d := list.Deployments[0]
			link := Link{Method: "GET", API: "/api/deployments/" + d.ID, Dashboard: "/projects/" + p.ID + "/deployments/" + d.ID}
			switch {
			case d.State == deploys.StateFailed:
				sev, reason := Critical, fmt.Sprintf("the latest deploy of %s failed and nothing is live", p.Name)
				for _, older := range list.Deployments[1:] {
					if older.State == deploys.StateLive {
						sev, reason = Warning, fmt.Sprintf("the latest deploy of %s failed; an older deployment is still live", p.Name)
						break
					}
				}
				if d.Error != "" {
					reason += ": " + clip(d.Error, 160)
				}
				since := d.CreatedAt
				if d.FinishedAt != nil {
					since = *d.FinishedAt
				}
				out = append(out, Item{Kind: KindDeployFailed, Severity: sev, ProjectID: p.ID, Since: &since, Reason: reason, Link: link})
			case d.State == deploys.StateDeploying && now.Sub(d.CreatedAt) >= stuck:
				since := d.CreatedAt
				out = append(out, Item{Kind: KindDeployStuck, Severity: Warning, ProjectID: p.ID, Since: &since, Link: link,
					Reason: fmt.Sprintf("a deploy of %s has been running for %d minutes", p.Name, int(now.Sub(d.CreatedAt)/time.Minute))})
			}
		}
		behind, err := s.Deployments.FunctionsBehind(ctx, p.ID)
		if err != nil {
			return nil, err
		}
		for _, fn := range behind {
			out = append(out, Item{Kind: KindFunctionsBehind, Severity: Warning, ProjectID: p.ID,
				Reason: fmt.Sprintf("function %s runs older environment variables; deploy again to apply the current ones", fn),
				Link:   Link{Method: "POST", API: "/api/projects/" + p.ID + "/deploy", Dashboard: "/projects/" + p.ID + "/deployments"}})
		}
	}
	return out, nil
}

// clip shortens s to n bytes at a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !runeStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

func runeStart(b byte) bool { return b&0xC0 != 0x80 }

// EmailVerifier tells whether the owner's e-mail is verified
// (*accounts.Service).
type EmailVerifier interface {
	OwnerEmailVerified(ctx context.Context, workspace string) (bool, error)
}

// EmailSource reports an unverified owner e-mail.
type EmailSource struct {
	Verifier EmailVerifier
}

// Attention implements Source.
func (s EmailSource) Attention(ctx context.Context, workspace string) ([]Item, error) {
	ok, err := s.Verifier.OwnerEmailVerified(ctx, workspace)
	if err != nil || ok {
		return nil, err
	}
	return []Item{{Kind: KindEmailUnverified, Severity: Warning,
		Reason: "the owner's e-mail is not verified: live payment links and, on hobby, vendor AI models need it",
		Link:   Link{Method: "POST", API: "/api/account/email/verification", Dashboard: "/account"}}}, nil
}

// LowCreditPercent is when included AI credit is low: less than this share
// of it left.
const LowCreditPercent = 10

// LowBalance is the Balance below which low included credit is reported
// (one dollar).
const LowBalance billing.Micros = 1_000_000

// CreditSource reports AI credit running low or used up: the included
// credit and the Balance on plans with credit, the Balance alone on plans
// without (hobby), and what the workspace owes. A workspace with no
// included credit is reported only when it used AI in the last 30 days.
type CreditSource struct {
	Credits Credits
	Meter   Meter
	Clock   clock.Clock
}

// Attention implements Source.
func (s CreditSource) Attention(ctx context.Context, workspace string) ([]Item, error) {
	sum, err := s.Credits.Summary(ctx, workspace)
	if err != nil {
		return nil, err
	}
	link := Link{Method: "GET", API: "/api/billing", Dashboard: "/settings/billing"}
	owed := ""
	if sum.Owed > 0 {
		owed = fmt.Sprintf("; $%s is owed for requests that used more than their estimate, paid first by the next Balance load", sum.Owed.USD())
	}
	used := func() (bool, error) {
		now := s.Clock.Now()
		for _, m := range []metering.Metric{metering.AIRequests, metering.AIEmbeddings} {
			n, err := s.Meter.Total(ctx, workspace, "", m, now.AddDate(0, 0, -30), now.Add(time.Second))
			if err != nil || n > 0 {
				return n > 0, err
			}
		}
		return false, nil
	}
	left := sum.IncludedLeft + sum.Available
	switch {
	case left <= 0:
		if sum.Included == 0 && sum.Owed == 0 {
			if ok, err := used(); err != nil || !ok {
				return nil, err
			}
		}
		return []Item{{Kind: KindAICredit, Severity: Critical, Link: link,
			Reason: "AI credit is used up: AI requests and agent runs answer 402 ai_credits_exhausted until the Balance is loaded or the month turns" + owed}}, nil
	case sum.Included > 0 && sum.IncludedLeft*100 < sum.Included*LowCreditPercent && sum.Available < LowBalance:
		return []Item{{Kind: KindAICredit, Severity: Warning, Link: link,
			Reason: fmt.Sprintf("AI credit is running low: $%s of $%s included credit left this month, Balance $%s",
				sum.IncludedLeft.USD(), sum.Included.USD(), sum.Available.USD()) + owed}}, nil
	case sum.Included == 0 && sum.Available < LowBalance:
		// No included credit (hobby): AI is paid from the Balance alone.
		if sum.Owed == 0 {
			if ok, err := used(); err != nil || !ok {
				return nil, err
			}
		}
		return []Item{{Kind: KindAICredit, Severity: Warning, Link: link,
			Reason: fmt.Sprintf("the Balance is running low: $%s left, and this plan has no included AI credit, so AI requests and agent runs are paid from the Balance; load it before it runs out",
				sum.Available.USD()) + owed}}, nil
	case sum.Owed > 0:
		return []Item{{Kind: KindAICredit, Severity: Warning, Link: link,
			Reason: fmt.Sprintf("$%s is owed for requests that used more than their estimate: it counts against the Balance until the next load pays it", sum.Owed.USD())}}, nil
	}
	return nil, nil
}

// ShieldSettings returns the saved Shield settings (*shield.Service).
type ShieldSettings interface {
	Current(ctx context.Context, workspace string) (rules.Settings, error)
}

// ChangeLog finds when a setting last changed (*audit.Log).
type ChangeLog interface {
	LastChange(ctx context.Context, workspace, action, field string) (time.Time, bool, error)
}

// DefaultLogOnlyAfter is how long Shield may stay in log-only mode before
// it is reported.
const DefaultLogOnlyAfter = 7 * 24 * time.Hour

// ShieldSource reports Shield left in log-only mode (rules count but block
// nothing) for longer than After, measured from the audit row that last
// changed logOnly.
type ShieldSource struct {
	Shield  ShieldSettings
	Changes ChangeLog
	Clock   clock.Clock
	// After is DefaultLogOnlyAfter when 0.
	After time.Duration
}

// Attention implements Source.
func (s ShieldSource) Attention(ctx context.Context, workspace string) ([]Item, error) {
	st, err := s.Shield.Current(ctx, workspace)
	if err != nil || !st.Enabled || !st.LogOnly {
		return nil, err
	}
	since, ok, err := s.Changes.LastChange(ctx, workspace, "shield.update", "logOnly")
	if err != nil || !ok {
		return nil, err
	}
	after := s.After
	if after <= 0 {
		after = DefaultLogOnlyAfter
	}
	if s.Clock.Now().Sub(since) < after {
		return nil, nil
	}
	return []Item{{Kind: KindShieldLogOnly, Severity: Warning, Since: &since,
		Reason: fmt.Sprintf("Shield has been in log-only mode for %d days: its rules count visitors but block none", int(s.Clock.Now().Sub(since)/(24*time.Hour))),
		Link:   Link{Method: "PUT", API: "/api/services/shield", Dashboard: "/shield"}}}, nil
}

// Blockers lists what stops a project's deletion (*payments.Service).
type Blockers interface {
	Blockers(ctx context.Context, projectID string) ([]projects.Blocker, error)
}

// RefundsSource reports projects whose payments owe refunds (the payments
// area's refunds_owed blocker: refunds larger than the earnings left).
type RefundsSource struct {
	Projects Projects
	Payments Blockers
}

// Attention implements Source.
func (s RefundsSource) Attention(ctx context.Context, workspace string) ([]Item, error) {
	prjs, err := workspaceProjects(ctx, s.Projects, workspace)
	if err != nil {
		return nil, err
	}
	var out []Item
	for _, p := range prjs {
		bs, err := s.Payments.Blockers(ctx, p.ID)
		if err != nil {
			return nil, err
		}
		for _, b := range bs {
			if b.Kind != "refunds_owed" {
				continue
			}
			out = append(out, Item{Kind: KindRefundsOwed, Severity: Warning, ProjectID: p.ID,
				Reason: fmt.Sprintf("project %s: %s; %s", p.Name, b.Message, b.Action),
				Link:   Link{Method: "GET", API: "/api/projects/" + p.ID + "/payments", Dashboard: "/projects/" + p.ID + "/payments"}})
		}
	}
	return out, nil
}

// FailingWebhook is a payment account whose webhook deliveries fail.
type FailingWebhook struct {
	ProjectID string
	AccountID string
	// Failed is how many deliveries failed for good; LastError the last reason.
	Failed    int
	LastError string
	Since     time.Time
}

// FailingWebhooks lists a workspace's failing webhook endpoints (the
// payments area).
type FailingWebhooks interface {
	FailingWebhooks(ctx context.Context, workspace string) ([]FailingWebhook, error)
}

// WebhooksSource reports payment webhooks whose deliveries fail.
type WebhooksSource struct {
	Webhooks FailingWebhooks
}

// Attention implements Source.
func (s WebhooksSource) Attention(ctx context.Context, workspace string) ([]Item, error) {
	ws, err := s.Webhooks.FailingWebhooks(ctx, workspace)
	if err != nil {
		return nil, err
	}
	out := make([]Item, 0, len(ws))
	for _, w := range ws {
		since := w.Since
		reason := fmt.Sprintf("%d webhook deliveries failed", w.Failed)
		if w.LastError != "" {
			reason += ": " + clip(w.LastError, 120)
		}
		out = append(out, Item{Kind: KindWebhooksFailing, Severity: Warning, ProjectID: w.ProjectID, Since: &since,
			Reason: reason + "; check the endpoint and send a test event",
			Link:   Link{Method: "PATCH", API: "/api/payments/" + w.AccountID, Dashboard: "/projects/" + w.ProjectID + "/payments/webhooks"}})
	}
	return out, nil
}

var (
	_ Source = ProjectsSource{}
	_ Source = DeploysSource{}
	_ Source = EmailSource{}
	_ Source = CreditSource{}
	_ Source = ShieldSource{}
	_ Source = RefundsSource{}
	_ Source = WebhooksSource{}
)
