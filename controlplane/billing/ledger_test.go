package billing

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/store/pgtest"
)

func TestTermsOf(t *testing.T) {
	cases := []struct {
		plan                 plans.Name
		ai, usage, perReq    Micros
		storageOverageCharge bool
	}{
		{plans.Hobby, 0, 0, 2 * usd, false},      // "none on hobby"; "2 dollars hobby"
		{plans.Pro, 10 * usd, 0, 10 * usd, true}, // "10 dollars on pro"; "10 pro"
		{plans.Team, 10 * usd, 20 * usd, 10 * usd, true},
		{plans.Scale, 100 * usd, 0, 10 * usd, true},
		{plans.Enterprise, 100 * usd, 0, 10 * usd, true}, // "100 on enterprise"; "10 enterprise"
	}
	for _, c := range cases {
		t.Run(string(c.plan), func(t *testing.T) {
			got := TermsOf(c.plan)
			want := Terms{AICredit: c.ai, UsageCredit: c.usage, MaxPerRequest: c.perReq, StorageOverage: c.storageOverageCharge}
			if got != want {
				t.Fatalf("%+v, want %+v", got, want)
			}
		})
	}
}

func TestReserveRefusals(t *testing.T) { eachEngine(t, testReserveRefusals) }

func testReserveRefusals(t *testing.T, e pgtest.Engine) {
	f := newFixture(t, e)
	ctx := context.Background()
	// pro: 10 dollars of credit, 8 of it held; Balance 5 with a 3-dollar limit, 1 spent.
	f.load(t, "ws_pro", 5*usd)
	if err := f.l.SetSpendLimit(ctx, "ws_pro", ptr(3*usd)); err != nil {
		t.Fatal(err)
	}
	f.reserve(t, "ws_pro", 8*usd)
	r := f.reserve(t, "ws_pro", 3*usd)
	f.settle(t, r.ID, 3*usd) // 2 from credit, 1 from the Balance
	// team: credit used up, Balance 1 dollar.
	f.load(t, "ws_team", 1*usd)
	f.settle(t, f.reserve(t, "ws_team", 10*usd).ID, 10*usd)
	f.verify(t)

	cases := []struct {
		name   string
		req    ReserveRequest
		want   error
		status int
		code   string
	}{
		{"hobby above 2 dollars", ReserveRequest{Workspace: "ws_hobby", Purpose: PurposeAI, Amount: 2*usd + 1}, ErrRequestTooLarge, 402, "ai_request_too_large"},
		{"pro above 10 dollars", ReserveRequest{Workspace: "ws_pro", Purpose: PurposeAI, Amount: 10*usd + 1}, ErrRequestTooLarge, 402, "ai_request_too_large"},
		{"caller's own cap", ReserveRequest{Workspace: "ws_pro", Purpose: PurposeAgent, Amount: 2 * usd, MaxPerRequest: usd}, ErrRequestTooLarge, 402, "ai_request_too_large"},
		{"hobby without Balance", ReserveRequest{Workspace: "ws_hobby", Purpose: PurposeAI, Amount: 1}, ErrCreditsExhausted, 402, "ai_credits_exhausted"},
		{"team estimate above what is left", ReserveRequest{Workspace: "ws_team", Purpose: PurposeAI, Amount: usd + 1}, ErrCreditsInsufficient, 402, "ai_credits_insufficient"},
		{"pro past the spending limit", ReserveRequest{Workspace: "ws_pro", Purpose: PurposeAI, Amount: 2*usd + 1}, ErrSpendLimit, 402, "spend_limit_reached"},
		{"zero", ReserveRequest{Workspace: "ws_pro", Purpose: PurposeAI, Amount: 0}, ErrInvalidAmount, 400, "invalid_amount"},
		{"negative", ReserveRequest{Workspace: "ws_pro", Purpose: PurposeAI, Amount: -5}, ErrInvalidAmount, 400, "invalid_amount"},
		{"unknown purpose", ReserveRequest{Workspace: "ws_pro", Purpose: "beer", Amount: 5}, ErrUnknownPurpose, 400, "invalid_request"},
		{"unknown workspace", ReserveRequest{Workspace: "ws_nope", Purpose: PurposeAI, Amount: 5}, ErrUnknownWorkspace, 404, "not_found"},
	}
	before := map[string]money{}
	for _, ws := range []string{"ws_hobby", "ws_pro", "ws_team"} {
		before[ws] = moneyOf(f.summary(t, ws))
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := f.l.Reserve(ctx, c.req)
			wantErr(t, err, c.want)
			var coded interface {
				Status() int
				ErrorCode() string
			}
			if !errors.As(err, &coded) || coded.Status() != c.status || coded.ErrorCode() != c.code {
				t.Fatalf("coded as %v; want %d %s", coded, c.status, c.code)
			}
			for ws, m := range before {
				if got := moneyOf(f.summary(t, ws)); got != m {
					t.Fatalf("%s changed by a refusal: %s, was %s", ws, got, m)
				}
			}
		})
	}
	f.verify(t)
	// What is left still works: pro has 2 dollars of room under the limit.
	f.reserve(t, "ws_pro", 2*usd)
	f.verify(t)
}

