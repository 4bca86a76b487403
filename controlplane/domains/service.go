package domains

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/jobs"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/controlplane/store"
)

// AddDomainRequest is the body of POST /api/projects/{id}/domains.
type AddDomainRequest struct {
	// Name is the domain: shop.example.com, or an apex such as
	// example.com.
	Name string `json:"name" doc:"the domain: shop.example.com, or an apex such as example.com (international names are converted to punycode)"`
	// Redirect, for an apex only, brings www.<apex> along: "www" makes the
	// apex redirect to www, "apex" makes www redirect to the apex; null or
	// absent serves the name alone.
	Redirect *string `json:"redirect" doc:"apex only: www (the apex redirects to www.<apex>), apex (www.<apex> redirects to the apex) or null (the name alone)"`
}

// CustomDomain is a custom domain as the API shows it.
type CustomDomain struct {
	ID        string `json:"id"`
	ProjectID string `json:"projectId"`
	Name      string `json:"name"`
	// Apex is true for a registrable domain (example.com).
	Apex bool `json:"apex"`
	// Redirect is "www", "apex" or null (see AddDomainRequest).
	Redirect *string `json:"redirect"`
	// Hosts are the names the edges answer at once it is verified.
	Hosts []string `json:"hosts" doc:"the names the edges answer at once the TXT record was found"`
	// State is pending, verified or misconfigured.
	State   string      `json:"state" doc:"pending (TXT record not found: not served), verified, or misconfigured (the name is the project's and served, but its A/AAAA or CNAME records do not point at the platform)"`
	Records []DNSRecord `json:"records"`
	// Problem says in words what the last look found wrong.
	Problem    string     `json:"problem,omitempty" doc:"what the last look at the DNS found wrong, in words"`
	CheckedAt  *time.Time `json:"checkedAt"`
	VerifiedAt *time.Time `json:"verifiedAt" doc:"when the TXT record was found (the name became the project's)"`
	CreatedAt  time.Time  `json:"createdAt"`
	// Certificates are the certificates the control plane obtained ahead
	// of visitors for the domain's hosts (with an ACME CA; empty until the
	// first attempt, and without one).
	Certificates []HostCertificate `json:"certificates" doc:"per host: the certificate obtained ahead of visitors (notAfter), or the last failure and the next attempt"`
}

// HostCertificate is the state of one host's certificate.
type HostCertificate struct {
	Host     string     `json:"host"`
	NotAfter *time.Time `json:"notAfter"`
	// Error is why the last attempt failed; NextAttempt when it is tried
	// again (the backoff grows with Failures).
	Error       string     `json:"error,omitempty"`
	Failures    int        `json:"failures,omitempty"`
	NextAttempt *time.Time `json:"nextAttempt,omitempty"`
}

// CustomDomainAnswer wraps one custom domain.
type CustomDomainAnswer struct {
	Domain CustomDomain `json:"domain"`
}

// CustomDomainList is a project's custom domains.
type CustomDomainList struct {
	Domains []CustomDomain `json:"domains"`
}

func optionalTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func (s *Service) view(d domain, site string) CustomDomain {
	var redirect *string
	if d.Redirect != "" {
		r := d.Redirect
		redirect = &r
	}
	return CustomDomain{ID: d.ID, ProjectID: d.Project, Name: d.Name, Apex: d.Apex, Redirect: redirect, Hosts: d.hosts(), State: d.State,
		Records: withStatuses(s.expected(d, site), d.Records), Problem: d.Problem, CheckedAt: optionalTime(d.CheckedAt),
		VerifiedAt: optionalTime(d.VerifiedAt), CreatedAt: d.CreatedAt, Certificates: []HostCertificate{}}
}

// viewFull is view with the domain's certificate states.
func (s *Service) viewFull(ctx context.Context, d domain, site string) (CustomDomain, error) {
	v := s.view(d, site)
	v.Certificates = []HostCertificate{}
	for _, h := range d.hosts() {
		st, ok, err := getCertState(ctx, s.d.DB, h)
		if err != nil {
			return v, err
		}
		if !ok || st.DomainID != d.ID {
			continue
		}
		hc := HostCertificate{Host: h, NotAfter: optionalTime(st.NotAfter), Error: st.LastError, Failures: st.Failures}
		if st.Failures > 0 {
			hc.NextAttempt = optionalTime(st.NextTry)
		}
		v.Certificates = append(v.Certificates, hc)
	}
	return v, nil
}

