package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/svcplatform/platform/controlplane/accounts"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/backup"
	"github.com/svcplatform/platform/controlplane/blobs"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/seal"
)

const projectUsage = `usage: platform project export PROJECT_ID [--out] FILE [flags]
       platform project import [--in] FILE [--workspace ID] [flags]

export writes one project to FILE (a .tar.gz): its settings, environment
variables (in clear: keep the file as secret as they are), databases and
vector collections (consistent snapshots, taken while the platform serves)
and the repos it deploys from with every commit. import puts it into
another installation's workspace with the same ids, so code that names its
databases or collections works unchanged; a project, id, slug or repo name
the target already has is refused before anything is written. Deployments,
domains, buckets, media, mail, sign-in pools and payments are not part of
it: deploy the project again after an import. Run each on the control
plane's machine (recorded in the target workspace's audit log).

flags:
  --workspace ID        import: the target workspace (may be left out when there is only one)
  --data DIR            the installation's data directory (env PLATFORM_DATA, default ./data)
  --store URL           its PostgreSQL metadata, postgres://... (env PLATFORM_STORE)
  --seal-key-file FILE  its seal key (env PLATFORM_SEAL_KEY_FILE, default DIR/keys/seal.key)
  --blobs LOCATION      its blobs (env PLATFORM_BLOBS, default DIR/blobs)

example:
  platform project export prj_3k9f... /tmp/shop.tar.gz --data /var/lib/platform
  platform project import /tmp/shop.tar.gz --data /srv/other --workspace ws_8d2a...`

// runProject is `platform project export|import`: 0 done, 1 failed, 2 bad
// usage.
func runProject(args []string, stdout, stderr io.Writer) int {
	if len(args) < 1 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintln(stderr, projectUsage)
		if len(args) < 1 {
			return 2
		}
		return 0
	}
	verb := args[0]
	if verb != "export" && verb != "import" {
		fmt.Fprintf(stderr, "platform project: unknown command %q\n%s\n", verb, projectUsage)
		return 2
	}
	fset := flag.NewFlagSet("platform project "+verb, flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	loc := installationFlags(fset)
	file := fset.String("out", "", "")
	if verb == "import" {
		file = fset.String("in", "", "")
	}
	workspace := fset.String("workspace", "", "")
	rest := args[1:]
	var id string
	if verb == "export" {
		if len(rest) == 0 || strings.HasPrefix(rest[0], "-") {
			fmt.Fprintf(stderr, "platform project export: name the project (prj_...)\n%s\n", projectUsage)
			return 2
		}
		id, rest = rest[0], rest[1:]
	}
	name, code := parseFileArgs(fset, rest, file, projectUsage, stderr)
	if code >= 0 {
		return code
	}
	ctx := context.Background()
	inst, closeInst, err := loc.open(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "platform project %s: %v\n", verb, err)
		return 1
	}
	defer closeInst()
	if verb == "export" {
		m, p, err := exportProject(ctx, inst, id, name, stdout)
		if err != nil {
			fmt.Fprintf(stderr, "platform project export: %v\n", err)
			return 1
		}
		info := stdout
		if name == "-" {
			info = stderr
		}
		fmt.Fprintf(info, "exported project %s (%s) to %s: %d variable(s), %d database(s), %d vector collection(s), %d repo(s); %s\n",
			p.ID, p.Name, name, len(p.Env), len(p.Databases), len(p.Vectors), len(p.Repos), humanBytes(m.Bytes()))
		if len(p.Env) > 0 {
			fmt.Fprintln(info, "the archive holds the variables in clear: keep it as secret as they are")
		}
		return 0
	}
	if *workspace == "" {
		ids, err := accounts.WorkspaceIDs(ctx, inst.DB)
		switch {
		case err != nil:
			fmt.Fprintf(stderr, "platform project import: %v\n", err)
			return 1
		case len(ids) != 1:
			fmt.Fprintf(stderr, "platform project import: the installation has %d workspaces: name one with --workspace (%s)\n", len(ids), strings.Join(ids, ", "))
			return 2
		}
		*workspace = ids[0]
	}
	var r io.Reader = os.Stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintf(stderr, "platform project import: %v\n", err)
			return 1
		}
		defer f.Close()
		r = f
	}
	inst.Audit, inst.Operator = audit.New(inst.DB, inst.Clock), operator()
	p, err := backup.ImportProject(ctx, r, inst, *workspace)
	if err != nil {
		fmt.Fprintf(stderr, "platform project import: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "imported project %s (%s, slug %s) into workspace %s: %d variable(s), %d database(s), %d vector collection(s), %d repo(s)\n",
		p.ID, p.Name, p.Slug, *workspace, len(p.Env), len(p.Databases), len(p.Vectors), len(p.Repos))
	fmt.Fprintln(stdout, "deploy it again to serve it (platform deploy, or POST /api/projects/{id}/deployments)")
	return 0
}

func exportProject(ctx context.Context, inst backup.Installation, id, file string, stdout io.Writer) (backup.Manifest, backup.ProjectInfo, error) {
	if file == "-" {
		return backup.ExportProject(ctx, inst, id, stdout)
	}
	f, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".tmp-*")
	if err != nil {
		return backup.Manifest{}, backup.ProjectInfo{}, err
	}
	defer os.Remove(f.Name())
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return backup.Manifest{}, backup.ProjectInfo{}, err
	}
	m, p, err := backup.ExportProject(ctx, inst, id, f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), file)
	}
	return m, p, err
}

// installationLoc are the flags naming an installation on this machine.
type installationLoc struct {
	data, store, sealKey, blobs *string
}

func installationFlags(fset *flag.FlagSet) installationLoc {
	return installationLoc{
		data:    fset.String("data", envOr("PLATFORM_DATA", "./data"), ""),
		store:   fset.String("store", os.Getenv("PLATFORM_STORE"), ""),
		sealKey: fset.String("seal-key-file", os.Getenv("PLATFORM_SEAL_KEY_FILE"), ""),
		blobs:   fset.String("blobs", os.Getenv("PLATFORM_BLOBS"), ""),
	}
}

// open opens the installation's metadata, seal key and blobs (never
// creating any of them).
func (l installationLoc) open(ctx context.Context) (backup.Installation, func(), error) {
	data := *l.data
	db, err := openControlPlaneDB(ctx, data, *l.store)
	if err != nil {
		return backup.Installation{}, nil, err
	}
	keyFile := *l.sealKey
	if keyFile == "" {
		keyFile = filepath.Join(data, "keys", "seal.key")
	}
	sealer, err := seal.Load(keyFile)
	if err != nil {
		db.Close()
		return backup.Installation{}, nil, fmt.Errorf("seal key: %w", err)
	}
	at := *l.blobs
	if at == "" {
		at = filepath.Join(data, "blobs")
	}
	bl, err := blobs.OpenBackend(ctx, at)
	if err != nil {
		db.Close()
		return backup.Installation{}, nil, fmt.Errorf("blobs: %w", err)
	}
	node := ""
	if b, err := os.ReadFile(filepath.Join(data, "node-id")); err == nil {
		node = strings.TrimSpace(string(b))
	} else if !errors.Is(err, os.ErrNotExist) {
		db.Close()
		return backup.Installation{}, nil, err
	}
	inst := backup.Installation{DB: db, Sealer: sealer, Blobs: bl, DataDir: data, NodeID: node, Platform: platformVersion(),
		Clock: clock.System{}, Logger: slog.New(slog.DiscardHandler)}
	return inst, func() { db.Close() }, nil
}
