package ai

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/ai/upstreamtest"
	"github.com/svcplatform/platform/controlplane/plans"
)

func TestChatPlainAndExactCharge(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.openai.Set("gpt-4.1-mini", upstreamtest.Reply{Text: "Hi there.", InputTokens: 1200, OutputTokens: 345})
	r := e.do(ownerKey, "POST", "/api/ai/chat", map[string]any{"prompt": "hello", "projectId": "prj_a"})
	if r.Status != 200 {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	var a Answer
	r.Decode(t, &a)
	// gpt-4.1-mini: 0.40 in, 1.60 out per million: 1200*0.4 + 345*1.6 = 480 + 552 = 1032 micros.
	if a.Output != "Hi there." || a.ModelUsed != "gpt-4.1-mini" || a.Provider != "openai" || a.TokensIn != 1200 || a.TokensOut != 345 || a.CostMicros != 1032 {
		t.Fatalf("answer %+v", a)
	}
	if !strings.Contains(string(r.Body), `"cost":0.001032`) {
		t.Fatalf("cost not an exact decimal: %s", r.Body)
	}
	if a.FellBackFrom != "" || a.Truncated || a.FinishReason != "stop" {
		t.Fatalf("answer %+v", a)
	}
	if got := e.ledger.chargedOf(e.Workspace); got != 1032 {
		t.Fatalf("charged %d, want 1032", got)
	}
	e.ledger.check(t)
	// The upstream got the platform's key and the request's shape.
	calls := e.openai.Calls()
	if len(calls) != 1 || calls[0].Header.Get("Authorization") != "Bearer sk-openai" || calls[0].Body["max_tokens"] != float64(1024) {
		t.Fatalf("upstream call %+v", calls)
	}
}

func TestChatValidationAndErrorCodes(t *testing.T) {
	e := newEnv(t, envOptions{configure: func(c *Config) {
		c.Models = append(c.Models, ModelOverride{ID: "pricey-1", Provider: ptr("openai"), Tier: ptr(TierDeep),
			InputPerMTok: ptr(PerMTok(200 * MicrosPerDollar)), OutputPerMTok: ptr(PerMTok(200 * MicrosPerDollar)), Enabled: ptr(true)})
	}})
	projectKey := e.Key("full", "prj_a")
	readOnly := e.Key("read_only", "")
	long := strings.Repeat("x", MaxInputChars+1)
	cases := []struct {
		name   string
		key    string
		body   any
		header []string
		status int
		code   string
	}{
		{"no credentials", "", map[string]any{"prompt": "hi"}, nil, 401, "unauthenticated"},
		{"project key refused", projectKey, map[string]any{"prompt": "hi"}, nil, 403, ""},
		{"read-only key refused", readOnly, map[string]any{"prompt": "hi"}, nil, 403, ""},
		{"empty body", ownerKey, "", nil, 400, "invalid_request"},
		{"unknown field", ownerKey, map[string]any{"prompt": "hi", "bogus": 1}, nil, 400, "unknown_field"},
		{"neither messages nor prompt", ownerKey, map[string]any{"model": "service-1"}, nil, 400, "invalid_request"},
		{"both messages and prompt", ownerKey, map[string]any{"prompt": "hi", "messages": []any{map[string]any{"role": "user", "content": "x"}}}, nil, 400, "invalid_request"},
		{"bad role", ownerKey, map[string]any{"messages": []any{map[string]any{"role": "robot", "content": "x"}}}, nil, 400, "invalid_request"},
		{"no user message", ownerKey, map[string]any{"messages": []any{map[string]any{"role": "system", "content": "x"}}}, nil, 400, "invalid_request"},
		{"max_tokens zero", ownerKey, map[string]any{"prompt": "hi", "max_tokens": 0}, nil, 400, "invalid_request"},
		{"max_tokens above 8192", ownerKey, map[string]any{"prompt": "hi", "max_tokens": 8193}, nil, 400, "invalid_request"},
		{"max_tokens above 2048 on an edge model", ownerKey, map[string]any{"prompt": "hi", "model": "llama-3.1-8b-instruct", "max_tokens": 2049}, nil, 400, "invalid_request"},
		{"temperature above 2", ownerKey, map[string]any{"prompt": "hi", "temperature": 2.5}, nil, 400, "invalid_request"},
		{"temperature below 0", ownerKey, map[string]any{"prompt": "hi", "temperature": -0.1}, nil, 400, "invalid_request"},
		{"temperature above the family cap", ownerKey, map[string]any{"prompt": "hi", "model": "claude-sonnet-4-0", "temperature": 1.5}, nil, 400, "invalid_request"},
		{"bad tier", ownerKey, map[string]any{"prompt": "hi", "tier": "huge"}, nil, 400, "invalid_request"},
		{"unknown model", ownerKey, map[string]any{"prompt": "hi", "model": "gpt-9"}, nil, 400, "unknown_model"},
		{"embedding model for chat", ownerKey, map[string]any{"prompt": "hi", "model": "bge-base"}, nil, 400, "unknown_model"},
		{"model off by default", ownerKey, map[string]any{"prompt": "hi", "model": "claude-opus-4-1"}, nil, 403, "ai_model_off"},
		{"input above 200,000 characters", ownerKey, map[string]any{"prompt": long}, nil, 413, "ai_input_too_large"},
		{"unknown project", ownerKey, map[string]any{"prompt": "hi", "projectId": "prj_zzz"}, nil, 404, "project_not_found"},
		{"project disagreement", ownerKey, map[string]any{"prompt": "hi", "projectId": "prj_a"}, []string{"X-Service-Project", "prj_b"}, 400, "invalid_request"},
		{"estimate above the per-request cap", ownerKey, map[string]any{"prompt": strings.Repeat("word ", 39000), "model": "pricey-1", "max_tokens": 8192}, nil, 402, "ai_request_too_large"},
		{"tool_choice names no tool", ownerKey, map[string]any{"prompt": "hi", "tool_choice": map[string]any{"type": "function", "function": map[string]any{"name": "nope"}}}, nil, 400, "invalid_request"},
		{"image content", ownerKey, map[string]any{"messages": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "image_url"}}}}}, nil, 400, "invalid_request"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.do(c.key, "POST", "/api/ai/chat", c.body, c.header...)
			if r.Status != c.status || (c.code != "" && r.Code() != c.code) {
				t.Fatalf("status %d code %q, want %d %q: %s", r.Status, r.Code(), c.status, c.code, r.Body)
			}
		})
	}
	if n := len(e.openai.Calls()) + len(e.anthropic.Calls()) + len(e.edge.Calls()); n != 0 {
		t.Fatalf("refused requests reached upstreams %d times", n)
	}
	e.ledger.check(t)
	if e.ledger.chargedOf(e.Workspace) != 0 {
		t.Fatal("a refused request was charged")
	}
}

