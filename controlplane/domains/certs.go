package domains

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/svcplatform/platform/controlplane/jobs"
	"github.com/svcplatform/platform/controlplane/store"
)

// Proactive certificates.
const (
	// DefaultCertEvery is how often verified domains' certificates are
	// checked when an Obtainer is set.
	DefaultCertEvery = 10 * time.Minute
	// CertRenewBefore: a certificate with less left is ordered again (the
	// Obtainer decides; *certs.Service uses 30 days).
	CertRenewBefore = 30 * 24 * time.Hour
	// jobCerts obtains and renews verified domains' certificates.
	jobCerts = "domains.certs"
)

// CertBackoff is the wait before the next attempt after consecutive
// failures to obtain a host's certificate; the last value repeats.
var CertBackoff = []time.Duration{5 * time.Minute, 15 * time.Minute, time.Hour, 4 * time.Hour, 12 * time.Hour, 24 * time.Hour}

// CertObtainer obtains a host's certificate ahead of its first visitor,
// or answers the stored one while more than CertRenewBefore is left
// (*certs.Service's ObtainCert).
type CertObtainer interface {
	ObtainCert(ctx context.Context, host string) (notAfter time.Time, ordered bool, err error)
}

// certState is a row of domain_certs.
type certState struct {
	Host, DomainID, LastError string
	Failures                  int
	NextTry, NotAfter         time.Time
}

func getCertState(ctx context.Context, q store.Querier, host string) (certState, bool, error) {
	var c certState
	var next, na string
	err := q.QueryRowContext(ctx, `SELECT host, domain_id, last_error, failures, next_try, not_after FROM domain_certs WHERE host = ?`, host).
		Scan(&c.Host, &c.DomainID, &c.LastError, &c.Failures, &next, &na)
	if errors.Is(err, sql.ErrNoRows) {
		return certState{Host: host}, false, nil
	}
	c.NextTry, c.NotAfter = store.ParseTime(next), store.ParseTime(na)
	return c, err == nil, err
}

func saveCertState(ctx context.Context, q store.Querier, c certState, now time.Time) error {
	_, err := q.ExecContext(ctx, `INSERT INTO domain_certs (host, domain_id, last_error, failures, next_try, not_after, updated_at) VALUES (?,?,?,?,?,?,?)
		ON CONFLICT (host) DO UPDATE SET domain_id = excluded.domain_id, last_error = excluded.last_error, failures = excluded.failures,
		next_try = excluded.next_try, not_after = excluded.not_after, updated_at = excluded.updated_at`,
		c.Host, c.DomainID, c.LastError, c.Failures, formatOptional(c.NextTry), formatOptional(c.NotAfter), store.FormatTime(now))
	return err
}

func formatOptional(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return store.FormatTime(t)
}

// certsJob obtains or renews the certificate of every host of every
// verified domain, skipping hosts still waiting out their backoff.
func (s *Service) certsJob(ctx context.Context, j jobs.Job) error {
	var one certsPayload
	if len(j.Payload) > 0 {
		_ = json.Unmarshal(j.Payload, &one)
	}
	where, args := "state = ?", []any{StateVerified}
	if one.DomainID != "" {
		where, args = where+" AND id = ?", append(args, one.DomainID)
	}
	ds, err := queryDomains(ctx, s.d.DB, where, args...)
	if err != nil {
		return err
	}
	for _, d := range ds {
		for _, h := range d.hosts() {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err := s.ensureCert(ctx, d, h); err != nil {
				s.d.Logger.Warn("domains: certificate state", "host", h, "err", err)
			}
		}
	}
	return nil
}

// ensureCert asks the Obtainer for host's certificate unless a failure's
// backoff is still running, and records the outcome: a failure's reason,
// the failures in a row and when to try next.
func (s *Service) ensureCert(ctx context.Context, d domain, host string) error {
	st, _, err := getCertState(ctx, s.d.DB, host)
	if err != nil {
		return err
	}
	now := s.now()
	if st.Failures > 0 && now.Before(st.NextTry) && st.DomainID == d.ID {
		return nil
	}
	if st.DomainID != d.ID {
		st = certState{Host: host}
	}
	st.DomainID = d.ID
	octx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	notAfter, ordered, err := s.d.Obtainer.ObtainCert(octx, host)
	cancel()
	if err != nil {
		st.Failures++
		st.LastError = clip(err.Error())
		st.NextTry = now.Add(CertBackoff[min(st.Failures, len(CertBackoff))-1])
		s.m.checks.WithLabelValues("certificate_failed").Inc()
		s.d.Logger.Warn("domains: certificate not obtained", "host", host, "project", d.Project, "failures", st.Failures, "retry", st.NextTry, "err", err)
	} else {
		st.Failures, st.LastError, st.NextTry, st.NotAfter = 0, "", time.Time{}, notAfter.UTC()
		if ordered {
			s.m.checks.WithLabelValues("certificate_obtained").Inc()
			s.d.Logger.Info("domains: certificate obtained", "host", host, "project", d.Project, "notAfter", notAfter)
		}
	}
	if err := saveCertState(ctx, s.d.DB, st, now); err != nil {
		return fmt.Errorf("domains: record certificate of %s: %w", host, err)
	}
	return nil
}

// certsPayload names the one domain a certificate job is for (every
// verified domain when empty: the periodic run).
type certsPayload struct {
	DomainID string `json:"domainId,omitempty"`
}

// obtainSoon queues the certificate job for d at once (d was just
// verified), so its certificate is ordered before its first visitor.
func (s *Service) obtainSoon(ctx context.Context, d domain) {
	if s.d.Obtainer == nil {
		return
	}
	key := d.ID + "@" + store.FormatTime(d.UpdatedAt)
	if _, err := s.d.Jobs.Enqueue(ctx, nil, jobCerts, certsPayload{DomainID: d.ID}, jobs.EnqueueOptions{Key: key}); err != nil {
		s.d.Logger.Warn("domains: queue certificate job", "err", err)
	}
}
