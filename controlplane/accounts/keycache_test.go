package accounts_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/accounts"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/billing"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

// replicas are two accounts services on one database, as two control-plane
// replicas behind a load balancer run them.
type replicas struct {
	a, b  *accounts.Service
	clk   *clock.Fake
	boot  accounts.Bootstrap
	owner *auth.Principal
}

func newReplicas(t *testing.T, e pgtest.Engine) *replicas {
	t.Helper()
	ctx := context.Background()
	dsn := e.DSN(t)
	clk := clock.NewFake(t0)
	open := func() *accounts.Service {
		db, err := store.Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		svc, err := accounts.New(ctx, accounts.Config{}, accounts.Deps{DB: db, Clock: clk, Audit: audit.New(db, clk), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { svc.Close() })
		svc.SetHashParams(cheap)
		// Keys are cached only while Run listens for invalidations.
		if svc.KeyCacheStats().Enabled {
			t.Fatal("key cache on before Run")
		}
		runCtx, stop := context.WithCancel(ctx)
		ran := make(chan error, 1)
		go func() { ran <- svc.Run(runCtx) }()
		t.Cleanup(func() {
			stop()
			if err := <-ran; err != nil {
				t.Error(err)
			}
		})
		for !svc.KeyCacheStats().Enabled {
			runtime.Gosched()
		}
		return svc
	}
	r := &replicas{a: open(), b: open(), clk: clk}
	var err error
	r.boot, err = r.b.EnsureBootstrap(ctx, accounts.BootstrapConfig{WorkspaceName: "Test", OwnerEmail: "owner@example.com", Plan: plans.Pro})
	if err != nil {
		t.Fatal(err)
	}
	r.owner, err = authKey(r.b, r.boot.Key)
	if err != nil || r.owner == nil {
		t.Fatalf("owner key: %v", err)
	}
	return r
}

func authKey(s *accounts.Service, secret string) (*auth.Principal, error) {
	req := httptest.NewRequest("GET", "/api/workspace", nil)
	req.Header.Set("Authorization", "Bearer "+secret)
	return s.Authenticate(req)
}

// eventually waits for cond, failing after a deadline far below the key
// cache's TTL (the fake clock never reaches it anyway): what is tested is
// that the other replica's notification, not the TTL, ends the cached key.
func eventually(t *testing.T, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := start.Add(5 * time.Second)
	tick := time.NewTicker(200 * time.Microsecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 5s", what)
		}
		<-tick.C
	}
	return time.Since(start)
}

// Issue 20: "API-key revocations and role changes apply on all replicas at
// once". A key cached by replica A is refused by A as soon as replica B
// revokes it, and a member's new role shows on A as soon as B changes it,
// with no TTL wait (the clock does not move).
func TestKeyCacheReplicas(t *testing.T) { eachEngine(t, testKeyCacheReplicas) }