func TestLedgerRefusals(t *testing.T) {
	cases := []struct {
		name     string
		included Micros
		balance  Micros
		limit    *Micros
		code     string
	}{
		{"credits exhausted", 0, 0, nil, "ai_credits_exhausted"},
		{"credits insufficient", 0, 100, nil, "ai_credits_insufficient"},
		{"spend limit", 5 * MicrosPerDollar, 0, ptr(Micros(1000)), "spend_limit_reached"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, envOptions{included: c.included, balance: c.balance})
			if c.included == 0 && c.balance == 0 {
				// newEnv funds an empty ledger by default; take it back out.
				e.ledger.mu.Lock()
				e.ledger.included[e.Workspace], e.ledger.balance[e.Workspace], e.ledger.initial[e.Workspace] = 0, 0, 0
				e.ledger.mu.Unlock()
			}
			if c.limit != nil {
				e.ledger.spendLimit[e.Workspace] = *c.limit
			}
			r := e.do(ownerKey, "POST", "/api/ai/chat", map[string]any{"prompt": "hello"})
			if r.Status != 402 || r.Code() != c.code {
				t.Fatalf("status %d code %q: %s", r.Status, r.Code(), r.Body)
			}
			if len(e.openai.Calls()) != 0 {
				t.Fatal("upstream called despite refusal")
			}
			e.ledger.check(t)
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestRouterFallbackAndPinned(t *testing.T) {
	e := newEnv(t, envOptions{})
	// service-1 balanced: gpt-4.1-mini first; it is down, claude-sonnet-4-0 answers.
	e.openai.Set("gpt-4.1-mini", upstreamtest.Reply{Status: 503})
	e.anthropic.Set("claude-sonnet-4-0", upstreamtest.Reply{Text: "From Claude.", InputTokens: 100, OutputTokens: 10})
	r := e.do(ownerKey, "POST", "/api/ai/chat", map[string]any{"prompt": "hello"})
	var a Answer
	r.Decode(t, &a)
	// Billed at the model that answered: 100*3 + 10*15 = 450 micros.
	if r.Status != 200 || a.ModelUsed != "claude-sonnet-4-0" || a.FellBackFrom != "gpt-4.1-mini" || a.CostMicros != 450 {
		t.Fatalf("status %d answer %+v", r.Status, a)
	}
	// A pinned model that is rate limited upstream is answered by its tier.
	e.openai.Set("gpt-4.1-nano", upstreamtest.Reply{Status: 429, RetryAfter: 3})
	r = e.do(ownerKey, "POST", "/api/ai/chat", map[string]any{"prompt": "hello", "model": "gpt-4.1-nano"})
	r.Decode(t, &a)
	if r.Status != 200 || a.ModelUsed != "gpt-4o-mini" || a.FellBackFrom != "gpt-4.1-nano" {
		t.Fatalf("status %d answer %+v", r.Status, a)
	}
	// A refusal is not retried elsewhere and costs nothing.
	e.openai.Reset()
	e.openai.Set("gpt-4.1", upstreamtest.Reply{Refuse: true})
	r = e.do(ownerKey, "POST", "/api/ai/chat", map[string]any{"prompt": "bad", "model": "gpt-4.1"})
	if r.Status != 400 || r.Code() != "ai_request_refused" {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	if n := len(e.openai.Calls()); n != 1 {
		t.Fatalf("refusal tried %d models", n)
	}
	// Context overflow is a 413 refusal.
	e.openai.Set("gpt-4.1", upstreamtest.Reply{Status: 400, ErrorCode: "context_length_exceeded"})
	r = e.do(ownerKey, "POST", "/api/ai/chat", map[string]any{"prompt": "long", "model": "gpt-4.1"})
	if r.Status != 413 || r.Code() != "ai_request_refused" {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	// Every model of the tier down: 502, nothing charged.
	before := e.ledger.chargedOf(e.Workspace)
	for _, m := range []string{"gpt-4.1-nano", "gpt-4o-mini"} {
		e.openai.Set(m, upstreamtest.Reply{Status: 500})
	}
	e.anthropic.Set("claude-3-5-haiku-latest", upstreamtest.Reply{Status: 529, ErrorCode: "overloaded_error"})
	e.edge.Set("llama-3.1-8b-instruct", upstreamtest.Reply{Status: 502})
	r = e.do(ownerKey, "POST", "/api/ai/chat", map[string]any{"prompt": "hello", "tier": "fast"})
	if r.Status != 502 || r.Code() != "ai_provider_error" {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	if e.ledger.chargedOf(e.Workspace) != before {
		t.Fatal("a failed request was charged")
	}
	e.ledger.check(t)
}

func TestUpstreamTimeoutFallsBack(t *testing.T) {
	e := newEnv(t, envOptions{configure: func(c *Config) { c.FirstByteTimeout = 100 * time.Millisecond }})
	e.openai.Set("gpt-4.1-mini", upstreamtest.Reply{Hang: true})
	r := e.do(ownerKey, "POST", "/api/ai/chat", map[string]any{"prompt": "hello"})
	var a Answer
	r.Decode(t, &a)
	if r.Status != 200 || a.ModelUsed != "claude-sonnet-4-0" || a.FellBackFrom != "gpt-4.1-mini" {
		t.Fatalf("status %d answer %+v", r.Status, a)
	}
	// All unreachable: ai_unavailable.
	e.anthropic.Set("", upstreamtest.Reply{Hang: true})
	e.openai.Set("", upstreamtest.Reply{Hang: true})
	e.edge.Set("", upstreamtest.Reply{Hang: true})
	r = e.do(ownerKey, "POST", "/api/ai/chat", map[string]any{"prompt": "hello"})
	if r.Status != 502 || r.Code() != "ai_unavailable" {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	e.ledger.check(t)
}

func TestTruncatedAndBudgetExhausted(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.openai.Set("gpt-4.1-mini", upstreamtest.Reply{Text: "Part of an ans", Finish: "length", InputTokens: 10, OutputTokens: 16})
	r := e.do(ownerKey, "POST", "/api/ai/chat", map[string]any{"prompt": "hello", "max_tokens": 16})
	var a Answer
	r.Decode(t, &a)
	if r.Status != 200 || !a.Truncated || a.Note == "" || a.FinishReason != "length" {
		t.Fatalf("status %d answer %+v", r.Status, a)
	}
	e.openai.Set("gpt-4.1-mini", upstreamtest.Reply{Text: "", Chunks: []string{}, Finish: "length", InputTokens: 1000, OutputTokens: 16})
	before := e.ledger.chargedOf(e.Workspace)
	r = e.do(ownerKey, "POST", "/api/ai/chat", map[string]any{"prompt": "hello", "max_tokens": 16})
	if r.Status != 422 || r.Code() != "budget_exhausted" {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	// budget_exhausted is charged: 1000*0.4 + 16*1.6 = 400 + 25.6 -> 426 micros (rounded up once).
	if got := e.ledger.chargedOf(e.Workspace) - before; got != 426 {
		t.Fatalf("budget_exhausted charged %d, want 426", got)
	}
	e.ledger.check(t)
}

func TestGatewaySwitchesAndUnconfigured(t *testing.T) {
	e := newEnv(t, envOptions{})
	r := e.do(ownerKey, "PUT", "/api/ai/settings", map[string]any{"models": map[string]any{"gpt-4.1-mini": false, "claude-opus-4-1": true}})
	if r.Status != 200 {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	if r := e.do(ownerKey, "POST", "/api/ai/chat", map[string]any{"prompt": "hi", "model": "gpt-4.1-mini"}); r.Status != 403 || r.Code() != "ai_model_off" {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	var a Answer
	r = e.do(ownerKey, "POST", "/api/ai/chat", map[string]any{"prompt": "hi"})
	r.Decode(t, &a)
	if r.Status != 200 || a.ModelUsed == "gpt-4.1-mini" {
		t.Fatalf("router used a model switched off: %s", r.Body)
	}
	if r := e.do(ownerKey, "POST", "/api/ai/chat", map[string]any{"prompt": "hi", "model": "claude-opus-4-1", "max_tokens": 100}); r.Status != 200 {
		t.Fatalf("enabled model: status %d: %s", r.Status, r.Body)
	}
	if r := e.do(ownerKey, "PUT", "/api/ai/settings", map[string]any{"enabled": false}); r.Status != 200 {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	for _, path := range []string{"/api/ai/chat", "/api/ai/embeddings", "/api/ai/v1/chat/completions"} {
		body := map[string]any{"prompt": "hi"}
		if path != "/api/ai/chat" {
			body = map[string]any{"input": []string{"x"}}
		}
		if path == "/api/ai/v1/chat/completions" {
			body = map[string]any{"model": "service-1", "messages": []any{map[string]any{"role": "user", "content": "hi"}}}
		}
		if r := e.do(ownerKey, "POST", path, body); r.Status != 403 || !strings.Contains(string(r.Body), "ai_gateway_off") {
			t.Fatalf("%s: status %d: %s", path, r.Status, r.Body)
		}
	}
	// A developer-level principal may not switch.
	dev := *e.Owner
	dev.Role = 1
	if _, err := e.svc.UpdateSettings(context.Background(), &dev, SettingsRequest{Enabled: ptr(true)}); err == nil || !strings.Contains(err.Error(), "admin") {
		t.Fatalf("developer switched the gateway: %v", err)
	}
	// Nothing configured, or no provider for what is asked: 502
	// ai_unavailable (the specification's status when no model can
	// answer), naming --ai-config; nothing is charged.
	u := newEnv(t, envOptions{noProviders: true})
	edgeOnly := newEnv(t, envOptions{configure: func(c *Config) {
		delete(c.Providers, "openai")
		delete(c.Providers, "anthropic")
	}})
	vendorsOnly := newEnv(t, envOptions{configure: func(c *Config) { delete(c.Providers, "edge") }})
	for _, c := range []struct {
		name, path string
		env        *env
		body       map[string]any
	}{
		{"nothing configured", "/api/ai/chat", u, map[string]any{"prompt": "hi"}},
		{"nothing configured, compatible", "/api/ai/v1/chat/completions", u, map[string]any{"model": "service-1", "messages": []any{map[string]any{"role": "user", "content": "hi"}}}},
		{"no model of the tier has a provider", "/api/ai/chat", edgeOnly, map[string]any{"prompt": "hi", "tier": "deep"}},
		{"pinned model without a provider, none in its tier", "/api/ai/chat", edgeOnly, map[string]any{"prompt": "hi", "model": "gpt-4.1"}},
		{"embedding model without a provider", "/api/ai/embeddings", vendorsOnly, map[string]any{"input": []string{"x"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := c.env.do(ownerKey, "POST", c.path, c.body)
			if r.Status != 502 || r.Code() != "ai_unavailable" || !strings.Contains(string(r.Body), "--ai-config") {
				t.Fatalf("status %d: %s", r.Status, r.Body)
			}
			c.env.ledger.check(t)
		})
	}
	r = u.do(ownerKey, "GET", "/api/ai/chat", nil)
	var l ChatListing
	r.Decode(t, &l)
	if r.Status != 200 || l.Configured || len(l.Models) == 0 || l.Limits.RequestsPerMinute != 600 || l.Limits.MaxPerRequestMicros != 10*MicrosPerDollar || l.Credits == nil {
		t.Fatalf("listing %d %s", r.Status, r.Body)
	}
	for _, m := range l.Models {
		if m.Available {
			t.Fatalf("model %s available with nothing configured", m.ID)
		}
	}
}

func TestHobbyEmailUnverified(t *testing.T) {
	e := newEnv(t, envOptions{plan: plans.Hobby, unverified: true})
	r := e.do(ownerKey, "POST", "/api/ai/chat", map[string]any{"prompt": "hi", "model": "gpt-4o"})
	if r.Status != 402 || r.Code() != "email_unverified" {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	var a Answer
	r = e.do(ownerKey, "POST", "/api/ai/chat", map[string]any{"prompt": "hi"})
	r.Decode(t, &a)
	if r.Status != 200 || a.ModelUsed != "llama-3.3-70b-instruct" || a.Output != "Edge says hi." {
		t.Fatalf("service-1 on an unverified hobby: %d %s", r.Status, r.Body)
	}
	if len(e.openai.Calls())+len(e.anthropic.Calls()) != 0 {
		t.Fatal("a vendor model was called")
	}
	e.email.mu.Lock()
	e.email.verified = true
	e.email.mu.Unlock()
	if r := e.do(ownerKey, "POST", "/api/ai/chat", map[string]any{"prompt": "hi", "model": "gpt-4o"}); r.Status != 200 {
		t.Fatalf("verified: %d %s", r.Status, r.Body)
	}
	e.ledger.check(t)
}

func TestRateLimitSeparateBuckets(t *testing.T) {
	e := newEnv(t, envOptions{plan: plans.Hobby})
	for i := 0; i < 60; i++ {
		if r := e.do(ownerKey, "POST", "/api/ai/chat", map[string]any{"prompt": "hi", "model": "llama-3.1-8b-instruct"}); r.Status != 200 {
			t.Fatalf("request %d: %d %s", i, r.Status, r.Body)
		}
	}
	r := e.do(ownerKey, "POST", "/api/ai/chat", map[string]any{"prompt": "hi", "model": "llama-3.1-8b-instruct"})
	if r.Status != 429 || r.Code() != "ai_rate_limited" || r.Header.Get("Retry-After") != "1" {
		t.Fatalf("61st: %d %s retry-after %q", r.Status, r.Body, r.Header.Get("Retry-After"))
	}
	// Embeddings have their own bucket.
	e.edge.Set("bge-base-en-v1.5", upstreamtest.Reply{Dimensions: 768})
	if r := e.do(ownerKey, "POST", "/api/ai/embeddings", map[string]any{"input": []string{"a"}}); r.Status != 200 {
		t.Fatalf("embeddings: %d %s", r.Status, r.Body)
	}
	e.Clock.Advance(time.Second)
	if r := e.do(ownerKey, "POST", "/api/ai/chat", map[string]any{"prompt": "hi", "model": "llama-3.1-8b-instruct"}); r.Status != 200 {
		t.Fatalf("after Retry-After: %d %s", r.Status, r.Body)
	}
	e.ledger.check(t)
}

func TestEmbeddings(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.edge.Set("bge-small-en-v1.5", upstreamtest.Reply{Dimensions: 384, InputTokens: 50})
	e.edge.Set("bge-base-en-v1.5", upstreamtest.Reply{Dimensions: 768})
	e.edge.Set("bge-large-en-v1.5", upstreamtest.Reply{Dimensions: 999})
	r := e.do(ownerKey, "POST", "/api/ai/embeddings", map[string]any{"input": []string{"a", "b"}, "model": "bge-small"})
	var a EmbedAnswer
	r.Decode(t, &a)
	// 50 tokens at 0.020 per million = 1 micro (rounded up).
	if r.Status != 200 || a.Dimensions != 384 || len(a.Embeddings) != 2 || len(a.Embeddings[0]) != 384 || a.CostMicros != 1 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if r := e.do(ownerKey, "POST", "/api/ai/embeddings", map[string]any{"input": []string{"a"}}); r.Status != 200 || !strings.Contains(string(r.Body), `"dimensions":768`) {
		t.Fatalf("default model: %d %s", r.Status, r.Body)
	}
	before := e.ledger.chargedOf(e.Workspace)
	cases := []struct {
		name   string
		body   any
		status int
		code   string
	}{
		{"dimensions differ from the catalogue", map[string]any{"input": []string{"a"}, "model": "bge-large"}, 502, "ai_provider_error"},
		{"too many inputs", map[string]any{"input": make([]string, 101)}, 400, "too_many_inputs"},
		{"no input", map[string]any{"input": []string{}}, 400, "invalid_request"},
		{"empty input", map[string]any{"input": []string{""}}, 400, "invalid_request"},
		{"unknown model", map[string]any{"input": []string{"a"}, "model": "bge-huge"}, 400, "unknown_model"},
		{"input too large", map[string]any{"input": []string{strings.Repeat("y", MaxInputChars+1)}}, 413, "ai_input_too_large"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.do(ownerKey, "POST", "/api/ai/embeddings", c.body)
			if r.Status != c.status || r.Code() != c.code {
				t.Fatalf("status %d code %q: %s", r.Status, r.Code(), r.Body)
			}
		})
	}
	if e.ledger.chargedOf(e.Workspace) != before {
		t.Fatal("a refused embeddings call was charged")
	}
	e.ledger.check(t)
}

func TestRequestHistoryNeverKeepsPrompts(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.openai.Set("gpt-4.1-mini", upstreamtest.Reply{Text: "SECRET-ANSWER", InputTokens: 100, OutputTokens: 100})
	e.do(ownerKey, "POST", "/api/ai/chat", map[string]any{"prompt": "SECRET-PROMPT", "projectId": "prj_a"})
	e.do(ownerKey, "POST", "/api/ai/chat", map[string]any{"prompt": "SECRET-PROMPT"}, "X-Service-Project", "prj_b")
	r := e.do(ownerKey, "GET", "/api/ai/requests?limit=10", nil)
	var page RequestsPage
	r.Decode(t, &page)
	if r.Status != 200 || len(page.Requests) != 2 || page.Month.Requests != 2 || len(page.Month.ByProject) != 2 || len(page.Month.ByModel) != 1 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	// 100*0.4 + 100*1.6 = 200 micros each.
	if page.Month.CostMicros != 400 || page.Month.ByModel[0].Model != "gpt-4.1-mini" {
		t.Fatalf("month %+v", page.Month)
	}
	r = e.do(ownerKey, "GET", "/api/ai/requests?projectId=prj_a", nil)
	r.Decode(t, &page)
	if len(page.Requests) != 1 || page.Requests[0].ProjectID != "prj_a" || page.Month.CostMicros != 200 {
		t.Fatalf("by project: %s", r.Body)
	}
	var n int
	e.DB.QueryRow(`SELECT count(*) FROM ai_requests`).Scan(&n)
	rows, _ := e.DB.Query(`SELECT * FROM ai_requests`)
	defer rows.Close()
	cols, _ := rows.Columns()
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		rows.Scan(ptrs...)
		for _, v := range vals {
			if s, ok := v.(string); ok && strings.Contains(s, "SECRET") {
				t.Fatalf("history stored %q", s)
			}
		}
	}
	// Kept 30 days.
	e.Clock.Advance(31 * 24 * time.Hour)
	r = e.do(ownerKey, "GET", "/api/ai/requests", nil)
	r.Decode(t, &page)
	if len(page.Requests) != 0 {
		t.Fatalf("history older than 30 days shown: %s", r.Body)
	}
	if err := e.svc.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.DB.QueryRow(`SELECT count(*) FROM ai_requests`).Scan(&n)
	if n != 0 {
		t.Fatalf("%d rows older than 30 days kept", n)
	}
	// Metered for the usage report.
	from, to := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	for metric, want := range map[string]float64{string(MetricRequests): 2, string(MetricCost): 400, string(MetricTokensOut): 200} {
		got, err := e.Meter.Total(context.Background(), e.Workspace, "", metricOf(metric), from, to)
		if err != nil || got != want {
			t.Fatalf("meter %s = %v, want %v (%v)", metric, got, want, err)
		}
	}
	_ = http.StatusOK
}
