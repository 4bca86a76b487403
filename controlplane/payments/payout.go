package payments

import (
	"fmt"
	"sort"
	"time"
)

// The payout rules of the specification.
const (
	// FirstPayoutDelay is how long after a workspace's first sale its first
	// payout can go.
	FirstPayoutDelay = 14 * 24 * time.Hour
	// RiskWindow is the window of sales, refunds and disputes the pauses
	// look at.
	RiskWindow = 90 * 24 * time.Hour
	// CapWindow is the window of the weekly cap.
	CapWindow = 7 * 24 * time.Hour
)

// payoutTier is a step of the caps: a workspace reaches it when it has sold
// for Days since its first sale, completed Payouts payouts and been paid
// PaidCents in all. The specification fixes the first and the last step;
// the ones between are this platform's (README.md).
type payoutTier struct {
	Days           int
	Payouts        int
	PaidCents      int64
	PerPayoutCents int64
	WeeklyCents    int64
}

var payoutTiers = []payoutTier{
	{Days: 0, Payouts: 0, PaidCents: 0, PerPayoutCents: 50_000, WeeklyCents: 100_000},
	{Days: 30, Payouts: 3, PaidCents: 200_000, PerPayoutCents: 250_000, WeeklyCents: 500_000},
	{Days: 90, Payouts: 6, PaidCents: 1_000_000, PerPayoutCents: 1_000_000, WeeklyCents: 2_000_000},
	{Days: 180, Payouts: 12, PaidCents: 5_000_000, PerPayoutCents: 5_000_000, WeeklyCents: 10_000_000},
}

// moneyEvent is an amount at a time.
type moneyEvent struct {
	At    time.Time
	Cents int64
}

// payoutHistory is what the rules look at, for the whole workspace.
type payoutHistory struct {
	FirstSale      time.Time // zero before the first sale
	Sales          []moneyEvent
	Refunds        []moneyEvent
	Disputes       []time.Time
	Payouts        []moneyEvent // pending and completed withdrawals
	CompletedCount int
	CompletedCents int64
}

// Limit says why a payout is limited and when that lifts (zero: no date,
// it lifts on the workspace's own action).
type Limit struct {
	Reason  string    `json:"reason"`
	Message string    `json:"message"`
	Until   time.Time `json:"until,omitzero"`
}

// payoutDecision is what may be withdrawn now.
type payoutDecision struct {
	Amount         int64
	PerPayoutCents int64
	WeeklyCents    int64
	WeekLeftCents  int64
	// Limit is set when less than the available amount can go now.
	Limit *Limit
}

func tierOf(now time.Time, h payoutHistory) payoutTier {
	t := payoutTiers[0]
	if h.FirstSale.IsZero() {
		return t
	}
	days := int(now.Sub(h.FirstSale) / (24 * time.Hour))
	for _, c := range payoutTiers[1:] {
		if days >= c.Days && h.CompletedCount >= c.Payouts && h.CompletedCents >= c.PaidCents {
			t = c
		}
	}
	return t
}

// within sums the events in the window (at-w, at].
func within(ev []moneyEvent, at time.Time, w time.Duration) (n int, cents int64) {
	for _, e := range ev {
		if e.At.After(at.Add(-w)) && !e.At.After(at) {
			n++
			cents += e.Cents
		}
	}
	return n, cents
}

func refundsPaused(at time.Time, h payoutHistory) (bool, int64, int64) {
	_, sales := within(h.Sales, at, RiskWindow)
	_, refunds := within(h.Refunds, at, RiskWindow)
	return refunds > 0 && refunds*10 > sales, refunds, sales
}

func disputesPaused(at time.Time, h payoutHistory) (bool, int, int) {
	ds := make([]moneyEvent, len(h.Disputes))
	for i, d := range h.Disputes {
		ds[i] = moneyEvent{At: d, Cents: 1}
	}
	n, _ := within(ds, at, RiskWindow)
	sales, _ := within(h.Sales, at, RiskWindow)
	return n >= 3 || (n >= 2 && n*100 >= sales), n, sales
}

// liftsAt is the first time after now, with no new activity, at which
// paused(t) no longer holds: the moments events leave the window are the
// only ones where it can change.
func liftsAt(now time.Time, w time.Duration, events []time.Time, paused func(time.Time) bool) time.Time {
	var cands []time.Time
	for _, e := range events {
		if t := e.Add(w); t.After(now) {
			cands = append(cands, t)
		}
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].Before(cands[j]) })
	for _, t := range cands {
		if !paused(t) {
			return t
		}
	}
	return time.Time{}
}