func testKeyCacheReplicas(t *testing.T, e pgtest.Engine) {
	ctx := context.Background()
	r := newReplicas(t, e)

	t.Run("revoke", func(t *testing.T) {
		k, err := r.b.CreateKey(ctx, r.owner, accounts.CreateKeyRequest{Name: "ci"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		before := r.a.KeyCacheStats()
		for range 3 { // cached on A: one look-up, then hits
			if p, err := authKey(r.a, k.Secret); err != nil || p == nil || p.KeyID != k.Key.ID {
				t.Fatalf("new key on A: %v %v", p, err)
			}
		}
		if st := r.a.KeyCacheStats(); st.Hits-before.Hits < 2 || !st.Enabled {
			t.Fatalf("key not cached on A: %+v -> %+v", before, st)
		}
		if _, err := r.b.RevokeKey(ctx, r.owner, k.Key.ID); err != nil {
			t.Fatal(err)
		}
		// B refuses at once (its own cache dropped the key synchronously).
		if p, err := authKey(r.b, k.Secret); err == nil || p != nil {
			t.Fatalf("revoked key accepted on B: %v", p)
		}
		d := eventually(t, "revoked key refused on A", func() bool {
			p, err := authKey(r.a, k.Secret)
			return err != nil && p == nil
		})
		t.Logf("%s: revocation on B reached A in %v", e.Name, d)
	})

	t.Run("role change", func(t *testing.T) {
		inv, err := r.b.Invite(ctx, r.owner, accounts.InviteRequest{Email: "dev@example.com", Role: auth.Admin})
		if err != nil {
			t.Fatal(err)
		}
		m, err := r.b.Accept(ctx, accounts.AcceptRequest{Token: inv.Token, Password: "member password 1"})
		if err != nil {
			t.Fatal(err)
		}
		mp := &auth.Principal{WorkspaceID: r.owner.WorkspaceID, MemberID: m.ID, Role: auth.Admin}
		k, err := r.a.CreateKey(ctx, mp, accounts.CreateKeyRequest{Name: "dev"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if p, err := authKey(r.a, k.Secret); err != nil || p == nil || p.Role != auth.Admin {
				t.Fatalf("member key on A: %+v %v", p, err)
			}
		}
		if _, err := r.b.UpdateMember(ctx, r.owner, m.ID, accounts.UpdateMemberRequest{Role: auth.Viewer}); err != nil {
			t.Fatal(err)
		}
		d := eventually(t, "new role on A", func() bool {
			p, err := authKey(r.a, k.Secret)
			return err == nil && p != nil && p.Role == auth.Viewer
		})
		t.Logf("%s: role change on B reached A in %v", e.Name, d)

		// Removing the member revokes the key everywhere.
		if err := r.b.RemoveMember(ctx, r.owner, m.ID); err != nil {
			t.Fatal(err)
		}
		eventually(t, "removed member's key refused on A", func() bool {
			p, err := authKey(r.a, k.Secret)
			return err != nil && p == nil
		})
	})

	t.Run("plan change", func(t *testing.T) {
		ws := r.owner.WorkspaceID
		for range 2 { // cached on A
			if p := r.a.Plan(ctx, ws); p != plans.Pro {
				t.Fatalf("plan on A %s", p)
			}
		}
		if err := r.b.SetPlan(ctx, ws, plans.Enterprise); err != nil {
			t.Fatal(err)
		}
		if p := r.b.Plan(ctx, ws); p != plans.Enterprise {
			t.Fatalf("plan on B right after the change: %s", p)
		}
		d := eventually(t, "new plan on A", func() bool { return r.a.Plan(ctx, ws) == plans.Enterprise })
		t.Logf("%s: plan change on B reached A in %v", e.Name, d)
	})

	t.Run("project keys and run keys", func(t *testing.T) {
		k, err := r.b.CreateKey(ctx, r.owner, accounts.CreateKeyRequest{Name: "ci"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		id, secret, err := r.b.CreateRunKey(ctx, r.owner.WorkspaceID, r.owner.MemberID, k.Key.ID, "", false, t0.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if p, err := authKey(r.a, secret); err != nil || p == nil {
			t.Fatalf("run key on A: %v", err)
		}
		if err := r.b.RevokeRunKey(ctx, id); err != nil {
			t.Fatal(err)
		}
		eventually(t, "revoked run key refused on A", func() bool {
			p, err := authKey(r.a, secret)
			return err != nil && p == nil
		})
	})
}

// The cache never outlives its TTL, and a key that expires while cached is
// refused at its expiry.
func TestKeyCacheTTLAndExpiry(t *testing.T) {
	ctx := context.Background()
	r := newReplicas(t, pgtest.Engines()[0])
	k, err := r.a.CreateKey(ctx, r.owner, accounts.CreateKeyRequest{Name: "short", ExpiresInDays: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		advance time.Duration
		ok      bool
	}{
		{"fresh", 0, true},
		{"cached", time.Second, true},
		{"past ttl, read again", accounts.KeyCacheTTL, true},
		{"expired while cached", 24 * time.Hour, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r.clk.Advance(tc.advance)
			p, err := authKey(r.a, k.Secret)
			if ok := err == nil && p != nil; ok != tc.ok {
				t.Fatalf("accepted %v, want %v (%v)", ok, tc.ok, err)
			}
		})
	}
	// A wrong secret with a cached key's prefix is still refused.
	if p, err := authKey(r.a, r.boot.Key+"x"); err == nil || p != nil {
		t.Fatal("a longer secret was accepted")
	}
}

// Billing keeps plans with its in-memory copies and drops them on the
// channel accounts announces plan changes on.
func TestPlanChannelShared(t *testing.T) {
	if accounts.PlanChannel != billing.PlanChannel {
		t.Fatalf("accounts announces plans on %q, billing listens on %q", accounts.PlanChannel, billing.PlanChannel)
	}
}