func TestReserveSettleRelease(t *testing.T) { eachEngine(t, testReserveSettleRelease) }

func testReserveSettleRelease(t *testing.T, e pgtest.Engine) {
	f := newFixture(t, e)
	ctx := context.Background()
	ws := "ws_pro"
	f.load(t, ws, 5*usd)
	steps := []struct {
		name string
		do   func(t *testing.T)
		want money
	}{
		{"hold from the included credit", func(t *testing.T) {
			r := f.reserve(t, ws, 4*usd)
			f.settle(t, r.ID, 3*usd)
			f.settle(t, r.ID, 3*usd) // idempotent
			f.settle(t, r.ID, 9*usd) // still a no-op
			wantErr(t, f.l.Release(ctx, r.ID), nil)
		}, money{Balance: 5 * usd, IncludedUsed: 3 * usd, IncludedLeft: 7 * usd}},
		{"credit first, then the Balance", func(t *testing.T) {
			r := f.reserve(t, ws, 10*usd) // 7 credit + 3 Balance
			if s := moneyOf(f.summary(t, ws)); s != (money{Balance: 5 * usd, Reserved: 3 * usd, IncludedUsed: 3 * usd, IncludedReserved: 7 * usd}) {
				t.Fatalf("held: %s", s)
			}
			f.settle(t, r.ID, 8*usd)
		}, money{Balance: 4 * usd, IncludedUsed: 10 * usd, MonthSpend: 1 * usd}},
		{"release charges nothing; settle after release is refused", func(t *testing.T) {
			r := f.reserve(t, ws, 2*usd)
			wantErr(t, f.l.Release(ctx, r.ID), nil)
			wantErr(t, f.l.Release(ctx, r.ID), nil)
			wantErr(t, f.l.Settle(ctx, r.ID, usd), ErrReservationClosed)
		}, money{Balance: 4 * usd, IncludedUsed: 10 * usd, MonthSpend: 1 * usd}},
		{"actual above the estimate: what is free is charged, the rest owed", func(t *testing.T) {
			r := f.reserve(t, ws, usd)
			other := f.reserve(t, ws, 2*usd) // held by someone else
			f.settle(t, r.ID, 5*usd)         // 1 held + 1 free; 3 owed
			f.settle(t, other.ID, 2*usd)
		}, money{Balance: 0, IncludedUsed: 10 * usd, MonthSpend: 5 * usd, Owed: 3 * usd}},
		{"owed counts against the Balance", func(t *testing.T) {
			_, err := f.l.Reserve(ctx, ReserveRequest{Workspace: ws, Purpose: PurposeAI, Amount: 1})
			wantErr(t, err, ErrCreditsExhausted)
		}, money{Balance: 0, IncludedUsed: 10 * usd, MonthSpend: 5 * usd, Owed: 3 * usd}},
		{"a load pays part of what is owed", func(t *testing.T) {
			f.load(t, ws, 2*usd)
			_, err := f.l.Reserve(ctx, ReserveRequest{Workspace: ws, Purpose: PurposeAI, Amount: 1})
			wantErr(t, err, ErrCreditsExhausted)
		}, money{Balance: 0, IncludedUsed: 10 * usd, MonthSpend: 7 * usd, Owed: usd}},
		{"a larger load pays the rest; the remainder is free", func(t *testing.T) {
			f.load(t, ws, 3*usd)
		}, money{Balance: 2 * usd, IncludedUsed: 10 * usd, MonthSpend: 8 * usd}},
		{"a load pays what is owed from money nothing holds", func(t *testing.T) {
			a := f.reserve(t, ws, usd)
			b := f.reserve(t, ws, usd)
			f.settle(t, b.ID, 4*usd) // 1 held; a holds the other dollar; 3 owed
			f.load(t, ws, usd)       // pays 1; a's dollar stays held
			if s := f.summary(t, ws); s.Reserved != usd || s.Owed != 2*usd || s.Balance != usd {
				t.Fatalf("after the load: %s", moneyOf(s))
			}
			f.settle(t, a.ID, usd)
		}, money{Balance: 0, IncludedUsed: 10 * usd, MonthSpend: 11 * usd, Owed: 2 * usd}},
		{"settle zero", func(t *testing.T) {
			f.load(t, ws, 3*usd)
			f.settle(t, f.reserve(t, ws, usd).ID, 0)
		}, money{Balance: usd, IncludedUsed: 10 * usd, MonthSpend: 13 * usd}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			s.do(t)
			if got := moneyOf(f.summary(t, ws)); got != s.want {
				t.Fatalf("%s\nwant %s", got, s.want)
			}
			f.verify(t)
		})
	}
	// Everything owed was paid by the loads, each payment a charge entry of
	// the request that owed it.
	var uncollected, paid int64
	if err := f.db.QueryRow(`SELECT sum(uncollected) FROM billing_reservations`).Scan(&uncollected); err != nil || uncollected != 0 {
		t.Fatalf("uncollected %d %v", uncollected, err)
	}
	if err := f.db.QueryRow(`SELECT sum(amount) FROM billing_entries WHERE kind = 'charge' AND reason = 'owed' AND reservation_id <> ''`).Scan(&paid); err != nil || paid != int64(6*usd) {
		t.Fatalf("paid for what was owed %d %v", paid, err)
	}
	for _, c := range []struct {
		name string
		err  error
		want error
	}{
		{"unknown reservation settle", f.l.Settle(ctx, "rsv_nope", 1), ErrReservationNotFound},
		{"unknown reservation release", f.l.Release(ctx, "rsv_nope"), ErrReservationNotFound},
		{"negative actual", f.l.Settle(ctx, "rsv_nope", -1), ErrInvalidAmount},
	} {
		t.Run(c.name, func(t *testing.T) { wantErr(t, c.err, c.want) })
	}
}

