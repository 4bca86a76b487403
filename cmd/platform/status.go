package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/svcplatform/platform/controlplane/edgesync"
	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/edge"
)

// status is what `platform status` shows and the admin listener's
// GET /status answers (JSON).
type status struct {
	Running   bool      `json:"running"`
	Command   string    `json:"command,omitempty"`
	Version   string    `json:"version,omitempty"`
	PID       int       `json:"pid,omitempty"`
	StartedAt time.Time `json:"startedAt,omitzero"`
	// Runs lists the parts of the process and what each does.
	Runs      []statusPart `json:"runs,omitempty"`
	PublicURL string       `json:"publicUrl,omitempty"`
	DataDir   string       `json:"dataDir,omitempty"`
	DataBytes int64        `json:"dataBytes"`
	// Store is sqlite or postgres; Migrations how many are applied.
	Store      string `json:"store,omitempty"`
	Migrations int    `json:"migrations,omitempty"`
	Workspaces int    `json:"workspaces"`
	Projects   int    `json:"projects"`
	Jobs       struct {
		Queued  int `json:"queued"`
		Due     int `json:"due"`
		Running int `json:"running"`
		Dead    int `json:"dead"`
	} `json:"jobs"`
	// SnapshotVersion is the edge configuration's current version.
	SnapshotVersion int64        `json:"snapshotVersion,omitempty"`
	Edges           []statusEdge `json:"edges"`
}

// statusPart is one part of the running process.
type statusPart struct {
	Name string `json:"name"`
	Addr string `json:"addr,omitempty"`
	Note string `json:"note,omitempty"`
}

// statusEdge is an edge token and what its edge last said.
type statusEdge struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Local     bool      `json:"local"`
	Connected bool      `json:"connected"`
	Version   int64     `json:"version,omitempty"`
	LastPoll  time.Time `json:"lastPoll,omitzero"`
	Addr      string    `json:"addr,omitempty"`
}

// edgeConnectedFor is how long after its last poll an edge counts as
// connected: its long-polls last at most edgesync.MaxWait.
const edgeConnectedFor = edgesync.MaxWait + 30*time.Second

// statusSource gathers a running process's status.
type statusSource struct {
	cmd       string
	started   time.Time
	publicURL string
	dataDir   string
	parts     []statusPart
	db        *store.DB // nil for platform edge
	watch     *edgeWatch
	version   func() int64
}

func (s *statusSource) status(ctx context.Context) (status, error) {
	st := status{Running: true, Command: s.cmd, Version: platformVersion(), PID: os.Getpid(), StartedAt: s.started,
		Runs: s.parts, PublicURL: s.publicURL}
	if s.version != nil {
		st.SnapshotVersion = s.version()
	}
	var seen map[string]edgeSeen
	if s.watch != nil {
		seen = s.watch.snapshotOf()
	}
	if err := offlineStatus(ctx, &st, s.dataDir, s.db, seen); err != nil {
		return st, err
	}
	return st, nil
}

