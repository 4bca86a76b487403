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

// The operator sets a workspace's plan by id or name; the change is in
// the audit log with who made it; bad arguments answer 2.
func TestWorkspacePlanCommand(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	db, err := store.Open(ctx, filepath.Join(data, "platform.db"))
	if err != nil {
		t.Fatal(err)
	}
	acc, err := accounts.New(ctx, accounts.Config{}, accounts.Deps{DB: db, Clock: clock.System{}, Audit: audit.New(db, clock.System{}), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	b, err := acc.EnsureBootstrap(ctx, accounts.BootstrapConfig{WorkspaceName: "Acme", OwnerEmail: "o@example.com", Plan: plans.Hobby})
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
		code := runWorkspace(args, &out, &errOut)
		return code, out.String(), errOut.String()
	}
	for _, c := range []struct {
		name string
		args []string
		code int
		out  string
	}{
		{"by id", []string{"plan", ws, "pro", "--data", data}, 0, "plan hobby -> pro"},
		{"by name, flags first", []string{"plan", "--data", data, "Acme", "scale"}, 0, "plan pro -> scale"},
		{"same plan", []string{"plan", ws, "scale", "--data", data}, 0, "already on scale"},
		{"list", []string{"list", "--data", data}, 0, ws + "\tscale\tAcme"},
		{"unknown plan", []string{"plan", ws, "gold", "--data", data}, 2, "unknown plan"},
		{"unknown workspace", []string{"plan", "ws_nope", "pro", "--data", data}, 1, "no workspace"},
		{"missing plan", []string{"plan", ws, "--data", data}, 2, "give WORKSPACE and PLAN"},
		{"no database", []string{"plan", ws, "pro", "--data", t.TempDir()}, 1, "no control-plane database"},
		{"unknown command", []string{"delete"}, 2, "unknown command"},
		{"no command", nil, 2, "usage"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := run(c.args...)
			if code != c.code || !strings.Contains(out+errOut, c.out) {
				t.Fatalf("%d %q %q, want %d and %q", code, out, errOut, c.code, c.out)
			}
		})
	}
	db, err = store.Open(ctx, filepath.Join(data, "platform.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	db.QueryRow(`SELECT count(*) FROM audit_log WHERE workspace_id = ? AND action = 'workspace.plan' AND summary LIKE '%operator:alice%'`, ws).Scan(&n)
	if n != 3 {
		t.Fatalf("%d workspace.plan audit rows by operator:alice, want 3", n)
	}
}
