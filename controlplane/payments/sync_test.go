package payments

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/jobs"
	"github.com/svcplatform/platform/controlplane/payments/stripemock"
)

// stripeState plays the part of Stripe's state in front of stripe-mock,
// which is stateless (every session open, every payment disputed): the
// test decides when a buyer pays, opens or closes a dispute, when a payout
// is paid and whether refunds answer. Everything else is stripe-mock's
// answer, unchanged, so the adapter still talks to Stripe's real API shape.
type stripeState struct {
	mock string
	srv  *httptest.Server

	mu          sync.Mutex
	n           int
	amounts     map[string]int64  // checkout session -> amount
	paid        map[string]bool   // checkout session -> paid
	disputes    map[string]string // payment intent -> Stripe dispute status
	payouts     map[string]string // payout -> Stripe payout status
	lastSession string
	failRefunds bool
	refundCalls int
}

func newStripeState(t *testing.T) *stripeState {
	st := &stripeState{mock: stripemock.Start(t), amounts: map[string]int64{}, paid: map[string]bool{}, disputes: map[string]string{}, payouts: map[string]string{}}
	st.srv = httptest.NewServer(http.HandlerFunc(st.serve))
	t.Cleanup(st.srv.Close)
	return st
}

func (st *stripeState) set(f func()) {
	st.mu.Lock()
	defer st.mu.Unlock()
	f()
}

// forward sends the request to stripe-mock at path and returns its JSON.
func (st *stripeState) forward(r *http.Request, body []byte, path string) (int, map[string]any, error) {
	req, err := http.NewRequestWithContext(r.Context(), r.Method, st.mock+path+"?"+r.URL.RawQuery, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header = r.Header.Clone()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(res.Body).Decode(&m); err != nil {
		return 0, nil, err
	}
	return res.StatusCode, m, nil
}

func (st *stripeState) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	path := r.URL.Path
	fwd := path
	var patch func(m map[string]any)
	st.mu.Lock()
	switch {
	case r.Method == "POST" && path == "/v1/checkout/sessions":
		st.n++
		id := fmt.Sprintf("cs_test_state%d", st.n)
		form, _ := url.ParseQuery(string(body))
		var amount int64
		fmt.Sscan(form.Get("line_items[0][price_data][unit_amount]"), &amount)
		st.amounts[id], st.lastSession = amount, id
		patch = func(m map[string]any) { m["id"] = id }
	case r.Method == "GET" && strings.HasPrefix(path, "/v1/checkout/sessions/cs_test_state"):
		id := strings.TrimPrefix(path, "/v1/checkout/sessions/")
		fwd = "/v1/checkout/sessions/cs_test_a"
		amount, paid := st.amounts[id], st.paid[id]
		patch = func(m map[string]any) {
			m["id"], m["amount_total"], m["status"], m["payment_status"] = id, amount, "open", "unpaid"
			if paid {
				m["status"], m["payment_status"], m["payment_intent"] = "complete", "paid", "pi_"+id
			}
		}
	case r.Method == "GET" && path == "/v1/disputes":
		pi := r.URL.Query().Get("payment_intent")
		status, ok := st.disputes[pi]
		if !ok {
			st.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"object":"list","data":[],"has_more":false,"url":"/v1/disputes"}`)
			return
		}
		patch = func(m map[string]any) {
			for _, d := range m["data"].([]any) {
				d.(map[string]any)["status"], d.(map[string]any)["payment_intent"] = status, pi
			}
		}
	case r.Method == "POST" && path == "/v1/refunds":
		st.refundCalls++
		if st.failRefunds {
			st.mu.Unlock()
			w.Header().Set("Stripe-Should-Retry", "false")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"error":{"type":"api_error","message":"Stripe is unavailable"}}`)
			return
		}
	case r.Method == "POST" && path == "/v1/payouts":
		st.n++
		id := fmt.Sprintf("po_state%d", st.n)
		st.payouts[id] = "in_transit"
		patch = func(m map[string]any) { m["id"], m["status"] = id, "in_transit" }
	case r.Method == "GET" && strings.HasPrefix(path, "/v1/payouts/po_state"):
		id := strings.TrimPrefix(path, "/v1/payouts/")
		fwd = "/v1/payouts/po_a"
		status := st.payouts[id]
		patch = func(m map[string]any) { m["id"], m["status"] = id, status }
	}
	st.mu.Unlock()
	code, m, err := st.forward(r, body, fwd)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	if patch != nil && code == http.StatusOK {
		patch(m)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(m)
}

