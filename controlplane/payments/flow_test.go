package payments

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// A sale, its hold, a refund, a dispute won and lost, and withdrawals up
// to the processor's confirmation, with the earnings checked at each step.
func TestPaymentLifecycle(t *testing.T) {
	e := newEnv(t)
	project, account := e.enable("shop")
	owner := e.ownerSession()

	c := e.checkout(account, 10_000, map[string]any{"reference": "order-1", "metadata": map[string]string{"sku": "a"}})
	if c.FeeCents != Fee(10_000) || c.Session.State != SessionOpen || !c.Session.SingleUse || c.Session.Mode != "test" || c.URL != e.srv.URL+"/pay/"+c.Session.ID {
		t.Fatalf("created %+v", c)
	}
	if !c.Session.ExpiresAt.Equal(e.clk.Now().Add(24 * time.Hour)) {
		t.Fatalf("expires %v", c.Session.ExpiresAt)
	}
	r := e.pay(c.Session.ID, "4242 4242 4242 4242")
	if r.status != http.StatusSeeOther || r.header.Get("Location") != e.srv.URL+"/pay/"+c.Session.ID+"/done" {
		t.Fatalf("pay: %d %v %s", r.status, r.header, r.body)
	}
	var l Lookup
	e.owner.must(http.StatusOK, "GET", "/api/payments/"+account+"/sessions/"+c.Session.ID, nil).decode(t, &l)
	p := l.Payment
	if !l.Paid || p == nil || p.AmountCents != 10_000 || p.FeeCents != 420 || p.NetCents != 9_580 || p.Currency != "usd" || p.Country != "US" ||
		p.CustomerEmail != "buyer@example.com" || p.Reference != "order-1" || p.Metadata["sku"] != "a" || p.Status != PaymentSucceeded ||
		!p.AvailableAt.Equal(e.clk.Now().Add(Hold)) {
		t.Fatalf("lookup %+v %+v", l, p)
	}
	d := e.detail(project)
	if d.Earnings.Held != 9_580 || d.Earnings.Available != 0 || d.Earnings.Balance != 9_580 || d.Earnings.NextRelease == nil || d.Earnings.NextRelease.Amount != 9_580 {
		t.Fatalf("earnings %+v", d.Earnings)
	}
	if d.Earnings.PayoutLimit == nil || d.Earnings.PayoutLimit.Reason != "first_payout" || !strings.Contains(d.Earnings.PayoutLimit.Message, "14 days") {
		t.Fatalf("payout limit %+v", d.Earnings.PayoutLimit)
	}
	e.checkLedger(account)

	// A partial refund takes the same share of net: 2,500 of 10,000 is a
	// quarter, 2,395 of the 9,580 net.
	var ra RefundAnswer
	owner.must(http.StatusOK, "PATCH", "/api/payments/"+account, map[string]any{"action": "refund", "paymentId": p.ID, "amountCents": 2500}).decode(t, &ra)
	if ra.Refund.Status != "succeeded" || ra.Refund.AmountCents != 2500 {
		t.Fatalf("refund %+v", ra)
	}
	d = e.detail(project)
	if d.Earnings.Held != 9_580-2_395 || d.Earnings.Refunded != 2500 || d.Earnings.Fees != 420-105 {
		t.Fatalf("after refund %+v", d.Earnings)
	}
	if d.Payments[0].Status != PaymentPartiallyRefunded || d.Payments[0].RefundedCents != 2500 {
		t.Fatalf("payment %+v", d.Payments[0])
	}
	if r := owner.do("PATCH", "/api/payments/"+account, map[string]any{"action": "refund", "paymentId": p.ID, "amountCents": 7501}); r.status != 400 || r.code() != "refund_out_of_range" {
		t.Fatalf("over-refund: %d %s", r.status, r.body)
	}

	// A disputed payment (test card ...0259) holds its net back; winning
	// returns it.
	dp := e.sale(account, 5_000, "4000000000000259")
	if dp.Status != PaymentDisputed {
		t.Fatalf("dispute card: %+v", dp)
	}
	d = e.detail(project)
	if d.Earnings.Disputed != 5_000-Fee(5_000) {
		t.Fatalf("disputed %+v", d.Earnings)
	}
	if r := owner.do("PATCH", "/api/payments/"+account, map[string]any{"action": "refund", "paymentId": dp.ID}); r.status != 409 || r.code() != "payment_disputed" {
		t.Fatalf("refund disputed: %d %s", r.status, r.body)
	}
	e.owner.must(http.StatusOK, "POST", "/api/payments/"+account+"/test-hooks", map[string]any{"action": "dispute-win", "paymentId": dp.ID})
	d = e.detail(project)
	if d.Earnings.Disputed != 0 || d.Earnings.Held != 9_580-2_395+5_000-Fee(5_000) {
		t.Fatalf("won %+v", d.Earnings)
	}
	lost := e.sale(account, 2_000, "4000000000000259")
	e.owner.must(http.StatusOK, "POST", "/api/payments/"+account+"/test-hooks", map[string]any{"action": "dispute-lose", "paymentId": lost.ID})
	d = e.detail(project)
	if d.Earnings.Lost != 2_000-Fee(2_000) || d.Earnings.Disputed != 0 {
		t.Fatalf("lost %+v", d.Earnings)
	}
	e.checkLedger(account)

	// Withdrawals: payout account first, then nothing before 14 days.
	if r := owner.do("PATCH", "/api/payments/"+account, map[string]any{"action": "withdraw"}); r.status != 409 || r.code() != "payout_setup_required" {
		t.Fatalf("withdraw without setup: %d %s", r.status, r.body)
	}
	var setup Setup
	owner.must(http.StatusOK, "PATCH", "/api/payments/"+account, map[string]any{"action": "withdraw-setup"}).decode(t, &setup)
	if !setup.Account.PayoutsEnabled || !strings.HasPrefix(setup.URL, e.srv.URL+"/payouts/identity/") {
		t.Fatalf("setup %+v", setup)
	}
	if r := e.client("").do("GET", strings.TrimPrefix(setup.URL, e.srv.URL), nil); r.status != 200 || !strings.Contains(string(r.body), "Identity confirmed") {
		t.Fatalf("identity page %d", r.status)
	}
	r = owner.do("PATCH", "/api/payments/"+account, map[string]any{"action": "withdraw"})
	var limited struct {
		Error struct {
			Code    string    `json:"code"`
			Reason  string    `json:"reason"`
			LiftsAt time.Time `json:"lifts_at"`
		} `json:"error"`
	}
	r.decode(t, &limited)
	// The refund is over 10% of the 90 days' sales: paused until it
	// leaves the window.
	if r.status != 409 || limited.Error.Code != "payout_limited" || limited.Error.Reason != "refunds" || !limited.Error.LiftsAt.Equal(ra.Refund.CreatedAt.Add(RiskWindow)) {
		t.Fatalf("early withdraw: %d %s", r.status, r.body)
	}
	e.clk.Advance(RiskWindow + time.Hour)
	owner = e.signInOwner()
	d = e.detail(project)
	avail := d.Earnings.Available
	if d.Earnings.Held != 0 || avail != 9_580-2_395+5_000-Fee(5_000) || d.Earnings.NextRelease != nil {
		t.Fatalf("released %+v", d.Earnings)
	}
	var w WithdrawAnswer
	owner.must(http.StatusOK, "PATCH", "/api/payments/"+account, map[string]any{"action": "withdraw"}).decode(t, &w)
	if w.Withdrawal.Status != WithdrawalPending || w.Withdrawal.AmountCents != avail || w.Earnings.Pending != avail || w.Earnings.Available != 0 {
		t.Fatalf("withdraw %+v", w)
	}
	// Still pending on every read until the processor confirms.
	if d = e.detail(project); d.Earnings.Pending != avail || d.Withdrawals[0].Status != WithdrawalPending {
		t.Fatalf("pending %+v", d.Earnings)
	}
	e.owner.must(http.StatusOK, "POST", "/api/payments/"+account+"/test-hooks", map[string]any{"action": "withdrawal-confirm", "withdrawalId": w.Withdrawal.ID})
	d = e.detail(project)
	if d.Earnings.Pending != 0 || d.Earnings.Withdrawn != avail || d.Withdrawals[0].Status != WithdrawalCompleted {
		t.Fatalf("confirmed %+v %+v", d.Earnings, d.Withdrawals[0])
	}
	b := e.checkLedger(account)
	if -b[Buyers] != 10_000+5_000+2_000 {
		t.Fatalf("gross %d", -b[Buyers])
	}
}

