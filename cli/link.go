package cli

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/svcplatform/platform/client"
)

func runLink(ctx context.Context, e *Env, args []string) error {
	fs := e.flags("link")
	name := fs.String("project", "", "the project's name, slug or id (default: the folder's name)")
	create := fs.Bool("create", false, "create the project and its repo when they do not exist")
	pos, err := parse(fs, args, 1)
	if err != nil {
		return err
	}
	dir := e.path(pos)
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		return fmt.Errorf("%s is not a folder: give the folder to link", dir)
	}
	if *name == "" {
		*name = filepath.Base(dir)
	}
	c, err := e.api()
	if err != nil {
		return err
	}
	p, err := findProject(ctx, c, *name)
	switch {
	case err == errNoProject && *create:
		if p, err = c.CreateProject(ctx, *name); err != nil {
			return err
		}
		fmt.Fprintf(e.Stderr, "Created project %s (%s), to be served at %s.\n", p.Name, p.ID, p.URL)
	case err == errNoProject:
		return fmt.Errorf("no project named %q: run platform link --create to make it, or pass --project with another name", *name)
	case err != nil:
		return err
	}
	repoID := linkedRepo(p)
	if repoID == "" {
		if !*create {
			return fmt.Errorf("project %s has no repo to push to: run platform link --project %s --create to make one", p.Name, p.Slug)
		}
		r, err := c.CreateRepo(ctx, p.Name, "pushed by platform deploy")
		if client.IsCode(err, "repo_exists") {
			r, err = findRepo(ctx, c, p.Name)
			fmt.Fprintf(e.Stderr, "Using the existing repo %s.\n", p.Name)
		}
		if err != nil {
			return err
		}
		if _, err := c.SetProjectRepoURL(ctx, p.ID, c.RepoURL(r.ID)); err != nil {
			return err
		}
		repoID = r.ID
		fmt.Fprintf(e.Stderr, "Linked repo %s (%s) to the project: deploys rebuild its latest commit.\n", r.Name, r.ID)
	}
	path, err := writeLink(dir, Link{ProjectID: p.ID, RepoID: repoID, Project: p.Name})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "Linked %s to project %s (%s).\nWrote %s; deploy with: platform deploy\n", dir, p.Name, p.ID, path)
	return nil
}

// path resolves the optional folder argument against the working
// directory.
func (e *Env) path(pos []string) string {
	dir := e.Dir
	if len(pos) > 0 {
		dir = pos[0]
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(e.Dir, dir)
		}
	}
	return filepath.Clean(dir)
}

var errNoProject = fmt.Errorf("no such project")

// findProject finds a project by id, slug or name, in that order.
func findProject(ctx context.Context, c *client.Client, ref string) (client.Project, error) {
	ps, err := c.Projects(ctx)
	if err != nil {
		return client.Project{}, err
	}
	for _, match := range []func(p client.Project) bool{
		func(p client.Project) bool { return p.ID == ref },
		func(p client.Project) bool { return p.Slug == ref },
		func(p client.Project) bool { return p.Name == ref },
		func(p client.Project) bool { return strings.EqualFold(p.Name, ref) },
	} {
		var found []client.Project
		for _, p := range ps {
			if match(p) {
				found = append(found, p)
			}
		}
		if len(found) == 1 {
			return found[0], nil
		}
		if len(found) > 1 {
			return client.Project{}, fmt.Errorf("%d projects are named %q: give the slug or id (%s, %s)", len(found), ref, found[0].Slug, found[1].Slug)
		}
	}
	return client.Project{}, errNoProject
}

func findRepo(ctx context.Context, c *client.Client, name string) (client.Repo, error) {
	rs, err := c.Repos(ctx)
	if err != nil {
		return client.Repo{}, err
	}
	for _, r := range rs {
		if r.Name == name {
			return r, nil
		}
	}
	return client.Repo{}, fmt.Errorf("no repo named %q", name)
}

// linkedRepo returns the repo id a project's repoUrl names (an address
// ending in /repos/<id>), or "".
func linkedRepo(p client.Project) string {
	u, err := url.Parse(p.RepoURL)
	if err != nil {
		return ""
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	if n := len(parts); n >= 2 && parts[n-2] == "repos" && parts[n-1] != "" {
		return parts[n-1]
	}
	return ""
}

// target is the project (and repo) a command acts on.
type target struct {
	project client.Project
	repoID  string
	// dir is the linked folder ("" with --project).
	dir string
}

// resolve finds the project a command acts on: --project, else the link
// of dir or a parent of it.
func (e *Env) resolve(ctx context.Context, c *client.Client, projectFlag, dir string) (target, error) {
	if projectFlag != "" {
		p, err := findProject(ctx, c, projectFlag)
		if err == errNoProject {
			return target{}, fmt.Errorf("no project %q: see the names with the dashboard, or create it with platform link --create --project %s", projectFlag, projectFlag)
		}
		return target{project: p, repoID: linkedRepo(p)}, err
	}
	l, at, err := findLink(dir)
	if err != nil {
		return target{}, err
	}
	d, err := c.Project(ctx, l.ProjectID)
	if client.StatusOf(err) == 404 {
		return target{}, fmt.Errorf("the linked project %s (%s) is gone: run platform link again", l.Project, l.ProjectID)
	}
	if err != nil {
		return target{}, err
	}
	repo := first(l.RepoID, linkedRepo(d.Project))
	return target{project: d.Project, repoID: repo, dir: at}, nil
}
