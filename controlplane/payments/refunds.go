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

// Refund returns all (amount nil) or part of a payment to its buyer.
// Earnings drop by the same share of net as the refund is of the payment;
// the rest of the refund is the fee's share, returned by the platform. The
// refund is held as pending while the processor is asked, so two refunds
// can never together exceed the payment.
func (s *Service) Refund(ctx context.Context, pr *auth.Principal, accountID, paymentID string, amount *int64) (Refund, error) {
	a, err := s.account(ctx, pr, accountID, auth.OpPaymentsPayout)
	if err != nil {
		return Refund{}, err
	}
	var r Refund
	var ref string
	err = s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		p, err := getPayment(ctx, tx, `id = ? AND account_id = ?`, paymentID, a.ID)
		if err != nil {
			return err
		}
		switch p.Status {
		case PaymentDisputed, PaymentDisputeLost:
			return api.Conflict("payment_disputed", "payment %s is disputed: it cannot be refunded while the dispute decides it", p.ID)
		case PaymentRefunded:
			return api.Conflict("already_refunded", "payment %s is refunded in full already", p.ID)
		}
		var pending int64
		if err := tx.QueryRowContext(ctx, `SELECT coalesce(sum(amount_cents),0) FROM payment_refunds WHERE payment_id = ? AND status = 'pending'`, p.ID).Scan(&pending); err != nil {
			return fmt.Errorf("payments: refund: %w", err)
		}
		left := p.AmountCents - p.RefundedCents - pending
		want := left
		if amount != nil {
			want = *amount
		}
		if want < 1 || want > left {
			return api.E(api.KindInvalid, "refund_out_of_range", "amountCents must be from 1 to %d, what is left to refund of payment %s", left, p.ID)
		}
		r = Refund{ID: store.NewID("re"), PaymentID: p.ID, AmountCents: want, Status: "pending", CreatedAt: s.now(), accountID: a.ID}
		ref = p.processorRef
		_, err = tx.ExecContext(ctx, `INSERT INTO payment_refunds(id, payment_id, account_id, workspace_id, amount_cents, status, created_at) VALUES (?,?,?,?,?,'pending',?)`,
			r.ID, r.PaymentID, a.ID, a.workspace, r.AmountCents, store.FormatTime(r.CreatedAt))
		if err != nil {
			return fmt.Errorf("payments: refund: %w", err)
		}
		return s.record(ctx, tx, pr, a.workspace, a.ProjectID, "payments.refund_requested", "payment", p.ID,
			fmt.Sprintf("refund of %s of payment %s requested", dollars(want), p.ID), map[string]any{"refund": r.ID, "amountCents": want})
	})
	if err != nil {
		return Refund{}, err
	}
	procRef, err := s.proc.Refund(ctx, ref, r.AmountCents, r.ID)
	if err != nil {
		if !errors.Is(err, processor.ErrNotFound) {
			// Unknown outcome: stays pending, retried with the same
			// idempotency key by reconcile.
			s.d.Logger.Warn("payments: refund at the processor", "refund", r.ID, "err", err)
			return r, api.E(api.KindBadGateway, "processor_error", "the processor did not confirm refund %s yet; it stays pending and is retried", r.ID).With("refund", r)
		}
		if _, ferr := s.d.DB.ExecContext(ctx, `UPDATE payment_refunds SET status = 'failed', last_error = ?, settled_at = ? WHERE id = ?`,
			err.Error(), store.FormatTime(s.now()), r.ID); ferr != nil {
			return r, fmt.Errorf("payments: refund: %w", ferr)
		}
		return r, api.Conflict("refund_refused", "the processor refused refund %s: %v", r.ID, err)
	}
	if err := s.completeRefund(ctx, r.ID, procRef); err != nil {
		return r, err
	}
	return s.getRefund(ctx, r.ID)
}

func (s *Service) getRefund(ctx context.Context, id string) (Refund, error) {
	var r Refund
	var created string
	err := s.d.DB.QueryRowContext(ctx, `SELECT id, payment_id, account_id, amount_cents, status, processor_ref, created_at FROM payment_refunds WHERE id = ?`, id).
		Scan(&r.ID, &r.PaymentID, &r.accountID, &r.AmountCents, &r.Status, &r.processorRef, &created)
	r.CreatedAt = store.ParseTime(created)
	if err != nil {
		return r, fmt.Errorf("payments: refund %s: %w", id, err)
	}
	return r, nil
}