// A failed payout returns to available only when the processor says so.
func TestWithdrawalFailedReturnsToAvailable(t *testing.T) {
	e := newEnv(t)
	project, account := e.enable("shop")
	owner := e.ownerSession()
	e.sale(account, 90_000, "4242424242424242")
	owner.must(http.StatusOK, "PATCH", "/api/payments/"+account, map[string]any{"action": "withdraw-setup"})
	r := owner.do("PATCH", "/api/payments/"+account, map[string]any{"action": "withdraw"})
	if r.status != 409 || r.code() != "payout_limited" || !strings.Contains(string(r.body), `"reason":"first_payout"`) {
		t.Fatalf("first payout: %d %s", r.status, r.body)
	}
	e.clk.Advance(15 * 24 * time.Hour)
	owner = e.signInOwner()
	var w WithdrawAnswer
	owner.must(http.StatusOK, "PATCH", "/api/payments/"+account, map[string]any{"action": "withdraw"}).decode(t, &w)
	net := int64(90_000 - Fee(90_000))
	if w.Withdrawal.AmountCents != 50_000 || w.Earnings.Available != net-50_000 || w.Earnings.PayoutNow != net-50_000 {
		t.Fatalf("capped withdraw %+v", w)
	}
	e.owner.must(http.StatusOK, "POST", "/api/payments/"+account+"/test-hooks", map[string]any{"action": "withdrawal-fail", "withdrawalId": w.Withdrawal.ID})
	d := e.detail(project)
	if d.Earnings.Available != net || d.Earnings.Pending != 0 || d.Withdrawals[0].Status != WithdrawalFailed {
		t.Fatalf("failed %+v", d.Earnings)
	}
	if r := e.owner.do("POST", "/api/payments/"+account+"/test-hooks", map[string]any{"action": "withdrawal-confirm", "withdrawalId": w.Withdrawal.ID}); r.status != 409 {
		t.Fatalf("confirm a failed payout: %d %s", r.status, r.body)
	}
	e.checkLedger(account)
}

