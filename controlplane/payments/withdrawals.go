package payments

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/payments/processor"
	"github.com/svcplatform/platform/controlplane/store"
)

// Setup is the answer of withdraw-setup.
type Setup struct {
	// URL is the identity-check link the owner follows.
	URL     string  `json:"url"`
	Account Account `json:"account"`
}

// WithdrawSetup makes (or reuses) the workspace owner's payout account and
// returns its identity-check link.
func (s *Service) WithdrawSetup(ctx context.Context, pr *auth.Principal, accountID string) (Setup, error) {
	a, err := s.account(ctx, pr, accountID, auth.OpPaymentsPayout)
	if err != nil {
		return Setup{}, err
	}
	var existing string
	if err := s.d.DB.QueryRowContext(ctx, `SELECT coalesce(max(payout_ref),'') FROM payment_accounts WHERE workspace_id = ?`, a.workspace).Scan(&existing); err != nil {
		return Setup{}, fmt.Errorf("payments: payout account: %w", err)
	}
	pa, err := s.proc.SetupPayouts(ctx, a.workspace, existing, s.cfg.PublicBaseURL)
	if err != nil {
		s.d.Logger.Warn("payments: payout setup", "account", a.ID, "err", err)
		return Setup{}, api.E(api.KindBadGateway, "processor_error", "the payment processor did not set up the payout account; try again")
	}
	err = s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE payment_accounts SET payout_ref = ?, updated_at = ? WHERE workspace_id = ?`, pa.Ref, store.FormatTime(s.now()), a.workspace); err != nil {
			return fmt.Errorf("payments: payout account: %w", err)
		}
		return s.record(ctx, tx, pr, a.workspace, a.ProjectID, "payments.withdraw_setup", "payment_account", a.ID, "set up the payout account", nil)
	})
	if err != nil {
		return Setup{}, err
	}
	a, err = getAccount(ctx, s.d.DB, `id = ?`, a.ID)
	return Setup{URL: pa.URL, Account: a}, err
}

// WithdrawAnswer is the answer of withdraw.
type WithdrawAnswer struct {
	Withdrawal Withdrawal `json:"withdrawal"`
	Earnings   Earnings   `json:"earnings"`
}

// Withdraw pays out what is available within the payout rules. The amount
// moves to pending in the ledger before the processor is asked, and stays
// there until the processor confirms paid (withdrawn) or failed (back to
// available): it is never re-credited on a guess. Nothing can go yet: 409
// payout_limited with the reason and the date it lifts.
func (s *Service) Withdraw(ctx context.Context, pr *auth.Principal, accountID string) (WithdrawAnswer, error) {
	a, err := s.account(ctx, pr, accountID, auth.OpPaymentsPayout)
	if err != nil {
		return WithdrawAnswer{}, err
	}
	if a.payoutRef == "" {
		return WithdrawAnswer{}, api.Conflict("payout_setup_required", "set up the payout account first: PATCH {action: withdraw-setup} and follow its link")
	}
	if err := s.reconcile(ctx, a); err != nil {
		s.d.Logger.Warn("payments: reconcile with the processor", "account", a.ID, "err", err)
	}
	now := s.now()
	var w Withdrawal
	err = s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		_, d, err := s.earnings(ctx, tx, a, now)
		if err != nil {
			return err
		}
		if d.Amount <= 0 {
			e := api.Conflict("payout_limited", "no payout can go yet: %s", d.Limit.Message).With("reason", d.Limit.Reason)
			if !d.Limit.Until.IsZero() {
				e = e.With("lifts_at", d.Limit.Until)
			}
			return e
		}
		w = Withdrawal{ID: store.NewID("wd"), AccountID: a.ID, AmountCents: d.Amount, Status: WithdrawalPending, CreatedAt: now}
		if _, err := tx.ExecContext(ctx, `INSERT INTO payment_withdrawals(id, account_id, workspace_id, amount_cents, status, created_at) VALUES (?,?,?,?,'pending',?)`,
			w.ID, a.ID, a.workspace, w.AmountCents, store.FormatTime(now)); err != nil {
			return fmt.Errorf("payments: withdraw: %w", err)
		}
		if err := post(ctx, tx, a.ID, a.workspace, now, move{kind: kindWithdraw, from: Available, to: Pending, cents: w.AmountCents, ref: w.ID}); err != nil {
			return err
		}
		return s.record(ctx, tx, pr, a.workspace, a.ProjectID, "payments.withdraw", "withdrawal", w.ID,
			fmt.Sprintf("withdrawal of %s requested", dollars(w.AmountCents)), map[string]any{"amountCents": w.AmountCents})
	})
	if err != nil {
		return WithdrawAnswer{}, err
	}
	s.sendPayout(ctx, a, w.ID, w.AmountCents)
	out := WithdrawAnswer{}
	err = s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		var err error
		out.Earnings, _, err = s.earnings(ctx, tx, a, s.now())
		return err
	})
	if err != nil {
		return out, err
	}
	out.Withdrawal, err = scanWithdrawal(s.d.DB.QueryRowContext(ctx, `SELECT `+withdrawalCols+` FROM payment_withdrawals WHERE id = ?`, w.ID))
	return out, err
}

// sendPayout asks the processor for a pending withdrawal's payout (again,
// with the same idempotency key, after a failure to hear back).
func (s *Service) sendPayout(ctx context.Context, a Account, id string, amount int64) {
	ref, err := s.proc.Payout(ctx, a.payoutRef, amount, id)
	if err != nil {
		s.d.Logger.Warn("payments: payout at the processor", "withdrawal", id, "err", err)
		s.d.DB.ExecContext(ctx, `UPDATE payment_withdrawals SET last_error = ? WHERE id = ?`, "processor: "+err.Error(), id)
		return
	}
	if _, err := s.d.DB.ExecContext(ctx, `UPDATE payment_withdrawals SET processor_ref = ?, last_error = '' WHERE id = ?`, ref, id); err != nil {
		s.d.Logger.Warn("payments: payout reference", "withdrawal", id, "err", err)
	}
}

// reconcile finishes what waits on the processor for an account: refunds
// not heard back, payouts not sent or not confirmed.
func (s *Service) reconcile(ctx context.Context, a Account) error {
	type pendingRefund struct {
		id, paymentRef string
		amount         int64
	}
	refunds, err := queryList(ctx, s.d.DB, func(r scanner) (pendingRefund, error) {
		var p pendingRefund
		return p, r.Scan(&p.id, &p.paymentRef, &p.amount)
	}, `SELECT r.id, p.processor_ref, r.amount_cents FROM payment_refunds r JOIN payment_payments p ON p.id = r.payment_id
		WHERE r.account_id = ? AND r.status = 'pending'`, a.ID)
	if err != nil {
		return err
	}
	var errs []error
	for _, r := range refunds {
		ref, err := s.proc.Refund(ctx, r.paymentRef, r.amount, r.id)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, s.completeRefund(ctx, r.id, ref))
	}
	ws, err := queryList(ctx, s.d.DB, scanWithdrawal, `SELECT `+withdrawalCols+` FROM payment_withdrawals WHERE account_id = ? AND status = 'pending'`, a.ID)
	if err != nil {
		return err
	}
	for _, w := range ws {
		if w.processorRef == "" {
			s.sendPayout(ctx, a, w.ID, w.AmountCents)
			continue
		}
		st, err := s.proc.PayoutStatus(ctx, w.processorRef)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if st == processor.PayoutPaid || st == processor.PayoutFailed {
			errs = append(errs, s.settleWithdrawal(ctx, w.ID, st))
		}
	}
	return errors.Join(errs...)
}

// settleWithdrawal applies the processor's confirmation of a payout: paid
// moves pending to withdrawn, failed back to available.
func (s *Service) settleWithdrawal(ctx context.Context, id string, st processor.PayoutStatus) error {
	now := s.now()
	return s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		var account, workspace, status, project string
		var amount int64
		err := tx.QueryRowContext(ctx, `SELECT w.account_id, w.workspace_id, w.status, w.amount_cents, a.project_id FROM payment_withdrawals w
			JOIN payment_accounts a ON a.id = w.account_id WHERE w.id = ?`, id).Scan(&account, &workspace, &status, &amount, &project)
		if err != nil {
			return fmt.Errorf("payments: withdrawal %s: %w", id, err)
		}
		if status != WithdrawalPending {
			return nil
		}
		m := move{kind: kindWithdrawPaid, from: Pending, to: Withdrawn, cents: amount, ref: id}
		next, summary := WithdrawalCompleted, fmt.Sprintf("withdrawal of %s confirmed paid by the processor", dollars(amount))
		if st == processor.PayoutFailed {
			m = move{kind: kindWithdrawFailed, from: Pending, to: Available, cents: amount, ref: id}
			next, summary = WithdrawalFailed, fmt.Sprintf("withdrawal of %s failed at the processor; returned to available", dollars(amount))
		}
		if err := post(ctx, tx, account, workspace, now, m); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE payment_withdrawals SET status = ?, settled_at = ? WHERE id = ?`, next, store.FormatTime(now), id); err != nil {
			return fmt.Errorf("payments: withdrawal: %w", err)
		}
		return s.record(ctx, tx, nil, workspace, project, "payments.withdrawal_"+next, "withdrawal", id, summary, map[string]any{"amountCents": amount})
	})
}
