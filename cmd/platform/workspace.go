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
	"github.com/svcplatform/platform/controlplane/billing"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/plans"
)

const workspaceUsage = `usage: platform workspace plan WORKSPACE PLAN [--data DIR | --store URL]
       platform workspace list [--data DIR | --store URL]

plan sets a workspace's plan, on the control plane's machine: its limits
change at once (a running control plane drops the cached plan within a
minute, at once with a PostgreSQL store). Nothing is charged: the operator's
plan is not paid from the Balance and is not renewed; an owner's later
self-serve change credits only what they paid. Recorded in the workspace's
audit log (workspace.plan) with who ran it.

list prints every workspace with its plan.

  WORKSPACE        the workspace's id (ws_...) or its name when only one has it
  PLAN             hobby, pro, team, scale or enterprise
  --data DIR       the control plane's data directory (env PLATFORM_DATA, default ./data)
  --store URL      the control plane's PostgreSQL, postgres://... (env PLATFORM_STORE);
                   empty: DIR/platform.db

example:
  platform workspace plan ws_3k9f... pro --data /var/lib/platform`

// runWorkspace is `platform workspace ...`: it returns the process exit
// code (0 done, 1 failed, 2 bad usage).
func runWorkspace(args []string, stdout, stderr io.Writer) int {
	if len(args) < 1 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintln(stderr, workspaceUsage)
		if len(args) < 1 {
			return 2
		}
		return 0
	}
	sub := args[0]
	if sub != "plan" && sub != "list" {
		fmt.Fprintf(stderr, "platform workspace: unknown command %q\n%s\n", sub, workspaceUsage)
		return 2
	}
	fset := flag.NewFlagSet("platform workspace "+sub, flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	data := fset.String("data", defaultDataDir(), "")
	dsn := fset.String("store", os.Getenv("PLATFORM_STORE"), "")
	// Positional arguments may come before or after the flags.
	var pos []string
	rest := args[1:]
	for {
		if err := fset.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprintln(stderr, workspaceUsage)
				return 0
			}
			fmt.Fprintf(stderr, "platform workspace %s: %v\n%s\n", sub, err, workspaceUsage)
			return 2
		}
		if fset.NArg() == 0 {
			break
		}
		pos = append(pos, fset.Arg(0))
		rest = fset.Args()[1:]
	}
	ctx := context.Background()
	switch sub {
	case "list":
		if len(pos) != 0 {
			fmt.Fprintf(stderr, "platform workspace list: unexpected argument %q\n", pos[0])
			return 2
		}
		if err := listWorkspaces(ctx, *data, *dsn, stdout); err != nil {
			fmt.Fprintf(stderr, "platform workspace list: %v\n", err)
			return 1
		}
		return 0
	}
	if len(pos) != 2 {
		fmt.Fprintf(stderr, "platform workspace plan: give WORKSPACE and PLAN\n%s\n", workspaceUsage)
		return 2
	}
	plan, err := plans.Parse(pos[1])
	if err != nil {
		fmt.Fprintf(stderr, "platform workspace plan: %v\n", err)
		return 2
	}
	if err := setWorkspacePlan(ctx, *data, *dsn, pos[0], plan, stdout); err != nil {
		fmt.Fprintf(stderr, "platform workspace plan: %v\n", err)
		return 1
	}
	return 0
}

// setWorkspacePlan sets ref's plan without payment.
func setWorkspacePlan(ctx context.Context, data, dsn, ref string, plan plans.Name, stdout io.Writer) error {
	db, err := openControlPlaneDB(ctx, data, dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	clk := clock.System{}
	log := audit.New(db, clk)
	acc, err := accounts.New(ctx, accounts.Config{}, accounts.Deps{DB: db, Clock: clk, Audit: log, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	defer acc.Close()
	w, err := acc.ResolveWorkspace(ctx, ref)
	if err != nil {
		return err
	}
	// Synchronous: another process (the running control plane) may hold
	// the ledger's hot path; this command moves no money.
	ledger, err := billing.New(billing.Config{Synchronous: true}, billing.Deps{DB: db, Clock: clk, Audit: log,
		Plans: billing.PlanFunc(func(ctx context.Context, id string) (plans.Name, error) { return acc.Plan(ctx, id), nil })})
	if err != nil {
		return err
	}
	defer ledger.Close()
	from, err := ledger.SetPlanUnpaid(ctx, acc, w.ID, plan, operator())
	if err != nil {
		return err
	}
	if from == plan {
		fmt.Fprintf(stdout, "workspace %s (%s) was already on %s; recorded anyway\n", w.ID, w.Name, plan)
		return nil
	}
	fmt.Fprintf(stdout, "workspace %s (%s): plan %s -> %s; its limits apply now\n", w.ID, w.Name, from, plan)
	return nil
}

// listWorkspaces prints every workspace and its plan.
func listWorkspaces(ctx context.Context, data, dsn string, stdout io.Writer) error {
	db, err := openControlPlaneDB(ctx, data, dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	ids, err := accounts.WorkspaceIDs(ctx, db)
	if err != nil {
		return err
	}
	clk := clock.System{}
	acc, err := accounts.New(ctx, accounts.Config{}, accounts.Deps{DB: db, Clock: clk, Audit: audit.New(db, clk), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	defer acc.Close()
	var b strings.Builder
	for _, id := range ids {
		w, err := acc.Workspace(ctx, id)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s\t%s\t%s\n", w.ID, w.Plan, w.Name)
	}
	_, err = io.WriteString(stdout, b.String())
	return err
}
