package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/svcplatform/platform/controlplane/mcp"
)

const mcpUsage = `usage: platform mcp --controlplane URL [--key KEY]

Runs the assistant connector over stdio for a desktop assistant: the
Model Context Protocol on stdin and stdout, every tool call made with KEY
against the control plane's REST API at URL (allowed exactly when the same
REST call would be, and recorded in the audit log as made through the
connector). Logs go to stderr.

  --controlplane URL   the control plane's API address, e.g. http://127.0.0.1:7070
                       (env PLATFORM_CONTROLPLANE)
  --key KEY            the API key the assistant acts with (env PLATFORM_API_KEY;
                       prefer the environment: arguments are visible to other users)`

// runMCP is `platform mcp ...`: it serves the connector over stdin and
// stdout until the assistant closes stdin or the process is told to stop.
// It returns the exit code (0 done, 1 failed, 2 bad usage).
func runMCP(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("platform mcp", flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	cpURL := fset.String("controlplane", os.Getenv("PLATFORM_CONTROLPLANE"), "")
	key := fset.String("key", os.Getenv("PLATFORM_API_KEY"), "")
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, mcpUsage)
			return 0
		}
		fmt.Fprintf(stderr, "platform mcp: %v\n%s\n", err, mcpUsage)
		return 2
	}
	switch {
	case fset.NArg() > 0:
		fmt.Fprintf(stderr, "platform mcp: unexpected argument %q\n", fset.Arg(0))
		return 2
	case *cpURL == "":
		fmt.Fprintf(stderr, "platform mcp: --controlplane is required\n%s\n", mcpUsage)
		return 2
	case *key == "":
		fmt.Fprintf(stderr, "platform mcp: --key (or PLATFORM_API_KEY) is required\n%s\n", mcpUsage)
		return 2
	}
	base, err := mcp.ParseControlPlaneURL(*cpURL)
	if err != nil {
		fmt.Fprintf(stderr, "platform mcp: --controlplane: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// A push carries up to 25 MB of files; the control plane answers within
	// its own limits, so a generous bound only catches a dead connection.
	client := &http.Client{Timeout: 5 * time.Minute}
	s, err := mcp.New(mcp.Config{}, mcp.Deps{API: mcp.Remote(base, client), Logger: log})
	if err != nil {
		fmt.Fprintf(stderr, "platform mcp: %v\n", err)
		return 1
	}
	t := &sdk.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}, MaxLineLength: mcp.MaxRequestBody}
	if err := s.Run(ctx, t, *key); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		fmt.Fprintf(stderr, "platform mcp: %v\n", err)
		return 1
	}
	return 0
}

// nopWriteCloser keeps the process's stdout open when the session ends.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