// Errors the API answers.
var (
	errNotFound = api.NotFound("domain")
	// errTaken: another workspace's project holds the name.
	errTaken = api.Conflict("domain_taken", "this name is in use by another workspace: it cannot be added until they remove it")
)

// token returns a fresh verification token: 32 characters of base32.
func token() string { return strings.ToLower(rand.Text()) }

// checkName parses a request's name and redirect, refusing the
// platform's own domains.
func (s *Service) checkName(req AddDomainRequest) (Name, string, error) {
	n, err := ParseName(req.Name)
	if err != nil {
		return Name{}, "", api.E(api.KindInvalid, "invalid_domain", "%s", strings.TrimPrefix(err.Error(), "domains: invalid name: ")).Wrap(err)
	}
	for _, r := range append([]string{s.cfg.AppsDomain}, s.cfg.ReservedDomains...) {
		if under(n.Host, r) || under("www."+n.Host, r) && req.Redirect != nil {
			return Name{}, "", api.E(api.KindInvalid, "reserved_domain", "%s is the platform's own domain: every project already answers at <slug>.%s; add a domain of yours",
				n.Host, s.cfg.AppsDomain)
		}
	}
	redirect := ""
	if req.Redirect != nil {
		redirect = *req.Redirect
	}
	switch redirect {
	case "":
	case RedirectWWW, RedirectApex:
		if !n.Apex {
			return Name{}, "", api.E(api.KindInvalid, "invalid_redirect", "redirect applies to an apex domain (example.com) and its www name; %s is not one: give null", n.Host)
		}
	default:
		return Name{}, "", api.E(api.KindInvalid, "invalid_redirect", `redirect is "www" (the apex redirects to www), "apex" (www redirects to the apex) or null`)
	}
	return n, redirect, nil
}

// Add adds a custom domain to a project, pending until its TXT record is
// found; the answer lists the records to publish.
func (s *Service) Add(ctx context.Context, pr *auth.Principal, projectID string, req AddDomainRequest) (CustomDomain, error) {
	p, err := s.d.Projects.Writable(ctx, pr.WorkspaceID, projectID)
	if err != nil {
		return CustomDomain{}, err
	}
	n, redirect, err := s.checkName(req)
	if err != nil {
		return CustomDomain{}, err
	}
	now := s.now()
	d := domain{ID: store.NewID("dom"), Workspace: pr.WorkspaceID, Project: p.ID, Name: n.Host, Apex: n.Apex, Redirect: redirect,
		Token: token(), State: StatePending, CreatedAt: now, UpdatedAt: now}
	err = s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		own, err := queryDomains(ctx, tx, "project_id = ?", p.ID)
		if err != nil {
			return err
		}
		if len(own) >= s.cfg.DomainsPerProject {
			return api.Conflict("domain_limit", "a project has at most %d custom domains: delete one first", s.cfg.DomainsPerProject).
				With("limit", s.cfg.DomainsPerProject)
		}
		if err := s.hostsFree(ctx, tx, pr.WorkspaceID, d); err != nil {
			return err
		}
		if err := insertDomain(ctx, tx, d); err != nil {
			if store.IsUniqueViolation(err) { // added at the same moment by another request
				return api.Conflict("domain_exists", "%s is already a domain of this project", d.Name)
			}
			return err
		}
		return s.d.Audit.Record(ctx, tx, audit.Event{Workspace: pr.WorkspaceID, Actor: pr, Action: "domain.add", Category: audit.CategorySettings,
			TargetType: "domain", TargetID: d.ID, ProjectID: p.ID, Summary: "custom domain " + d.Name + " added"})
	})
	if err != nil {
		return CustomDomain{}, err
	}
	return s.view(d, s.siteHost(p)), nil
}

