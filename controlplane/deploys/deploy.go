package deploys

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/cdn"
	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
	"github.com/svcplatform/platform/controlplane/metering"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/controlplane/repos"
	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/rules"
)

// DeployRequest is the body of POST /api/repos/{id}/deploy.
type DeployRequest struct {
	ProjectID string `json:"projectId"`
	// Commit is the commit number to deploy; omitted for the latest.
	Commit int `json:"commit,omitempty"`
	// Preview makes a preview: the deployment answers at its own address
	// (previewUrl) and production keeps serving until it is promoted
	// (POST /api/deployments/{id}/promote). Static sites only.
	Preview bool `json:"preview,omitempty"`
}

// source is what a deployment is built from.
type source struct {
	kind     string // repo or redeploy
	repoID   string
	repoName string
	commit   int
	manifest Manifest
	files    []repos.File // repo files (repo) or kept files (redeploy)
	types    map[string]string
	// build runs before the files are taken (repo sources only).
	build *BuildSpec
	// preview: the deployment does not replace production.
	preview bool
}

// Deploy starts deploying a commit of a repo to a project and answers at
// once with the deployment in state deploying. Everything that can be
// refused is checked first; a refused deploy stores nothing.
func (s *Service) Deploy(ctx context.Context, pr *auth.Principal, repoID string, req DeployRequest) (Deployment, error) {
	if req.ProjectID == "" {
		return Deployment{}, api.Invalid("projectId is required: the project to deploy to")
	}
	if req.Commit < 0 {
		return Deployment{}, api.Invalid("commit must be a commit number (1, 2, 3 ...), or omitted for the latest")
	}
	p, err := s.writable(ctx, pr.WorkspaceID, req.ProjectID)
	if err != nil {
		return Deployment{}, err
	}
	snap, err := s.cfg.Repos.Snapshot(ctx, pr.WorkspaceID, repoID, req.Commit)
	if err != nil {
		return Deployment{}, err
	}
	m, err := s.manifest(snap.Files)
	if err == nil {
		err = m.CheckOrigin(s.cfg.AllowPrivateNetworks)
	}
	var spec *BuildSpec
	if err == nil {
		spec, err = s.planBuild(m, snap.Files)
	}
	if err == nil {
		refs := make([]fileRef, 0, len(snap.Files))
		for _, f := range snap.Files {
			refs = append(refs, fileRef{f.Path, f.SHA256})
		}
		err = s.checkRunnable(m, refs, spec.Steps())
	}
	var ae *api.Error
	if errors.As(err, &ae) {
		return Deployment{}, err
	}
	if err != nil {
		return Deployment{}, api.E(api.KindInvalid, "invalid_manifest", "commit %d: %v", snap.Commit, err)
	}
	if req.Preview && m.Kind != snapshot.KindStatic {
		return Deployment{}, api.E(api.KindInvalid, "preview_unsupported",
			"commit %d is a %s: previews are made of static sites; deploy it without preview", snap.Commit, kindName(m.Kind))
	}
	src := source{kind: "repo", repoID: repoID, repoName: snap.Repo.Name, commit: snap.Commit, manifest: m, files: snap.Files, build: spec,
		preview: req.Preview}
	return s.start(ctx, pr, p, src)
}

// manifest reads platform.json from a commit's files (static without it).
func (s *Service) manifest(files []repos.File) (Manifest, error) {
	for _, f := range files {
		if f.Path != ManifestFile {
			continue
		}
		if f.Binary {
			return Manifest{}, fmt.Errorf("%s is not a text file", ManifestFile)
		}
		data, err := s.cfg.Repos.Blob(f.SHA256)
		if err != nil {
			return Manifest{}, err
		}
		return ParseManifest(data)
	}
	m := Manifest{}
	return m, m.Validate()
}

