package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/svcplatform/platform/client"
)

// DeployResult is what deploy and rollback print with --json.
type DeployResult struct {
	// URL is the live address, or with --preview the preview's address
	// (empty when the deploy failed).
	URL string `json:"url"`
	// PreviewURL is the deployment's own address (noindex), kept while it
	// is among its project's 20 latest deployments (static sites).
	PreviewURL   string `json:"previewUrl,omitempty"`
	Preview      bool   `json:"preview"`
	DeploymentID string `json:"deploymentId"`
	ProjectID    string `json:"projectId"`
	RepoID       string `json:"repoId"`
	Commit       int    `json:"commit"`
	// State is live, preview (a ready preview), failed, or inactive when a
	// newer deploy replaced it.
	State    string `json:"state"`
	Error    string `json:"error,omitempty"`
	Rollback bool   `json:"rollback"`
	// Files is how many files the deployment serves or keeps.
	Files int `json:"files"`
	// Sent and Reused say how many files' bytes the push sent and how many
	// the workspace already held (deploy only).
	Sent   int `json:"sent"`
	Reused int `json:"reused"`
}

func runDeploy(ctx context.Context, e *Env, args []string) error {
	fs := e.flags("deploy")
	project := fs.String("project", "", "the project's name, slug or id (default: the folder's link, see platform link)")
	message := fs.String("message", "", `the commit message (default: "platform deploy of FOLDER")`)
	asJSON := fs.Bool("json", false, "print one JSON object on stdout: url, deploymentId, commit, state, ...; the log goes to stderr")
	preview := fs.Bool("preview", false, "deploy as a preview at its own address; production keeps serving until platform promote")
	pos, err := parse(fs, args, 1)
	if err != nil {
		return err
	}
	dir := e.path(pos)
	c, err := e.api()
	if err != nil {
		return err
	}
	t, err := e.resolve(ctx, c, *project, dir)
	if err != nil {
		return err
	}
	if t.repoID == "" {
		return fmt.Errorf("project %s has no repo to push to: run platform link --project %s --create", t.project.Name, t.project.Slug)
	}
	s, err := scanFolder(dir)
	if err != nil {
		return err
	}
	for _, n := range s.notes() {
		fmt.Fprintf(e.Stderr, "note: %s\n", n)
	}
	if err := s.checkLimits(); err != nil {
		return err
	}
	if len(s.files) == 0 {
		return fmt.Errorf("nothing to push in %s: every file is ignored, private or an environment file", dir)
	}
	opts := client.PushOptions{Message: first(*message, "platform deploy of "+filepath.Base(dir))}
	var b *bar
	if e.StderrTTY {
		b = newBar(e.Stderr, "uploading")
		opts.Progress = b.update
	}
	res, err := c.Push(ctx, t.repoID, s.files, opts)
	if b != nil {
		b.finish()
	}
	if err != nil {
		return fmt.Errorf("the push was refused, nothing was stored: %w", err)
	}
	fmt.Fprintf(e.Stderr, "Pushed commit %d: %d files, %s (%d sent, %d unchanged).\n",
		res.Commit.Number, res.Commit.Files, mbytes(res.Commit.Size), res.Sent, res.Reused)
	out := DeployResult{Sent: res.Sent, Reused: res.Reused, Preview: *preview}
	return e.deployAndFollow(ctx, c, t, res.Commit.Number, *asJSON, out)
}

// deployAndFollow deploys a commit (a preview with out.Preview), prints
// the deploy log as it grows and ends with the address (or the JSON
// result); a deploy that does not go live (or, for a preview, become
// ready) is an error.
func (e *Env) deployAndFollow(ctx context.Context, c *client.Client, t target, commit int, asJSON bool, out DeployResult) error {
	deploy := c.Deploy
	if out.Preview {
		deploy = c.DeployPreview
	}
	d, err := deploy(ctx, t.repoID, t.project.ID, commit)
	if client.IsCode(err, "deploy_in_progress") {
		return errors.New("another deploy of this project is running: wait for it to end, then run this again")
	}
	if err != nil {
		return err
	}
	verb := "Deploying"
	switch {
	case d.Preview:
		verb = "Deploying a preview of"
	case d.Rollback:
		verb = "Rolling back to"
	}
	fmt.Fprintf(e.Stderr, "%s commit %d of %s (deployment %s)\n", verb, commit, t.project.Name, d.ID)
	final, err := c.Follow(ctx, d.ID, client.FollowOptions{Every: e.FollowEvery, Line: func(l client.LogLine) {
		fmt.Fprintf(e.Stderr, "  %s\n", l.Line)
	}})
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("stopped following deployment %s; it goes on: see what is live with platform open --print", d.ID)
	}
	if err != nil {
		return err
	}
	fd := final.Deployment
	out.DeploymentID, out.ProjectID, out.RepoID, out.Commit = fd.ID, fd.ProjectID, fd.RepoID, fd.Commit
	out.State, out.Error, out.Rollback, out.Files = fd.State, fd.Error, fd.Rollback, fd.Files
	out.PreviewURL = fd.PreviewURL
	if fd.State == client.StatePreview {
		out.URL = fd.PreviewURL
	}
	if fd.State == client.StateLive {
		p, err := c.Project(ctx, t.project.ID)
		if err != nil {
			return err
		}
		out.URL = p.Project.URL
		if p.Project.LiveURL != nil {
			out.URL = *p.Project.LiveURL
		}
	}
	if asJSON {
		enc := json.NewEncoder(e.Stdout)
		enc.SetIndent("", "  ")
		enc.Encode(out)
	}
	switch fd.State {
	case client.StateLive:
	case client.StatePreview:
		if !asJSON {
			fmt.Fprintf(e.Stderr, "Preview (production keeps serving; platform promote %s makes it live): ", fd.ID)
			fmt.Fprintln(e.Stdout, out.URL)
		}
		return nil
	case client.StateFailed:
		return fmt.Errorf("the deploy failed: %s; what served before keeps serving: fix it and deploy again", first(fd.Error, "see the log above"))
	default:
		return fmt.Errorf("deployment %s ended %s: a newer deploy replaced it before it went live", fd.ID, fd.State)
	}
	if !asJSON {
		fmt.Fprintf(e.Stderr, "Live: ")
		fmt.Fprintln(e.Stdout, out.URL)
	}
	return nil
}
