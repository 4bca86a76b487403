package billing

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/store"
)

// Plans paid from the Balance. A plan is bought for the rest of the UTC
// calendar month it is bought in and renewed at the start of each month
// (RenewPlans). Changing plan prorates as Stripe Billing does: the unused
// part of what was paid for the current plan comes back to the Balance
// (a load entry, purpose plan) and the new plan's price for the rest of
// the month is charged (a charge entry, purpose plan), both in the
// transaction that changes the plan. Proration is by the second, in whole
// micro-dollars rounded down: a credit never exceeds what was paid, so
// no sequence of changes creates money.

// PurposePlan marks the plan's entries (credits and charges).
const PurposePlan = "plan"

// PriceOf is plan n's monthly price.
func PriceOf(n plans.Name) Micros { return Micros(plans.Of(n).MonthlyPriceCents) * centsToMicros }

// ErrBalanceInsufficient: the Balance cannot pay for the plan.
var ErrBalanceInsufficient = &Error{status: http.StatusPaymentRequired, code: "balance_insufficient", msg: "the Balance cannot pay for this plan; nothing changed (the owner loads the Balance, then retries)"}

// MissingError is ErrBalanceInsufficient with the amount missing.
type MissingError struct {
	Missing Micros
	err     *Error
}

func (e *MissingError) Error() string { return e.err.Error() }

// Unwrap returns the *Error (errors.Is matches ErrBalanceInsufficient).
func (e *MissingError) Unwrap() error { return e.err }

// PlanStore stores workspaces' plans; accounts implements it.
type PlanStore interface {
	// SwapPlanTx sets workspace's plan inside tx, recording ev there, and
	// returns the plan it replaced (404 when the workspace is unknown).
	SwapPlanTx(ctx context.Context, tx *sql.Tx, workspace string, plan plans.Name, ev audit.Event) (plans.Name, error)
	// PlanChanged tells that workspace's plan changed (after commit).
	PlanChanged(workspace string)
}

// PlanChange is a receipt: what a change credited and charged, and the
// period the new plan is paid for.
type PlanChange struct {
	Workspace string     `json:"workspace"`
	From      plans.Name `json:"from"`
	To        plans.Name `json:"to"`
	// Credited is the unused part of what was paid for From, back to the
	// Balance; Charged is To's price for the rest of the period.
	Credited Micros `json:"creditedMicros"`
	Charged  Micros `json:"chargedMicros"`
	// PaidThrough ends the period (the start of the next UTC month).
	PaidThrough time.Time `json:"paidThrough"`
	// Balance is the Balance after the change.
	Balance Micros `json:"balanceMicros"`
}

// monthBounds returns the UTC month holding t.
func monthBounds(t time.Time) (start, end time.Time) {
	t = t.UTC()
	start = time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	return start, start.AddDate(0, 1, 0)
}

// prorate is amount × part / whole, rounded down, for durations in seconds.
func prorate(amount Micros, part, whole time.Duration) Micros {
	if part <= 0 || whole <= 0 || amount <= 0 {
		return 0
	}
	if part >= whole {
		return amount
	}
	// amount ≤ 10^12 micro-dollars and whole ≤ 31 days in seconds (2.7·10^6)
	// keep the product far below 2^63.
	return Micros(int64(amount) * int64(part/time.Second) / int64(whole/time.Second))
}

// paidPeriod is what was paid for the current plan.
type paidPeriod struct {
	plan        plans.Name
	paid        Micros
	coveredFrom time.Time
	periodEnd   time.Time
	found       bool
}

func (t *txn) paidPeriod() (paidPeriod, error) {
	var p paidPeriod
	var plan, from, end string
	err := t.tx.QueryRowContext(t.ctx, `SELECT plan, paid, covered_from, period_end FROM billing_plan_periods WHERE workspace_id = ?`, t.ws).
		Scan(&plan, &p.paid, &from, &end)
	if errors.Is(err, sql.ErrNoRows) {
		return p, nil
	}
	if err != nil {
		return p, err
	}
	p.plan, p.coveredFrom, p.periodEnd, p.found = plans.Name(plan), store.ParseTime(from), store.ParseTime(end), true
	return p, nil
}

