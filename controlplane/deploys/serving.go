package deploys

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/controlplane/repos"
	"github.com/svcplatform/platform/controlplane/shield"
	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/rules"
)

var (
	_ projects.Deployments = (*Service)(nil)
	_ shield.Sites         = (*Service)(nil)
)

// probe checks that origin accepts TCP connections.
func probe(ctx context.Context, origin string, timeout time.Duration, guard *net.Dialer) error {
	u, err := url.Parse(origin)
	if err != nil {
		return err
	}
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	d := *guard
	d.Timeout = timeout
	c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(u.Hostname(), port))
	if err != nil {
		return err
	}
	return c.Close()
}

func (s *Service) setHealth(id string, ok bool) {
	s.mu.Lock()
	s.health[id] = ok
	s.mu.Unlock()
}

// down reports whether the last probe of a deployment's origin failed.
func (s *Service) down(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	ok, probed := s.health[id]
	return probed && !ok
}

// ProbeOrigins checks the external origin of every serving app and
// function once; a project whose origin does not answer shows serving
// state down. Deployments the platform runs are not probed: they are down
// when the runtime has them crashed or not running.
func (s *Service) ProbeOrigins(ctx context.Context) error {
	ds, err := queryDeployments(ctx, s.cfg.DB, 0, `s.project_id IS NOT NULL AND d.kind <> ?`, snapshot.KindStatic)
	if err != nil {
		return err
	}
	seen := make(map[string]bool, len(ds))
	for _, d := range ds {
		if d.managed {
			continue // the runtime knows its state; a connection would wake a sleeping app
		}
		seen[d.ID] = true
		s.setHealth(d.ID, probe(ctx, d.Origin, s.cfg.ProbeTimeout, s.dialer) == nil)
	}
	s.mu.Lock()
	for id := range s.health {
		if !seen[id] {
			delete(s.health, id)
		}
	}
	s.mu.Unlock()
	return nil
}

// Serving implements projects.Deployments: not_deployed before any
// deploy; deploying while one runs; live when a deployment serves (down
// when it is an app or function whose origin does not answer); failed when
// the last deploy failed and nothing serves. The deployment shown is the
// serving one, else the latest attempt.
func (s *Service) Serving(ctx context.Context, p projects.Project) (projects.Serving, *string, error) {
	serving, err := servingOf(ctx, s.cfg.DB, p.ID)
	if err != nil {
		return projects.Serving{}, nil, err
	}
	latest, err := latestOf(ctx, s.cfg.DB, p.ID)
	if err != nil {
		return projects.Serving{}, nil, err
	}
	sv := projects.Serving{State: projects.NotDeployed}
	var live *string
	if serving != nil {
		sv.Deployment = serving
		url := p.URL
		live = &url
	} else if latest != nil {
		sv.Deployment = latest
	}
	switch {
	case latest == nil:
	case latest.State == StateDeploying:
		sv.State = projects.Deploying
	case serving != nil && serving.managed && s.runtimeDown(serving.ID):
		sv.State = projects.Down
	case serving != nil && !serving.managed && s.down(serving.ID):
		sv.State = projects.Down
	case serving != nil:
		sv.State = projects.Live
	case latest.State == StateFailed:
		sv.State = projects.Failed
	}
	return sv, live, nil
}

// DeployAction implements projects.Deployments: rebuild the latest commit
// of the project's own repository, or, without one, redeploy the serving
// deployment's kept files.
//
// The project's own repository is the workspace repo its repoUrl names
// (an address ending in /repos/<id>), else the repo its serving deployment
// was built from; never a repo another deploy to it merely tried last.
// Repos hold one line of numbered commits, so repoBranch names no other
// line: the latest commit is the branch's head.
func (s *Service) DeployAction(ctx context.Context, p projects.Project) (projects.DeployAction, error) {
	a, _, err := s.action(ctx, p)
	return a, err
}

