package billing

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/store"
)

// Movements outside reservations: direct charges, loading the Balance and
// the monthly spending limit.

// Charge charges amount directly (storage overage, charged daily): from the
// purpose's included credit left this month first (team's usage credit for
// storage), then from the Balance within the spending limit. It returns what
// could be charged, which is less than amount when money ran out; the
// caller decides what happens then (storage: usage_paused). With a non-empty
// ref the charge happens once per workspace, purpose and ref: a repeat
// returns what the first charged.
func (l *Ledger) Charge(ctx context.Context, workspace, project, purpose, ref string, amount Micros) (Micros, error) {
	pool, err := creditPool(purpose)
	if err != nil {
		return 0, err
	}
	if err := checkAmount("charge", amount); err != nil {
		return 0, err
	}
	_, terms, err := l.terms(ctx, workspace)
	if err != nil {
		return 0, err
	}
	var charged Micros
	done := func() {}
	err = l.exclusive(workspace, func() error {
		return l.tx(ctx, workspace, func(t *txn) error {
			if err := t.ensure(); err != nil {
				return err
			}
			if ref != "" {
				var prev int64
				err := t.tx.QueryRowContext(ctx, `SELECT charged FROM billing_charges WHERE workspace_id = ? AND purpose = ? AND ref = ?`,
					workspace, purpose, ref).Scan(&prev)
				if err == nil {
					charged = Micros(prev)
					return nil
				}
				if err != sql.ErrNoRows {
					return err
				}
			}
			month := monthOf(t.now)
			c, b, err := t.available(month, pool, terms.credit(pool), amount)
			if err != nil {
				return err
			}
			base := entry{month: month, kind: kindCharge, project: project, purpose: purpose, ref: ref}
			if err := t.entry(with(base, pool, c)); err != nil {
				return err
			}
			if err := t.entry(with(base, poolBalance, b)); err != nil {
				return err
			}
			charged = c + b
			done = func() { l.m.charged(purpose, pool, c, b) }
			if ref != "" {
				_, err = t.tx.ExecContext(ctx, `INSERT INTO billing_charges (workspace_id, purpose, ref, charged, at) VALUES (?,?,?,?,?)`,
					workspace, purpose, ref, int64(charged), store.FormatTime(t.now))
			}
			return err
		})
	})
	if err != nil {
		return 0, fmt.Errorf("billing: charge: %w", err)
	}
	done()
	return charged, nil
}

// AddBalance loads amount into the workspace's Balance and records it in
// the audit log (a money event) in the same transaction. What the
// workspace owes is paid from it first, in the same transaction (charge
// entries against the requests that owed it, oldest first). actor says who
// loaded it (the operator command passes "operator:<user>"), reason why.
func (l *Ledger) AddBalance(ctx context.Context, workspace string, amount Micros, actor, reason string) error {
	if amount <= 0 || amount > MaxLoad {
		return ErrInvalidAmount.detail("a load must be more than 0 and at most %s dollars, not %s", MaxLoad.USD(), amount.USD())
	}
	if workspace == "" {
		return ErrUnknownWorkspace.detail("no workspace given")
	}
	done := func() {}
	err := l.exclusive(workspace, func() error {
		return l.tx(ctx, workspace, func(t *txn) error {
			done = func() {} // fn may run again after a serialization failure
			if err := t.ensure(); err != nil {
				return err
			}
			a, err := t.account()
			if err != nil {
				return err
			}
			if a.balance+amount > MaxBalance {
				return ErrInvalidAmount.detail("the Balance would exceed %s dollars", MaxBalance.USD())
			}
			if err := t.entry(entry{month: monthOf(t.now), pool: poolBalance, kind: kindLoad, amount: amount, actor: actor, reason: reason}); err != nil {
				return err
			}
			byPurpose, err := t.collect()
			if err != nil {
				return err
			}
			var paid Micros
			for _, x := range byPurpose {
				paid += x
			}
			done = func() {
				for purpose, x := range byPurpose {
					l.m.charged(purpose, "", 0, x)
				}
			}
			summary := fmt.Sprintf("Balance loaded with %s dollars by %s", amount.USD(), actor)
			if paid > 0 {
				summary += fmt.Sprintf("; %s dollars of it paid what earlier requests owed", paid.USD())
			}
			return l.audit.Record(ctx, t.tx, audit.Event{
				Workspace: workspace, Action: "billing.balance_add", Category: audit.CategoryBilling,
				TargetType: "workspace", TargetID: workspace, Summary: summary,
				Details: map[string]any{"amountMicros": int64(amount), "balanceMicros": int64(a.balance + amount - paid), "owedPaidMicros": int64(paid),
					"actor": actor, "reason": reason},
			})
		})
	})
	if err != nil {
		return fmt.Errorf("billing: add balance: %w", err)
	}
	done()
	return nil
}

// SetSpendLimit sets the workspace's monthly spending limit on the Balance
// (nil removes it), recording who did it in the audit log. p is the caller
// (nil for the platform itself).
func (l *Ledger) SetSpendLimit(ctx context.Context, workspace string, limit *Micros) error {
	return l.SetSpendLimitAs(ctx, nil, workspace, limit)
}

// SetSpendLimitAs is SetSpendLimit by principal p, for the audit log.
func (l *Ledger) SetSpendLimitAs(ctx context.Context, p *auth.Principal, workspace string, limit *Micros) error {
	if limit != nil && (*limit < 0 || *limit > MaxSpendLimit) {
		return ErrInvalidAmount.detail("the spending limit must be from 0 to %s dollars a month", MaxSpendLimit.USD())
	}
	if workspace == "" {
		return ErrUnknownWorkspace.detail("no workspace given")
	}
	err := l.exclusive(workspace, func() error {
		return l.tx(ctx, workspace, func(t *txn) error {
			if err := t.ensure(); err != nil {
				return err
			}
			before, err := t.account()
			if err != nil {
				return err
			}
			var v any
			summary := "spending limit removed"
			if limit != nil {
				v = int64(*limit)
				summary = fmt.Sprintf("spending limit set to %s dollars a month", limit.USD())
			}
			if _, err := t.tx.ExecContext(ctx, `UPDATE billing_accounts SET spend_limit = ?, updated_at = ? WHERE workspace_id = ?`,
				v, store.FormatTime(t.now), workspace); err != nil {
				return err
			}
			var was any
			if before.limit != nil {
				was = int64(*before.limit)
			}
			return l.audit.Record(ctx, t.tx, audit.Event{
				Workspace: workspace, Actor: p, Action: "billing.spend_limit", Category: audit.CategoryBilling,
				TargetType: "workspace", TargetID: workspace, Summary: summary,
				Details: map[string]any{"spendLimitMicros": v, "previousMicros": was},
			})
		})
	})
	if err != nil {
		return fmt.Errorf("billing: spend limit: %w", err)
	}
	return nil
}
