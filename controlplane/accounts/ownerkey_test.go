package accounts_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/svcplatform/platform/controlplane/accounts"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/cptest"
)

// The operator's owner-key reset: a new full-access key for an owner,
// shown once; the owner's earlier keys stop working (unless kept), other
// members' keys do not; one audit row says who did it and what it revoked.
func TestResetOwnerKey(t *testing.T) {
	ctx := context.Background()
	env := cptest.New(t)
	ws := env.CP.Bootstrap.Workspace.ID
	bootstrap := env.Owner
	second := env.NewKey("full", "")
	viewer := env.Member("viewer@example.com", "viewer")
	coOwner := env.Member("co@example.com", "owner")

	reset := func(r accounts.OwnerKeyReset) (accounts.OwnerKey, error) {
		r.Actor = "operator:alice"
		return env.CP.Accounts.ResetOwnerKey(ctx, r)
	}
	status := func(c *cptest.Client) int { return c.Do("GET", "/api/workspace", nil).Status }

	for _, tc := range []struct {
		name string
		r    accounts.OwnerKeyReset
		want string
		is   error
	}{
		{"unknown workspace", accounts.OwnerKeyReset{Workspace: "ws_nope"}, "workspace ws_nope", nil},
		{"two owners, none named", accounts.OwnerKeyReset{Workspace: ws}, "co@example.com", accounts.ErrOwnerAmbiguous},
		{"not a member", accounts.OwnerKeyReset{Workspace: ws, Owner: "nobody@example.com"}, "not an active owner", nil},
		{"a viewer", accounts.OwnerKeyReset{Workspace: ws, Owner: "viewer@example.com"}, "not an active owner", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := reset(tc.r)
			if err == nil || !strings.Contains(err.Error(), tc.want) || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
	if status(bootstrap) != 200 || status(second) != 200 {
		t.Fatal("a refused reset changed the owner's keys")
	}

	// Keeping the old keys: a new key, nothing revoked.
	kept, err := reset(accounts.OwnerKeyReset{Workspace: ws, Owner: "OWNER@example.com", KeepOld: true})
	if err != nil || len(kept.Revoked) != 0 || kept.Owner.Email != "owner@example.com" {
		t.Fatalf("%+v %v", kept, err)
	}
	if status(env.Client(kept.Secret)) != 200 || status(bootstrap) != 200 || status(second) != 200 {
		t.Fatal("keep-old reset: a key stopped working")
	}

	// The reset proper: every key of that owner is revoked, at once on
	// this replica (the clock does not move); the new one works as the
	// owner; other members' keys are untouched.
	got, err := reset(accounts.OwnerKeyReset{Workspace: ws, Owner: "owner@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Revoked) != 3 || got.Key.Access != "full" || !strings.HasPrefix(got.Secret, got.Key.Prefix) {
		t.Fatalf("reset %+v", got)
	}
	fresh := env.Client(got.Secret)
	for _, c := range []struct {
		name string
		c    *cptest.Client
		want int
	}{
		{"bootstrap key", bootstrap, 401},
		{"second key", second, 401},
		{"key of the keep-old reset", env.Client(kept.Secret), 401},
		{"new key", fresh, 200},
		{"viewer's key", viewer, 200},
		{"other owner's key", coOwner, 200},
	} {
		t.Run(c.name, func(t *testing.T) {
			if s := status(c.c); s != c.want {
				t.Errorf("GET /api/workspace: %d, want %d", s, c.want)
			}
		})
	}
	fresh.Must(201, "POST", "/api/projects", map[string]any{"name": "after-reset"}) // an owner's power

	rows, _, err := env.CP.Audit.List(ctx, audit.Query{Workspace: ws, Action: "key.owner_reset", Limit: 10})
	if err != nil || len(rows) != 2 {
		t.Fatalf("audit: %d rows %v", len(rows), err)
	}
	e := rows[0]
	if e.Details["actor"] != "operator:alice" || e.TargetID != got.Owner.ID || e.Details["key"] != got.Key.ID ||
		len(e.Details["revoked"].([]any)) != 3 || !strings.Contains(e.Summary, "operator:alice") || strings.Contains(e.Summary, got.Secret) {
		t.Fatalf("audit row %+v", e)
	}
}
