package billing

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/store"
)

// Summary is a workspace's money this UTC month, shaped like a payment
// processor's customer balance. Every amount is in micro-dollars.
type Summary struct {
	// Month is the UTC month ("2026-11"); PeriodStart and PeriodEnd bound it.
	Month       string     `json:"month"`
	PeriodStart time.Time  `json:"periodStart"`
	PeriodEnd   time.Time  `json:"periodEnd"`
	Plan        plans.Name `json:"plan"`
	Currency    string     `json:"currency"`

	// Balance is the money loaded and not yet charged, including what is
	// held; Reserved is the part held by requests in flight; Owed is what
	// finished requests used above what could be charged then, paid by the
	// next load; Available is Balance minus Reserved and Owed (0 when they
	// are more).
	Balance   Micros `json:"balanceMicros"`
	Reserved  Micros `json:"reservedMicros"`
	Owed      Micros `json:"owedMicros" doc:"what finished requests used above what could be charged then (the Balance was empty): counted against the Balance and paid first by the next load"`
	Available Micros `json:"availableMicros"`

	// Included is the plan's monthly AI credit, IncludedUsed what was
	// charged to it this month, IncludedReserved what is held on it and
	// IncludedLeft what remains.
	Included         Micros `json:"includedCreditMicros"`
	IncludedUsed     Micros `json:"includedCreditUsedMicros"`
	IncludedReserved Micros `json:"includedCreditReservedMicros"`
	IncludedLeft     Micros `json:"includedCreditLeftMicros"`

	// UsageCredit is the plan's monthly usage credit that pays storage
	// overage first (team), with what was used and what is left.
	UsageCredit     Micros `json:"usageCreditMicros"`
	UsageCreditUsed Micros `json:"usageCreditUsedMicros"`
	UsageCreditLeft Micros `json:"usageCreditLeftMicros"`

	// MonthSpend is what was charged to the Balance this month (included
	// credit is not spend); SpendLimit caps it (nil: no limit) and
	// SpendLimitLeft is the room left under it, after what is held.
	MonthSpend     Micros  `json:"monthSpendMicros"`
	SpendLimit     *Micros `json:"spendLimitMicros"`
	SpendLimitLeft *Micros `json:"spendLimitLeftMicros"`
}

// Summary returns workspace's money this month.
func (l *Ledger) Summary(ctx context.Context, workspace string) (Summary, error) {
	if err := l.Flush(); err != nil {
		return Summary{}, err
	}
	plan, terms, err := l.terms(ctx, workspace)
	if err != nil {
		return Summary{}, err
	}
	now := l.clk.Now()
	start := monthStart(now)
	s := Summary{Month: monthOf(now), PeriodStart: start, PeriodEnd: start.AddDate(0, 1, 0), Plan: plan, Currency: "usd",
		Included: terms.AICredit, UsageCredit: terms.UsageCredit}
	a, err := readAccount(ctx, l.db, workspace)
	if err != nil {
		return Summary{}, fmt.Errorf("billing: summary: %w", err)
	}
	var ai, usage, bal monthRow
	for _, p := range []struct {
		pool string
		dst  *monthRow
	}{{poolAICredit, &ai}, {poolUsageCredit, &usage}, {poolBalance, &bal}} {
		if *p.dst, err = readMonth(ctx, l.db, workspace, s.Month, p.pool); err != nil {
			return Summary{}, fmt.Errorf("billing: summary: %w", err)
		}
	}
	s.Balance, s.Reserved, s.Owed, s.Available = a.balance, a.reserved, a.owed, max0(a.free())
	s.IncludedUsed, s.IncludedReserved = ai.used, ai.reserved
	s.IncludedLeft = max0(terms.AICredit - ai.used - ai.reserved)
	s.UsageCreditUsed = usage.used
	s.UsageCreditLeft = max0(terms.UsageCredit - usage.used - usage.reserved)
	s.MonthSpend = bal.used
	if a.limit != nil {
		limit, left := *a.limit, max0(*a.limit-bal.used-bal.reserved)
		s.SpendLimit, s.SpendLimitLeft = &limit, &left
	}
	return s, nil
}