// LinkedRepoID returns the repo id a project's repoUrl names (an address
// whose path ends in /repos/<id>), or "".
func LinkedRepoID(repoURL string) string {
	u, err := url.Parse(repoURL)
	if err != nil {
		return ""
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	if n := len(parts); n >= 2 && parts[n-2] == "repos" && parts[n-1] != "" {
		return parts[n-1]
	}
	return ""
}

func (s *Service) action(ctx context.Context, p projects.Project) (projects.DeployAction, *Deployment, error) {
	serving, err := servingOf(ctx, s.cfg.DB, p.ID)
	if err != nil {
		return projects.DeployAction{}, nil, err
	}
	repoID := LinkedRepoID(p.RepoURL)
	if repoID == "" && serving != nil {
		repoID = serving.RepoID
	}
	if repoID != "" {
		r, err := s.cfg.Repos.Get(ctx, p.WorkspaceID, repoID)
		if err == nil && r.Commits > 0 {
			desc := fmt.Sprintf("rebuild commit %d, the latest of repo %s", r.Commits, r.Name)
			if p.RepoBranch != "" {
				desc += fmt.Sprintf(" (branch %s)", p.RepoBranch)
			}
			return projects.DeployAction{Kind: "rebuild", RepoID: r.ID, Commit: r.Commits, Description: desc}, serving, nil
		}
	}
	if serving != nil {
		return projects.DeployAction{Kind: "redeploy", Commit: serving.Commit,
			Description: fmt.Sprintf("redeploy the kept files of deployment %s with the current variables and settings", serving.ID)}, serving, nil
	}
	return projects.DeployAction{Kind: "none", Description: "nothing to deploy yet: push a commit to a repo and deploy it to this project (POST /api/repos/{id}/deploy)"}, nil, nil
}

// Redeploy does what DeployAction says for a project: rebuild the latest
// commit of its repo, or redeploy the serving deployment's kept files (so
// new variables and CDN settings take effect).
func (s *Service) Redeploy(ctx context.Context, pr *auth.Principal, projectID string) (Deployment, error) {
	p, err := s.writable(ctx, pr.WorkspaceID, projectID)
	if err != nil {
		return Deployment{}, err
	}
	a, serving, err := s.action(ctx, p)
	if err != nil {
		return Deployment{}, err
	}
	switch a.Kind {
	case "rebuild":
		return s.Deploy(ctx, pr, a.RepoID, DeployRequest{ProjectID: p.ID, Commit: a.Commit})
	case "redeploy":
		kept, err := readFiles(ctx, s.cfg.DB, serving.ID)
		if err != nil {
			return Deployment{}, err
		}
		m := Manifest{Kind: serving.Kind, Origin: serving.Origin}
		if serving.managed {
			m = serving.spec.manifest()
			if err := s.checkRunnable(m, nil, false); errors.Is(err, ErrRuntimeUnavailable) {
				return Deployment{}, err
			}
		}
		src := source{kind: "redeploy", repoID: "", repoName: serving.RepoName, commit: serving.Commit,
			manifest: m, types: map[string]string{}}
		for _, f := range kept {
			src.files = append(src.files, repos.File{Path: f.Path, Size: f.Size, SHA256: f.SHA256})
			src.types[f.Path] = f.ContentType
		}
		return s.start(ctx, pr, p, src)
	}
	return Deployment{}, api.E(api.KindConflict, "nothing_to_deploy", "%s", a.Description)
}

// FunctionsBehind implements projects.Deployments: the project when its
// serving deployment runs pinned variables that differ from the current
// ones: a function, or an app or worker program the platform runs (all
// get their variables at deploy). An app forwarded to an external origin
// gets none, so it is never behind.
func (s *Service) FunctionsBehind(ctx context.Context, projectID string) ([]string, error) {
	d, err := servingOf(ctx, s.cfg.DB, projectID)
	if err != nil || d == nil || (d.Kind != snapshot.KindFunction && !d.managed) {
		return []string{}, err
	}
	env, err := s.cfg.Projects.DeployEnv(ctx, projectID)
	if err != nil {
		return nil, err
	}
	if envDigest(env) == d.envDigest {
		return []string{}, nil
	}
	slug, err := s.cfg.Projects.Slug(ctx, projectID)
	if err != nil {
		return nil, fmt.Errorf("deploys: functions behind: %w", err)
	}
	return []string{slug}, nil
}

// Live implements shield.Sites: the workspace's projects with a serving
// deployment.
func (s *Service) Live(ctx context.Context, workspace string) ([]shield.LiveSite, error) {
	slugs, err := s.cfg.Projects.Slugs(ctx, workspace)
	if err != nil {
		return nil, fmt.Errorf("deploys: live: %w", err)
	}
	rows, err := s.cfg.DB.QueryContext(ctx, `SELECT d.project_id, d.kind, d.root, d.shield FROM project_serving sv
		JOIN deployments d ON d.id = sv.deployment_id WHERE d.workspace_id = ?`, workspace)
	if err != nil {
		return nil, fmt.Errorf("deploys: live: %w", err)
	}
	defer rows.Close()
	var out []shield.LiveSite
	for rows.Next() {
		var l shield.LiveSite
		var root, sh string
		if err := rows.Scan(&l.ProjectID, &l.Kind, &root, &sh); err != nil {
			return nil, fmt.Errorf("deploys: live: %w", err)
		}
		if sp, ok := decodeSpec(l.Kind, root); ok {
			l.Kind = sp.Kind
		}
		slug, ok := slugs[l.ProjectID]
		if !ok {
			continue
		}
		l.Slug = slug
		if sh != "" {
			var st rules.Settings
			if json.Unmarshal([]byte(sh), &st) == nil {
				l.Shield = &st
			}
		}
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("deploys: live: %w", err)
	}
	slices.SortFunc(out, func(a, b shield.LiveSite) int { return strings.Compare(a.Slug, b.Slug) })
	return out, nil
}

// ServingKind returns the kind of a project's serving deployment, "" when
// nothing serves (edgesync.Sources.ServingKind).
func ServingKind(ctx context.Context, q store.Querier, projectID string) (string, error) {
	var kind string
	err := q.QueryRowContext(ctx, `SELECT d.kind FROM project_serving sv JOIN deployments d ON d.id = sv.deployment_id
		WHERE sv.project_id = ?`, projectID).Scan(&kind)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("deploys: serving kind: %w", err)
	}
	return kind, nil
}