func TestSettleExpired(t *testing.T) { eachEngine(t, testSettleExpired) }

func testSettleExpired(t *testing.T, e pgtest.Engine) {
	f := newFixture(t, e)
	ctx := context.Background()
	f.load(t, "ws_hobby", 3*usd)
	lost := f.reserve(t, "ws_hobby", 2*usd)
	if !lost.ExpiresAt.Equal(t0.Add(DefaultReservationTTL)) {
		t.Fatalf("expires %s", lost.ExpiresAt)
	}
	f.clk.Advance(10 * time.Minute)
	kept := f.reserve(t, "ws_hobby", usd)
	f.clk.Advance(DefaultReservationTTL - 10*time.Minute - time.Millisecond)
	if n, err := f.l.SettleExpired(ctx); err != nil || n != 0 {
		t.Fatalf("too early: %d %v", n, err)
	}
	f.clk.Advance(time.Millisecond)
	if n, err := f.l.SettleExpired(ctx); err != nil || n != 1 {
		t.Fatalf("expired: %d %v", n, err)
	}
	if got := moneyOf(f.summary(t, "ws_hobby")); got != (money{Balance: 3 * usd, Reserved: usd}) {
		t.Fatalf("after expiry: %s", got)
	}
	f.verify(t)
	// The request finished after all: charged from what is available now.
	f.settle(t, lost.ID, usd+usd/2)
	f.settle(t, kept.ID, usd)
	if got := moneyOf(f.summary(t, "ws_hobby")); got != (money{Balance: usd / 2, MonthSpend: 2*usd + usd/2}) {
		t.Fatalf("late settle: %s", got)
	}
	f.verify(t)
}

func TestSettleExpiredJob(t *testing.T) { eachEngine(t, testSettleExpiredJob) }