// start records the deployment and launches its build.
func (s *Service) start(ctx context.Context, pr *auth.Principal, p projects.Project, src source) (Deployment, error) {
	now := s.cfg.Clock.Now()
	d := Deployment{ID: store.NewID("dpl"), ProjectID: p.ID, RepoID: src.repoID, RepoName: src.repoName, Commit: src.commit,
		Source: src.kind, Kind: src.manifest.Kind, Origin: src.manifest.Origin, Root: src.manifest.Root, State: StateDeploying,
		CDN: cdn.Default().Edge(), EnvKeys: []string{}, Actor: pr.Label(), CreatedAt: now, workspaceID: pr.WorkspaceID,
		Run: src.manifest.Run, Health: src.manifest.Health, Module: src.manifest.Module, managed: src.manifest.Managed(), spec: specOf(src.manifest),
		memberID: pr.MemberID, starterKey: pr.KeyID, Preview: src.preview}
	kindCol, rootCol := storedColumns(src.manifest)
	var replaced *Deployment
	var startLine string
	err := s.cfg.DB.Tx(ctx, func(tx *sql.Tx) error {
		var running string
		err := tx.QueryRowContext(ctx, `SELECT id FROM deployments WHERE project_id = ? AND state = ?`, p.ID, stateDeploying).Scan(&running)
		if err == nil {
			return api.Conflict("deploy_in_progress", "project %s is already deploying (%s): wait for it to finish", p.Slug, running).With("deploymentId", running)
		}
		if err != sql.ErrNoRows {
			return err
		}
		if replaced, err = servingOf(ctx, tx, p.ID); err != nil {
			return err
		}
		d.Rollback = !d.Preview && replaced != nil && src.kind == "repo" && replaced.RepoID == src.repoID && replaced.Commit > src.commit
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(number), 0) + 1 FROM deployments WHERE project_id = ?`, p.ID).Scan(&d.Number); err != nil {
			return fmt.Errorf("deploys: start: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO deployments(id, workspace_id, project_id, repo_id, repo_name, commit_number, source, kind, origin, root,
			state, rollback, actor, created_at, number, preview) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
			d.ID, pr.WorkspaceID, p.ID, d.RepoID, d.RepoName, d.Commit, d.Source, kindCol, d.Origin, rootCol, stateDeploying, d.Rollback, d.Actor,
			store.FormatTime(now), d.Number, d.Preview); err != nil {
			return fmt.Errorf("deploys: start: %w", err)
		}
		what := fmt.Sprintf("commit %d of %s", d.Commit, d.RepoName)
		if src.kind == "redeploy" {
			what = "the kept files of the serving deployment"
		}
		line := fmt.Sprintf("deploying %s to %s as a %s", what, p.Slug, kindName(d.Kind))
		if d.Preview {
			line = fmt.Sprintf("deploying %s as preview %d of %s (production keeps serving)", what, d.Number, p.Slug)
		}
		if d.Rollback {
			line += fmt.Sprintf(" (rollback: replaces commit %d)", replaced.Commit)
		}
		if err := appendLog(ctx, tx, d.ID, now, line); err != nil {
			return err
		}
		startLine = line
		action := "deploy.start"
		switch {
		case d.Preview:
			action = "deploy.preview"
		case d.Rollback:
			action = "deploy.rollback"
		}
		return s.cfg.Audit.Record(ctx, tx, audit.Event{Workspace: pr.WorkspaceID, Actor: pr, Action: action, Category: audit.CategoryDeploy,
			TargetType: "deployment", TargetID: d.ID, ProjectID: p.ID, Summary: line})
	})
	if err != nil {
		return Deployment{}, err
	}
	s.logDeploy(p.ID, d.ID, now, startLine)
	if d.Kind == snapshot.KindStatic {
		d.PreviewURL = addressOf(p, d.Number)
	}
	s.cfg.Meter.Record(ctx, metering.Event{Workspace: pr.WorkspaceID, Project: p.ID, Metric: metering.Deploys, Quantity: 1})
	s.wg.Add(1)
	s.builds.Add(1)
	go func() {
		defer s.wg.Done()
		defer s.builds.Done()
		s.build(d, p, src)
	}()
	return d, nil
}

func kindName(kind string) string {
	switch kind {
	case snapshot.KindApp:
		return "server app"
	case snapshot.KindFunction:
		return "function"
	case KindWorker:
		return "worker program"
	}
	return "static site"
}

// builder accumulates a build's log lines, written as they come so the log
// shows progress.
type builder struct {
	s *Service
	d *Deployment
}

func (b builder) logf(format string, args ...any) {
	ctx, line, now := b.s.ctx, fmt.Sprintf(format, args...), b.s.cfg.Clock.Now()
	// In a transaction: the next seq is read then written, which
	// PostgreSQL keeps serializable only inside one (a concurrent append
	// is retried, not a duplicate key).
	err := b.s.cfg.DB.Tx(ctx, func(tx *sql.Tx) error { return appendLog(ctx, tx, b.d.ID, now, line) })
	if err != nil {
		b.s.cfg.Logger.Warn("deploy log", "deployment", b.d.ID, "err", err)
	}
	b.s.logDeploy(b.d.ProjectID, b.d.ID, now, line)
}

// build runs in the background: it turns the source into the deployment's
// manifest, pins what must be pinned and makes it live, or marks it failed.
func (s *Service) build(d Deployment, p projects.Project, src source) {
	s.mu.Lock()
	hook := s.hook
	s.mu.Unlock()
	if hook != nil {
		hook(d.ID)
	}
	began := time.Now()
	err := s.buildAndGoLive(&d, p, src)
	if err != nil {
		msg := err.Error()
		if s.ctx.Err() != nil {
			msg = "interrupted: the platform is shutting down; deploy again"
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if ferr := s.fail(ctx, d, msg); ferr != nil {
			s.cfg.Logger.Error("deploy: mark failed", "deployment", d.ID, "err", ferr)
		}
		cancel()
	}
	s.cfg.Meter.Record(context.Background(), metering.Event{Workspace: d.workspaceID, Project: d.ProjectID, Metric: metering.BuildSeconds,
		Quantity: time.Since(began).Seconds()})
}

// fail marks a deployment failed with a last log line.
func (s *Service) fail(ctx context.Context, d Deployment, msg string) error {
	now := s.cfg.Clock.Now()
	defer s.logDeploy(d.ProjectID, d.ID, now, "failed: "+msg)
	return s.cfg.DB.Tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE deployments SET state = ?, error = ?, finished_at = ? WHERE id = ? AND state = ?`,
			stateFailed, msg, store.FormatTime(now), d.ID, stateDeploying); err != nil {
			return err
		}
		if err := appendLog(ctx, tx, d.ID, now, "failed: "+msg); err != nil {
			return err
		}
		return s.cfg.Audit.Record(ctx, tx, audit.Event{Workspace: d.workspaceID, Action: "deploy.failed", Category: audit.CategoryDeploy,
			TargetType: "deployment", TargetID: d.ID, ProjectID: d.ProjectID, Summary: "deploy failed: " + msg})
	})
}