// Served reports whether a static deployment serves the blob named sum
// (edgesync.Sources.Served): edges may fetch only those. The files kept
// for apps, workers and functions the platform runs are never served.
func Served(ctx context.Context, q store.Querier, sum string) (bool, error) {
	var one int
	err := q.QueryRowContext(ctx, `SELECT 1 FROM deployment_files f JOIN deployments d ON d.id = f.deployment_id
		WHERE f.sha256 = ? AND d.kind = ? LIMIT 1`, sum, snapshot.KindStatic).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("deploys: served: %w", err)
	}
	return true, nil
}

// EdgeSites returns every serving deployment with its file manifest, for
// the edge snapshot (edgesync.Sources.Sites), then every deployment's own
// address (edgeAddresses); the snapshot fills the slug.
// A deployment the platform runs has its loopback origin and Managed set;
// a worker program (no public address) and one not running (no origin)
// are left out, so the edge answers 404 for their hosts.
func EdgeSites(ctx context.Context, q store.Querier) ([]snapshot.Site, error) {
	rows, err := q.QueryContext(ctx, `SELECT sv.project_id, d.workspace_id, d.id, d.kind, d.origin, d.root, d.commit_number, d.created_at,
		d.cdn_enabled, d.cdn_ttl, d.shield FROM project_serving sv
		JOIN deployments d ON d.id = sv.deployment_id ORDER BY sv.project_id`)
	if err != nil {
		return nil, fmt.Errorf("deploys: edge sites: %w", err)
	}
	var sites []snapshot.Site
	byDeployment := map[string]int{}
	for rows.Next() {
		var st snapshot.Site
		var created, sh string
		dp := &st.Deployment
		if err := rows.Scan(&st.ProjectID, &st.WorkspaceID, &dp.ID, &dp.Kind, &dp.Origin, &dp.Root, &dp.Commit, &created,
			&dp.CDN.Enabled, &dp.CDN.CacheTTLSeconds, &sh); err != nil {
			rows.Close()
			return nil, fmt.Errorf("deploys: edge sites: %w", err)
		}
		if sp, ok := decodeSpec(dp.Kind, dp.Root); ok {
			if sp.Kind == KindWorker || dp.Origin == "" {
				continue
			}
			dp.Managed, dp.Root = true, ""
		}
		dp.CreatedAt = store.ParseTime(created)
		if sh != "" {
			var rs rules.Settings
			if err := json.Unmarshal([]byte(sh), &rs); err == nil {
				dp.Shield = &rs
			}
		}
		byDeployment[dp.ID] = len(sites)
		sites = append(sites, st)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("deploys: edge sites: %w", err)
	}
	rows, err = q.QueryContext(ctx, `SELECT f.deployment_id, f.path, f.sha256, f.size, f.content_type FROM deployment_files f
		JOIN project_serving sv ON sv.deployment_id = f.deployment_id JOIN deployments d ON d.id = f.deployment_id
		WHERE d.kind = ? ORDER BY f.deployment_id, f.path`, snapshot.KindStatic)
	if err != nil {
		return nil, fmt.Errorf("deploys: edge files: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var f snapshot.File
		if err := rows.Scan(&id, &f.Path, &f.SHA256, &f.Size, &f.ContentType); err != nil {
			return nil, fmt.Errorf("deploys: edge files: %w", err)
		}
		if i, ok := byDeployment[id]; ok {
			sites[i].Deployment.Files = append(sites[i].Deployment.Files, f)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("deploys: edge files: %w", err)
	}
	addresses, err := edgeAddresses(ctx, q)
	return append(sites, addresses...), err
}

// Dependent returns what ties deployments to project deletion: a running
// deploy blocks it, and the project's deployments go with it.
func (s *Service) Dependent() projects.Dependent { return dependent{s} }

type dependent struct{ s *Service }

// Name implements projects.Dependent.
func (d dependent) Name() string { return "deployments" }

// Blockers implements projects.Dependent: a running deploy.
func (d dependent) Blockers(ctx context.Context, projectID string) ([]projects.Blocker, error) {
	ds, err := queryDeployments(ctx, d.s.cfg.DB, 0, `d.project_id = ? AND d.state = ?`, projectID, stateDeploying)
	if err != nil {
		return nil, err
	}
	var out []projects.Blocker
	for _, dp := range ds {
		out = append(out, projects.Blocker{Kind: "running_deploy",
			Message: fmt.Sprintf("deployment %s is running", dp.ID),
			Action:  fmt.Sprintf("wait for it to finish (GET /api/deployments/%s), then delete again", dp.ID)})
	}
	return out, nil
}

// Remove implements projects.Dependent: the site leaves the edges, the
// project's deployments go and the programs the platform ran for it stop.
func (d dependent) Remove(ctx context.Context, projectID string) error {
	d.s.revokeKeys(ctx, projectID)
	err := d.s.cfg.Pub.Change(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM deployment_keys WHERE project_id = ? AND revoked_at <> ''`, projectID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM project_serving WHERE project_id = ?`, projectID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM deployments WHERE project_id = ? AND state <> ?`, projectID, stateDeploying)
		return err
	})
	if err != nil {
		return err
	}
	if rt := d.s.runtime(); rt != nil {
		if err := rt.StopProject(ctx, projectID); err != nil {
			return fmt.Errorf("deploys: stop the project's programs: %w", err)
		}
	}
	d.s.logs.drop(projectID)
	return nil
}

// ProjectDeployments is the answer of GET /api/projects/{id}/deployments.
type ProjectDeployments struct {
	// Deployments are the newest first, at most 50.
	Deployments []Deployment `json:"deployments"`
}

// List returns a project's deployments, newest first.
func (s *Service) List(ctx context.Context, workspace, projectID string) (ProjectDeployments, error) {
	if _, err := s.cfg.Projects.Get(ctx, workspace, projectID); err != nil {
		return ProjectDeployments{}, err
	}
	ds, err := queryDeployments(ctx, s.cfg.DB, 50, `d.project_id = ?`, projectID)
	if err == nil {
		err = s.withAddresses(ctx, workspace, ds)
	}
	return ProjectDeployments{Deployments: ds}, err
}

// Detail is the answer of GET /api/deployments/{id}.
type Detail struct {
	Deployment Deployment `json:"deployment"`
	// Log is the deploy log, oldest line first.
	Log []LogLine `json:"log"`
	// Files are what a static deployment serves, or the files kept for an
	// app, worker program or function the platform runs.
	Files []DeployedFile `json:"files"`
	// Output is what the running deployment printed (stdout, stderr) and
	// the runtime's notes about it (stream platform), oldest first; empty
	// for a deployment that does not run here.
	Output []OutputLine `json:"output"`
}

// Get returns a deployment of the workspace with its log and files; the
// caller must be allowed to read its project.
func (s *Service) Get(ctx context.Context, workspace, id string) (Detail, error) {
	d, err := getDeployment(ctx, s.cfg.DB, id)
	if err != nil {
		return Detail{}, err
	}
	if d.workspaceID != workspace {
		return Detail{}, api.NotFound("deployment")
	}
	if err := api.Authorize(ctx, auth.OpProjectRead, d.ProjectID); err != nil {
		return Detail{}, err
	}
	ds := []Deployment{d}
	if err := s.withAddresses(ctx, workspace, ds); err != nil {
		return Detail{}, err
	}
	out := Detail{Deployment: ds[0]}
	if out.Log, err = readLog(ctx, s.cfg.DB, id); err != nil {
		return Detail{}, err
	}
	if out.Files, err = readFiles(ctx, s.cfg.DB, id); err != nil {
		return Detail{}, err
	}
	// What a program prints may hold its variables' values: read like
	// them (developers and above), as the project's logs are.
	out.Output = []OutputLine{}
	if api.Authorize(ctx, auth.OpEnvRead, d.ProjectID) == nil {
		out.Output = s.output(id)
	}
	return out, nil
}