func testSettleExpiredJob(t *testing.T, e pgtest.Engine) {
	f := newFixture(t, e)
	ctx := context.Background()
	runner := newJobRunner(t, f)
	f.load(t, "ws_hobby", usd)
	f.reserve(t, "ws_hobby", usd)
	if n, err := runner.RunDue(ctx); err != nil || n != 1 { // the first slot, nothing expired yet
		t.Fatalf("RunDue %d %v", n, err)
	}
	for range 5 {
		f.clk.Advance(SettleInterval)
		if n, err := runner.RunDue(ctx); err != nil || n != 1 {
			t.Fatalf("RunDue %d %v", n, err)
		}
	}
	// 10:00 + 25 min expiry; the 10:25 slot ran it.
	if got := moneyOf(f.summary(t, "ws_hobby")); got != (money{Balance: usd}) {
		t.Fatalf("not settled within 30 minutes: %s", got)
	}
	f.verify(t)
}

func TestMonthBoundaryUTC(t *testing.T) { eachEngine(t, testMonthBoundaryUTC) }

func testMonthBoundaryUTC(t *testing.T, e pgtest.Engine) {
	f := newFixture(t, e)
	f.clk.Set(time.Date(2026, 11, 30, 23, 59, 0, 0, time.UTC))
	r := f.reserve(t, "ws_pro", 4*usd)
	f.settle(t, f.reserve(t, "ws_pro", 6*usd).ID, 6*usd)
	if s := f.summary(t, "ws_pro"); s.Month != "2026-11" || s.IncludedLeft != 0 {
		t.Fatalf("november: %+v", s)
	}
	f.clk.Set(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	s := f.summary(t, "ws_pro")
	if s.Month != "2026-12" || s.IncludedLeft != 10*usd || !s.PeriodStart.Equal(f.clk.Now()) || !s.PeriodEnd.Equal(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("december: %+v", s)
	}
	// November's request settles on November's credit.
	f.settle(t, r.ID, 4*usd)
	if s := f.summary(t, "ws_pro"); s.IncludedUsed != 0 || s.IncludedLeft != 10*usd {
		t.Fatalf("december after november's settle: %+v", s)
	}
	var used int64
	if err := f.db.QueryRow(`SELECT used FROM billing_months WHERE workspace_id = 'ws_pro' AND month = '2026-11' AND pool = 'ai_credit'`).Scan(&used); err != nil || used != int64(10*usd) {
		t.Fatalf("november used %d %v", used, err)
	}
	f.verify(t)
}

func TestChargeStorage(t *testing.T) { eachEngine(t, testChargeStorage) }

func testChargeStorage(t *testing.T, e pgtest.Engine) {
	f := newFixture(t, e)
	ctx := context.Background()
	f.load(t, "ws_team", 5*usd)
	f.load(t, "ws_pro", 1*usd)
	if err := f.l.SetSpendLimit(ctx, "ws_pro", ptr(usd/2)); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, ws, ref string
		amount, want  Micros
		usageLeft     Micros
		balance       Micros
	}{
		{"team's usage credit pays first", "ws_team", "d1", 15 * usd, 15 * usd, 5 * usd, 5 * usd},
		{"then the Balance", "ws_team", "d2", 7 * usd, 7 * usd, 0, 3 * usd},
		{"a repeated ref is charged once", "ws_team", "d2", 7 * usd, 7 * usd, 0, 3 * usd},
		{"only what is there", "ws_team", "d3", 4 * usd, 3 * usd, 0, 0},
		{"nothing left", "ws_team", "d4", usd, 0, 0, 0},
		{"pro: no usage credit, spend limit caps", "ws_pro", "d1", usd, usd / 2, 0, usd / 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := f.l.Charge(ctx, c.ws, "prj_1", PurposeStorage, c.ref, c.amount)
			if err != nil || got != c.want {
				t.Fatalf("charged %s %v, want %s", got.USD(), err, c.want.USD())
			}
			s := f.summary(t, c.ws)
			if s.UsageCreditLeft != c.usageLeft || s.Balance != c.balance {
				t.Fatalf("usage credit left %s balance %s", s.UsageCreditLeft.USD(), s.Balance.USD())
			}
			if s.IncludedUsed != 0 {
				t.Fatalf("storage used the AI credit: %+v", s)
			}
			f.verify(t)
		})
	}
	for _, c := range []struct {
		name    string
		purpose string
		amount  Micros
		want    error
	}{
		{"zero", PurposeStorage, 0, ErrInvalidAmount},
		{"too large", PurposeStorage, MaxAmount + 1, ErrInvalidAmount},
		{"unknown purpose", "rent", 1, ErrUnknownPurpose},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := f.l.Charge(ctx, "ws_team", "", c.purpose, "", c.amount)
			wantErr(t, err, c.want)
		})
	}
}

