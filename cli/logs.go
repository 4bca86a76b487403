package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/svcplatform/platform/client"
)

func runLogs(ctx context.Context, e *Env, args []string) error {
	fs := e.flags("logs")
	project := fs.String("project", "", "the project's name, slug or id (default: the folder's link)")
	follow := fs.Bool("follow", false, "keep printing new lines as they come (Ctrl-C ends)")
	fs.BoolVar(follow, "f", false, "short for --follow")
	deployment := fs.String("deployment", "", "only the lines of this deployment (dpl_...)")
	source := fs.String("source", "", "only these sources, comma-separated: build, deploy, app, function")
	stream := fs.String("stream", "", "only this stream: stdout, stderr or platform")
	since := fs.String("since", "", "only lines since a time (RFC 3339) or a duration ago (15m, 2h)")
	limit := fs.Int("limit", 100, "how many of the newest lines to print first (1-1000)")
	asJSON := fs.Bool("json", false, "print each line as a JSON object (one a line)")
	if _, err := parse(fs, args, 0); err != nil {
		return err
	}
	if *limit < 1 || *limit > 1000 {
		return usagef("--limit is from 1 to 1000, not %d", *limit)
	}
	c, err := e.api()
	if err != nil {
		return err
	}
	t, err := e.resolve(ctx, c, *project, e.Dir)
	if err != nil {
		return err
	}
	o := client.LogsOptions{Deployment: *deployment, Stream: *stream, Since: *since, Limit: *limit}
	if *source != "" {
		o.Sources = strings.Split(*source, ",")
	}
	show := func(l client.ProjectLogLine) error { return printLogLine(e.Stdout, l, *asJSON) }
	if *follow {
		return c.FollowLogs(ctx, t.project.ID, o, show)
	}
	page, err := c.Logs(ctx, t.project.ID, o)
	if err != nil {
		return err
	}
	for _, l := range page.Lines {
		if err := show(l); err != nil {
			return err
		}
	}
	if len(page.Lines) == 0 && !*asJSON {
		fmt.Fprintf(e.Stderr, "no log lines of %s match (lines are kept 24 hours): deploy, or run platform logs --follow to wait for some\n", t.project.Name)
	}
	return nil
}

// printLogLine writes one line: "15:04:05.000 app stdout dpl_x… | text",
// or the line as JSON.
func printLogLine(w io.Writer, l client.ProjectLogLine, asJSON bool) error {
	if asJSON {
		data, err := json.Marshal(l)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", data)
		return err
	}
	_, err := fmt.Fprintf(w, "%s %-8s %-8s %s | %s\n", l.At.Local().Format(time.DateTime), l.Source, l.Stream, shortID(l.DeploymentID), l.Line)
	return err
}

// shortID shortens a deployment id for a log prefix.
func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
