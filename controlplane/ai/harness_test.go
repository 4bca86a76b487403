package ai

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/ai/upstreamtest"
	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/billing"
	"github.com/svcplatform/platform/controlplane/internal/areatest"
	"github.com/svcplatform/platform/controlplane/metering"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/store"
)

const ownerKey = areatest.OwnerKey

// fakeLedger is an in-memory billing ledger with exact integer sums. Like
// controlplane/billing it charges every settled cost in full: what the
// holds and what is left cannot pay is owed.
type fakeLedger struct {
	mu         sync.Mutex
	included   map[string]Micros
	balance    map[string]Micros
	charged    map[string]Micros
	owed       map[string]Micros
	initial    map[string]Micros
	holds      map[string]*hold
	spendLimit map[string]Micros
	reserves   int
	// settled receives the id of every settled or released reservation.
	settled chan string
}

type hold struct {
	ws               string
	fromIncl, fromBl Micros
	done             bool
}

func newFakeLedger() *fakeLedger {
	return &fakeLedger{included: map[string]Micros{}, balance: map[string]Micros{}, charged: map[string]Micros{}, owed: map[string]Micros{},
		initial: map[string]Micros{}, holds: map[string]*hold{}, spendLimit: map[string]Micros{}, settled: make(chan string, 1024)}
}

func (l *fakeLedger) fund(ws string, included, balance Micros) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.included[ws] += included
	l.balance[ws] += balance
	l.initial[ws] += included + balance
}

func ledgerErr(code, msg string) error { return api.E(api.KindPaymentRequired, code, "%s", msg) }

func (l *fakeLedger) Reserve(_ context.Context, r ReserveRequest) (Reservation, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r.Amount > r.MaxPerRequest {
		return Reservation{}, ledgerErr("ai_request_too_large", "too large")
	}
	if lim, ok := l.spendLimit[r.Workspace]; ok && l.charged[r.Workspace]+l.heldLocked(r.Workspace)+r.Amount > lim {
		return Reservation{}, ledgerErr("spend_limit_reached", "spend limit")
	}
	inc, bal := l.included[r.Workspace], l.balance[r.Workspace]
	if inc+bal <= 0 {
		return Reservation{}, ledgerErr("ai_credits_exhausted", "no credit")
	}
	if inc+bal < r.Amount {
		return Reservation{}, ledgerErr("ai_credits_insufficient", "not enough credit")
	}
	h := &hold{ws: r.Workspace}
	h.fromIncl = min(inc, r.Amount)
	h.fromBl = r.Amount - h.fromIncl
	l.included[r.Workspace] -= h.fromIncl
	l.balance[r.Workspace] -= h.fromBl
	id := store.NewID("res")
	l.holds[id] = h
	l.reserves++
	return Reservation{ID: id, Amount: r.Amount}, nil
}

func (l *fakeLedger) heldLocked(ws string) Micros {
	var n Micros
	for _, h := range l.holds {
		if h.ws == ws && !h.done {
			n += h.fromIncl + h.fromBl
		}
	}
	return n
}

func (l *fakeLedger) Settle(_ context.Context, id string, actual Micros) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.holds[id]
	if h == nil || h.done {
		return nil
	}
	h.done = true
	select {
	case l.settled <- id:
	default:
	}
	held := h.fromIncl + h.fromBl
	if actual > held {
		extra := min(actual-held, l.included[h.ws]+l.balance[h.ws])
		fromIncl := min(extra, l.included[h.ws])
		l.included[h.ws] -= fromIncl
		l.balance[h.ws] -= extra - fromIncl
		l.charged[h.ws] += actual
		l.owed[h.ws] += actual - held - extra
		return nil
	}
	l.charged[h.ws] += actual
	rest := held - actual
	// return to the balance first what came from it, then included
	backBl := min(rest, h.fromBl)
	l.balance[h.ws] += backBl
	l.included[h.ws] += rest - backBl
	return nil
}

func (l *fakeLedger) Release(ctx context.Context, id string) error { return l.Settle(ctx, id, 0) }

func (l *fakeLedger) Summary(_ context.Context, ws string) (CreditSummary, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := CreditSummary{IncludedLeft: l.included[ws], Balance: l.balance[ws], Reserved: l.heldLocked(ws), Owed: l.owed[ws], MonthSpend: l.charged[ws]}
	if lim, ok := l.spendLimit[ws]; ok {
		s.SpendLimit = &lim
	}
	return s, nil
}

// check fails the test unless no money was created or lost (what was
// charged and not owed came from the funds) and no hold is left open.
func (l *fakeLedger) check(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for ws, init := range l.initial {
		held := l.heldLocked(ws)
		if got := l.included[ws] + l.balance[ws] + held + l.charged[ws] - l.owed[ws]; got != init {
			t.Errorf("ledger of %s: included %d + balance %d + held %d + charged %d - owed %d = %d, want %d", ws, l.included[ws], l.balance[ws], held, l.charged[ws], l.owed[ws], got, init)
		}
		if held != 0 {
			t.Errorf("ledger of %s: %d still held", ws, held)
		}
	}
}

func (l *fakeLedger) chargedOf(ws string) Micros {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.charged[ws]
}