func times(ev []moneyEvent) []time.Time {
	out := make([]time.Time, len(ev))
	for i, e := range ev {
		out[i] = e.At
	}
	return out
}

func dollars(cents int64) string {
	sign := ""
	if cents < 0 {
		sign, cents = "-", -cents
	}
	return fmt.Sprintf("%s$%d.%02d", sign, cents/100, cents%100)
}

func day(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") }

// decidePayout applies the payout rules to available cents at now.
// nextRelease is when held earnings next become available (zero if none).
func decidePayout(now time.Time, available int64, nextRelease time.Time, h payoutHistory) payoutDecision {
	tier := tierOf(now, h)
	d := payoutDecision{PerPayoutCents: tier.PerPayoutCents, WeeklyCents: tier.WeeklyCents}
	_, week := within(h.Payouts, now, CapWindow)
	d.WeekLeftCents = max(tier.WeeklyCents-week, 0)

	if p, refunds, sales := refundsPaused(now, h); p {
		until := liftsAt(now, RiskWindow, append(times(h.Refunds), times(h.Sales)...), func(t time.Time) bool { ok, _, _ := refundsPaused(t, h); return ok })
		d.Limit = &Limit{Reason: "refunds", Until: until, Message: fmt.Sprintf(
			"payouts are paused while refunds (%s) exceed 10%% of the last 90 days' sales (%s); without more refunds this lifts on %s",
			dollars(refunds), dollars(sales), day(until))}
		return d
	}
	if p, n, sales := disputesPaused(now, h); p {
		until := liftsAt(now, RiskWindow, append(append([]time.Time{}, h.Disputes...), times(h.Sales)...), func(t time.Time) bool { ok, _, _ := disputesPaused(t, h); return ok })
		why := fmt.Sprintf("%d disputes in the last 90 days", n)
		if n < 3 {
			why = fmt.Sprintf("%d disputes make up at least 1%% of the last 90 days' %d sales", n, sales)
		}
		d.Limit = &Limit{Reason: "disputes", Until: until, Message: fmt.Sprintf("payouts are paused: %s; without more disputes this lifts on %s", why, day(until))}
		return d
	}
	if h.FirstSale.IsZero() {
		d.Limit = &Limit{Reason: "no_sales", Message: "nothing to pay out yet: the first payout comes 14 days after the first sale"}
		return d
	}
	if first := h.FirstSale.Add(FirstPayoutDelay); now.Before(first) {
		d.Limit = &Limit{Reason: "first_payout", Until: first, Message: "the first payout comes 14 days after the first sale: on " + day(first)}
		return d
	}
	if available <= 0 {
		l := &Limit{Reason: "nothing_available", Until: nextRelease, Message: "nothing is available to withdraw"}
		if available < 0 {
			l.Message = fmt.Sprintf("refunds of released payments exceed earnings: %s is owed and comes off the next sales", dollars(-available))
		}
		if !nextRelease.IsZero() {
			l.Message += "; held earnings are next released on " + day(nextRelease)
		}
		d.Limit = l
		return d
	}
	if d.WeekLeftCents == 0 {
		until := liftsAt(now, CapWindow, times(h.Payouts), func(t time.Time) bool { _, w := within(h.Payouts, t, CapWindow); return w >= tier.WeeklyCents })
		d.Limit = &Limit{Reason: "weekly_cap", Until: until, Message: fmt.Sprintf("this workspace's payouts reached the weekly cap of %s; more can go on %s", dollars(tier.WeeklyCents), day(until))}
		return d
	}
	d.Amount = min(available, tier.PerPayoutCents, d.WeekLeftCents)
	if d.Amount < available {
		reason, cap := "payout_cap", tier.PerPayoutCents
		if d.WeekLeftCents < tier.PerPayoutCents {
			reason, cap = "weekly_cap", tier.WeeklyCents
		}
		msg := fmt.Sprintf("a payout is capped at %s and %s a week for this workspace; the rest (%s) waits for the next payout", dollars(tier.PerPayoutCents), dollars(tier.WeeklyCents), dollars(available-d.Amount))
		d.Limit = &Limit{Reason: reason, Message: msg}
		if reason == "weekly_cap" {
			d.Limit.Until = liftsAt(now, CapWindow, times(h.Payouts), func(t time.Time) bool { _, w := within(h.Payouts, t, CapWindow); return w+d.Amount >= cap })
		}
	}
	return d
}