type fileOut struct {
	path, sha, ctype string
	size             int64
}

func (s *Service) buildAndGoLive(d *Deployment, p projects.Project, src source) error {
	ctx := s.ctx
	b := builder{s: s, d: d}
	live := false
	defer func() {
		if !live {
			s.revokeKeys(context.WithoutCancel(ctx), "", d.ID)
		}
	}()
	if src.build.Steps() {
		if err := s.runBuild(ctx, b, p.ID, &src); err != nil {
			return err
		}
		if err := s.checkRunnable(src.manifest, refsOf(src.files), false); err != nil {
			return fmt.Errorf("after the build: %w", err)
		}
	}
	var files []fileOut
	if d.Kind == snapshot.KindStatic {
		var err error
		if files, err = s.staticFiles(b, src); err != nil {
			return err
		}
	} else if src.manifest.Managed() {
		var err error
		if files, err = s.runtimeFiles(b, src); err != nil {
			return err
		}
	} else {
		b.logf("%s: requests are forwarded to %s", kindName(d.Kind), d.Origin)
		if err := probe(ctx, d.Origin, s.cfg.ProbeTimeout, s.dialer); err != nil {
			b.logf("warning: origin %s does not answer yet (%v): visitors get 502 until it does", d.Origin, err)
			s.setHealth(d.ID, false)
		} else {
			b.logf("origin %s answers", d.Origin)
			s.setHealth(d.ID, true)
		}
	}

	env, err := s.cfg.Projects.DeployEnv(ctx, p.ID)
	if err != nil {
		return fmt.Errorf("environment variables: %w", err)
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	envJSON, _ := json.Marshal(env)
	sealedEnv := s.cfg.Sealer.Seal(envJSON, envAAD(d.ID))
	d.EnvKeys, d.envDigest = keys, envDigest(env)
	b.logf("environment: %d variable(s) copied in: %s", len(keys), strings.Join(keys, ", "))

	c, err := s.cfg.Settings.CDN(ctx, d.workspaceID)
	if err != nil {
		return fmt.Errorf("CDN settings: %w", err)
	}
	d.CDN = c.Edge()
	if d.Kind == snapshot.KindStatic {
		if c.Enabled {
			b.logf("CDN: pages cached for %d seconds (pinned to this deployment)", c.CacheTTLSeconds)
		} else {
			b.logf("CDN: off: every visit is served fresh")
		}
	}
	sh, err := s.cfg.Settings.Shield(ctx, d.workspaceID)
	if err != nil {
		return fmt.Errorf("shield settings: %w", err)
	}
	shieldJSON := ""
	if d.Kind == snapshot.KindFunction || d.Kind == KindWorker {
		d.Shield = &sh
		raw, _ := json.Marshal(sh)
		shieldJSON = string(raw)
	}
	b.logf("%s", shieldLine(d.Kind, sh))

	// Run it: the deployment goes live only once it runs (an app: once
	// healthy), and what served before serves until then.
	origin := d.Origin
	if d.managed {
		if origin, err = s.activate(ctx, b, d, src.manifest, files, env, false); err != nil {
			return err
		}
		d.addr = origin
	}
	defer func() {
		if d.managed && !live {
			if err := s.runtime().Stop(context.WithoutCancel(ctx), d.ID); err != nil {
				s.cfg.Logger.Warn("deploys: stop a deployment that did not go live", "deployment", d.ID, "err", err)
			}
		}
	}()

	now := s.cfg.Clock.Now()
	var prev *Deployment
	var liveLine string
	err = s.cfg.Pub.Change(ctx, func(tx *sql.Tx) error {
		var err error
		if prev, err = servingOf(ctx, tx, p.ID); err != nil {
			return err
		}
		stmt, err := tx.PrepareContext(ctx, `INSERT INTO deployment_files(deployment_id, path, sha256, size, content_type) VALUES (?,?,?,?,?)`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		var size int64
		for _, f := range files {
			if _, err := stmt.ExecContext(ctx, d.ID, f.path, f.sha, f.size, f.ctype); err != nil {
				return err
			}
			size += f.size
		}
		keysJSON, _ := json.Marshal(keys)
		res, err := tx.ExecContext(ctx, `UPDATE deployments SET state = ?, env_sealed = ?, env_digest = ?, env_keys = ?, cdn_enabled = ?, cdn_ttl = ?,
			shield = ?, file_count = ?, total_size = ?, origin = ?, finished_at = ? WHERE id = ? AND state = ?`,
			stateReady, sealedEnv, d.envDigest, string(keysJSON), d.CDN.Enabled, d.CDN.CacheTTLSeconds, shieldJSON, len(files), size,
			origin, store.FormatTime(now), d.ID, stateDeploying)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("deployment %s is no longer deploying", d.ID)
		}
		if d.Preview {
			liveLine = fmt.Sprintf("preview at %s (production keeps serving; promote: POST /api/deployments/%s/promote)", addressOf(p, d.Number), d.ID)
			if err := appendLog(ctx, tx, d.ID, now, liveLine); err != nil {
				return err
			}
			return s.cfg.Audit.Record(ctx, tx, audit.Event{Workspace: d.workspaceID, Action: "deploy.preview_ready", Category: audit.CategoryDeploy,
				TargetType: "deployment", TargetID: d.ID, ProjectID: p.ID, Summary: fmt.Sprintf("preview %d of %s is ready (%s)", d.Number, p.Slug, d.ID)})
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO project_serving(project_id, deployment_id, since) VALUES (?,?,?)
			ON CONFLICT(project_id) DO UPDATE SET deployment_id = excluded.deployment_id, since = excluded.since`, p.ID, d.ID, store.FormatTime(now)); err != nil {
			return err
		}
		line := "live at " + p.URL
		if d.Kind == KindWorker {
			line = "live: the worker program runs; it has no public address (" + p.URL + " answers 404)"
		}
		if err := appendLog(ctx, tx, d.ID, now, line); err != nil {
			return err
		}
		liveLine = line
		return s.cfg.Audit.Record(ctx, tx, audit.Event{Workspace: d.workspaceID, Action: "deploy.live", Category: audit.CategoryDeploy,
			TargetType: "deployment", TargetID: d.ID, ProjectID: p.ID, Summary: fmt.Sprintf("%s is live with %s", p.Slug, d.ID)})
	})
	if err != nil {
		return fmt.Errorf("going live: %w", err)
	}
	live = true
	s.logDeploy(d.ProjectID, d.ID, now, liveLine)
	if d.Preview {
		return nil
	}
	if prev != nil {
		s.revokeKeys(ctx, "", prev.ID)
	}
	s.retire(prev, *d)
	return nil
}

// staticFiles applies the manifest root and the file guard to the source's
// files and checks every blob is stored.
func (s *Service) staticFiles(b builder, src source) ([]fileOut, error) {
	var out []fileOut
	index := false
	for _, f := range src.files {
		p := f.Path
		if src.kind == "repo" && p == ManifestFile {
			b.logf("%s: read as the deploy manifest, not served", ManifestFile)
			continue
		}
		if src.kind == "repo" {
			// The guard judges the full repository path: a file under a
			// private directory is private whatever the root.
			sp, ok := src.manifest.SitePath(f.Path)
			if !ok {
				if private, reason := rules.PrivateFile(f.Path); private {
					b.logf("omitted private file %s (%s): the file guard answers 404 for it", f.Path, reason)
				}
				continue
			}
			p = sp
		} else if private, reason := rules.PrivateFile(p); private {
			b.logf("omitted private file %s (%s): the file guard answers 404 for it", p, reason)
			continue
		}
		if f.SHA256 == "" || !s.cfg.Blobs.Has(f.SHA256) {
			return nil, fmt.Errorf("file %s is missing from storage", p)
		}
		ctype := src.types[p]
		if ctype == "" {
			ctype = contentType(p, func() []byte {
				head, _ := s.cfg.Blobs.Head(f.SHA256, 512)
				return head
			})
		}
		out = append(out, fileOut{path: p, sha: f.SHA256, ctype: ctype, size: f.Size})
		index = index || p == "index.html"
	}
	if len(out) == 0 {
		if src.manifest.Root != "" {
			return nil, fmt.Errorf("nothing to serve: no public files under root %q", src.manifest.Root)
		}
		return nil, fmt.Errorf("nothing to serve: the commit holds no public files")
	}
	b.logf("static site: %d file(s) to serve", len(out))
	if !index {
		b.logf("warning: no index.html at the site root: / answers 404")
	}
	return out, nil
}

// shieldLine is the deploy log's line about Shield, naming the blocked
// countries.
func shieldLine(kind string, st rules.Settings) string {
	countries := "no blocked countries"
	if len(st.BlockedCountries) > 0 {
		countries = "blocked countries: " + strings.Join(st.BlockedCountries, ", ")
	}
	if !st.Enabled {
		countries = "Shield is turned off (" + countries + ")"
	}
	switch kind {
	case snapshot.KindFunction:
		return "Shield: rules pinned to this function until its next deploy; " + countries
	case snapshot.KindApp:
		return "Shield: country rules apply to this server app; " + countries
	case KindWorker:
		return "Shield: rules pinned to this worker program until its next deploy (it receives no requests); " + countries
	}
	return "Shield: " + countries
}
