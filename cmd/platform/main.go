// Command platform runs the hosting platform: `platform serve` (control plane,
// edge and workers in one process), `platform controlplane` and `platform edge`
// (one edge node configured from a control plane).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/svcplatform/platform/cli"
)

var usage = "usage: platform <command> [flags]\n\n" + cli.Usage() + `

operator commands:
  serve          control plane + edge + background workers in one process
  controlplane   control plane + workers only
  edge           one edge node, configured from a control plane (--controlplane, --edge-token)
  edge-token     create, list or revoke the tokens remote edges use
  mcp            the assistant connector over stdio: mcp --controlplane URL --key KEY
  balance        load a workspace's Balance: balance add --workspace ID --usd AMOUNT
  workspace      set a workspace's plan: workspace plan WORKSPACE PLAN; list them: workspace list
  owner-key      a new owner API key when it was lost or leaked: owner-key reset [--workspace ID]
  status         what a running platform does: parts, version, data size, job queue, edges (status [--admin-addr A])
  backup         the whole installation to one file, while it serves: backup --out FILE [--data DIR]
  restore        a backup into a new data directory: restore --in FILE --data DIR
  project        one project to a file and into another installation: project export ID FILE, project import FILE

Run "platform <command> -h" for the flags.`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	cmd := os.Args[1]
	if cli.Has(cmd) {
		os.Exit(cli.Main(cmd, os.Args[2:]))
	}
	var o options
	if cmd == "edge-token" {
		if err := edgeToken(context.Background(), os.Args[2:], os.Stdout); err != nil {
			fmt.Fprintf(os.Stderr, "platform edge-token: %v\n", err)
			os.Exit(1)
		}
		return
	}
	if cmd == "mcp" {
		os.Exit(runMCP(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	if cmd == "balance" {
		os.Exit(runBalance(os.Args[2:], os.Stdout, os.Stderr))
	}
	if cmd == "workspace" {
		os.Exit(runWorkspace(os.Args[2:], os.Stdout, os.Stderr))
	}
	if cmd == "owner-key" {
		os.Exit(runOwnerKey(os.Args[2:], os.Stdout, os.Stderr))
	}
	if cmd == "project" {
		os.Exit(runProject(os.Args[2:], os.Stdout, os.Stderr))
	}
	if cmd == "status" {
		os.Exit(runStatus(os.Args[2:], os.Stdout, os.Stderr))
	}
	if cmd == "backup" {
		os.Exit(runBackup(os.Args[2:], os.Stdout, os.Stderr))
	}
	if cmd == "restore" {
		os.Exit(runRestore(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	switch cmd {
	case "serve", "controlplane", "edge":
	case "-h", "--help", "help":
		fmt.Println(usage)
		return
	default:
		fmt.Fprintf(os.Stderr, "platform: unknown command %q\n%s\n", cmd, usage)
		os.Exit(2)
	}
	if err := o.parse(cmd, os.Args[2:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintf(os.Stderr, "platform %s: %v\n", cmd, err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := newLogger(o.logLevel)
	if err := run(ctx, cmd, o, logger, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "platform %s: %v\n", cmd, err)
		os.Exit(1)
	}
}

func newLogger(level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: l}))
}