// Money out needs the owner signed in: keys of every kind and other members
// get 403 payouts_require_owner.
func TestMoneyOutNeedsOwnerSession(t *testing.T) {
	e := newEnv(t)
	project, account := e.enable("shop")
	p := e.sale(account, 1_000, "4242424242424242")
	callers := map[string]*client{
		"owner key":     e.owner,
		"read-only key": e.key("read_only", ""),
		"project key":   e.key("full", project),
		"admin session": e.member("admin@example.com", "admin"),
		"developer":     e.member("dev@example.com", "developer"),
	}
	for name, c := range callers {
		for _, body := range []map[string]any{
			{"action": "refund", "paymentId": p.ID},
			{"action": "withdraw-setup"},
			{"action": "withdraw"},
		} {
			t.Run(name+"/"+body["action"].(string), func(t *testing.T) {
				if r := c.do("PATCH", "/api/payments/"+account, body); r.status != 403 || r.code() != "payouts_require_owner" {
					t.Fatalf("%d %s", r.status, r.body)
				}
			})
		}
		t.Run(name+"/erase", func(t *testing.T) {
			if r := c.do("DELETE", "/api/payments/"+account+"?permanent=true", nil); r.status != 403 || r.code() != "payouts_require_owner" {
				t.Fatalf("%d %s", r.status, r.body)
			}
		})
	}
	// Nothing was refunded.
	if d := e.detail(project); d.Payments[0].RefundedCents != 0 {
		t.Fatalf("refunded %+v", d.Payments[0])
	}
}

