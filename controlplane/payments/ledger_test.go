package payments

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/payments/processor"
)

// modelPayment is the test's own account of a payment, kept without the
// ledger.
type modelPayment struct {
	id                    string
	amount, net, refunded int64
	netRefunded           int64
	dispute               string
}

// Across random sequences of sales, refunds, disputes, wins, losses,
// releases and withdrawals (confirmed and failed), no cent is created or
// lost: the buckets sum to zero, every figure of earnings is the sum of its
// entries and matches an independent model, and no bucket that cannot be
// negative is.
func TestLedgerProperties(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) { ledgerRun(t, seed) })
	}
}

func ledgerRun(t *testing.T, seed uint64) {
	e := newEnv(t)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(seed, 99))
	project, account := e.enable("shop")
	owner := &auth.Principal{WorkspaceID: e.ws, Role: auth.Owner, Session: true, MemberID: "mem_owner"}
	if _, err := e.svc.WithdrawSetup(ctx, owner, account); err != nil {
		t.Fatal(err)
	}
	var pays []*modelPayment
	withdrawals := map[string]string{} // id -> status
	amounts := map[string]int64{}
	for step := range 120 {
		switch op := r.IntN(10); {
		case op < 3: // a sale, sometimes disputed at once
			card := "4242424242424242"
			if r.IntN(6) == 0 {
				card = "4000000000000259"
			}
			amount := MinAmountCents + r.Int64N(60_000)
			c, err := e.svc.CreateCheckout(ctx, owner, account, "", CreateRequest{AmountCents: &amount})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.svc.Pay(ctx, c.Session.ID, PayForm{Card: cardOf(card), Email: "b@example.com"}); err != nil {
				t.Fatal(err)
			}
			p := &modelPayment{amount: amount, net: amount - Fee(amount)}
			e.db.QueryRow(`SELECT id FROM payment_payments WHERE session_id = ?`, c.Session.ID).Scan(&p.id)
			if card != "4242424242424242" {
				p.dispute = "open"
			}
			pays = append(pays, p)
		case op < 5 && len(pays) > 0: // a refund
			p := pays[r.IntN(len(pays))]
			if p.dispute == "open" || p.dispute == "lost" || p.refunded == p.amount {
				continue
			}
			amt := 1 + r.Int64N(p.amount-p.refunded)
			if _, err := e.svc.Refund(ctx, owner, account, p.id, &amt); err != nil {
				t.Fatalf("step %d refund: %v", step, err)
			}
			before := netShare(p.net, p.amount, p.refunded)
			p.refunded += amt
			p.netRefunded += netShare(p.net, p.amount, p.refunded) - before
		case op < 6 && len(pays) > 0: // a dispute opens, is won or lost
			p := pays[r.IntN(len(pays))]
			action := map[string]string{"": "dispute-open", "open": []string{"dispute-win", "dispute-lose"}[r.IntN(2)]}[p.dispute]
			if action == "" {
				continue
			}
			if err := e.svc.TestHook(ctx, owner, account, TestHookRequest{Action: action, PaymentID: p.id}); err != nil {
				t.Fatalf("step %d %s: %v", step, action, err)
			}
			p.dispute = map[string]string{"dispute-open": "open", "dispute-win": "won", "dispute-lose": "lost"}[action]
		case op < 8: // time passes: holds end
			e.clk.Advance(time.Duration(1+r.IntN(96)) * time.Hour)
		case op < 9: // a withdrawal, when the rules allow one
			w, err := e.svc.Withdraw(ctx, owner, account)
			if err == nil {
				withdrawals[w.Withdrawal.ID] = WithdrawalPending
				amounts[w.Withdrawal.ID] = w.Withdrawal.AmountCents
			}
		default: // the processor settles a pending withdrawal
			for id, st := range withdrawals {
				if st != WithdrawalPending {
					continue
				}
				action, next := "withdrawal-confirm", WithdrawalCompleted
				if r.IntN(4) == 0 {
					action, next = "withdrawal-fail", WithdrawalFailed
				}
				if err := e.svc.TestHook(ctx, owner, account, TestHookRequest{Action: action, WithdrawalID: id}); err != nil {
					t.Fatal(err)
				}
				withdrawals[id] = next
				break
			}
		}
		checkModel(t, e, project, account, pays, withdrawals, amounts)
	}
}

func cardOf(n string) processor.Card { return processor.Card{Number: n, Exp: "12/40", CVC: "123"} }

func checkModel(t *testing.T, e *env, project, account string, pays []*modelPayment, ws map[string]string, amounts map[string]int64) {
	t.Helper()
	var d Detail
	owner := &auth.Principal{WorkspaceID: e.ws, Role: auth.Owner, Session: true}
	d, err := e.svc.Read(context.Background(), owner, project)
	if err != nil {
		t.Fatal(err)
	}
	b := e.checkLedger(account)
	var gross, fees, refunded, disputed, lost, net, netRefunded, pending, withdrawn int64
	for _, p := range pays {
		gross += p.amount
		net += p.net
		refunded += p.refunded
		netRefunded += p.netRefunded
		fees += (p.amount - p.net) - (p.refunded - p.netRefunded)
		switch p.dispute {
		case "open":
			disputed += p.net - p.netRefunded
		case "lost":
			lost += p.net - p.netRefunded
		}
	}
	for id, st := range ws {
		switch st {
		case WithdrawalPending:
			pending += amounts[id]
		case WithdrawalCompleted:
			withdrawn += amounts[id]
		}
	}
	got := d.Earnings
	want := Earnings{Gross: gross, Fees: fees, Refunded: refunded, Disputed: disputed, Lost: lost, Pending: pending, Withdrawn: withdrawn}
	if got.Gross != want.Gross || got.Fees != want.Fees || got.Refunded != want.Refunded || got.Disputed != want.Disputed ||
		got.Lost != want.Lost || got.Pending != want.Pending || got.Withdrawn != want.Withdrawn {
		t.Fatalf("earnings %+v, model %+v", got, want)
	}
	if got.Balance != got.Held+got.Available || got.Held+got.Available != net-netRefunded-disputed-lost-pending-withdrawn {
		t.Fatalf("balance %+v, model net %d", got, net-netRefunded-disputed-lost-pending-withdrawn)
	}
	if got.Held != b[Held] || got.Available != b[Available] {
		t.Fatalf("earnings %+v are not the ledger's %v", got, b)
	}
	// Every payment's own held net is never negative.
	var neg int
	err = e.db.QueryRow(`SELECT count(*) FROM (SELECT payment_id, sum(CASE WHEN credit = 'held' THEN amount_cents ELSE -amount_cents END) h
		FROM payment_ledger WHERE account_id = ? AND (credit = 'held' OR debit = 'held') GROUP BY payment_id) AS per_payment WHERE h < 0`, account).Scan(&neg)
	if err != nil && err != sql.ErrNoRows {
		t.Fatal(err)
	}
	if neg != 0 {
		t.Fatalf("%d payments with negative held", neg)
	}
}
