package deploys

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/controlplane/store"
)

// AddressedDeployments is how many of a project's latest deployments keep
// an address of their own, https://<number>--<slug>.<apps-domain>: a ready
// static site among them answers there (previews, what serves now, and the
// rollback targets before it). An older one loses its address; its files
// stay while they are kept, and promoting or redeploying it serves them
// again.
const AddressedDeployments = 20

// addressOf is a deployment's own address: the project's address with
// "<number>--" before the slug. Slugs never hold "--" (projects.Slugify
// folds every run of other characters into one hyphen), so no project's
// address is ever another's deployment address.
func addressOf(p projects.Project, number int) string {
	return strings.Replace(p.URL, "://"+p.Slug+".", "://"+strconv.Itoa(number)+"--"+p.Slug+".", 1)
}

// AddressLabel is the first label of a deployment's own host before its
// project's slug: "<number>--".
func AddressLabel(number int) string { return strconv.Itoa(number) + "--" }

// addressed reports whether a deployment answers at its own address (or
// will, once it is ready), given the newest deployment number of its
// project.
func addressed(d Deployment, newest int) bool {
	return d.State != StateFailed && d.Kind == snapshot.KindStatic && d.Number > 0 && d.Number > newest-AddressedDeployments
}

// withAddresses sets PreviewURL on the deployments that have an address;
// ds are deployments of one workspace.
func (s *Service) withAddresses(ctx context.Context, workspace string, ds []Deployment) error {
	type proj struct {
		p      projects.Project
		newest int
	}
	seen := map[string]*proj{}
	for i := range ds {
		d := &ds[i]
		pr, ok := seen[d.ProjectID]
		if !ok {
			p, err := s.cfg.Projects.Get(ctx, workspace, d.ProjectID)
			if err != nil {
				return err
			}
			pr = &proj{p: p}
			if err := s.cfg.DB.QueryRowContext(ctx, `SELECT COALESCE(MAX(number), 0) FROM deployments WHERE project_id = ?`,
				d.ProjectID).Scan(&pr.newest); err != nil {
				return fmt.Errorf("deploys: addresses: %w", err)
			}
			seen[d.ProjectID] = pr
		}
		if addressed(*d, pr.newest) {
			d.PreviewURL = addressOf(pr.p, d.Number)
		}
	}
	return nil
}

