package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/svcplatform/platform/client"
)

func runEnv(ctx context.Context, e *Env, args []string) error {
	fs := e.flags("env")
	project := fs.String("project", "", "the project's name, slug or id (default: the folder's link)")
	force := fs.Bool("force", false, "pull: replace an existing file")
	pos, err := parse(fs, args, 3)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("say what to do: ls, set, rm or pull")
	}
	sub, rest := pos[0], pos[1:]
	want := map[string][2]int{"ls": {0, 0}, "set": {1, 2}, "rm": {1, 1}, "pull": {0, 1}}
	n, ok := want[sub]
	if !ok {
		return usagef("%q is not an env command: ls, set, rm or pull", sub)
	}
	if len(rest) < n[0] || len(rest) > n[1] {
		return usagef("env %s takes %d to %d arguments", sub, n[0], n[1])
	}
	c, err := e.api()
	if err != nil {
		return err
	}
	t, err := e.resolve(ctx, c, *project, e.Dir)
	if err != nil {
		return err
	}
	switch sub {
	case "ls":
		return e.envList(ctx, c, t)
	case "set":
		return e.envSet(ctx, c, t, rest)
	case "rm":
		return e.envRemove(ctx, c, t, rest[0])
	}
	return e.envPull(ctx, c, t, rest, *force)
}

func (e *Env) envList(ctx context.Context, c *client.Client, t target) error {
	vs, err := c.Env(ctx, t.project.ID)
	if err != nil {
		return err
	}
	if len(vs) == 0 {
		fmt.Fprintf(e.Stderr, "%s has no variables: add one with platform env set KEY VALUE\n", t.project.Name)
		return nil
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tUPDATED")
	for _, v := range vs {
		fmt.Fprintf(tw, "%s\t%s\n", v.Key, v.UpdatedAt.Format(time.DateTime))
	}
	tw.Flush()
	fmt.Fprintln(e.Stderr, "Values are not shown: platform env pull writes them to .env.")
	return nil
}

func (e *Env) envSet(ctx context.Context, c *client.Client, t target, args []string) error {
	key, value, hasValue := args[0], "", len(args) == 2
	if hasValue {
		value = args[1]
	} else if k, v, ok := strings.Cut(key, "="); ok {
		key, value, hasValue = k, v, true
	}
	if !hasValue {
		// Read from the terminal without echo, or all of standard input,
		// so the value stays out of the shell's history.
		if e.StdinTTY {
			v, err := e.prompt("Value for "+key+": ", true)
			if err != nil {
				return err
			}
			value = v
		} else {
			data, err := io.ReadAll(io.LimitReader(e.stdin.reader(), 1<<20))
			if err != nil {
				return err
			}
			value = strings.TrimSuffix(strings.TrimSuffix(string(data), "\n"), "\r")
		}
	}
	a, err := c.SetEnv(ctx, t.project.ID, key, value)
	if err != nil {
		return err
	}
	verb := "Replaced"
	if a.Created {
		verb = "Added"
	}
	fmt.Fprintf(e.Stdout, "%s %s on %s. It reaches the project at its next deploy: platform deploy\n", verb, a.Variable.Key, t.project.Name)
	return nil
}

func (e *Env) envRemove(ctx context.Context, c *client.Client, t target, key string) error {
	vs, err := c.Env(ctx, t.project.ID)
	if err != nil {
		return err
	}
	for _, v := range vs {
		if v.Key == key {
			if err := c.DeleteEnv(ctx, t.project.ID, v.ID); err != nil {
				return err
			}
			fmt.Fprintf(e.Stdout, "Removed %s from %s. The running deployment keeps it until the next deploy: platform deploy\n", key, t.project.Name)
			return nil
		}
	}
	return fmt.Errorf("%s has no variable %s: see them with platform env ls", t.project.Name, key)
}

// envPull writes the variables to a .env file (default: .env in the
// working directory), readable by its owner only.
func (e *Env) envPull(ctx context.Context, c *client.Client, t target, args []string, force bool) error {
	name := ".env"
	if len(args) == 1 {
		name = args[0]
	}
	if !filepath.IsAbs(name) {
		name = filepath.Join(e.Dir, name)
	}
	if _, err := os.Stat(name); err == nil && !force {
		return fmt.Errorf("%s exists: pass --force to replace it", name)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	vs, err := c.Env(ctx, t.project.ID)
	if err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Variables of project %s (%s), written by platform env pull.\n", t.project.Name, t.project.ID)
	for _, v := range vs {
		fmt.Fprintf(&b, "%s=%s\n", v.Key, dotenvQuote(v.Value))
	}
	if err := os.WriteFile(name, []byte(b.String()), 0o600); err != nil {
		return err
	}
	os.Chmod(name, 0o600) // an existing file keeps its mode through WriteFile
	fmt.Fprintf(e.Stdout, "Wrote %d variables to %s (readable by you only). It is never pushed by platform deploy.\n", len(vs), name)
	return nil
}

// dotenvQuote writes a value in double quotes, as dotenv readers take it:
// backslash, quote and line breaks escaped.
func dotenvQuote(v string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`)
	return `"` + r.Replace(v) + `"`
}
