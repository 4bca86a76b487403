package cli

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/svcplatform/platform/client"
)

// runPromote makes a preview, or an earlier static deployment, what the
// project serves: the API's promote, which builds nothing again.
func runPromote(ctx context.Context, e *Env, args []string) error {
	fs := e.flags("promote")
	project := fs.String("project", "", "the project's name, slug or id (default: the folder's link)")
	asJSON := fs.Bool("json", false, "print one JSON object on stdout, as deploy does")
	pos, err := parse(fs, args, 1)
	if err != nil {
		return err
	}
	c, err := e.api()
	if err != nil {
		return err
	}
	t, err := e.resolve(ctx, c, *project, e.Dir)
	if err != nil {
		return err
	}
	id := ""
	if len(pos) == 1 {
		id = pos[0]
	} else {
		ds, err := c.Deployments(ctx, t.project.ID)
		if err != nil {
			return err
		}
		for _, d := range ds { // newest first
			if d.State == client.StatePreview {
				id = d.ID
				break
			}
		}
		if id == "" {
			return fmt.Errorf("%s has no preview to promote: deploy one with platform deploy --preview, or name a deployment", t.project.Name)
		}
	}
	d, err := c.Promote(ctx, id)
	if err != nil {
		return err
	}
	p, err := c.Project(ctx, d.ProjectID)
	if err != nil {
		return err
	}
	out := DeployResult{URL: p.Project.URL, PreviewURL: d.PreviewURL, DeploymentID: d.ID, ProjectID: d.ProjectID, RepoID: d.RepoID,
		Commit: d.Commit, State: d.State, Files: d.Files}
	if p.Project.LiveURL != nil {
		out.URL = *p.Project.LiveURL
	}
	if *asJSON {
		enc := json.NewEncoder(e.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	fmt.Fprintf(e.Stderr, "Promoted deployment %d (%s, commit %d), no build needed. Live: ", d.Number, d.ID, d.Commit)
	fmt.Fprintln(e.Stdout, out.URL)
	return nil
}