// Promote makes a ready static deployment, a preview or an earlier one,
// what its project serves, without building anything again: the same
// files, the CDN setting pinned when it was made. Apps, workers and
// functions are deployed again instead (POST /api/repos/{id}/deploy).
func (s *Service) Promote(ctx context.Context, pr *auth.Principal, id string) (Deployment, error) {
	d, err := getDeployment(ctx, s.cfg.DB, id)
	if err != nil {
		return Deployment{}, err
	}
	if d.workspaceID != pr.WorkspaceID {
		return Deployment{}, api.NotFound("deployment")
	}
	if err := api.Authorize(ctx, auth.OpRepoDeploy, d.ProjectID); err != nil {
		return Deployment{}, err
	}
	p, err := s.writable(ctx, pr.WorkspaceID, d.ProjectID)
	if err != nil {
		return Deployment{}, err
	}
	switch {
	case d.State == StateLive:
		return Deployment{}, api.Conflict("already_live", "deployment %s already serves %s", d.ID, p.URL)
	case d.State == StateDeploying || d.State == StateFailed:
		return Deployment{}, api.Conflict("not_ready", "deployment %s is %s: only a ready deployment can be promoted", d.ID, d.State)
	case d.Kind != snapshot.KindStatic:
		return Deployment{}, api.Conflict("promote_unsupported",
			"deployment %s is a %s: promote switches static sites; deploy its commit again (POST /api/repos/%s/deploy with commit %d)",
			d.ID, kindName(d.Kind), d.RepoID, d.Commit)
	}
	now := s.cfg.Clock.Now()
	line := fmt.Sprintf("promoted to production by %s: live at %s", pr.Label(), p.URL)
	var prev *Deployment
	err = s.cfg.Pub.Change(ctx, func(tx *sql.Tx) error {
		var err error
		if prev, err = servingOf(ctx, tx, p.ID); err != nil {
			return err
		}
		if prev != nil && prev.ID == d.ID {
			return api.Conflict("already_live", "deployment %s already serves %s", d.ID, p.URL)
		}
		res, err := tx.ExecContext(ctx, `UPDATE deployments SET preview = 0 WHERE id = ? AND state = ?`, d.ID, stateReady)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return api.Conflict("not_ready", "deployment %s is no longer ready", d.ID)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO project_serving(project_id, deployment_id, since) VALUES (?,?,?)
			ON CONFLICT(project_id) DO UPDATE SET deployment_id = excluded.deployment_id, since = excluded.since`, p.ID, d.ID, store.FormatTime(now)); err != nil {
			return err
		}
		if err := appendLog(ctx, tx, d.ID, now, line); err != nil {
			return err
		}
		summary := fmt.Sprintf("%s is live with %s (deployment %d, promoted)", p.Slug, d.ID, d.Number)
		return s.cfg.Audit.Record(ctx, tx, audit.Event{Workspace: pr.WorkspaceID, Actor: pr, Action: "deploy.promote", Category: audit.CategoryDeploy,
			TargetType: "deployment", TargetID: d.ID, ProjectID: p.ID, Summary: summary})
	})
	if err != nil {
		return Deployment{}, err
	}
	s.logDeploy(p.ID, d.ID, now, line)
	if prev != nil {
		s.revokeKeys(ctx, "", prev.ID)
		s.retire(prev, d)
	}
	out, err := getDeployment(ctx, s.cfg.DB, d.ID)
	if err != nil {
		return Deployment{}, err
	}
	ds := []Deployment{out}
	if err := s.withAddresses(ctx, pr.WorkspaceID, ds); err != nil {
		return Deployment{}, err
	}
	return ds[0], nil
}

// Promote answers POST /api/deployments/{id}/promote.
func (h Handlers) Promote(w http.ResponseWriter, r *http.Request) error {
	d, err := h.S.Promote(r.Context(), api.PrincipalFrom(r.Context()), r.PathValue("id"))
	return api.Reply(w, http.StatusOK, DeploymentAnswer{Deployment: d}, err)
}

// edgeAddresses returns a site for every ready static deployment with an
// address of its own (AddressedDeployments), with its files; Label is
// "<number>--" and NoIndex is set.
func edgeAddresses(ctx context.Context, q store.Querier) ([]snapshot.Site, error) {
	const recent = `d.kind = ? AND d.state = ? AND d.number > 0 AND d.number > (SELECT MAX(n.number) FROM deployments n WHERE n.project_id = d.project_id) - ?`
	rows, err := q.QueryContext(ctx, `SELECT d.project_id, d.workspace_id, d.id, d.number, d.root, d.commit_number, d.created_at, d.cdn_enabled, d.cdn_ttl
		FROM deployments d WHERE `+recent+` ORDER BY d.project_id, d.number`, snapshot.KindStatic, stateReady, AddressedDeployments)
	if err != nil {
		return nil, fmt.Errorf("deploys: edge addresses: %w", err)
	}
	var sites []snapshot.Site
	at := map[string]int{}
	for rows.Next() {
		var st snapshot.Site
		var number int
		var created string
		dp := &st.Deployment
		if err := rows.Scan(&st.ProjectID, &st.WorkspaceID, &dp.ID, &number, &dp.Root, &dp.Commit, &created, &dp.CDN.Enabled, &dp.CDN.CacheTTLSeconds); err != nil {
			rows.Close()
			return nil, fmt.Errorf("deploys: edge addresses: %w", err)
		}
		dp.Kind, dp.CreatedAt = snapshot.KindStatic, store.ParseTime(created)
		st.Label, st.NoIndex = AddressLabel(number), true
		at[dp.ID] = len(sites)
		sites = append(sites, st)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("deploys: edge addresses: %w", err)
	}
	if len(sites) == 0 {
		return nil, nil
	}
	rows, err = q.QueryContext(ctx, `SELECT f.deployment_id, f.path, f.sha256, f.size, f.content_type FROM deployment_files f
		JOIN deployments d ON d.id = f.deployment_id WHERE `+recent+` ORDER BY f.deployment_id, f.path`,
		snapshot.KindStatic, stateReady, AddressedDeployments)
	if err != nil {
		return nil, fmt.Errorf("deploys: edge address files: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var f snapshot.File
		if err := rows.Scan(&id, &f.Path, &f.SHA256, &f.Size, &f.ContentType); err != nil {
			return nil, fmt.Errorf("deploys: edge address files: %w", err)
		}
		if i, ok := at[id]; ok {
			sites[i].Deployment.Files = append(sites[i].Deployment.Files, f)
		}
	}
	return sites, rows.Err()
}