// Verify recomputes workspace's balance rows from its ledger entries and
// checks them, and the invariants, against what is stored: the Balance and
// what is held are the sums of the entries, nothing is negative, no more is
// held than the Balance has, the open reservations hold exactly what is
// recorded as reserved, every reservation charged exactly the sum of its
// charge entries, and what the workspace owes is the sum of what its
// reservations left uncollected. It returns an error wrapping ErrMismatch
// on the first difference.
func (l *Ledger) Verify(ctx context.Context, workspace string) error {
	if err := l.Flush(); err != nil {
		return err
	}
	if err := l.db.Tx(ctx, func(tx *sql.Tx) error { return verify(ctx, tx, workspace) }); err != nil {
		return err
	}
	if l.hot != nil {
		return l.hot.check(ctx, workspace)
	}
	return nil
}

// verify is Verify inside one transaction, so that it sees one state.
func verify(ctx context.Context, q store.Querier, workspace string) error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrMismatch, workspace, fmt.Sprintf(format, args...))
	}
	var bal, res Micros
	type key struct{ month, pool string }
	months := map[key]*monthRow{}
	rows, err := q.QueryContext(ctx, `SELECT month, pool, kind, sum(amount) FROM billing_entries WHERE workspace_id = ? GROUP BY month, pool, kind`, workspace)
	if err != nil {
		return fmt.Errorf("billing: verify: %w", err)
	}
	for rows.Next() {
		var k key
		var kind string
		var sum Micros
		if err := rows.Scan(&k.month, &k.pool, &kind, &sum); err != nil {
			rows.Close()
			return fmt.Errorf("billing: verify: %w", err)
		}
		m := months[k]
		if m == nil && kind != kindLoad {
			m = &monthRow{}
			months[k] = m
		}
		switch kind {
		case kindLoad:
			bal += sum
		case kindHold:
			m.reserved += sum
		case kindRelease:
			m.reserved -= sum
		case kindCharge:
			m.used += sum
		}
		if k.pool == poolBalance {
			switch kind {
			case kindHold:
				res += sum
			case kindRelease:
				res -= sum
			case kindCharge:
				bal -= sum
			}
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("billing: verify: %w", err)
	}
	a, err := readAccount(ctx, q, workspace)
	if err != nil {
		return fmt.Errorf("billing: verify: %w", err)
	}
	if a.balance != bal || a.reserved != res {
		return fail("stored balance %d reserved %d, entries say %d and %d", a.balance, a.reserved, bal, res)
	}
	if bal < 0 || res < 0 || res > bal {
		return fail("balance %d reserved %d", bal, res)
	}
	stored := map[key]monthRow{}
	mrows, err := q.QueryContext(ctx, `SELECT month, pool, used, reserved FROM billing_months WHERE workspace_id = ?`, workspace)
	if err != nil {
		return fmt.Errorf("billing: verify: %w", err)
	}
	for mrows.Next() {
		var k key
		var m monthRow
		if err := mrows.Scan(&k.month, &k.pool, &m.used, &m.reserved); err != nil {
			mrows.Close()
			return fmt.Errorf("billing: verify: %w", err)
		}
		stored[k] = m
	}
	mrows.Close()
	if err := mrows.Err(); err != nil {
		return fmt.Errorf("billing: verify: %w", err)
	}
	for k, m := range months {
		if stored[k] != *m {
			return fail("%s %s stored %+v, entries say %+v", k.month, k.pool, stored[k], *m)
		}
		if m.used < 0 || m.reserved < 0 {
			return fail("%s %s negative %+v", k.month, k.pool, *m)
		}
	}
	for k, m := range stored {
		if _, ok := months[k]; !ok && m != (monthRow{}) {
			return fail("%s %s stored %+v without entries", k.month, k.pool, m)
		}
	}
	held := map[key]Micros{}
	hrows, err := q.QueryContext(ctx, `SELECT month, credit_pool, sum(held_credit), sum(held_balance) FROM billing_reservations
		WHERE workspace_id = ? AND state = 'open' GROUP BY month, credit_pool`, workspace)
	if err != nil {
		return fmt.Errorf("billing: verify: %w", err)
	}
	for hrows.Next() {
		var month, pool string
		var c, b Micros
		if err := hrows.Scan(&month, &pool, &c, &b); err != nil {
			hrows.Close()
			return fmt.Errorf("billing: verify: %w", err)
		}
		held[key{month, pool}] += c
		held[key{month, poolBalance}] += b
	}
	hrows.Close()
	if err := hrows.Err(); err != nil {
		return fmt.Errorf("billing: verify: %w", err)
	}
	for k, m := range months {
		if held[k] != m.reserved {
			return fail("%s %s reserved %d, open reservations hold %d", k.month, k.pool, m.reserved, held[k])
		}
	}
	return verifyCharges(ctx, q, workspace, a, fail)
}

