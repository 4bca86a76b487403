package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/svcplatform/platform/controlplane/edgesync"
)

const edgeTokenUsage = `usage: platform edge-token <create|list|revoke> [flags]

  create --name NAME   mint a token for a remote edge (printed once)
  list                 list tokens (never their secrets)
  revoke --id ID       revoke a token; a running control plane refuses it within 30 s

flags: --data DIR (env PLATFORM_DATA, default ./data), or --store postgres://... (env PLATFORM_STORE)
for a control plane on PostgreSQL`

// edgeToken manages edge tokens directly in the data directory: tokens
// carry every workspace's configuration, so they are an operator's tool,
// not an API call.
func edgeToken(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) < 1 {
		return fmt.Errorf("%s", edgeTokenUsage)
	}
	verb := args[0]
	fs := flag.NewFlagSet("platform edge-token "+verb, flag.ContinueOnError)
	data := fs.String("data", defaultDataDir(), "the control plane's data directory (env PLATFORM_DATA)")
	dsn := fs.String("store", os.Getenv("PLATFORM_STORE"), "the control plane's PostgreSQL (postgres://...; env PLATFORM_STORE); empty: DATA/platform.db")
	name := fs.String("name", "", "create: what the edge is (e.g. fra-1)")
	id := fs.String("id", "", "revoke: the token id (edt_...)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	db, err := openControlPlaneDB(ctx, *data, *dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	now := time.Now().UTC()
	switch verb {
	case "create":
		secret, t, err := edgesync.MintToken(ctx, db, *name, now)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "edge token %s (%s), shown once:\n%s\nrun: platform edge --controlplane <API URL> --edge-token %s\n", t.ID, t.Name, secret, secret)
	case "list":
		ts, err := edgesync.Tokens(ctx, db)
		if err != nil {
			return err
		}
		w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "ID\tNAME\tLOCAL\tCREATED\tREVOKED")
		for _, t := range ts {
			revoked := "-"
			if !t.RevokedAt.IsZero() {
				revoked = t.RevokedAt.Format(time.RFC3339)
			}
			fmt.Fprintf(w, "%s\t%s\t%v\t%s\t%s\n", t.ID, t.Name, t.Local, t.CreatedAt.Format(time.RFC3339), revoked)
		}
		return w.Flush()
	case "revoke":
		if *id == "" {
			return fmt.Errorf("revoke needs --id")
		}
		if err := edgesync.RevokeToken(ctx, db, *id, now); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "edge token %s revoked\n", *id)
	default:
		return fmt.Errorf("unknown edge-token command %q\n%s", verb, edgeTokenUsage)
	}
	return nil
}