type fakeEmail struct {
	mu       sync.Mutex
	verified bool
}

func (e *fakeEmail) OwnerEmailVerified(context.Context, string) (bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.verified, nil
}

type fakeProjects map[string]bool

func (p fakeProjects) Exists(_ context.Context, _, id string) (bool, error) { return p[id], nil }

// env is a gateway on a real socket with mock upstreams.
type env struct {
	*areatest.Core
	t         testing.TB
	svc       *Service
	srv       *httptest.Server
	ledger    *fakeLedger
	plans     *areatest.Plans
	email     *fakeEmail
	openai    *upstreamtest.Server
	anthropic *upstreamtest.Server
	edge      *upstreamtest.Server
	billing   *billing.Ledger
}

type envOptions struct {
	plan        plans.Name
	unverified  bool
	noProviders bool
	included    Micros
	balance     Micros
	configure   func(*Config)
	// realLedger uses controlplane/billing's ledger instead of the fake
	// (the benchmark; tests of the assembled platform use cptest).
	realLedger bool
}

func newEnv(t testing.TB, o envOptions) *env {
	t.Helper()
	if o.plan == "" {
		o.plan = plans.Pro
	}
	if o.included == 0 && o.balance == 0 {
		o.included, o.balance = 10*MicrosPerDollar, 5*MicrosPerDollar
	}
	ctx := context.Background()
	e := &env{Core: areatest.NewCore(t, o.plan), t: t, ledger: newFakeLedger(), email: &fakeEmail{verified: !o.unverified}}
	e.plans = areatest.NewPlans(map[string]plans.Name{e.Workspace: o.plan})
	e.ledger.fund(e.Workspace, o.included, o.balance)
	e.openai, e.anthropic, e.edge = upstreamtest.NewOpenAI(), upstreamtest.NewAnthropic(), upstreamtest.NewOpenAI()
	e.openai.Key, e.anthropic.Key = "sk-openai", "sk-anthropic"
	e.edge.Set("", upstreamtest.Reply{Text: "Edge says hi."})
	cfg := Config{FirstByteTimeout: 2 * time.Second, IdleTimeout: 2 * time.Second, FlushEvery: time.Hour}
	if !o.noProviders {
		cfg.Providers = map[string]ProviderConfig{
			"openai":    {Protocol: "openai", BaseURL: e.openai.BaseURL(), APIKey: "sk-openai"},
			"anthropic": {Protocol: "anthropic", BaseURL: e.anthropic.BaseURL(), APIKey: "sk-anthropic"},
			"edge":      {Protocol: "openai", BaseURL: e.edge.BaseURL()},
		}
	}
	if o.configure != nil {
		o.configure(&cfg)
	}
	var ledger Ledger = e.ledger
	if o.realLedger {
		bl, err := billing.New(billing.Config{}, billing.Deps{DB: e.DB, Clock: e.Clock, Audit: e.Audit, Plans: e.plans})
		if err != nil {
			t.Fatal(err)
		}
		if err := bl.AddBalance(ctx, e.Workspace, billing.Micros(o.balance), "test", "test funds"); err != nil {
			t.Fatal(err)
		}
		e.billing, ledger = bl, BillingLedger(bl)
	}
	log := areatest.Discard()
	var err error
	e.svc, err = New(cfg, Deps{DB: e.DB, Clock: e.Clock, Audit: e.Audit, Meter: e.Meter, Ledger: ledger, Plans: e.plans, Email: e.email,
		Projects: fakeProjects{"prj_a": true, "prj_b": true}, Logger: log, HTTPClient: &http.Client{}})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	api.Mount(mux, Routes(Handlers{S: e.svc}), api.MountOptions{Authn: e.Accounts, Log: log})
	e.srv = httptest.NewServer(mux)
	t.Cleanup(func() {
		e.srv.Close()
		e.svc.Close()
		e.openai.Close()
		e.anthropic.Close()
		e.edge.Close()
		if e.billing != nil {
			e.billing.Close()
		}
	})
	return e
}

// resp is an answer of the test server.
type resp = areatest.Response

func (e *env) do(key, method, path string, body any, header ...string) resp {
	e.t.Helper()
	return areatest.Call(e.t, e.srv, key, method, path, body, header...)
}

// sseEvent is one parsed server-sent event.
type sseEvent struct {
	name string
	data map[string]any
	raw  string
}

func parseSSE(t *testing.T, body []byte) []sseEvent {
	t.Helper()
	var out []sseEvent
	for _, block := range bytes.Split(body, []byte("\n\n")) {
		if len(bytes.TrimSpace(block)) == 0 {
			continue
		}
		var ev sseEvent
		for _, line := range bytes.Split(block, []byte("\n")) {
			switch {
			case bytes.HasPrefix(line, []byte("event: ")):
				ev.name = string(line[7:])
			case bytes.HasPrefix(line, []byte("data: ")):
				ev.raw = string(line[6:])
				if ev.raw != "[DONE]" {
					if err := json.Unmarshal(line[6:], &ev.data); err != nil {
						t.Fatalf("event data %q: %v", line, err)
					}
				}
			}
		}
		out = append(out, ev)
	}
	return out
}

func metricOf(s string) metering.Metric { return metering.Metric(s) }
