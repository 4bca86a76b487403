package ai

import (
	"context"
	"testing"

	"github.com/svcplatform/platform/controlplane/ai/upstreamtest"
	"github.com/svcplatform/platform/controlplane/plans"
)

// The gateway on the platform's real ledger: exact charges, fallback to a
// dearer model, refusals and failures charging nothing, nothing left held.
func TestRealLedger(t *testing.T) {
	e := newEnv(t, envOptions{plan: plans.Hobby, realLedger: true, balance: 3 * MicrosPerDollar})
	ctx := context.Background()
	e.openai.Set("gpt-4.1-mini", upstreamtest.Reply{Text: "ok", InputTokens: 1200, OutputTokens: 345})
	if r := e.do(ownerKey, "POST", "/api/ai/chat", map[string]any{"prompt": "hi"}); r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	e.openai.Set("gpt-4.1-nano", upstreamtest.Reply{Status: 503})
	e.openai.Set("gpt-4o-mini", upstreamtest.Reply{Text: "ok", InputTokens: 100, OutputTokens: 100}) // 15 + 60 = 75
	if r := e.do(ownerKey, "POST", "/api/ai/chat", map[string]any{"prompt": "hi", "model": "gpt-4.1-nano", "stream": true}); r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	e.openai.Set("gpt-4.1", upstreamtest.Reply{Refuse: true})
	if r := e.do(ownerKey, "POST", "/api/ai/chat", map[string]any{"prompt": "hi", "model": "gpt-4.1"}); r.code() != "ai_request_refused" {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if r := e.do(ownerKey, "POST", "/api/ai/chat", map[string]any{"prompt": "hi", "max_tokens": 8192, "model": "claude-sonnet-4-0", "tier": "deep"}); r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	sum, err := BillingLedger(e.billing).Summary(ctx, e.ws)
	if err != nil {
		t.Fatal(err)
	}
	var page RequestsPage
	e.do(ownerKey, "GET", "/api/ai/requests", nil).decode(t, &page)
	if sum.Reserved != 0 || sum.Balance+sum.MonthSpend != 3*MicrosPerDollar || sum.MonthSpend != page.Month.CostMicros || page.Month.CostMicros < 1032+75 {
		t.Fatalf("summary %+v, history month %d", sum, page.Month.CostMicros)
	}
}
