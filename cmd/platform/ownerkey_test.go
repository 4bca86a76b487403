package main

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svcplatform/platform/controlplane/accounts"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/store"
)

// `platform owner-key reset` prints a new owner key once; it works and the
// lost one does not; the audit log says the operator did it.
func TestOwnerKeyCommand(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	open := func() (*store.DB, *accounts.Service) {
		t.Helper()
		db, err := store.Open(ctx, filepath.Join(data, "platform.db"))
		if err != nil {
			t.Fatal(err)
		}
		acc, err := accounts.New(ctx, accounts.Config{}, accounts.Deps{DB: db, Clock: clock.System{}, Audit: audit.New(db, clock.System{}), Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			acc.Close()
			db.Close()
		})
		return db, acc
	}
	_, acc := open()
	b, err := acc.EnsureBootstrap(ctx, accounts.BootstrapConfig{WorkspaceName: "Acme", OwnerEmail: "o@example.com", Plan: plans.Pro})
	if err != nil || b.Key == "" {
		t.Fatal(b, err)
	}
	lost, ws := b.Key, b.Workspace.ID
	t.Setenv("SUDO_USER", "")
	t.Setenv("USER", "alice")
	run := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := runOwnerKey(args, &out, &errOut)
		return code, out.String(), errOut.String()
	}

	for _, c := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"no command", nil, 2, "usage: platform owner-key reset"},
		{"unknown command", []string{"rotate"}, 2, "unknown command"},
		{"unknown flag", []string{"reset", "--data", data, "--force"}, 2, "flag provided but not defined"},
		{"extra argument", []string{"reset", "--data", data, "now"}, 2, "unexpected argument"},
		{"no database", []string{"reset", "--data", t.TempDir()}, 1, "no control-plane database"},
		{"unknown workspace", []string{"reset", "--data", data, "--workspace", "ws_nope"}, 1, "workspace ws_nope"},
		{"not an owner", []string{"reset", "--data", data, "--owner", "x@example.com"}, 1, "not an active owner"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := run(c.args...)
			if code != c.code || out != "" || !strings.Contains(errOut, c.msg) {
				t.Fatalf("%d %q %q; want %d and %q", code, out, errOut, c.code, c.msg)
			}
		})
	}
	if code, _, help := run("reset", "--help"); code != 0 || !strings.Contains(help, "example:") || !strings.Contains(help, "platform owner-key reset --data") {
		t.Fatalf("help: %d %q", code, help)
	}

	code, out, errOut := run("reset", "--data", data)
	lines := strings.Split(out, "\n")
	if code != 0 || len(lines) < 3 || !strings.Contains(lines[0], "o@example.com") || !strings.Contains(lines[0], ws) ||
		!strings.Contains(lines[2], "revoked the owner's 1 earlier key(s)") {
		t.Fatalf("%d %q %q", code, out, errOut)
	}
	fresh := lines[1]

	db, acc := open()
	for _, c := range []struct {
		name, key string
		ok        bool
	}{
		{"the new key", fresh, true},
		{"the lost key", lost, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, _ := http.NewRequest("GET", "/api/workspace", nil)
			r.Header.Set("Authorization", "Bearer "+c.key)
			p, err := acc.Authenticate(r)
			if ok := err == nil && p != nil && p.Role == auth.Owner && p.WorkspaceID == ws; ok != c.ok {
				t.Fatalf("authenticated %v (%+v, %v), want %v", ok, p, err, c.ok)
			}
		})
	}
	rows, _, err := audit.New(db, clock.System{}).List(ctx, audit.Query{Workspace: ws, Action: "key.owner_reset", Limit: 10})
	if err != nil || len(rows) != 1 || rows[0].Details["actor"] != "operator:alice" || strings.Contains(rows[0].Summary, fresh) {
		t.Fatalf("audit: %+v %v", rows, err)
	}
}