func TestAddBalanceAndSpendLimitAudited(t *testing.T) {
	eachEngine(t, testAddBalanceAndSpendLimitAudited)
}

func testAddBalanceAndSpendLimitAudited(t *testing.T, e pgtest.Engine) {
	f := newFixture(t, e)
	ctx := context.Background()
	if err := f.l.AddBalance(ctx, "ws_pro", 12*usd+500_000, "operator:alice", "invoice 42"); err != nil {
		t.Fatal(err)
	}
	if err := f.l.SetSpendLimit(ctx, "ws_pro", ptr(50*usd)); err != nil {
		t.Fatal(err)
	}
	if err := f.l.SetSpendLimit(ctx, "ws_pro", nil); err != nil {
		t.Fatal(err)
	}
	rows, _, err := f.audit.List(ctx, audit.Query{Workspace: "ws_pro", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range rows {
		got = append(got, e.Action+": "+e.Summary)
	}
	want := "billing.spend_limit: spending limit removed|billing.spend_limit: spending limit set to 50.00 dollars a month|billing.balance_add: Balance loaded with 12.50 dollars by operator:alice"
	if strings.Join(got, "|") != want {
		t.Fatalf("audit:\n%s\nwant\n%s", strings.Join(got, "|"), want)
	}
	if rows[2].Category != audit.CategoryBilling || rows[2].Details["reason"] != "invoice 42" {
		t.Fatalf("%+v", rows[2])
	}
	for _, c := range []struct {
		name string
		err  error
		want error
	}{
		{"zero load", f.l.AddBalance(ctx, "ws_pro", 0, "x", ""), ErrInvalidAmount},
		{"negative load", f.l.AddBalance(ctx, "ws_pro", -usd, "x", ""), ErrInvalidAmount},
		{"load above the cap", f.l.AddBalance(ctx, "ws_pro", MaxLoad+1, "x", ""), ErrInvalidAmount},
		{"unknown workspace", f.l.AddBalance(ctx, "ws_nope", usd, "x", ""), ErrUnknownWorkspace},
		{"negative limit", f.l.SetSpendLimit(ctx, "ws_pro", ptr(-1)), ErrInvalidAmount},
		{"limit above the cap", f.l.SetSpendLimit(ctx, "ws_pro", ptr(MaxSpendLimit+1)), ErrInvalidAmount},
	} {
		t.Run(c.name, func(t *testing.T) { wantErr(t, c.err, c.want) })
	}
	if rows, _, _ := f.audit.List(ctx, audit.Query{Workspace: "ws_pro", Limit: 10}); len(rows) != 3 {
		t.Fatalf("a refusal was audited: %d rows", len(rows))
	}
	if s := f.summary(t, "ws_pro"); s.Balance != 12*usd+500_000 || s.SpendLimit != nil {
		t.Fatalf("%+v", s)
	}
	var n int
	f.db.QueryRow(`SELECT count(*) FROM billing_accounts WHERE workspace_id = 'ws_nope'`).Scan(&n)
	if n != 0 {
		t.Fatal("a refused load stored an account")
	}
	f.verify(t)
}

// The ledger is append-only and Verify notices a balance row that does not
// match its entries.
func TestVerifyDetectsTampering(t *testing.T) { eachEngine(t, testVerifyDetectsTampering) }

func testVerifyDetectsTampering(t *testing.T, e pgtest.Engine) {
	f := newFixture(t, e)
	f.load(t, "ws_pro", usd)
	f.reserve(t, "ws_pro", 5*usd)
	f.reserve(t, "ws_pro", 5*usd+usd/2) // 5 from credit, 0.50 from the Balance
	f.verify(t)
	for _, q := range []string{`UPDATE billing_entries SET amount = amount + 1`, `DELETE FROM billing_entries`} {
		if _, err := f.db.Exec(q); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Fatalf("%s: %v", q, err)
		}
	}
	cases := []struct{ name, tamper, undo string }{
		{"balance", `UPDATE billing_accounts SET balance = balance + 1`, `UPDATE billing_accounts SET balance = balance - 1`},
		{"month used", `UPDATE billing_months SET used = used + 1 WHERE pool = 'ai_credit'`, `UPDATE billing_months SET used = used - 1 WHERE pool = 'ai_credit'`},
		{"reservation held", `UPDATE billing_reservations SET held_credit = held_credit - 1, held_balance = held_balance + 1`, `UPDATE billing_reservations SET held_credit = held_credit + 1, held_balance = held_balance - 1`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := f.db.Exec(c.tamper); err != nil {
				t.Fatal(err)
			}
			if err := f.l.Verify(context.Background(), "ws_pro"); !errors.Is(err, ErrMismatch) {
				t.Fatalf("verify: %v", err)
			}
			if _, err := f.db.Exec(c.undo); err != nil {
				t.Fatal(err)
			}
			f.verify(t)
		})
	}
}