func (t *txn) setPaidPeriod(plan plans.Name, paid Micros, from, end time.Time) error {
	_, err := t.tx.ExecContext(t.ctx, `INSERT INTO billing_plan_periods (workspace_id, plan, paid, covered_from, period_end, updated_at) VALUES (?,?,?,?,?,?)
		ON CONFLICT (workspace_id) DO UPDATE SET plan = excluded.plan, paid = excluded.paid, covered_from = excluded.covered_from,
			period_end = excluded.period_end, updated_at = excluded.updated_at`,
		t.ws, string(plan), int64(paid), store.FormatTime(from), store.FormatTime(end), store.FormatTime(t.now))
	return err
}

// credit is the unused part of what was paid for plan at now.
func (p paidPeriod) credit(plan plans.Name, now time.Time) Micros {
	if !p.found || p.plan != plan || !now.Before(p.periodEnd) {
		return 0
	}
	return prorate(p.paid, p.periodEnd.Sub(now), p.periodEnd.Sub(p.coveredFrom))
}

// ChangePlan moves workspace to plan `to`, paid from its Balance: the
// unused part of what was paid for the current plan is credited, `to`'s
// price for the rest of the month is charged, and st stores the plan, all
// in one transaction with an audit row (billing.plan_change). A Balance
// that cannot pay answers ErrBalanceInsufficient with the amount missing,
// and nothing changes. actor is the caller (nil for the operator, named
// by operator).
func (l *Ledger) ChangePlan(ctx context.Context, st PlanStore, workspace string, to plans.Name, actor *auth.Principal, operator string) (PlanChange, error) {
	if workspace == "" {
		return PlanChange{}, ErrUnknownWorkspace.detail("no workspace given")
	}
	if _, err := plans.Parse(string(to)); err != nil {
		return PlanChange{}, err
	}
	var out PlanChange
	err := l.exclusive(workspace, func() error {
		return l.tx(ctx, workspace, func(t *txn) error {
			out = PlanChange{Workspace: workspace, To: to}
			if err := t.ensure(); err != nil {
				return err
			}
			who := operator
			if actor != nil {
				who = actor.Label()
			}
			from, err := st.SwapPlanTx(ctx, t.tx, workspace, to, audit.Event{Workspace: workspace, Actor: actor, Action: "workspace.plan",
				Category: audit.CategoryBilling, TargetType: "workspace", TargetID: workspace, Summary: "plan set to " + string(to) + " by " + who})
			if err != nil {
				return err
			}
			out.From = from
			period, err := t.paidPeriod()
			if err != nil {
				return err
			}
			start, end := monthBounds(t.now)
			out.Credited = period.credit(from, t.now)
			out.Charged = prorate(PriceOf(to), end.Sub(t.now), end.Sub(start))
			out.PaidThrough = end
			a, err := t.account()
			if err != nil {
				return err
			}
			if free := a.free() + out.Credited; free < out.Charged {
				missing := out.Charged - max0(free)
				return &MissingError{Missing: missing, err: ErrBalanceInsufficient.detail("the %s plan costs %s dollars for the rest of the month; the Balance has %s dollars free after a credit of %s dollars: %s dollars are missing",
					to, out.Charged.USD(), max0(a.free()).USD(), out.Credited.USD(), missing.USD())}
			}
			month := monthOf(t.now)
			ref := store.NewID("pln")
			reason := fmt.Sprintf("plan %s -> %s", from, to)
			if err := t.entry(entry{month: month, pool: poolBalance, kind: kindLoad, amount: out.Credited, purpose: PurposePlan, ref: ref,
				actor: who, reason: "unused " + string(from) + " to " + t.now.UTC().Format(time.DateOnly) + "; " + reason}); err != nil {
				return err
			}
			if err := t.entry(entry{month: month, pool: poolBalance, kind: kindCharge, amount: out.Charged, purpose: PurposePlan, ref: ref,
				actor: who, reason: string(to) + " to " + end.Format(time.DateOnly) + "; " + reason}); err != nil {
				return err
			}
			if err := t.setPaidPeriod(to, out.Charged, t.now, end); err != nil {
				return err
			}
			if a, err = t.account(); err != nil {
				return err
			}
			out.Balance = a.balance
			return l.audit.Record(ctx, t.tx, audit.Event{Workspace: workspace, Actor: actor, Action: "billing.plan_payment", Category: audit.CategoryBilling,
				TargetType: "workspace", TargetID: workspace,
				Summary: fmt.Sprintf("%s: %s dollars credited, %s dollars charged", reason, out.Credited.USD(), out.Charged.USD()),
				Details: map[string]any{"from": string(from), "to": string(to), "creditedMicros": int64(out.Credited), "chargedMicros": int64(out.Charged),
					"paidThrough": store.FormatTime(end), "actor": who}})
		})
	})
	if err != nil {
		return PlanChange{}, fmt.Errorf("billing: change plan: %w", err)
	}
	st.PlanChanged(workspace)
	return out, nil
}

