package cli

import (
	"context"
	"fmt"
	"strconv"

	"github.com/svcplatform/platform/client"
)

func runRollback(ctx context.Context, e *Env, args []string) error {
	fs := e.flags("rollback")
	project := fs.String("project", "", "the project's name, slug or id (default: the folder's link)")
	asJSON := fs.Bool("json", false, "print one JSON object on stdout, as deploy does")
	pos, err := parse(fs, args, 1)
	if err != nil {
		return err
	}
	commit := 0
	if len(pos) == 1 {
		if commit, err = strconv.Atoi(pos[0]); err != nil || commit < 1 {
			return usagef("COMMIT is a commit number (1, 2, 3 ...), not %q", pos[0])
		}
	}
	c, err := e.api()
	if err != nil {
		return err
	}
	t, err := e.resolve(ctx, c, *project, e.Dir)
	if err != nil {
		return err
	}
	ds, err := c.Deployments(ctx, t.project.ID)
	if err != nil {
		return err
	}
	live := -1
	for i, d := range ds {
		if d.State == client.StateLive {
			live = i
			break
		}
	}
	if commit == 0 {
		if live < 0 {
			return fmt.Errorf("nothing of %s is live to roll back from: name the commit, platform rollback COMMIT", t.project.Name)
		}
		// What served before: the newest earlier deployment of the same
		// repo with another commit that did not fail.
		for _, d := range ds[live+1:] {
			if d.State != client.StateFailed && d.Commit != ds[live].Commit && d.RepoID != "" && (t.repoID == "" || d.RepoID == t.repoID) {
				commit, t.repoID = d.Commit, d.RepoID
				break
			}
		}
		if commit == 0 {
			return fmt.Errorf("no earlier deployment of %s to roll back to: name the commit, platform rollback COMMIT", t.project.Name)
		}
	}
	if t.repoID == "" && live >= 0 {
		t.repoID = ds[live].RepoID
	}
	if t.repoID == "" {
		return fmt.Errorf("project %s has no repo to deploy from: run platform link --project %s --create", t.project.Name, t.project.Slug)
	}
	return e.deployAndFollow(ctx, c, t, commit, *asJSON, DeployResult{})
}
