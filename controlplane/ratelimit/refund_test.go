package ratelimit

import (
	"context"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/clock"
)

// TestRefund: units given back are admitted again at once, for both kinds
// of limit and every implementation; a refund never gives more than was
// spent.
func TestRefund(t *testing.T) { eachImpl(t, testRefund) }

func testRefund(t *testing.T, mk func(clock.Clock) Limiter) {
	for _, tc := range []struct {
		name  string
		limit Limit
	}{
		{"window", PerWindow(3, time.Minute)},
		{"gcra", PerMinute(3)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			clk := clock.NewFake(t0)
			l := mk(clk)
			k := Key{Workspace: "ws_1", Bucket: "agents.runs"}
			allow := func() bool {
				d, err := l.Allow(ctx, k, tc.limit, 1)
				if err != nil {
					t.Fatal(err)
				}
				return d.Allowed
			}
			for i := range 3 {
				if !allow() {
					t.Fatalf("unit %d refused", i)
				}
			}
			if allow() {
				t.Fatal("a fourth unit admitted")
			}
			if err := l.Refund(ctx, k, tc.limit, 1); err != nil {
				t.Fatal(err)
			}
			if !allow() {
				t.Fatal("the unit given back is refused")
			}
			if allow() {
				t.Fatal("a refund gave back more than one unit")
			}
			if err := l.Refund(ctx, k, tc.limit, 0); err == nil {
				t.Fatal("a refund of 0 units accepted")
			}
			if err := l.Refund(ctx, Key{Bucket: "agents.runs"}, tc.limit, 1); err == nil {
				t.Fatal("a refund without a workspace accepted")
			}
		})
	}
}
