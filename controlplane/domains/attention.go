package domains

import (
	"context"
	"fmt"
	"time"

	"github.com/svcplatform/platform/controlplane/usage"
)

// Attention kinds of the area.
const (
	// KindDomainUnverified: a domain added more than PendingAfter ago whose
	// TXT record was never found.
	KindDomainUnverified = "domain_unverified"
	// KindDomainMisconfigured: a claimed domain whose A/AAAA or CNAME
	// records do not point at the edges.
	KindDomainMisconfigured = "domain_misconfigured"
	// KindDomainCertificate: a verified domain without a certificate a day
	// after verification (ACME), or whose certificate expires within
	// CertWarnBefore (renewal failing).
	KindDomainCertificate = "domain_certificate"
)

// Attention windows.
const (
	// PendingAfter is how long a new domain may wait for its TXT record
	// before it is reported.
	PendingAfter = 24 * time.Hour
	// CertGrace is how long after verification a domain may be without a
	// certificate (edges order one at the first visit).
	CertGrace = 24 * time.Hour
	// CertWarnBefore: a certificate this close to expiry was not renewed
	// (autocert renews 30 days before, the local CA 30 days before).
	CertWarnBefore = 14 * 24 * time.Hour
)

var _ usage.Source = (*Service)(nil)

// Attention implements usage.Source: domains still unverified a day after
// they were added (info), misconfigured domains (warning), and
// certificates not issued or not renewed (warning).
func (s *Service) Attention(ctx context.Context, workspace string) ([]usage.Item, error) {
	now := s.now()
	ds, err := queryDomains(ctx, s.d.DB, "workspace_id = ?", workspace)
	if err != nil {
		return nil, fmt.Errorf("domains: attention: %w", err)
	}
	var out []usage.Item
	for _, d := range ds {
		link := usage.Link{Method: "POST", API: "/api/domains/" + d.ID + "/verify", Dashboard: "/projects/" + d.Project + "/domains"}
		switch d.State {
		case StatePending:
			if now.Sub(d.CreatedAt) < PendingAfter {
				continue
			}
			since := d.CreatedAt
			out = append(out, usage.Item{Kind: KindDomainUnverified, Severity: usage.Info, ProjectID: d.Project, Since: &since, Link: link,
				Reason: fmt.Sprintf("custom domain %s is not verified: add the TXT record %s, then verify", d.Name, challengeName(d.Name))})
		case StateMisconfigured:
			since := d.CheckedAt
			out = append(out, usage.Item{Kind: KindDomainMisconfigured, Severity: usage.Warning, ProjectID: d.Project, Since: &since, Link: link,
				Reason: fmt.Sprintf("custom domain %s does not point at the platform: %s", d.Name, clip(d.Problem))})
		case StateVerified:
			if s.d.Certs == nil {
				continue
			}
			for _, h := range d.hosts() {
				if it, ok, err := s.certItem(ctx, d, h, now); err != nil {
					return nil, fmt.Errorf("domains: attention: %w", err)
				} else if ok {
					out = append(out, it)
				}
			}
		}
	}
	return out, nil
}

// certItem is the attention item of host's certificate, if it needs one.
func (s *Service) certItem(ctx context.Context, d domain, host string, now time.Time) (usage.Item, bool, error) {
	link := usage.Link{Method: "GET", API: "/api/domains/" + d.ID, Dashboard: "/projects/" + d.Project + "/domains"}
	if st, ok, err := getCertState(ctx, s.d.DB, host); err != nil {
		return usage.Item{}, false, err
	} else if ok && st.Failures > 0 && st.DomainID == d.ID {
		since := st.NextTry
		return usage.Item{Kind: KindDomainCertificate, Severity: usage.Warning, ProjectID: d.Project, Since: &since, Link: link,
			Reason: fmt.Sprintf("the certificate of %s could not be obtained (%d attempts; next at %s): %s; check that %s points at the platform and no CAA record forbids the CA",
				host, st.Failures, st.NextTry.Format(time.RFC3339), st.LastError, host)}, true, nil
	}
	notAfter, found, err := s.d.Certs.Expiry(ctx, host)
	if err != nil {
		return usage.Item{}, false, err
	}
	switch {
	case found && notAfter.Sub(now) < CertWarnBefore:
		since := notAfter.Add(-CertWarnBefore)
		verb := "expires"
		if !notAfter.After(now) {
			verb = "expired"
		}
		return usage.Item{Kind: KindDomainCertificate, Severity: usage.Warning, ProjectID: d.Project, Since: &since, Link: link,
			Reason: fmt.Sprintf("the certificate of %s %s on %s and was not renewed: check that %s still points at the platform", host, verb,
				notAfter.Format("2006-01-02"), host)}, true, nil
	case !found && s.cfg.ACME && now.Sub(d.VerifiedAt) >= CertGrace:
		since := d.VerifiedAt.Add(CertGrace)
		return usage.Item{Kind: KindDomainCertificate, Severity: usage.Warning, ProjectID: d.Project, Since: &since, Link: link,
			Reason: fmt.Sprintf("no certificate was issued for %s a day after it was verified: check its records and that it is not blocked by a CAA record", host)}, true, nil
	}
	return usage.Item{}, false, nil
}
