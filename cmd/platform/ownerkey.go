package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/svcplatform/platform/controlplane/accounts"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/clock"
)

const ownerKeyUsage = `usage: platform owner-key reset [--workspace ID] [--owner EMAIL] [--keep-old] [--data DIR | --store URL]

Issues a new full-access API key for a workspace owner and prints it once,
for an owner key that was lost (a first start whose output is gone) or
leaked. The owner's earlier keys are revoked (agent run keys included),
unless --keep-old; other members' keys are untouched. Run it on the control
plane's machine; it works while the control plane runs, which refuses the
revoked keys within 30 s (at once with a PostgreSQL store). Recorded in the
workspace's audit log (key.owner_reset) with who ran it.

  --workspace ID   the workspace (ws_...); may be left out when there is only one
  --owner EMAIL    the owner; may be left out when the workspace has only one
  --keep-old       keep the owner's earlier keys working
  --data DIR       the control plane's data directory (env PLATFORM_DATA, default ./data)
  --store URL      the control plane's PostgreSQL, postgres://... (env PLATFORM_STORE);
                   empty: DIR/platform.db

example:
  platform owner-key reset --data /var/lib/platform
  platform owner-key reset --data /var/lib/platform --workspace ws_3k9f... --owner ops@example.com`

// runOwnerKey is `platform owner-key ...`: it returns the process exit code
// (0 done, 1 failed, 2 bad usage).
func runOwnerKey(args []string, stdout, stderr io.Writer) int {
	if len(args) < 1 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintln(stderr, ownerKeyUsage)
		if len(args) < 1 {
			return 2
		}
		return 0
	}
	if args[0] != "reset" {
		fmt.Fprintf(stderr, "platform owner-key: unknown command %q\n%s\n", args[0], ownerKeyUsage)
		return 2
	}
	fset := flag.NewFlagSet("platform owner-key reset", flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	data := fset.String("data", defaultDataDir(), "")
	dsn := fset.String("store", os.Getenv("PLATFORM_STORE"), "")
	r := accounts.OwnerKeyReset{Actor: operator()}
	fset.StringVar(&r.Workspace, "workspace", "", "")
	fset.StringVar(&r.Owner, "owner", "", "")
	fset.BoolVar(&r.KeepOld, "keep-old", false, "")
	if err := fset.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, ownerKeyUsage)
			return 0
		}
		fmt.Fprintf(stderr, "platform owner-key reset: %v\n%s\n", err, ownerKeyUsage)
		return 2
	}
	if fset.NArg() > 0 {
		fmt.Fprintf(stderr, "platform owner-key reset: unexpected argument %q\n", fset.Arg(0))
		return 2
	}
	if err := resetOwnerKey(context.Background(), *data, *dsn, r, stdout); err != nil {
		fmt.Fprintf(stderr, "platform owner-key reset: %v\n", err)
		return 1
	}
	return 0
}

// resetOwnerKey opens the control plane's database (data's SQLite file, or
// dsn) and resets the owner key.
func resetOwnerKey(ctx context.Context, data, dsn string, r accounts.OwnerKeyReset, stdout io.Writer) error {
	db, err := openControlPlaneDB(ctx, data, dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	if r.Workspace == "" {
		ids, err := accounts.WorkspaceIDs(ctx, db)
		if err != nil {
			return err
		}
		switch len(ids) {
		case 0:
			return errors.New("the database holds no workspace yet: start the control plane once (it creates the first one and prints its key)")
		case 1:
			r.Workspace = ids[0]
		default:
			return fmt.Errorf("the database holds %d workspaces: name one with --workspace (%s)", len(ids), strings.Join(ids, ", "))
		}
	}
	clk := clock.System{}
	acc, err := accounts.New(ctx, accounts.Config{}, accounts.Deps{DB: db, Clock: clk, Audit: audit.New(db, clk), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	defer acc.Close()
	k, err := acc.ResetOwnerKey(ctx, r)
	if errors.Is(err, accounts.ErrOwnerAmbiguous) {
		return fmt.Errorf("%w with --owner", err)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "new owner API key of %s in workspace %s (%s), shown once, store it now:\n%s\n",
		k.Owner.Email, k.Workspace.ID, k.Workspace.Name, k.Secret)
	switch {
	case r.KeepOld:
		fmt.Fprintln(stdout, "the owner's earlier keys still work (--keep-old)")
	default:
		fmt.Fprintf(stdout, "revoked the owner's %d earlier key(s); a running control plane refuses them within 30 s\n", len(k.Revoked))
	}
	fmt.Fprintln(stdout, "try: curl -H 'Authorization: Bearer <key>' <API address>/api/workspace")
	return nil
}
