package payments

import (
	"context"
	"database/sql"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestReceipt: a payment whose buyer gave an address queues its receipt in
// the transaction that records it; the receipt goes as the project to the
// buyer through the SMTP relay (read back from Mailpit), once, however
// often the job runs.
func TestReceipt(t *testing.T) {
	e := newMailEnv(t, envOptions{})
	_, account := e.enable("shop")
	c := e.checkout(account, 1250, map[string]any{"description": "Blue mug", "reference": "order-7"})
	if r := e.pay(c.Session.ID, "4242424242424242"); r.status != http.StatusSeeOther {
		t.Fatalf("pay: %d %s", r.status, r.body)
	}
	var l Lookup
	e.owner.must(http.StatusOK, "GET", "/api/payments/"+account+"/sessions/"+c.Session.ID, nil).decode(t, &l)
	p := l.Payment
	if p == nil || p.CustomerEmail != "buyer@example.com" {
		t.Fatalf("payment %+v", p)
	}
	queued := 0
	for _, k := range e.jobs.enqueued {
		if k == "receipt:"+p.ID {
			queued++
		}
	}
	if queued != 1 {
		t.Fatalf("receipt queued %d times: %v", queued, e.jobs.enqueued)
	}
	e.runReceipts()
	e.runReceipts() // a retried job sends nothing more
	got := e.mp.Messages()
	if len(got) != 1 {
		t.Fatalf("%d messages arrived, want 1: %+v", len(got), got)
	}
	m := got[0]
	cases := []struct{ name, have, want string }{
		{"to the buyer", m.To[0].Address, "buyer@example.com"},
		{"from the platform's address for a project without a sending domain", m.From.Address, "noreply@platform.test"},
		{"subject", m.Subject, "[Test] Your receipt for $12.50"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.have != c.want {
				t.Errorf("%q, want %q", c.have, c.want)
			}
		})
	}
	for _, want := range []string{"Amount paid: $12.50", "For: Blue mug", "Reference: order-7", "Receipt number: " + p.ID, "test payment"} {
		if !strings.Contains(m.Text, want) {
			t.Errorf("receipt text lacks %q:\n%s", want, m.Text)
		}
	}
	// The project's mail lists it, metered as one e-mail.
	var n int
	if err := e.db.QueryRow(`SELECT count(*) FROM mail_messages WHERE project_id = ? AND source = 'receipt'`, p.ProjectID).Scan(&n); err != nil || n != 1 {
		t.Errorf("receipt rows %d (%v)", n, err)
	}
}

// TestWebhookFailureNotice: the owners hear once that an endpoint keeps
// failing, after NoticeAfterFailures failed attempts in a row, at most once
// a day per endpoint; a success starts the count again, and so does a new
// endpoint.
func TestWebhookFailureNotice(t *testing.T) {
	rc := newReceiver(t)
	e := newMailEnv(t, envOptions{deps: func(d *Deps) { d.HTTPClient = rc.srv.Client() }})
	e.ownerSession() // the owner is active
	_, account := e.enable("shop")
	e.owner.must(200, "PATCH", "/api/payments/"+account, map[string]any{"action": "set-webhook", "webhookUrl": rc.srv.URL + "/hook"})
	ctx := context.Background()
	notices := func() int {
		t.Helper()
		n := 0
		for _, m := range e.mp.Messages() {
			if strings.Contains(m.Subject, "are failing") {
				n++
				if m.To[0].Address != "owner@example.com" || !strings.Contains(m.Text, rc.srv.URL+"/hook") || !strings.Contains(m.Text, "answered 500") {
					t.Errorf("notice %+v", m)
				}
			}
		}
		return n
	}
	attempt := func(id string) {
		t.Helper()
		e.svc.Deliver(ctx, id)
		e.clk.Advance(time.Minute)
	}
	rc.failures = 1000
	e.sale(account, 1000, "4242424242424242")
	ids, _ := e.svc.PendingDeliveries(ctx)
	if len(ids) != 1 {
		t.Fatalf("pending %v", ids)
	}
	for i := 1; i < NoticeAfterFailures; i++ {
		attempt(ids[0])
	}
	if n := notices(); n != 0 {
		t.Fatalf("%d notices after %d failures", n, NoticeAfterFailures-1)
	}
	attempt(ids[0])
	if n := notices(); n != 1 {
		t.Fatalf("%d notices after %d failures, want 1", n, NoticeAfterFailures)
	}
	// More failures the same day: no second notice.
	attempt(ids[0])
	attempt(ids[0])
	if n := notices(); n != 1 {
		t.Fatalf("%d notices within a day, want 1", n)
	}
	// A day later, still failing: one more.
	e.clk.Advance(NoticeEvery)
	attempt(ids[0])
	if n := notices(); n != 2 {
		t.Fatalf("%d notices a day later, want 2", n)
	}
	// A success starts the count again: the next failures stay quiet until
	// the count is reached again (and a day has passed).
	rc.failures = 0
	e.sale(account, 1000, "4242424242424242")
	e.deliverAll()
	var failures int
	if err := e.db.QueryRow(`SELECT consecutive_failures FROM payment_webhook_health WHERE account_id = ?`, account).Scan(&failures); err != nil || failures != 0 {
		t.Fatalf("after a success: %d failures (%v)", failures, err)
	}
	rc.failures = 1000
	e.clk.Advance(NoticeEvery)
	e.sale(account, 1000, "4242424242424242")
	ids, _ = e.svc.PendingDeliveries(ctx)
	for range NoticeAfterFailures - 1 {
		for _, id := range ids {
			attempt(id)
		}
	}
	if n := notices(); n != 2 {
		t.Fatalf("%d notices before the count is reached again, want 2", n)
	}
	// The endpoint's health goes with its account.
	if err := e.db.Tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM payment_accounts WHERE id = ?`, account)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := e.db.QueryRow(`SELECT count(*) FROM payment_webhook_health`).Scan(&left); err != nil || left != 0 {
		t.Errorf("%d health rows left after the account (%v)", left, err)
	}
}
