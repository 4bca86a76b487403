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

const balanceUsage = `usage: platform balance add --workspace ID --usd AMOUNT [--reason TEXT] [--data DIR]

Loads a workspace's Balance (the money AI, agents and storage past the
allowance are paid from), on the control plane's machine. Recorded in the
workspace's audit log.

  --workspace ID   the workspace (ws_...)
  --usd AMOUNT     dollars, e.g. 25 or 12.50 (at most six decimals, at most 1000000)
  --reason TEXT    why, kept in the ledger and the audit log
  --data DIR       the control plane's data directory (env PLATFORM_DATA, default ./data)`

// runBalance is `platform balance ...`: it returns the process exit code
// (0 done, 1 failed, 2 bad usage).
func runBalance(args []string, stdout, stderr io.Writer) int {
	if len(args) < 1 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintln(stderr, balanceUsage)
		if len(args) < 1 {
			return 2
		}
		return 0
	}
	if args[0] != "add" {
		fmt.Fprintf(stderr, "platform balance: unknown command %q\n%s\n", args[0], balanceUsage)
		return 2
	}
	fset := flag.NewFlagSet("platform balance add", flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	data := fset.String("data", defaultDataDir(), "")
	ws := fset.String("workspace", "", "")
	amount := fset.String("usd", "", "")
	reason := fset.String("reason", "", "")
	if err := fset.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, balanceUsage)
			return 0
		}
		fmt.Fprintf(stderr, "platform balance add: %v\n%s\n", err, balanceUsage)
		return 2
	}
	switch {
	case fset.NArg() > 0:
		fmt.Fprintf(stderr, "platform balance add: unexpected argument %q\n", fset.Arg(0))
		return 2
	case *ws == "":
		fmt.Fprintln(stderr, "platform balance add: --workspace is required")
		return 2
	case *amount == "":
		fmt.Fprintln(stderr, "platform balance add: --usd is required")
		return 2
	}
	micros, err := billing.ParseUSD(*amount)
	if err == nil && (micros <= 0 || micros > billing.MaxLoad) {
		err = fmt.Errorf("--usd must be more than 0 and at most %s", billing.MaxLoad.USD())
	}
	if err != nil {
		fmt.Fprintf(stderr, "platform balance add: %v\n", err)
		return 2
	}
	if err := addBalance(context.Background(), *data, *ws, micros, *reason, stdout); err != nil {
		fmt.Fprintf(stderr, "platform balance add: %v\n", err)
		return 1
	}
	return 0
}

// addBalance opens the control plane's database in data and loads amount.
func addBalance(ctx context.Context, data, ws string, amount billing.Micros, reason string, stdout io.Writer) error {
	db, err := openControlPlaneDB(ctx, data, "")
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
	w, err := acc.Workspace(ctx, ws)
	if err != nil {
		return fmt.Errorf("workspace %s: %w", ws, err)
	}
	ledger, err := billing.New(billing.Config{}, billing.Deps{DB: db, Clock: clk, Audit: log,
		Plans: billing.PlanFunc(func(ctx context.Context, id string) (plans.Name, error) {
			w, err := acc.Workspace(ctx, id)
			return w.Plan, err
		})})
	if err != nil {
		return err
	}
	defer ledger.Close()
	if err := ledger.AddBalance(ctx, ws, amount, operator(), reason); err != nil {
		return err
	}
	s, err := ledger.Summary(ctx, ws)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "loaded %s dollars into %s (%s); Balance now %s dollars, %s available\n",
		amount.USD(), ws, w.Name, s.Balance.USD(), s.Available.USD())
	return nil
}

// operator names who ran the command, for the ledger and the audit log.
func operator() string {
	for _, v := range []string{"SUDO_USER", "USER", "LOGNAME"} {
		if u := strings.TrimSpace(os.Getenv(v)); u != "" {
			return "operator:" + u
		}
	}
	return "operator"
}