// verifyCharges checks that each reservation charged exactly the sum of its
// charge entries, that nothing it owes is negative, and that the
// workspace's owed is the sum of what its reservations owe.
func verifyCharges(ctx context.Context, q store.Querier, workspace string, a account, fail func(string, ...any) error) error {
	entries := map[string]Micros{}
	rows, err := q.QueryContext(ctx, `SELECT reservation_id, sum(amount) FROM billing_entries
		WHERE workspace_id = ? AND kind = 'charge' AND reservation_id <> '' GROUP BY reservation_id`, workspace)
	if err != nil {
		return fmt.Errorf("billing: verify: %w", err)
	}
	for rows.Next() {
		var id string
		var sum Micros
		if err := rows.Scan(&id, &sum); err != nil {
			rows.Close()
			return fmt.Errorf("billing: verify: %w", err)
		}
		entries[id] = sum
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("billing: verify: %w", err)
	}
	rrows, err := q.QueryContext(ctx, `SELECT id, charged, uncollected FROM billing_reservations WHERE workspace_id = ?`, workspace)
	if err != nil {
		return fmt.Errorf("billing: verify: %w", err)
	}
	defer rrows.Close()
	var owed Micros
	for rrows.Next() {
		var id string
		var charged, uncollected Micros
		if err := rrows.Scan(&id, &charged, &uncollected); err != nil {
			return fmt.Errorf("billing: verify: %w", err)
		}
		if charged != entries[id] || uncollected < 0 {
			return fail("reservation %s charged %d owing %d, its charge entries say %d", id, charged, uncollected, entries[id])
		}
		owed += uncollected
	}
	if err := rrows.Err(); err != nil {
		return fmt.Errorf("billing: verify: %w", err)
	}
	if a.owed != owed {
		return fail("owed %d, its reservations owe %d", a.owed, owed)
	}
	return nil
}

// Workspaces lists the workspaces that have a ledger, for VerifyAll.
func (l *Ledger) Workspaces(ctx context.Context) ([]string, error) {
	if err := l.Flush(); err != nil {
		return nil, err
	}
	rows, err := l.db.QueryContext(ctx, `SELECT workspace_id FROM billing_accounts ORDER BY workspace_id`)
	if err != nil {
		return nil, fmt.Errorf("billing: workspaces: %w", err)
	}
	out, err := store.AppendRows(nil, rows, store.ScanString)
	if err != nil {
		return nil, fmt.Errorf("billing: workspaces: %w", err)
	}
	return out, nil
}

// VerifyAll runs Verify for every workspace with a ledger.
func (l *Ledger) VerifyAll(ctx context.Context) error {
	wss, err := l.Workspaces(ctx)
	if err != nil {
		return err
	}
	for _, ws := range wss {
		if err := l.Verify(ctx, ws); err != nil {
			return err
		}
	}
	return nil
}

// monthStart is the first instant of t's UTC month.
func monthStart(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
}
