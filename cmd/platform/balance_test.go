package main

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svcplatform/platform/controlplane/accounts"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/store"
)

func TestBalanceCommand(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	db, err := store.Open(ctx, filepath.Join(data, "platform.db"))
	if err != nil {
		t.Fatal(err)
	}
	log := audit.New(db, clock.System{})
	acc, err := accounts.New(ctx, accounts.Config{}, accounts.Deps{DB: db, Clock: clock.System{}, Audit: log, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	b, err := acc.EnsureBootstrap(ctx, accounts.BootstrapConfig{WorkspaceName: "Acme", OwnerEmail: "o@example.com", Plan: plans.Pro})
	if err != nil {
		t.Fatal(err)
	}
	acc.Close()
	db.Close()
	ws := b.Workspace.ID
	t.Setenv("SUDO_USER", "")
	t.Setenv("USER", "alice")

	run := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := runBalance(args, &out, &errOut)
		return code, out.String(), errOut.String()
	}
	code, out, errOut := run("add", "--data", data, "--workspace", ws, "--usd", "12.50", "--reason", "invoice 42")
	if code != 0 || out != "loaded 12.50 dollars into "+ws+" (Acme); Balance now 12.50 dollars, 12.50 available\n" {
		t.Fatalf("%d %q %q", code, out, errOut)
	}
	if code, out, _ = run("add", "--data", data, "--workspace", ws, "--usd", "0.000001"); code != 0 || !strings.Contains(out, "Balance now 12.500001 dollars") {
		t.Fatalf("%d %q", code, out)
	}

	for _, c := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"no command", nil, 2, "usage"},
		{"unknown command", []string{"remove"}, 2, "unknown command"},
		{"no workspace", []string{"add", "--data", data, "--usd", "5"}, 2, "--workspace is required"},
		{"no amount", []string{"add", "--data", data, "--workspace", ws}, 2, "--usd is required"},
		{"not dollars", []string{"add", "--data", data, "--workspace", ws, "--usd", "5,00"}, 2, "not a dollar amount"},
		{"negative", []string{"add", "--data", data, "--workspace", ws, "--usd", "-5"}, 2, "not a dollar amount"},
		{"zero", []string{"add", "--data", data, "--workspace", ws, "--usd", "0"}, 2, "more than 0"},
		{"too much", []string{"add", "--data", data, "--workspace", ws, "--usd", "1000000.01"}, 2, "at most 1000000.00"},
		{"unknown flag", []string{"add", "--data", data, "--workspace", ws, "--usd", "5", "--force"}, 2, "flag provided but not defined"},
		{"extra argument", []string{"add", "--data", data, "--workspace", ws, "--usd", "5", "now"}, 2, "unexpected argument"},
		{"unknown workspace", []string{"add", "--data", data, "--workspace", "ws_nope", "--usd", "5"}, 1, "workspace ws_nope"},
		{"no database", []string{"add", "--data", t.TempDir(), "--workspace", ws, "--usd", "5"}, 1, "no control-plane database"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := run(c.args...)
			if code != c.code || out != "" || !strings.Contains(errOut, c.msg) {
				t.Fatalf("%d %q %q; want %d and %q", code, out, errOut, c.code, c.msg)
			}
		})
	}

	db, err = store.Open(ctx, filepath.Join(data, "platform.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, _, err := audit.New(db, clock.System{}).List(ctx, audit.Query{Workspace: ws, Action: "billing.balance_add", Limit: 10})
	if err != nil || len(rows) != 2 {
		t.Fatalf("audit: %d rows %v", len(rows), err)
	}
	if rows[1].Summary != "Balance loaded with 12.50 dollars by operator:alice" || rows[1].Details["reason"] != "invoice 42" {
		t.Fatalf("%+v", rows[1])
	}
}
