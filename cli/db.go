package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/svcplatform/platform/client"
)

func runDB(ctx context.Context, e *Env, args []string) error {
	fs := e.flags("db")
	project := fs.String("project", "", "the project's name, slug or id (default: the folder's link)")
	db := fs.String("db", "", "the database's name or id (default: the project's only database)")
	asJSON := fs.Bool("json", false, "query: print the answer as JSON")
	out := fs.String("o", "", "export: the file to write (default <database>.sql; - for stdout)")
	pos, err := parse(fs, args, 64)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("say what to do: query, shell or export")
	}
	sub, rest := pos[0], pos[1:]
	switch sub {
	case "query":
		if len(rest) == 0 {
			return usagef("db query needs the SQL, e.g. platform db query \"SELECT 1\"")
		}
	case "shell", "export":
		if len(rest) > 0 {
			return usagef("too many arguments: %s", strings.Join(rest, " "))
		}
	default:
		return usagef("%q is not a db command: query, shell or export", sub)
	}
	c, err := e.api()
	if err != nil {
		return err
	}
	t, err := e.resolve(ctx, c, *project, e.Dir)
	if err != nil {
		return err
	}
	d, err := pickDatabase(ctx, c, t.project, *db)
	if err != nil {
		return err
	}
	switch sub {
	case "query":
		params := make([]any, 0, len(rest)-1)
		for _, p := range rest[1:] {
			params = append(params, p)
		}
		return e.dbQuery(ctx, c, d, rest[0], params, *asJSON)
	case "shell":
		return e.dbShell(ctx, c, d)
	}
	return e.dbExport(ctx, c, d, *out)
}