func TestStorageOverageMicros(t *testing.T) {
	const gb = plans.GB
	cases := []struct {
		name  string
		bytes int64
		days  int
		want  Micros
	}{
		{"none", 0, 30, 0},
		{"negative", -gb, 30, 0},
		{"1 GB for a day of a 30-day month", gb, 30, 33_333},
		{"1 GB for a day of a 31-day month", gb, 31, 32_258},
		{"30 GB in 30 days: a dollar a day", 30 * gb, 30, usd},
		{"1 kB rounds down to nothing", 1000, 30, 0},
		{"bad month length counts 30", 30 * gb, 0, usd},
		{"largest int64 does not overflow", 1<<63 - 1, 28, Micros((1<<63 - 1) / 28_000)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := StorageOverageMicros(c.bytes, c.days); got != c.want {
				t.Fatalf("%d, want %d", got, c.want)
			}
		})
	}
	for _, days := range []int{28, 29, 30, 31} {
		month := StorageOverageMicros(7*gb+123, days) * Micros(days)
		if month > 7*usd || 7*usd-month >= Micros(days) {
			t.Fatalf("%d days: month of daily charges %d for 7 GB", days, month)
		}
	}
	for _, c := range []struct {
		t    time.Time
		days int
	}{
		{time.Date(2026, 2, 10, 0, 0, 0, 0, time.UTC), 28},
		{time.Date(2028, 2, 29, 23, 0, 0, 0, time.UTC), 29},
		{time.Date(2026, 11, 30, 23, 59, 0, 0, time.UTC), 30},
		{time.Date(2026, 12, 31, 0, 0, 0, 0, time.UTC), 31},
	} {
		if got := DaysIn(c.t); got != c.days {
			t.Fatalf("DaysIn(%s) = %d", c.t, got)
		}
	}
	if StorageRef(time.Date(2026, 11, 2, 23, 0, 0, 0, time.FixedZone("x", -3600))) != "storage:2026-11-03" {
		t.Fatal("StorageRef is not the UTC day")
	}
}

func TestUSD(t *testing.T) {
	cases := []struct {
		in   string
		want Micros
		ok   bool
	}{
		{"12", 12 * usd, true},
		{"12.5", 12*usd + 500_000, true},
		{"0.000001", 1, true},
		{"999999999.999999", 999_999_999*usd + 999_999, true},
		{"0", 0, true},
		{"", 0, false},
		{".5", 0, false},
		{"5.", 0, false},
		{"-5", 0, false},
		{"+5", 0, false},
		{"1e3", 0, false},
		{"1,000", 0, false},
		{"0.0000001", 0, false},
		{"1000000000", 0, false},
		{" 5", 0, false},
		{"5.00.0", 0, false},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := ParseUSD(c.in)
			if (err == nil) != c.ok || got != c.want {
				t.Fatalf("ParseUSD(%q) = %d, %v", c.in, got, err)
			}
			if !c.ok && !errors.Is(err, ErrBadUSD) {
				t.Fatalf("error %v is not ErrBadUSD", err)
			}
		})
	}
	for m, s := range map[Micros]string{0: "0.00", 1: "0.000001", 12*usd + 500_000: "12.50", -3 * usd: "-3.00", 1234567: "1.234567"} {
		if m.USD() != s {
			t.Fatalf("%d.USD() = %s, want %s", m, m.USD(), s)
		}
	}
}

func TestErrorsAreCoded(t *testing.T) {
	var _ interface {
		Status() int
		ErrorCode() string
	} = ErrSpendLimit
	if ErrRequestTooLarge.Status() != http.StatusPaymentRequired || errors.Is(ErrReservationNotFound.detail("x"), ErrUnknownWorkspace) {
		t.Fatal("sentinels")
	}
}

func ptr(m Micros) *Micros { return &m }