// offlineStatus fills what the data directory and the metadata database
// (when db is not nil) say; seen are the edges' polls a running process saw.
func offlineStatus(ctx context.Context, st *status, dataDir string, db *store.DB, seen map[string]edgeSeen) error {
	st.DataDir = dataDir
	if abs, err := filepath.Abs(dataDir); err == nil {
		st.DataDir = abs
	}
	st.DataBytes = dirBytes(dataDir)
	if db == nil {
		return nil
	}
	st.Store = db.Dialect().String()
	queries := []struct {
		q    string
		args []any
		dst  *int
	}{
		{`SELECT count(*) FROM schema_migrations`, nil, &st.Migrations},
		{`SELECT count(*) FROM workspaces`, nil, &st.Workspaces},
		{`SELECT count(*) FROM projects`, nil, &st.Projects},
		{`SELECT count(*) FROM jobs WHERE state = 'queued'`, nil, &st.Jobs.Queued},
		{`SELECT count(*) FROM jobs WHERE state = 'queued' AND run_at <= ?`, []any{store.FormatTime(time.Now())}, &st.Jobs.Due},
		{`SELECT count(*) FROM jobs WHERE state = 'running'`, nil, &st.Jobs.Running},
		{`SELECT count(*) FROM jobs WHERE state = 'dead'`, nil, &st.Jobs.Dead},
	}
	for _, q := range queries {
		if err := db.QueryRowContext(ctx, q.q, q.args...).Scan(q.dst); err != nil {
			return fmt.Errorf("status: %w", err)
		}
	}
	if st.SnapshotVersion == 0 {
		if err := db.QueryRowContext(ctx, `SELECT version FROM edge_config WHERE id = 1`).Scan(&st.SnapshotVersion); err != nil {
			return fmt.Errorf("status: %w", err)
		}
	}
	rows, err := db.QueryContext(ctx, `SELECT id, name, token_hash, local FROM edge_tokens WHERE revoked_at = '' ORDER BY created_at, id`)
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	defer rows.Close()
	st.Edges = []statusEdge{}
	now := time.Now()
	for rows.Next() {
		var e statusEdge
		var hash []byte
		var local int
		if err := rows.Scan(&e.ID, &e.Name, &hash, &local); err != nil {
			return fmt.Errorf("status: %w", err)
		}
		e.Local = local != 0
		if s, ok := seen[hex.EncodeToString(hash)]; ok {
			e.Version, e.LastPoll, e.Addr = s.Version, s.LastPoll.UTC(), s.Addr
			e.Connected = s.Waiting > 0 || now.Sub(s.LastPoll) < edgeConnectedFor
		}
		st.Edges = append(st.Edges, e)
	}
	return rows.Err()
}