// The periodic sync (JobSync) keeps a Stripe-backed account in line with
// Stripe: a checkout paid on Stripe's page and never looked up is
// recorded, a dispute opened on Stripe weeks after the sale holds the net
// back (payment.disputed), its win returns it, a refund Stripe did not
// answer is resent and completed, and a payout Stripe marks paid settles
// the pending withdrawal; a second run changes nothing.
func TestSyncWithStripe(t *testing.T) {
	st := newStripeState(t)
	e := newEnv(t, envOptions{config: func(c *Config) { c.Processor, c.StripeKey, c.StripeBaseURL = "stripe", "sk_test_123", st.srv.URL }})
	sync := e.jobs.others[JobSync]
	if sync == nil || e.jobs.every[JobSync] != SyncEvery {
		t.Fatalf("sync job not registered every %v: %v", SyncEvery, e.jobs.every)
	}
	ctx := context.Background()
	run := func() SyncReport {
		t.Helper()
		if err := sync(ctx, jobs.Job{Kind: JobSync, Attempt: 1}); err != nil {
			t.Fatalf("sync job: %v", err)
		}
		r, err := e.svc.Sync(ctx) // the report of a second run, for the checks
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	e.ownerSession() // accept the setup token before the clock moves past it
	project, account := e.enable("shop")
	c := e.checkout(account, 10000, nil)
	if r := run(); r.Accounts != 1 || r.Sessions != 1 || r.Confirmed != 0 {
		t.Fatalf("unpaid: %+v", r)
	}

	// The buyer pays on Stripe; nobody looks the session up.
	st.set(func() { st.paid[st.lastSession] = true })
	if err := sync(ctx, jobs.Job{Kind: JobSync, Attempt: 1}); err != nil {
		t.Fatal(err)
	}
	d := e.detail(project)
	if len(d.Payments) != 1 || d.Payments[0].SessionID != c.Session.ID || d.Payments[0].Status != PaymentSucceeded {
		t.Fatalf("payment not recorded by the sync: %+v", d.Payments)
	}
	p := d.Payments[0]
	if r := run(); r.Sessions != 0 || r.Payments != 1 || r.Disputes != 0 {
		t.Fatalf("after the sale: %+v", r)
	}

	// Weeks later the buyer disputes on Stripe.
	e.clk.Advance(20 * 24 * time.Hour)
	st.set(func() { st.disputes["pi_"+st.lastSession] = "warning_needs_response" })
	if err := sync(ctx, jobs.Job{Kind: JobSync, Attempt: 1}); err != nil {
		t.Fatal(err)
	}
	d = e.detail(project)
	if d.Payments[0].Status != PaymentDisputed || d.Earnings.Disputed != p.NetCents || d.Earnings.Available != 0 {
		t.Fatalf("dispute not picked up: %+v %+v", d.Payments[0], d.Earnings)
	}
	var disputedEvents int
	if err := e.db.QueryRow(`SELECT count(*) FROM payment_events WHERE type = ? AND payment_id = ?`, EventDisputed, p.ID).Scan(&disputedEvents); err != nil || disputedEvents != 1 {
		t.Fatalf("payment.disputed events %d %v", disputedEvents, err)
	}
	if r := run(); r.Disputes != 0 || r.Payments != 1 {
		t.Fatalf("second run changed a dispute: %+v", r)
	}
	st.set(func() { st.disputes["pi_"+st.lastSession] = "won" })
	if err := sync(ctx, jobs.Job{Kind: JobSync, Attempt: 1}); err != nil {
		t.Fatal(err)
	}
	d = e.detail(project)
	if d.Payments[0].Status != PaymentSucceeded || d.Payments[0].DisputeStatus != "won" || d.Earnings.Disputed != 0 || d.Earnings.Available != p.NetCents {
		t.Fatalf("won dispute: %+v %+v", d.Payments[0], d.Earnings)
	}
	if r := run(); r.Payments != 0 {
		t.Fatalf("a closed dispute is asked about again: %+v", r)
	}

	// A refund Stripe does not answer stays pending; the sync resends it
	// with the same idempotency key.
	owner := e.signInOwner()
	st.set(func() { st.failRefunds = true })
	if r := owner.do("PATCH", "/api/payments/"+account, map[string]any{"action": "refund", "paymentId": p.ID, "amountCents": 500}); r.status != http.StatusBadGateway {
		t.Fatalf("refund while Stripe is down: %d %s", r.status, r.body)
	}
	if err := sync(ctx, jobs.Job{Kind: JobSync, Attempt: 1}); err == nil {
		t.Fatal("sync with Stripe down reported no error (the job would not retry)")
	}
	st.set(func() { st.failRefunds = false })
	if err := sync(ctx, jobs.Job{Kind: JobSync, Attempt: 1}); err != nil {
		t.Fatal(err)
	}
	var refundStatus string
	var refunded int64
	if err := e.db.QueryRow(`SELECT r.status, p.refunded_cents FROM payment_refunds r JOIN payment_payments p ON p.id = r.payment_id WHERE r.payment_id = ?`, p.ID).Scan(&refundStatus, &refunded); err != nil {
		t.Fatal(err)
	}
	if refundStatus != "succeeded" || refunded != 500 {
		t.Fatalf("refund %s, refunded %d", refundStatus, refunded)
	}

	// A payout stays pending until Stripe says paid.
	owner = e.signInOwner()
	owner.must(http.StatusOK, "PATCH", "/api/payments/"+account, map[string]any{"action": "withdraw-setup"})
	var w WithdrawAnswer
	owner.must(http.StatusOK, "PATCH", "/api/payments/"+account, map[string]any{"action": "withdraw"}).decode(t, &w)
	if w.Withdrawal.Status != WithdrawalPending || w.Withdrawal.AmountCents <= 0 {
		t.Fatalf("withdrawal %+v", w.Withdrawal)
	}
	if err := sync(ctx, jobs.Job{Kind: JobSync, Attempt: 1}); err != nil {
		t.Fatal(err)
	}
	status := func() string {
		var s string
		if err := e.db.QueryRow(`SELECT status FROM payment_withdrawals WHERE id = ?`, w.Withdrawal.ID).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	if s := status(); s != WithdrawalPending {
		t.Fatalf("withdrawal %s while the payout is in transit", s)
	}
	st.set(func() {
		for id := range st.payouts {
			st.payouts[id] = "paid"
		}
	})
	if err := sync(ctx, jobs.Job{Kind: JobSync, Attempt: 1}); err != nil {
		t.Fatal(err)
	}
	if s := status(); s != WithdrawalCompleted {
		t.Fatalf("withdrawal %s after the payout was paid", s)
	}
	b := e.checkLedger(account)
	if b[Withdrawn] != w.Withdrawal.AmountCents || b[Pending] != 0 {
		t.Fatalf("ledger after the payout: %v", b)
	}
}

// The sync asks only about accounts of the processor in use, and a
// processor that fails is an error of the job (it is retried).
func TestSyncScope(t *testing.T) {
	e := newEnv(t)
	_, account := e.enable("shop")
	e.sale(account, 2000, "4242424242424242")
	r, err := e.svc.Sync(context.Background())
	if err != nil || r.Accounts != 1 || r.Payments != 1 || r.Disputes != 0 || r.Confirmed != 0 {
		t.Fatalf("%+v %v", r, err)
	}
	if _, err := e.db.Exec(`UPDATE payment_accounts SET processor = 'stripe' WHERE id = ?`, account); err != nil {
		t.Fatal(err)
	}
	if r, err := e.svc.Sync(context.Background()); err != nil || r.Accounts != 0 {
		t.Fatalf("an account of another processor was synced: %+v %v", r, err)
	}
}