// List lists a project's domains, oldest first.
func (s *Service) List(ctx context.Context, pr *auth.Principal, projectID string) (CustomDomainList, error) {
	p, err := s.d.Projects.Get(ctx, pr.WorkspaceID, projectID)
	if err != nil {
		return CustomDomainList{}, err
	}
	ds, err := queryDomains(ctx, s.d.DB, "project_id = ?", p.ID)
	if err != nil {
		return CustomDomainList{}, err
	}
	out := CustomDomainList{Domains: make([]CustomDomain, 0, len(ds))}
	for _, d := range ds {
		v, err := s.viewFull(ctx, d, s.siteHost(p))
		if err != nil {
			return CustomDomainList{}, err
		}
		out.Domains = append(out.Domains, v)
	}
	return out, nil
}

// domainFor loads a domain of the caller's workspace and its project, and
// checks op against the project.
func (s *Service) domainFor(ctx context.Context, pr *auth.Principal, id string, op auth.Op) (domain, projects.Project, error) {
	d, err := getDomain(ctx, s.d.DB, id)
	if errors.Is(err, store.ErrNotFound) || err == nil && d.Workspace != pr.WorkspaceID {
		return domain{}, projects.Project{}, errNotFound
	}
	if err != nil {
		return domain{}, projects.Project{}, err
	}
	if err := auth.Authorize(pr, op, d.Project); err != nil {
		return domain{}, projects.Project{}, err
	}
	p, err := s.d.Projects.Get(ctx, pr.WorkspaceID, d.Project)
	if err != nil {
		return domain{}, projects.Project{}, err
	}
	return d, p, nil
}

// Get reads a domain.
func (s *Service) Get(ctx context.Context, pr *auth.Principal, id string) (CustomDomain, error) {
	d, p, err := s.domainFor(ctx, pr, id, auth.OpProjectRead)
	if err != nil {
		return CustomDomain{}, err
	}
	return s.viewFull(ctx, d, s.siteHost(p))
}

// Verify looks the domain's records up now and records what it found. A
// name another workspace holds is 409 domain_taken (the finding is kept);
// DNS that cannot answer is 503 dns_unavailable and changes nothing.
func (s *Service) Verify(ctx context.Context, pr *auth.Principal, id string) (CustomDomain, error) {
	d, p, err := s.domainFor(ctx, pr, id, auth.OpProjectUpdate)
	if err != nil {
		return CustomDomain{}, err
	}
	if _, err := s.d.Projects.Writable(ctx, pr.WorkspaceID, d.Project); err != nil {
		return CustomDomain{}, err
	}
	d, err = s.recheck(ctx, d, s.siteHost(p))
	var held *takenError
	switch {
	case errors.As(err, &held):
		if held.workspace == pr.WorkspaceID {
			return CustomDomain{}, api.Conflict("domain_in_use", "%s is a domain of another project of this workspace: delete it there first", held.host).
				With("projectId", held.project)
		}
		return CustomDomain{}, errTaken
	case err != nil:
		return CustomDomain{}, &api.Error{Kind: api.KindUnavailable, Code: "dns_unavailable",
			Message: "the domain's DNS records could not be looked up; retry shortly", Err: err}
	}
	return s.viewFull(ctx, d, s.siteHost(p))
}

// takenError: a host of a domain whose TXT record was found is held by
// another domain.
type takenError struct{ host, project, workspace string }

func (e *takenError) Error() string { return "domains: " + e.host + " is held by project " + e.project }

