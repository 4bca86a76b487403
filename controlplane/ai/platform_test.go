package ai_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/svcplatform/platform/controlplane"
	"github.com/svcplatform/platform/controlplane/ai"
	"github.com/svcplatform/platform/controlplane/ai/upstreamtest"
	"github.com/svcplatform/platform/controlplane/billing"
	"github.com/svcplatform/platform/controlplane/cptest"
)

// The gateway as the platform assembles it (controlplane/cptest: the real
// accounts, SQLite billing ledger, history and routes): exact charges, a
// fallback to a dearer model in a stream, refusals and failures charging
// nothing, nothing left held, and the ledger's charges equal to the history's.
func TestOnThePlatform(t *testing.T) {
	openai, anthropic := upstreamtest.NewOpenAI(), upstreamtest.NewAnthropic()
	t.Cleanup(openai.Close)
	t.Cleanup(anthropic.Close)
	openai.Key, anthropic.Key = "sk-openai", "sk-anthropic"
	e := cptest.New(t, cptest.Options{Configure: func(c *controlplane.Config) {
		c.AI = ai.Config{Providers: map[string]ai.ProviderConfig{
			"openai":    {Protocol: "openai", BaseURL: openai.BaseURL(), APIKey: "sk-openai"},
			"anthropic": {Protocol: "anthropic", BaseURL: anthropic.BaseURL(), APIKey: "sk-anthropic"},
		}}
	}})
	ctx := context.Background()
	req, _ := http.NewRequest("GET", "/", nil)
	req.Header.Set("Authorization", "Bearer "+cptest.OwnerKey)
	owner, err := e.CP.Accounts.Authenticate(req)
	if err != nil || owner == nil {
		t.Fatalf("owner: %v", err)
	}
	ws := owner.WorkspaceID
	const funds = 3 * ai.MicrosPerDollar
	if err := e.CP.Billing.AddBalance(ctx, ws, billing.Micros(funds), "test", "test funds"); err != nil {
		t.Fatal(err)
	}

	openai.Set("gpt-4.1-mini", upstreamtest.Reply{Text: "ok", InputTokens: 1200, OutputTokens: 345}) // 480 + 552 = 1032
	e.Owner.Must(200, "POST", "/api/ai/chat", map[string]any{"prompt": "hi"})
	// A stream whose model breaks before its first piece falls back.
	openai.Set("gpt-4.1-nano", upstreamtest.Reply{Text: "never", CutBeforeFirst: true})
	openai.Set("gpt-4o-mini", upstreamtest.Reply{Text: "ok", InputTokens: 100, OutputTokens: 100}) // 15 + 60 = 75
	if r := e.Owner.Do("POST", "/api/ai/chat", map[string]any{"prompt": "hi", "model": "gpt-4.1-nano", "stream": true}); r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	openai.Set("gpt-4.1", upstreamtest.Reply{Refuse: true})
	if r := e.Owner.Do("POST", "/api/ai/chat", map[string]any{"prompt": "hi", "model": "gpt-4.1"}); r.ErrorCode() != "ai_request_refused" {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	openai.Set("gpt-4.1-mini", upstreamtest.Reply{Status: 500})
	anthropic.Set("claude-sonnet-4-0", upstreamtest.Reply{Status: 529})
	openai.Set("gpt-4o", upstreamtest.Reply{Status: 503})
	if r := e.Owner.Do("POST", "/api/ai/chat", map[string]any{"prompt": "hi"}); r.Status != 502 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}

	sum, err := ai.BillingLedger(e.CP.Billing).Summary(ctx, ws)
	if err != nil {
		t.Fatal(err)
	}
	var page ai.RequestsPage
	e.Owner.Must(200, "GET", "/api/ai/requests", nil).JSON(t, &page)
	// Charged: the included credit first, then the Balance.
	charged := sum.IncludedUsed + (funds - sum.Balance)
	if sum.Reserved != 0 || charged != page.Month.CostMicros || charged != 1032+75 {
		t.Fatalf("summary %+v (charged %d), history month %d, want 1107", sum, charged, page.Month.CostMicros)
	}
	if len(page.Requests) != 4 {
		t.Fatalf("%d requests in the history, want 4", len(page.Requests))
	}
}
