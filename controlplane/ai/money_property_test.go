package ai

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/ai/upstreamtest"
	"github.com/svcplatform/platform/controlplane/billing"
)

// TestPropertyAnswerHistoryLedgerAgree sends random requests, plain and
// streamed, whose models report random usage (often far above what was
// reserved, up to tens of millions of tokens), with random Balance loads
// between them, through the gateway on the platform's ledger
// (controlplane/billing over SQLite). For every request the cost its answer
// reports, the history's cost and the ledger's movement (what it charged
// plus what it recorded as owed) are the same; overall no micro-dollar is
// created or lost: every loaded one is in the Balance or was charged from
// it, and what the requests cost is what was charged plus what is owed.
func TestPropertyAnswerHistoryLedgerAgree(t *testing.T) {
	var owedSeen, paidOwed int // over all seeds: the property was tested where it matters
	for seed := range uint64(3) {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			e := newEnv(t, envOptions{realLedger: true, balance: 2 * MicrosPerDollar, included: 1})
			ctx := context.Background()
			rng := rand.New(rand.NewPCG(seed, 10))
			loaded := 2 * MicrosPerDollar
			models := []struct {
				id string
				up *upstreamtest.Server
			}{{"gpt-4.1-mini", e.openai}, {"gpt-4.1", e.openai}, {"claude-sonnet-4-0", e.anthropic}}
			type sent struct {
				id   string
				cost Micros
			}
			var reqs []sent
			var refused int
			for i := range 80 {
				e.Clock.Advance(200 * time.Millisecond) // within the pro plan's rate limit
				if rng.IntN(4) == 0 {
					amount := Micros(rng.Int64N(int64(30*MicrosPerDollar))) + 10_000
					before, _ := e.billing.Summary(ctx, e.Workspace)
					if err := e.billing.AddBalance(ctx, e.Workspace, billing.Micros(amount), "test", "top-up"); err != nil {
						t.Fatal(err)
					}
					// A load pays what is owed first.
					after, _ := e.billing.Summary(ctx, e.Workspace)
					paid := min(before.Owed, before.Balance-before.Reserved+billing.Micros(amount))
					if after.Owed != before.Owed-paid || after.Balance != before.Balance+billing.Micros(amount)-paid {
						t.Fatalf("load of %d: before %+v, after %+v", amount, before, after)
					}
					if paid > 0 {
						paidOwed++
					}
					loaded += amount
				}
				m := models[rng.IntN(len(models))]
				maxTokens := 1 + rng.IntN(4096)
				// Usage: within the estimate, above it, or absurdly above it.
				var in, out int64
				switch n := rng.IntN(6); {
				case n < 3:
					in, out = 1+rng.Int64N(500), 1+rng.Int64N(int64(maxTokens))
				case n < 5:
					in, out = 1+rng.Int64N(200_000), 1+rng.Int64N(int64(10*maxTokens))
				default:
					in, out = 1+rng.Int64N(5_000_000), 1+rng.Int64N(5_000_000)
				}
				m.up.Set(m.id, upstreamtest.Reply{Text: "an answer", InputTokens: in, OutputTokens: out})
				stream := rng.IntN(2) == 0
				r := e.do(ownerKey, "POST", "/api/ai/chat", map[string]any{"model": m.id, "max_tokens": maxTokens, "stream": stream,
					"prompt": strings.Repeat("word ", 1+rng.IntN(400))})
				if r.Status == 402 {
					refused++ // nothing reserved: no history cost, no movement
					continue
				}
				if r.Status != 200 {
					t.Fatalf("request %d: %d %s", i, r.Status, r.Body)
				}
				var s sent
				if stream {
					evs := parseSSE(t, r.Body)
					done := evs[len(evs)-1]
					if evs[0].name != "meta" || done.name != "done" {
						t.Fatalf("request %d: events %+v", i, evs)
					}
					s = sent{id: evs[0].data["id"].(string), cost: Micros(done.data["costMicros"].(float64))}
				} else {
					var a Answer
					r.Decode(t, &a)
					s = sent{id: a.ID, cost: a.CostMicros}
				}
				if want := Cost(e.svc.cat.mustGet(t, m.id).InputPerMTok, e.svc.cat.mustGet(t, m.id).OutputPerMTok, in, out, e.svc.markup(e.svc.cat.mustGet(t, m.id))); s.cost != want {
					t.Fatalf("request %d: answer cost %d, the reported usage costs %d", i, s.cost, want)
				}
				reqs = append(reqs, s)
				if sum, _ := e.billing.Summary(ctx, e.Workspace); sum.Owed > 0 {
					owedSeen++
				}
			}
			if err := e.svc.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			if err := e.billing.Flush(); err != nil {
				t.Fatal(err)
			}
			var total Micros
			for _, s := range reqs {
				var history, charged, owed, entries Micros
				if err := e.DB.QueryRow(`SELECT cost_micros FROM ai_requests WHERE id = ?`, s.id).Scan(&history); err != nil {
					t.Fatalf("history of %s: %v", s.id, err)
				}
				if err := e.DB.QueryRow(`SELECT coalesce(sum(charged),0), coalesce(sum(uncollected),0) FROM billing_reservations WHERE ref = ?`, s.id).
					Scan(&charged, &owed); err != nil {
					t.Fatal(err)
				}
				if err := e.DB.QueryRow(`SELECT coalesce(sum(amount),0) FROM billing_entries WHERE ref = ? AND kind = 'charge'`, s.id).Scan(&entries); err != nil {
					t.Fatal(err)
				}
				if history != s.cost || charged+owed != s.cost || entries != charged {
					t.Fatalf("request %s: answer %d, history %d, ledger charged %d (entries %d) + owed %d", s.id, s.cost, history, charged, entries, owed)
				}
				total += s.cost
			}
			sum, err := e.billing.Summary(ctx, e.Workspace)
			if err != nil {
				t.Fatal(err)
			}
			var fromBalance, allCharges, month Micros
			e.DB.QueryRow(`SELECT coalesce(sum(amount),0) FROM billing_entries WHERE workspace_id = ? AND kind = 'charge' AND pool = 'balance'`, e.Workspace).Scan(&fromBalance)
			e.DB.QueryRow(`SELECT coalesce(sum(amount),0) FROM billing_entries WHERE workspace_id = ? AND kind = 'charge'`, e.Workspace).Scan(&allCharges)
			e.DB.QueryRow(`SELECT coalesce(sum(cost_micros),0) FROM ai_spend_month WHERE workspace_id = ?`, e.Workspace).Scan(&month)
			if Micros(sum.Balance)+fromBalance != loaded {
				t.Fatalf("Balance %d + charged from it %d != loaded %d", sum.Balance, fromBalance, loaded)
			}
			if allCharges+Micros(sum.Owed) != total || month != total || sum.Reserved != 0 {
				t.Fatalf("requests cost %d; the ledger charged %d and records %d owed (%d held); the month's history says %d",
					total, allCharges, sum.Owed, sum.Reserved, month)
			}
			if err := e.billing.VerifyAll(ctx); err != nil {
				t.Fatal(err)
			}
			t.Logf("%d requests (%d refused), %s dollars, %s owed at the end", len(reqs), refused, total, Micros(sum.Owed))
		})
	}
	if owedSeen == 0 || paidOwed == 0 {
		t.Fatalf("no request left anything owed (%d) or no load paid it (%d): the property was not exercised", owedSeen, paidOwed)
	}
	t.Logf("%d requests left something owed; %d loads paid what was owed", owedSeen, paidOwed)
}

// mustGet is Get for tests.
func (c *Catalogue) mustGet(t *testing.T, id string) *Model {
	t.Helper()
	m, ok := c.Get(id)
	if !ok {
		t.Fatalf("no model %s", id)
	}
	return m
}