// pickDatabase finds the database ref names (name or id), or the
// project's only one.
func pickDatabase(ctx context.Context, c *client.Client, p client.Project, ref string) (client.Database, error) {
	ds, err := c.Databases(ctx, p.ID)
	if err != nil {
		return client.Database{}, err
	}
	var names []string
	for _, d := range ds {
		if ref != "" && (d.ID == ref || d.Name == ref) {
			return d, nil
		}
		names = append(names, d.Name)
	}
	switch {
	case ref != "":
		return client.Database{}, fmt.Errorf("project %s has no database %q (it has: %s)", p.Name, ref, orNone(names))
	case len(ds) == 1:
		return ds[0], nil
	case len(ds) == 0:
		return client.Database{}, fmt.Errorf("project %s has no database yet: create one in the dashboard or with POST /api/projects/%s/databases", p.Name, p.ID)
	}
	return client.Database{}, fmt.Errorf("project %s has %d databases (%s): name one with --db", p.Name, len(ds), strings.Join(names, ", "))
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// dbQuery runs one query and prints its rows as a table (or JSON).
func (e *Env) dbQuery(ctx context.Context, c *client.Client, d client.Database, sql string, params []any, asJSON bool) error {
	res, err := c.QueryRaw(ctx, d.ID, sql, params...)
	if err != nil {
		return err
	}
	if asJSON {
		data, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(e.Stdout, "%s\n", data)
		return err
	}
	return printRows(e.Stdout, e.Stderr, res)
}

// printRows writes rows as an aligned table, columns in the database's
// order, then a line of what changed on stderr.
func printRows(w, info io.Writer, res client.RawQueryResult) error {
	var cols []string
	var rows [][]string
	for _, raw := range res.Results {
		keys, vals, err := orderedRow(raw)
		if err != nil {
			return fmt.Errorf("a row of the answer: %w", err)
		}
		if cols == nil {
			cols = keys
		}
		rows = append(rows, vals)
	}
	if len(cols) > 0 {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join(cols, "\t"))
		for _, r := range rows {
			fmt.Fprintln(tw, strings.Join(r, "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	var changes int64
	_ = json.Unmarshal(res.Meta["changes"], &changes)
	fmt.Fprintf(info, "(%d row(s)", len(rows))
	if changes > 0 {
		fmt.Fprintf(info, ", %d changed", changes)
	}
	fmt.Fprintln(info, ")")
	return nil
}

// orderedRow reads a JSON object's keys in order and its values as text
// (NULL for null, strings without quotes).
func orderedRow(raw json.RawMessage) ([]string, []string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, nil, fmt.Errorf("not an object")
	}
	var keys, vals []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		k, _ := tok.(string)
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		keys = append(keys, k)
		switch x := v.(type) {
		case nil:
			vals = append(vals, "NULL")
		case string:
			vals = append(vals, strings.ReplaceAll(x, "\n", `\n`))
		default:
			b, _ := json.Marshal(x)
			vals = append(vals, string(b))
		}
	}
	return keys, vals, nil
}

// dbShell reads SQL statements ending with ";" and runs each; .tables
// lists the tables, .quit (or end of input) leaves.
func (e *Env) dbShell(ctx context.Context, c *client.Client, d client.Database) error {
	if e.StdinTTY {
		fmt.Fprintf(e.Stderr, "connected to %s (%s); end statements with ;  .tables lists tables, .quit leaves\n", d.Name, d.ID)
	}
	sc := bufio.NewScanner(e.stdin.reader())
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var stmt strings.Builder
	prompt := func() {
		if !e.StdinTTY {
			return
		}
		if stmt.Len() == 0 {
			fmt.Fprint(e.Stderr, d.Name+"> ")
		} else {
			fmt.Fprint(e.Stderr, "   ...> ")
		}
	}
	run := func(sql string) {
		res, err := c.QueryRaw(ctx, d.ID, sql)
		if err != nil {
			fmt.Fprintf(e.Stderr, "error: %s\n", explain(err))
			return
		}
		if err := printRows(e.Stdout, e.Stderr, res); err != nil {
			fmt.Fprintf(e.Stderr, "error: %v\n", err)
		}
	}
	prompt()
	for sc.Scan() {
		if ctx.Err() != nil {
			return nil
		}
		line := strings.TrimSpace(sc.Text())
		if stmt.Len() == 0 {
			switch line {
			case "":
				prompt()
				continue
			case ".quit", ".exit", `\q`:
				return nil
			case ".tables":
				run("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
				prompt()
				continue
			}
		}
		stmt.WriteString(sc.Text())
		stmt.WriteString("\n")
		if strings.HasSuffix(line, ";") {
			run(stmt.String())
			stmt.Reset()
		}
		prompt()
	}
	if s := strings.TrimSpace(stmt.String()); s != "" {
		run(s)
	}
	return sc.Err()
}

// dbExport starts an export, waits for it and writes the .sql file.
func (e *Env) dbExport(ctx context.Context, c *client.Client, d client.Database, out string) error {
	x, err := c.Export(ctx, d.ID, "")
	if err != nil {
		return err
	}
	every := e.FollowEvery
	if every <= 0 {
		every = client.DefaultFollowEvery
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	for x.Status == "active" {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
		}
		if x, err = c.Export(ctx, d.ID, x.Bookmark); err != nil {
			return err
		}
		timer.Reset(every)
	}
	if x.Status != "complete" {
		return fmt.Errorf("the export of %s failed: %s", d.Name, x.Error)
	}
	body, err := c.DownloadExport(ctx, x.Download)
	if err != nil {
		return err
	}
	defer body.Close()
	if out == "-" {
		_, err = io.Copy(e.Stdout, body)
		return err
	}
	if out == "" {
		out = d.Name + ".sql"
	}
	if !filepath.IsAbs(out) {
		out = filepath.Join(e.Dir, out)
	}
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	n, err := io.Copy(f, body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("export: write %s: %w", out, err)
	}
	fmt.Fprintf(e.Stderr, "exported %s (%d bytes) to %s\n", d.Name, n, out)
	return nil
}
