package mail

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/jobs"
	"github.com/svcplatform/platform/controlplane/store"
)

// Domain states.
const (
	// DomainPending: added, its records not (yet) found.
	DomainPending = "pending"
	// DomainVerified: its SPF and DKIM records were found; the project's
	// mail from it is signed and sent from it.
	DomainVerified = "verified"
	// DomainFailed: it was verified, and a later look no longer found its
	// records; mail goes from the platform's address until it verifies
	// again.
	DomainFailed = "failed"
)

// Record statuses.
const (
	StatusPending  = "pending"
	StatusVerified = "verified"
	StatusMissing  = "missing"
	StatusMismatch = "mismatch"
	// StatusRecommended marks a record that is advised, not checked (DMARC).
	StatusRecommended = "recommended"
)

// DefaultDKIMKeyBits is the size of the RSA keys made for sending domains.
const DefaultDKIMKeyBits = 2048

// DomainRequest is the body of POST /api/projects/{id}/mail/domains.
type DomainRequest struct {
	Name string `json:"name"`
}

// Record is a DNS record to publish for a sending domain.
type Record struct {
	// Purpose is spf, dkim or dmarc.
	Purpose string `json:"purpose"`
	Type    string `json:"type"`
	Name    string `json:"name"`
	Value   string `json:"value"`
	// Required records must be found for the domain to verify.
	Required bool `json:"required"`
	// Status is pending (not looked up yet), verified, missing, mismatch,
	// or recommended (not checked).
	Status string `json:"status"`
	Note   string `json:"note,omitempty"`
}

// Domain is a sending domain as the API shows it.
type Domain struct {
	ID        string   `json:"id"`
	ProjectID string   `json:"projectId"`
	Name      string   `json:"name"`
	State     string   `json:"state"`
	Records   []Record `json:"records"`
	// Problem says what the last look found wrong.
	Problem    string     `json:"problem,omitempty"`
	CheckedAt  *time.Time `json:"checkedAt"`
	VerifiedAt *time.Time `json:"verifiedAt"`
	CreatedAt  time.Time  `json:"createdAt"`
}

// DomainAnswer wraps one sending domain.
type DomainAnswer struct {
	Domain Domain `json:"domain"`
}

// DomainList is a project's sending domains.
type DomainList struct {
	Domains []Domain `json:"domains"`
}

func optionalTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func (s *Service) view(d domain) Domain {
	spfNote := "if the domain already has an SPF record, add include:" + s.cfg.SPFInclude + " to it instead of adding a second one"
	recs := []Record{
		{Purpose: "spf", Type: "TXT", Name: d.Name, Value: "v=spf1 include:" + s.cfg.SPFInclude + " ~all", Required: true, Status: d.SPF, Note: spfNote},
		{Purpose: "dkim", Type: "TXT", Name: d.Selector + "._domainkey." + d.Name, Value: "v=DKIM1; k=rsa; p=" + d.Public, Required: true, Status: d.DKIM},
		{Purpose: "dmarc", Type: "TXT", Name: "_dmarc." + d.Name, Value: "v=DMARC1; p=none;", Status: StatusRecommended,
			Note: "tells receivers what to do with mail that fails SPF and DKIM; tighten p= once mail verifies"},
	}
	return Domain{ID: d.ID, ProjectID: d.Project, Name: d.Name, State: d.State, Records: recs, Problem: d.LastError,
		CheckedAt: optionalTime(d.CheckedAt), VerifiedAt: optionalTime(d.VerifiedAt), CreatedAt: d.CreatedAt}
}

// domainName checks a sending domain's name and returns it lowercased,
// refusing the platform's own domains and names under them.
func (s *Service) domainName(name string) (string, error) {
	n := strings.TrimSpace(name)
	if n == "" {
		return "", api.Invalid("name is required: the domain mail will come from (example.com)")
	}
	if strings.ContainsFunc(n, isControl) || strings.ContainsAny(n, "@/: ") {
		return "", api.Invalid("name must be a domain such as example.com, without @, scheme, port or path")
	}
	host, err := hostName(n)
	if err != nil {
		return "", api.Invalid("name: %v", err)
	}
	_, own, _ := strings.Cut(s.from.Address, "@")
	for _, r := range append([]string{own, s.cfg.SPFInclude}, s.cfg.ReservedDomains...) {
		r = strings.ToLower(strings.TrimSuffix(r, "."))
		if r != "" && (host == r || strings.HasSuffix(host, "."+r)) {
			return "", api.E(api.KindInvalid, "reserved_domain", "%s is the platform's own domain: use a domain of yours", host)
		}
	}
	return host, nil
}

// selector returns a fresh DKIM selector: "svc" and 12 random characters,
// a host-name label unique to each domain row.
func selector() string { return "svc" + store.NewID("s")[2:14] }