// SetPlanUnpaid sets workspace's plan without any payment (the operator's
// command): what was paid for the current period stays as it is, so a
// later self-serve change credits only what was actually paid.
func (l *Ledger) SetPlanUnpaid(ctx context.Context, st PlanStore, workspace string, to plans.Name, operator string) (plans.Name, error) {
	if _, err := plans.Parse(string(to)); err != nil {
		return "", err
	}
	var from plans.Name
	err := l.db.Tx(ctx, func(tx *sql.Tx) error {
		var err error
		from, err = st.SwapPlanTx(ctx, tx, workspace, to, audit.Event{Workspace: workspace, Action: "workspace.plan", Category: audit.CategoryBilling,
			TargetType: "workspace", TargetID: workspace, Summary: "plan set to " + string(to) + " by " + operator,
			Details: map[string]any{"actor": operator, "paid": false}})
		return err
	})
	if err != nil {
		return "", fmt.Errorf("billing: set plan: %w", err)
	}
	st.PlanChanged(workspace)
	return from, nil
}

// RenewPlans charges, for each workspace whose paid period has ended, its
// plan's price for the month now is in; a workspace whose Balance cannot
// pay goes to fallback (unpaid). It returns how many were renewed and how
// many fell back.
func (l *Ledger) RenewPlans(ctx context.Context, st PlanStore, fallback plans.Name) (renewed, fellBack int, err error) {
	now := l.clk.Now()
	rows, err := l.db.QueryContext(ctx, `SELECT workspace_id, plan FROM billing_plan_periods WHERE period_end <= ? ORDER BY workspace_id`, store.FormatTime(now))
	if err != nil {
		return 0, 0, fmt.Errorf("billing: renew plans: %w", err)
	}
	type due struct {
		ws   string
		plan plans.Name
	}
	dues, err := store.AppendRows(nil, rows, func(sc store.RowScanner) (due, error) {
		var d due
		var p string
		err := sc.Scan(&d.ws, &p)
		d.plan = plans.Name(p)
		return d, err
	})
	if err != nil {
		return 0, 0, err
	}
	for _, d := range dues {
		current, err := l.plans.PlanOf(ctx, d.ws)
		if err != nil {
			return renewed, fellBack, err
		}
		if current != d.plan || PriceOf(current) == 0 {
			// The plan was set without payment since: nothing to renew.
			if _, err := l.db.ExecContext(ctx, `DELETE FROM billing_plan_periods WHERE workspace_id = ? AND period_end <= ?`, d.ws, store.FormatTime(now)); err != nil {
				return renewed, fellBack, err
			}
			continue
		}
		_, err = l.ChangePlan(ctx, st, d.ws, current, nil, "renewal")
		switch {
		case errors.Is(err, ErrBalanceInsufficient):
			if _, err := l.SetPlanUnpaid(ctx, st, d.ws, fallback, "renewal (the Balance could not pay "+string(current)+")"); err != nil {
				return renewed, fellBack, err
			}
			if _, err := l.db.ExecContext(ctx, `DELETE FROM billing_plan_periods WHERE workspace_id = ?`, d.ws); err != nil {
				return renewed, fellBack, err
			}
			fellBack++
		case err != nil:
			return renewed, fellBack, err
		default:
			renewed++
		}
	}
	return renewed, fellBack, nil
}
