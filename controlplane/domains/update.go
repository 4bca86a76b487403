package domains

import (
	"context"
	"database/sql"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
)

// UpdateDomainRequest is the body of PATCH /api/domains/{id}.
type UpdateDomainRequest struct {
	// Redirect is the apex's new choice: "www", "apex" or null.
	Redirect *string `json:"redirect" doc:"apex only: www (the apex redirects to www.<apex>), apex (www.<apex> redirects to the apex) or null (the apex alone)"`
}

// Update changes an apex domain's redirect choice. A claimed domain's
// hosts change at once (the edges follow with the next snapshot): a www
// name it takes must not be held elsewhere (409 as when adding), and its
// CNAME is checked by the next verification.
func (s *Service) Update(ctx context.Context, pr *auth.Principal, id string, req UpdateDomainRequest) (CustomDomain, error) {
	d, p, err := s.domainFor(ctx, pr, id, auth.OpProjectUpdate)
	if err != nil {
		return CustomDomain{}, err
	}
	if _, err := s.d.Projects.Writable(ctx, pr.WorkspaceID, d.Project); err != nil {
		return CustomDomain{}, err
	}
	_, redirect, err := s.checkName(AddDomainRequest{Name: d.Name, Redirect: req.Redirect})
	if err != nil {
		return CustomDomain{}, err
	}
	if redirect == d.Redirect {
		return s.view(d, s.siteHost(p)), nil
	}
	nd := d
	nd.Redirect, nd.UpdatedAt = redirect, s.now()
	change := func(tx *sql.Tx) error {
		if err := s.hostsFree(ctx, tx, pr.WorkspaceID, nd); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE domains SET redirect = ?, updated_at = ? WHERE id = ?`, nd.Redirect, fmtTime(nd.UpdatedAt), nd.ID); err != nil {
			return err
		}
		if nd.claimed() {
			if _, err := tx.ExecContext(ctx, `DELETE FROM domain_hosts WHERE domain_id = ?`, nd.ID); err != nil {
				return err
			}
			ok, err := claimHosts(ctx, tx, nd)
			if err != nil {
				return err
			}
			if !ok {
				return errTaken
			}
		}
		return s.d.Audit.Record(ctx, tx, audit.Event{Workspace: pr.WorkspaceID, Actor: pr, Action: "domain.update", Category: audit.CategorySettings,
			TargetType: "domain", TargetID: d.ID, ProjectID: d.Project, Summary: "custom domain " + d.Name + " redirect set to " + redirectName(redirect)})
	}
	if d.claimed() {
		err = s.d.Pub.Change(ctx, change)
	} else {
		err = s.d.DB.Tx(ctx, change)
	}
	if err != nil {
		return CustomDomain{}, err
	}
	return s.view(nd, s.siteHost(p)), nil
}

func redirectName(r string) string {
	if r == "" {
		return "none"
	}
	return r
}

// hostsFree refuses d's hosts when another domain of its project names
// one (domain_exists), or another project holds one (domain_in_use in the
// workspace, domain_taken elsewhere).
func (s *Service) hostsFree(ctx context.Context, tx *sql.Tx, workspace string, d domain) error {
	own, err := queryDomains(ctx, tx, "project_id = ? AND id <> ?", d.Project, d.ID)
	if err != nil {
		return err
	}
	for _, o := range own {
		for _, h := range d.hosts() {
			for _, oh := range o.hosts() {
				if h == oh {
					return api.Conflict("domain_exists", "%s is already a domain of this project (%s)", h, o.Name).With("domainId", o.ID)
				}
			}
		}
	}
	for _, h := range d.hosts() {
		held, ok, err := hostHolder(ctx, tx, h)
		switch {
		case err != nil:
			return err
		case !ok || held.DomainID == d.ID:
		case held.Workspace == workspace:
			return api.Conflict("domain_in_use", "%s is a domain of another project of this workspace: delete it there first", h).
				With("projectId", held.Project)
		default:
			return errTaken
		}
	}
	return nil
}