// AddDomain adds a sending domain to a project and makes its DKIM key; the
// answer names the SPF and DKIM records to publish before verifying.
func (s *Service) AddDomain(ctx context.Context, pr *auth.Principal, projectID string, req DomainRequest) (Domain, error) {
	p, err := s.d.Projects.Writable(ctx, pr.WorkspaceID, projectID)
	if err != nil {
		return Domain{}, err
	}
	name, err := s.domainName(req.Name)
	if err != nil {
		return Domain{}, err
	}
	key, err := rsa.GenerateKey(rand.Reader, s.cfg.DKIMKeyBits)
	if err != nil {
		return Domain{}, fmt.Errorf("mail: DKIM key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return Domain{}, fmt.Errorf("mail: DKIM key: %w", err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return Domain{}, fmt.Errorf("mail: DKIM key: %w", err)
	}
	now := s.now()
	d := domain{ID: store.NewID("md"), Workspace: pr.WorkspaceID, Project: p.ID, Name: name, Selector: selector(),
		Public: base64.StdEncoding.EncodeToString(pub), State: DomainPending, SPF: StatusPending, DKIM: StatusPending,
		CreatedAt: now, UpdatedAt: now}
	d.Sealed = s.d.Sealer.Seal(der, []byte("mail-dkim:"+d.ID))
	err = s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		exists, full, err := insertDomain(ctx, tx, d, s.cfg.DomainsPerProject)
		switch {
		case err != nil:
			return err
		case full:
			return api.Conflict("domain_limit", "a project has at most %d sending domains: delete one first", s.cfg.DomainsPerProject).
				With("limit", s.cfg.DomainsPerProject)
		case exists:
			return api.Conflict("domain_exists", "%s is already a sending domain of this project", name)
		}
		return s.d.Audit.Record(ctx, tx, audit.Event{Workspace: pr.WorkspaceID, Actor: pr, Action: "mail.domain_add", Category: audit.CategorySettings,
			TargetType: "mail_domain", TargetID: d.ID, ProjectID: p.ID, Summary: "sending domain " + name + " added"})
	})
	if err != nil {
		return Domain{}, err
	}
	return s.view(d), nil
}

// Domains lists a project's sending domains.
func (s *Service) Domains(ctx context.Context, pr *auth.Principal, projectID string) (DomainList, error) {
	p, err := s.d.Projects.Get(ctx, pr.WorkspaceID, projectID)
	if err != nil {
		return DomainList{}, err
	}
	ds, err := queryDomains(ctx, s.d.DB, "project_id = ?", p.ID)
	if err != nil {
		return DomainList{}, err
	}
	out := DomainList{Domains: make([]Domain, 0, len(ds))}
	for _, d := range ds {
		out.Domains = append(out.Domains, s.view(d))
	}
	return out, nil
}

var errDomainNotFound = api.NotFound("sending domain")

// domainFor loads a sending domain of the caller's workspace and checks op
// against its project.
func (s *Service) domainFor(ctx context.Context, pr *auth.Principal, id string, op auth.Op) (domain, error) {
	d, err := getDomain(ctx, s.d.DB, id)
	if errors.Is(err, store.ErrNotFound) || err == nil && d.Workspace != pr.WorkspaceID {
		return domain{}, errDomainNotFound
	}
	if err != nil {
		return domain{}, err
	}
	if err := auth.Authorize(pr, op, d.Project); err != nil {
		return domain{}, err
	}
	return d, nil
}

// GetDomain reads a sending domain.
func (s *Service) GetDomain(ctx context.Context, pr *auth.Principal, id string) (Domain, error) {
	d, err := s.domainFor(ctx, pr, id, auth.OpMailRead)
	if err != nil {
		return Domain{}, err
	}
	return s.view(d), nil
}

// VerifyDomain looks the domain's records up now and records what it
// found: verified once the SPF record includes the relay and the DKIM
// record carries the domain's key. DNS that cannot answer is a 503 and
// changes nothing.
func (s *Service) VerifyDomain(ctx context.Context, pr *auth.Principal, id string) (Domain, error) {
	d, err := s.domainFor(ctx, pr, id, auth.OpMailDomains)
	if err != nil {
		return Domain{}, err
	}
	if _, err := s.d.Projects.Writable(ctx, pr.WorkspaceID, d.Project); err != nil {
		return Domain{}, err
	}
	d, err = s.recheck(ctx, d)
	if err != nil {
		return Domain{}, &api.Error{Kind: api.KindUnavailable, Code: "dns_unavailable",
			Message: "the domain's DNS records could not be looked up; retry shortly", Err: err}
	}
	return s.view(d), nil
}