// Analytics and earnings report fees, net and refunds alike, after
// refunds: partial and full refunds, of held and of released payments,
// on the day of the sale and later.
func TestAnalyticsAgreeWithEarnings(t *testing.T) {
	e := newEnv(t)
	project, account := e.enable("shop")
	owner := e.ownerSession()
	refund := func(p Payment, cents int64) {
		t.Helper()
		body := map[string]any{"action": "refund", "paymentId": p.ID}
		if cents > 0 {
			body["amountCents"] = cents
		}
		owner.must(http.StatusOK, "PATCH", "/api/payments/"+account, body)
	}
	analytics := func() Analytics {
		t.Helper()
		var a Analytics
		e.owner.must(http.StatusOK, "GET", "/api/projects/"+project+"/payments/analytics", nil).decode(t, &a)
		return a
	}

	big := e.sale(account, 10_000, "4242 4242 4242 4242") // fee 420, net 9,580
	small := e.sale(account, 50, "4242 4242 4242 4242")   // fee 32, net 18
	kept := e.sale(account, 1_500, "4242 4242 4242 4242") // fee 89, net 1,411
	refund(big, 2_500)                                    // net share 2,395, fee share 105
	refund(small, 0)                                      // all of it: net 18, fee 32
	e.clk.Advance(Hold + 24*time.Hour)                    // the first three are released
	owner = e.signInOwner()                               // sessions end as the clock moves
	late := e.sale(account, 3_333, "4242 4242 4242 4242") // fee 160, net 3,173
	refund(kept, 500)                                     // from available
	refund(late, 1_000)                                   // from held

	d := e.detail(project)
	b := e.checkLedger(account)
	a := analytics()
	earned := d.Earnings.Held + d.Earnings.Available + d.Earnings.Disputed + d.Earnings.Pending + d.Earnings.Withdrawn + d.Earnings.Lost
	for _, c := range []struct {
		name            string
		analytics, want int64
	}{
		{"gross is earnings.gross", a.Totals.Gross, d.Earnings.Gross},
		{"fee_cents is earnings.fees", a.Totals.Fees, d.Earnings.Fees},
		{"refunded_cents is earnings.refunded", a.Totals.Refunded, d.Earnings.Refunded},
		{"net_cents is what earnings holds", a.Totals.Net, earned},
		{"fee_cents is the fees bucket", a.Totals.Fees, b[Fees]},
		{"gross", a.Totals.Gross, 10_000 + 50 + 1_500 + 3_333},
		{"refunded", a.Totals.Refunded, 2_500 + 50 + 500 + 1_000},
		{"gross splits into fees, net and refunds", a.Totals.Gross, a.Totals.Fees + a.Totals.Net + a.Totals.Refunded},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.analytics != c.want {
				t.Errorf("analytics %d, want %d (totals %+v, earnings %+v)", c.analytics, c.want, a.Totals, d.Earnings)
			}
		})
	}
	var dayGross, dayNet int64
	days := 0
	for _, day := range a.Daily {
		dayGross += day.Gross
		dayNet += day.Net
		if day.Payments > 0 {
			days++
		}
	}
	if days != 2 || dayGross != a.Totals.Gross || dayNet != a.Totals.Net {
		t.Errorf("daily series over %d days: gross %d, net %d; totals %+v", days, dayGross, dayNet, a.Totals)
	}
}