// completeRefund applies a refund the processor confirmed: the net share
// and fee share to refunded in the ledger, the payment's refunded total
// and status, the audit row and payment.refunded, in one transaction.
// Completing it again does nothing.
func (s *Service) completeRefund(ctx context.Context, refundID, procRef string) error {
	now := s.now()
	return s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		var status string
		var amt int64
		var paymentID string
		if err := tx.QueryRowContext(ctx, `SELECT status, amount_cents, payment_id FROM payment_refunds WHERE id = ?`, refundID).Scan(&status, &amt, &paymentID); err != nil {
			return fmt.Errorf("payments: refund %s: %w", refundID, err)
		}
		if status != "pending" {
			return nil
		}
		p, err := getPayment(ctx, tx, `id = ?`, paymentID)
		if err != nil {
			return err
		}
		after := p.RefundedCents + amt
		netPart := netShare(p.NetCents, p.AmountCents, after) - netShare(p.NetCents, p.AmountCents, p.RefundedCents)
		pb, err := paymentBalances(ctx, tx, p.ID)
		if err != nil {
			return err
		}
		fromHeld := min(netPart, max(pb[Held], 0))
		err = post(ctx, tx, p.AccountID, p.workspace, now,
			move{kind: kindRefund, from: Held, to: Refunded, cents: fromHeld, payment: p.ID, ref: refundID},
			move{kind: kindRefund, from: Available, to: Refunded, cents: netPart - fromHeld, payment: p.ID, ref: refundID},
			move{kind: kindRefundFee, from: Fees, to: Refunded, cents: amt - netPart, payment: p.ID, ref: refundID})
		if err != nil {
			return err
		}
		p.RefundedCents = after
		p.Status = PaymentPartiallyRefunded
		if after == p.AmountCents {
			p.Status = PaymentRefunded
		}
		if _, err := tx.ExecContext(ctx, `UPDATE payment_payments SET refunded_cents = ?, status = ? WHERE id = ?`, p.RefundedCents, p.Status, p.ID); err != nil {
			return fmt.Errorf("payments: refund: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE payment_refunds SET status = 'succeeded', processor_ref = ?, settled_at = ? WHERE id = ?`,
			procRef, store.FormatTime(now), refundID); err != nil {
			return fmt.Errorf("payments: refund: %w", err)
		}
		if err := s.record(ctx, tx, nil, p.workspace, p.ProjectID, "payments.refund", "payment", p.ID,
			fmt.Sprintf("refunded %s of payment %s (earnings -%s)", dollars(amt), p.ID, dollars(netPart)),
			map[string]any{"refund": refundID, "amountCents": amt, "netCents": netPart}); err != nil {
			return err
		}
		return s.emit(ctx, tx, p.AccountID, EventRefunded, &p)
	})
}

// syncDispute brings a payment's dispute in line with the processor's:
// opened holds the payment's remaining net back, won returns it, lost
// gives it up.
func (s *Service) syncDispute(ctx context.Context, paymentID string) error {
	p, err := getPayment(ctx, s.d.DB, `id = ?`, paymentID)
	if err != nil {
		return err
	}
	st, err := s.proc.Dispute(ctx, p.processorRef)
	if err != nil {
		return fmt.Errorf("payments: dispute of %s: %w", p.ID, err)
	}
	if st != processor.DisputeNone && p.DisputeStatus == "" {
		if err := s.applyDispute(ctx, p.ID, processor.DisputeOpen); err != nil {
			return err
		}
	}
	if st == processor.DisputeWon || st == processor.DisputeLost {
		return s.applyDispute(ctx, p.ID, st)
	}
	return nil
}

func (s *Service) applyDispute(ctx context.Context, paymentID string, to processor.DisputeStatus) error {
	now := s.now()
	return s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		p, err := getPayment(ctx, tx, `id = ?`, paymentID)
		if err != nil {
			return err
		}
		pb, err := paymentBalances(ctx, tx, p.ID)
		if err != nil {
			return err
		}
		var moves []move
		var event, summary string
		switch {
		case to == processor.DisputeOpen && p.DisputeStatus == "":
			moves = []move{
				{kind: kindDispute, from: Held, to: Disputed, cents: max(pb[Held], 0), payment: p.ID},
				{kind: kindDispute, from: Available, to: Disputed, cents: max(pb[Available], 0), payment: p.ID},
			}
			p.Status, p.DisputeStatus, event = PaymentDisputed, "open", EventDisputed
			summary = fmt.Sprintf("payment %s disputed: %s of earnings held back", p.ID, dollars(max(pb[Held], 0)+max(pb[Available], 0)))
			if _, err := tx.ExecContext(ctx, `UPDATE payment_payments SET disputed_at = ? WHERE id = ?`, store.FormatTime(now), p.ID); err != nil {
				return fmt.Errorf("payments: dispute: %w", err)
			}
		case to == processor.DisputeWon && p.DisputeStatus == "open":
			back := Available
			var released int
			if err := tx.QueryRowContext(ctx, `SELECT released FROM payment_payments WHERE id = ?`, p.ID).Scan(&released); err != nil {
				return fmt.Errorf("payments: dispute: %w", err)
			}
			if released == 0 {
				back = Held // released with the payment's hold
			}
			moves = []move{{kind: kindDisputeWon, from: Disputed, to: back, cents: pb[Disputed], payment: p.ID}}
			p.Status, p.DisputeStatus, event = PaymentSucceeded, "won", EventDisputeWon
			if p.RefundedCents > 0 {
				p.Status = PaymentPartiallyRefunded
			}
			summary = fmt.Sprintf("dispute of payment %s won: %s returned to earnings", p.ID, dollars(pb[Disputed]))
		case to == processor.DisputeLost && p.DisputeStatus == "open":
			moves = []move{{kind: kindDisputeLost, from: Disputed, to: Lost, cents: pb[Disputed], payment: p.ID}}
			p.Status, p.DisputeStatus = PaymentDisputeLost, "lost"
			summary = fmt.Sprintf("dispute of payment %s lost: %s of earnings lost", p.ID, dollars(pb[Disputed]))
		default:
			return nil // already there
		}
		if err := post(ctx, tx, p.AccountID, p.workspace, now, moves...); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE payment_payments SET status = ?, dispute_status = ? WHERE id = ?`, p.Status, p.DisputeStatus, p.ID); err != nil {
			return fmt.Errorf("payments: dispute: %w", err)
		}
		if err := s.record(ctx, tx, nil, p.workspace, p.ProjectID, "payments.dispute_"+p.DisputeStatus, "payment", p.ID, summary, nil); err != nil {
			return err
		}
		if event == "" {
			return nil
		}
		return s.emit(ctx, tx, p.AccountID, event, &p)
	})
}