// recheck looks d's records up and stores the outcome: a pending domain
// whose TXT record is found claims its hosts (edges serve them from the
// next snapshot) and becomes verified or misconfigured by its routing
// records; a claimed domain keeps its hosts and moves between verified and
// misconfigured.
func (s *Service) recheck(ctx context.Context, d domain, site string) (domain, error) {
	f, err := s.look(ctx, d, site)
	if err != nil {
		s.m.checks.WithLabelValues("error").Inc()
		return d, err
	}
	now := s.now()
	prev := d.State
	d.Records, d.CheckedAt, d.UpdatedAt = f.records, now, now
	state := StateMisconfigured
	if f.routeOK {
		state = StateVerified
	}
	var taken *takenError
	switch {
	case d.claimed():
		d.State = state
		d.Problem = routingProblems(f)
		err = saveCheck(ctx, s.d.DB, d)
	case !f.txtOK:
		d.Problem = strings.Join(append([]string{f.txtProblem}, f.problems...), "; ")
		err = saveCheck(ctx, s.d.DB, d)
	default:
		claim := d
		claim.State, claim.VerifiedAt, claim.Problem = state, now, routingProblems(f)
		err = s.d.Pub.Change(ctx, func(tx *sql.Tx) error {
			for _, h := range d.hosts() {
				held, ok, err := hostHolder(ctx, tx, h)
				if err != nil {
					return err
				}
				if ok && held.DomainID != d.ID {
					taken = &takenError{host: h, project: held.Project, workspace: held.Workspace}
					return taken
				}
			}
			ok, err := claimHosts(ctx, tx, claim)
			if err != nil {
				return err
			}
			if !ok {
				taken = &takenError{host: d.Name}
				return taken
			}
			return saveCheck(ctx, tx, claim)
		})
		if err == nil {
			d = claim
		} else if taken != nil {
			d.Problem = taken.host + " is in use by another project: it stays there until that project removes it"
			if err := saveCheck(ctx, s.d.DB, d); err != nil {
				return d, err
			}
			s.m.checks.WithLabelValues("taken").Inc()
			return d, taken
		}
	}
	if err != nil {
		return d, fmt.Errorf("domains: save %s: %w", d.Name, err)
	}
	s.m.checks.WithLabelValues(d.State).Inc()
	if prev != d.State {
		s.d.Logger.Info("domains: state", "domain", d.Name, "project", d.Project, "state", d.State, "was", prev)
		if d.State == StateVerified {
			s.obtainSoon(ctx, d)
		}
	}
	return d, nil
}

// routingProblems joins the problems of a finding other than the TXT
// record's (which no longer matters once control was proven).
func routingProblems(f finding) string { return strings.Join(f.problems, "; ") }

// Delete removes a domain: the edges stop answering at its hosts with the
// next snapshot.
func (s *Service) Delete(ctx context.Context, pr *auth.Principal, id string) error {
	d, _, err := s.domainFor(ctx, pr, id, auth.OpProjectUpdate)
	if err != nil {
		return err
	}
	return s.d.Pub.Change(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM domain_hosts WHERE domain_id = ?`, d.ID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM domain_certs WHERE domain_id = ?`, d.ID); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM domains WHERE id = ?`, d.ID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return errNotFound
		}
		return s.d.Audit.Record(ctx, tx, audit.Event{Workspace: pr.WorkspaceID, Actor: pr, Action: "domain.remove", Category: audit.CategorySettings,
			TargetType: "domain", TargetID: d.ID, ProjectID: d.Project, Summary: "custom domain " + d.Name + " removed"})
	})
}

// recheckJob looks every domain up again.
func (s *Service) recheckJob(ctx context.Context, _ jobs.Job) error {
	ds, err := queryDomains(ctx, s.d.DB, "1 = 1")
	if err != nil {
		return err
	}
	var errs []error
	for _, d := range ds {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		p, err := s.d.Projects.Get(ctx, d.Workspace, d.Project)
		if err != nil {
			continue // deleted meanwhile: teardown removes its domains
		}
		var taken *takenError
		if _, err := s.recheck(ctx, d, s.siteHost(p)); err != nil && !errors.As(err, &taken) {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		s.d.Logger.Warn("domains: re-check", "domains", len(ds), "errors", len(errs), "first", errs[0])
	}
	return nil
}

// Unverified counts a workspace's domains that are not verified (pending
// or misconfigured): the security overview's Domain verification check
// (security.Deps.UnverifiedDomains).
func (s *Service) Unverified(ctx context.Context, workspace string) (int, error) {
	var n int
	err := s.d.DB.QueryRowContext(ctx, `SELECT count(*) FROM domains WHERE workspace_id = ? AND state <> ?`, workspace, StateVerified).Scan(&n)
	return n, err
}
