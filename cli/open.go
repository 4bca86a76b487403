package cli

import (
	"context"
	"fmt"
)

func runOpen(ctx context.Context, e *Env, args []string) error {
	fs := e.flags("open")
	project := fs.String("project", "", "the project's name, slug or id (default: the folder's link)")
	printOnly := fs.Bool("print", false, "only print the address")
	if _, err := parse(fs, args, 0); err != nil {
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
	d, err := c.Project(ctx, t.project.ID)
	if err != nil {
		return err
	}
	if d.Project.LiveURL == nil {
		return fmt.Errorf("nothing of %s is live yet (%s): run platform deploy", d.Project.Name, d.Serving.State)
	}
	url := *d.Project.LiveURL
	fmt.Fprintln(e.Stdout, url)
	if !*printOnly && e.StdoutTTY && e.OpenURL != nil {
		if err := e.OpenURL(url); err != nil {
			fmt.Fprintf(e.Stderr, "note: could not open a browser (%v): the address is above\n", err)
		}
	}
	return nil
}
