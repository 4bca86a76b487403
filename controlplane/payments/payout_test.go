package payments

import (
	"testing"
	"time"
)

func TestDecidePayout(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	days := func(n int) time.Time { return now.Add(-time.Duration(n) * 24 * time.Hour) }
	sales := func(n int, cents int64, at time.Time) []moneyEvent {
		out := make([]moneyEvent, n)
		for i := range out {
			out[i] = moneyEvent{At: at, Cents: cents}
		}
		return out
	}
	for _, c := range []struct {
		name      string
		available int64
		next      time.Time
		h         payoutHistory
		amount    int64
		reason    string
		until     time.Time
	}{
		{name: "no sales", available: 0, reason: "no_sales"},
		{name: "first payout waits 14 days", available: 10_000, h: payoutHistory{FirstSale: days(3), Sales: sales(1, 10_000, days(3))},
			reason: "first_payout", until: days(3).Add(FirstPayoutDelay)},
		{name: "after 14 days all of a small balance", available: 10_000, h: payoutHistory{FirstSale: days(15), Sales: sales(1, 10_000, days(15))},
			amount: 10_000},
		{name: "500 dollars per payout", available: 80_000, h: payoutHistory{FirstSale: days(15), Sales: sales(1, 80_000, days(15))},
			amount: 50_000, reason: "payout_cap"},
		{name: "1000 a week", available: 80_000, h: payoutHistory{FirstSale: days(20), Sales: sales(1, 200_000, days(20)),
			Payouts: []moneyEvent{{At: days(2), Cents: 50_000}, {At: days(1), Cents: 30_000}}},
			amount: 20_000, reason: "weekly_cap", until: days(2).Add(CapWindow)},
		{name: "week used up", available: 80_000, h: payoutHistory{FirstSale: days(20), Sales: sales(1, 200_000, days(20)),
			Payouts: []moneyEvent{{At: days(3), Cents: 50_000}, {At: days(1), Cents: 50_000}}},
			reason: "weekly_cap", until: days(3).Add(CapWindow)},
		{name: "nothing available names the next release", available: 0, next: now.Add(48 * time.Hour),
			h: payoutHistory{FirstSale: days(20), Sales: sales(1, 1000, days(20))}, reason: "nothing_available", until: now.Add(48 * time.Hour)},
		{name: "refunds above 10 percent pause", available: 10_000,
			h:      payoutHistory{FirstSale: days(30), Sales: sales(10, 1000, days(30)), Refunds: []moneyEvent{{At: days(10), Cents: 1001}}},
			reason: "refunds", until: days(10).Add(RiskWindow)}, // sales leave the window first: the refund must
		{name: "refunds at exactly 10 percent do not", available: 10_000,
			h:      payoutHistory{FirstSale: days(30), Sales: sales(10, 1000, days(30)), Refunds: []moneyEvent{{At: days(10), Cents: 1000}}},
			amount: 10_000},
		{name: "two disputes making 1 percent pause", available: 10_000,
			h:      payoutHistory{FirstSale: days(30), Sales: sales(200, 1000, days(30)), Disputes: []time.Time{days(5), days(4)}},
			reason: "disputes", until: days(5).Add(RiskWindow)},
		{name: "two disputes under 1 percent do not", available: 10_000,
			h:      payoutHistory{FirstSale: days(30), Sales: sales(201, 1000, days(30)), Disputes: []time.Time{days(5), days(4)}},
			amount: 10_000},
		{name: "three disputes pause whatever the share", available: 10_000,
			h:      payoutHistory{FirstSale: days(30), Sales: sales(10_000, 1000, days(30)), Disputes: []time.Time{days(50), days(5), days(4)}},
			reason: "disputes", until: days(50).Add(RiskWindow)},
		{name: "caps rise at 180 days, 12 payouts and 50,000 paid", available: 8_000_000,
			h:      payoutHistory{FirstSale: days(181), Sales: sales(1, 100, days(181)), CompletedCount: 12, CompletedCents: 5_000_000},
			amount: 5_000_000, reason: "payout_cap"},
		{name: "not with 11 payouts", available: 8_000_000,
			h:      payoutHistory{FirstSale: days(181), Sales: sales(1, 100, days(181)), CompletedCount: 11, CompletedCents: 5_000_000},
			amount: 1_000_000, reason: "payout_cap"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := decidePayout(now, c.available, c.next, c.h)
			if d.Amount != c.amount {
				t.Fatalf("amount %d, want %d (%+v)", d.Amount, c.amount, d.Limit)
			}
			reason := ""
			var until time.Time
			if d.Limit != nil {
				reason, until = d.Limit.Reason, d.Limit.Until
				if d.Limit.Message == "" {
					t.Fatal("limit without a message")
				}
			}
			if reason != c.reason || !until.Equal(c.until) {
				t.Fatalf("limit %q until %v, want %q until %v (%+v)", reason, until, c.reason, c.until, d.Limit)
			}
		})
	}
}