// dirBytes is the size of the files under dir (0 when it cannot be read).
func dirBytes(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// statusHandler answers the admin listener's GET /status.
func statusHandler(src func(context.Context) (status, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		st, err := src(r.Context())
		if err != nil {
			http.Error(w, "status: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		json.NewEncoder(w).Encode(st)
	}
}

const statusUsage = `usage: platform status [--admin-addr HOST:PORT] [--data DIR] [--store URL] [--json]

What a running platform on this machine does: its parts and their
addresses, its version, the data directory's size, the job queue, and the
edges connected with the configuration snapshot each holds. It asks the
process's admin listener (GET /status); when nothing answers there it says
so, shows what the data directory holds, and exits 3.

  --admin-addr HOST:PORT  the platform's admin listener (env PLATFORM_ADMIN_ADDR, default 127.0.0.1:9090)
  --data DIR              the data directory, read when the platform is not running (env PLATFORM_DATA, default ./data)
  --store URL             its PostgreSQL metadata, postgres://... (env PLATFORM_STORE)
  --json                  print the status as JSON`

// runStatus is `platform status`: 0 running, 3 not running, 1 failed, 2
// bad usage.
func runStatus(args []string, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("platform status", flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	admin := fset.String("admin-addr", envOr("PLATFORM_ADMIN_ADDR", "127.0.0.1:9090"), "")
	data := fset.String("data", envOr("PLATFORM_DATA", "./data"), "")
	dsn := fset.String("store", os.Getenv("PLATFORM_STORE"), "")
	asJSON := fset.Bool("json", false, "")
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, statusUsage)
			return 0
		}
		fmt.Fprintf(stderr, "platform status: %v\n%s\n", err, statusUsage)
		return 2
	}
	if fset.NArg() > 0 {
		fmt.Fprintf(stderr, "platform status: unexpected argument %q\n", fset.Arg(0))
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	st, err := fetchStatus(ctx, *admin)
	code := 0
	if err != nil {
		code = 3
		st = status{}
		db, derr := openControlPlaneDB(ctx, *data, *dsn)
		if derr == nil {
			defer db.Close()
		}
		if oerr := offlineStatus(ctx, &st, *data, db, nil); oerr != nil {
			fmt.Fprintf(stderr, "platform status: %v\n", oerr)
			return 1
		}
		fmt.Fprintf(stderr, "platform status: nothing answers at the admin address %s (%v): not running, or started with another --admin-addr\n", *admin, err)
		if derr != nil {
			fmt.Fprintf(stderr, "platform status: %v\n", derr)
		}
	}
	if *asJSON {
		json.NewEncoder(stdout).Encode(st)
		return code
	}
	printStatus(stdout, st)
	return code
}

// fetchStatus asks the admin listener at addr.
func fetchStatus(ctx context.Context, addr string) (status, error) {
	var st status
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/status", nil)
	if err != nil {
		return st, err
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return st, fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&st); err != nil {
		return st, fmt.Errorf("its /status: %w", err)
	}
	return st, nil
}

func printStatus(out io.Writer, st status) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	if st.Running {
		fmt.Fprintf(w, "running\tplatform %s (pid %d) since %s (%s)\n", st.Command, st.PID, st.StartedAt.UTC().Format(time.RFC3339),
			time.Since(st.StartedAt).Round(time.Second))
		fmt.Fprintf(w, "version\t%s\n", st.Version)
		for _, p := range st.Runs {
			line := p.Addr
			if p.Note != "" {
				line = strings.TrimSpace(line + "  " + p.Note)
			}
			fmt.Fprintf(w, "  %s\t%s\n", p.Name, line)
		}
		if st.PublicURL != "" {
			fmt.Fprintf(w, "public URL\t%s\n", st.PublicURL)
		}
	} else {
		fmt.Fprintf(w, "running\tno\n")
	}
	fmt.Fprintf(w, "data\t%s, %s\n", st.DataDir, humanBytes(st.DataBytes))
	if st.Store != "" {
		fmt.Fprintf(w, "metadata\t%s, %d migrations applied; workspaces: %d, projects: %d\n", st.Store, st.Migrations, st.Workspaces, st.Projects)
		fmt.Fprintf(w, "jobs\t%d queued (%d due now), %d running, %d dead\n", st.Jobs.Queued, st.Jobs.Due, st.Jobs.Running, st.Jobs.Dead)
		fmt.Fprintf(w, "edge config\tsnapshot version %d\n", st.SnapshotVersion)
	}
	w.Flush()
	if st.Edges == nil {
		return
	}
	w = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "EDGE\tNAME\tLOCAL\tCONNECTED\tVERSION\tLAST POLL\tFROM")
	for _, e := range st.Edges {
		last, ver := "-", "-"
		if !e.LastPoll.IsZero() {
			last, ver = e.LastPoll.Format(time.RFC3339), fmt.Sprint(e.Version)
		}
		fmt.Fprintf(w, "%s\t%s\t%v\t%v\t%s\t%s\t%s\n", e.ID, e.Name, e.Local, e.Connected, ver, last, orDash(e.Addr))
	}
	w.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// serveParts are the parts serve and controlplane run, for status.
func serveParts(cmd string, o options, api, admin net.Addr, ed *edge.Edge, ingest string, unavailable error, skipped []skippedListener) []statusPart {
	parts := []statusPart{{Name: "api", Addr: api.String()}, {Name: "admin", Addr: admin.String()}}
	if ed != nil {
		parts = append(parts, statusPart{Name: "edge", Addr: ed.HTTPSAddr().String(), Note: "https://<slug>." + o.appsDomain})
	}
	live := statusPart{Name: "live ingest", Addr: o.rtmpAddr}
	switch {
	case len(skipped) > 0 && o.rtmpAddr == "":
		live.Note = fmt.Sprintf("off: the default address %s was in use at start", skipped[0].addr)
	case o.rtmpAddr == "":
		live.Note = "off (--rtmp-addr is empty)"
	case unavailable != nil:
		live.Note = "unavailable: " + unavailable.Error()
	default:
		live.Note = ingest
	}
	parts = append(parts, live)
	sandbox := o.appSandbox
	if sandbox == "" {
		sandbox = "off"
	}
	parts = append(parts, statusPart{Name: "app sandbox", Note: sandbox})
	return parts
}
