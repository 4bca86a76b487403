package mail

import (
	"context"
	"fmt"
	"time"

	"github.com/svcplatform/platform/controlplane/usage"
)

// Attention kinds of the area.
const (
	// KindMailFailed: a project's messages failed in the last FailedWithin.
	KindMailFailed = "mail_failed"
	// KindSendingDomain: a sending domain lost its records, or was added
	// and not verified within PendingAfter.
	KindSendingDomain = "sending_domain"
	// KindMailBounces: a project's hard bounces reached BounceRateWarn of
	// its sent messages in the last FailedWithin, or a recipient
	// complained.
	KindMailBounces = "mail_bounces"
)

// BounceRateWarn is the share of hard bounces (per sent message) that
// raises an attention item; providers start to throttle around 5%.
const BounceRateWarn = 0.05

// Attention windows.
const (
	// FailedWithin is how far back failed messages are reported.
	FailedWithin = 7 * 24 * time.Hour
	// PendingAfter is how long a new sending domain may wait for its
	// records before it is reported.
	PendingAfter = time.Hour
)

var _ usage.Source = (*Service)(nil)

// Attention implements usage.Source: projects whose messages failed in the
// last 7 days (warning), sending domains whose records went away (warning)
// and sending domains still unverified an hour after they were added
// (info).
func (s *Service) Attention(ctx context.Context, workspace string) ([]usage.Item, error) {
	now := s.now()
	failed, err := failedSince(ctx, s.d.DB, workspace, now.Add(-FailedWithin))
	if err != nil {
		return nil, fmt.Errorf("mail: attention: %w", err)
	}
	var out []usage.Item
	for _, f := range failed {
		name := s.projectName(ctx, workspace, f.Project)
		since := f.Last
		out = append(out, usage.Item{Kind: KindMailFailed, Severity: usage.Warning, ProjectID: f.Project, Since: &since,
			Reason: fmt.Sprintf("%d e-mails of %s failed in the last 7 days; the latest: %s", f.Count, name, clipText(f.Reason, 160)),
			Link:   usage.Link{Method: "GET", API: "/api/projects/" + f.Project + "/emails?state=failed", Dashboard: "/projects/" + f.Project + "/emails"}})
	}
	rates, err := bounceRates(ctx, s.d.DB, workspace, now.Add(-FailedWithin))
	if err != nil {
		return nil, fmt.Errorf("mail: attention: %w", err)
	}
	for _, b := range rates {
		if b.Complained == 0 && float64(b.Bounced) < BounceRateWarn*float64(max(b.Sent, 1)) {
			continue
		}
		since := b.Last
		out = append(out, usage.Item{Kind: KindMailBounces, Severity: usage.Warning, ProjectID: b.Project, Since: &since,
			Reason: fmt.Sprintf("%s: %d hard bounces and %d complaints for %d e-mails sent in the last 7 days; the latest: %s. The addresses are suppressed: clean the recipient list to protect deliverability",
				s.projectName(ctx, workspace, b.Project), b.Bounced, b.Complained, b.Sent, clipText(b.LastDiag, 160)),
			Link: usage.Link{Method: "GET", API: "/api/projects/" + b.Project + "/email-suppressions", Dashboard: "/projects/" + b.Project + "/emails"}})
	}
	ds, err := queryDomains(ctx, s.d.DB, "workspace_id = ? AND state <> ?", workspace, DomainVerified)
	if err != nil {
		return nil, fmt.Errorf("mail: attention: %w", err)
	}
	for _, d := range ds {
		link := usage.Link{Method: "POST", API: "/api/mail/domains/" + d.ID + "/verify", Dashboard: "/projects/" + d.Project + "/emails/domains"}
		switch {
		case d.State == DomainFailed:
			since := d.CheckedAt
			out = append(out, usage.Item{Kind: KindSendingDomain, Severity: usage.Warning, ProjectID: d.Project, Since: &since, Link: link,
				Reason: fmt.Sprintf("sending domain %s no longer verifies (%s): mail goes from the platform's address until its records are back", d.Name, clipText(d.LastError, 160))})
		case now.Sub(d.CreatedAt) >= PendingAfter:
			since := d.CreatedAt
			out = append(out, usage.Item{Kind: KindSendingDomain, Severity: usage.Info, ProjectID: d.Project, Since: &since, Link: link,
				Reason: fmt.Sprintf("sending domain %s is not verified: publish its SPF and DKIM records, then verify", d.Name)})
		}
	}
	return out, nil
}

// projectName names a project for a reason line (its id when unknown).
func (s *Service) projectName(ctx context.Context, workspace, id string) string {
	p, err := s.d.Projects.Get(ctx, workspace, id)
	if err != nil {
		return "project " + id
	}
	return "project " + p.Name
}