// recheck looks d's records up and stores the outcome.
func (s *Service) recheck(ctx context.Context, d domain) (domain, error) {
	lctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	dkimTXT, err := lookupTXT(lctx, s.resolver, d.Selector+"._domainkey."+d.Name)
	if err != nil {
		s.m.checks.WithLabelValues("error").Inc()
		return d, fmt.Errorf("mail: look up DKIM of %s: %w", d.Name, err)
	}
	spfTXT, err := lookupTXT(lctx, s.resolver, d.Name)
	if err != nil {
		s.m.checks.WithLabelValues("error").Inc()
		return d, fmt.Errorf("mail: look up SPF of %s: %w", d.Name, err)
	}
	now := s.now()
	var problems []string
	d.DKIM = dkimStatus(dkimTXT, d.Public)
	switch d.DKIM {
	case StatusMissing:
		problems = append(problems, "no DKIM record at "+d.Selector+"._domainkey."+d.Name)
	case StatusMismatch:
		problems = append(problems, "the DKIM record at "+d.Selector+"._domainkey."+d.Name+" carries another key: publish the value shown")
	}
	var spfNote string
	d.SPF, spfNote = spfStatus(spfTXT, s.cfg.SPFInclude)
	switch {
	case spfNote != "":
		problems = append(problems, spfNote)
	case d.SPF == StatusMissing:
		problems = append(problems, "no SPF record at "+d.Name)
	}
	prev := d.State
	switch {
	case len(problems) == 0:
		d.State = DomainVerified
		if prev != DomainVerified {
			d.VerifiedAt = now
		}
	case prev == DomainVerified || prev == DomainFailed:
		d.State = DomainFailed
	default:
		d.State = DomainPending
	}
	d.LastError = strings.Join(problems, "; ")
	d.CheckedAt, d.UpdatedAt = now, now
	if err := saveCheck(ctx, s.d.DB, d); err != nil {
		return d, err
	}
	s.m.checks.WithLabelValues(d.State).Inc()
	if prev != d.State {
		s.d.Logger.Info("mail: sending domain", "domain", d.Name, "project", d.Project, "state", d.State, "was", prev)
	}
	return d, nil
}

// DeleteDomain removes a sending domain and its key: the project's mail
// from it goes from the platform's address from the next attempt on.
func (s *Service) DeleteDomain(ctx context.Context, pr *auth.Principal, id string) error {
	d, err := s.domainFor(ctx, pr, id, auth.OpMailDomains)
	if err != nil {
		return err
	}
	return s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM mail_domains WHERE id = ?`, d.ID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return errDomainNotFound
		}
		return s.d.Audit.Record(ctx, tx, audit.Event{Workspace: pr.WorkspaceID, Actor: pr, Action: "mail.domain_remove", Category: audit.CategorySettings,
			TargetType: "mail_domain", TargetID: d.ID, ProjectID: d.Project, Summary: "sending domain " + d.Name + " removed"})
	})
}

// recheckJob looks every sending domain up again (a verified domain whose
// records went away fails, and its mail goes from the platform's address)
// and fails messages left queued past every retry.
func (s *Service) recheckJob(ctx context.Context, _ jobs.Job) error {
	ds, err := queryDomains(ctx, s.d.DB, "1 = 1")
	if err != nil {
		return err
	}
	var errs []error
	for _, d := range ds {
		if _, err := s.recheck(ctx, d); err != nil {
			errs = append(errs, err)
		}
	}
	if n, err := s.expireStuck(ctx); err != nil {
		errs = append(errs, err)
	} else if n > 0 {
		s.d.Logger.Warn("mail: messages left queued past every retry failed", "count", n)
	}
	if len(errs) > 0 {
		s.d.Logger.Warn("mail: sending domain re-check", "domains", len(ds), "errors", len(errs), "first", errs[0])
	}
	return nil
}

// giveUpAfter is how long after acceptance a message still queued has
// outlived every retry its job could make (plus a day of slack).
func (s *Service) giveUpAfter() time.Duration {
	total := 24 * time.Hour
	for i := 1; i < s.cfg.MaxAttempts; i++ {
		total += s.cfg.Backoff[min(i-1, len(s.cfg.Backoff)-1)] + s.cfg.Timeout
	}
	return total
}

// expireStuck fails queued messages older than giveUpAfter: their job died
// with a crashed runner on its last attempt.
func (s *Service) expireStuck(ctx context.Context) (int, error) {
	now := s.now()
	res, err := s.d.DB.ExecContext(ctx, `UPDATE mail_messages SET state = 'failed', content_sealed = NULL, failed_at = ?, updated_at = ?,
		last_error = CASE WHEN last_error = '' THEN 'not delivered in time' ELSE 'not delivered in time: ' || last_error END
		WHERE state = 'queued' AND created_at < ? AND sending_until < ?`,
		store.FormatTime(now), store.FormatTime(now), store.FormatTime(now.Add(-s.giveUpAfter())), store.FormatTime(now))
	if err != nil {
		return 0, fmt.Errorf("mail: expire stuck messages: %w", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}
