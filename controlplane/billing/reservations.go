package billing

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/svcplatform/platform/controlplane/store"
)

// Reservations: hold an estimate (Reserve), charge the exact cost and give
// back the rest (Settle), give everything back (Release), and release what
// a lost request left open (SettleExpired).

// ReserveRequest asks to hold an estimate before doing paid work.
type ReserveRequest struct {
	Workspace string
	// Project the spend is attributed to ("" for none).
	Project string
	// Purpose is one of the Purpose constants.
	Purpose string
	// Ref is the caller's reference (a request id), kept on the entries.
	Ref string
	// Amount is the estimate to hold.
	Amount Micros
	// MaxPerRequest is the most one request may reserve; 0 takes the plan's
	// per-request reservation for AI purposes and no cap for storage.
	MaxPerRequest Micros
}

// Reservation is money held for one request.
type Reservation struct {
	ID        string    `json:"id"`
	Amount    Micros    `json:"amountMicros"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// Reserve holds r.Amount: from the purpose's included credit first, then
// from the Balance. It refuses, holding nothing, with ErrRequestTooLarge
// (above the per-request cap), ErrCreditsExhausted (no credit and no
// Balance left), ErrCreditsInsufficient (less left than the estimate) or
// ErrSpendLimit (the Balance part would take the month past the spending
// limit), checked in that order.
func (l *Ledger) Reserve(ctx context.Context, r ReserveRequest) (Reservation, error) {
	pool, err := creditPool(r.Purpose)
	if err != nil {
		return Reservation{}, err
	}
	if err := checkAmount("amount", r.Amount); err != nil {
		return Reservation{}, err
	}
	if l.hot != nil {
		if r.Workspace == "" {
			return Reservation{}, ErrUnknownWorkspace.detail("no workspace given")
		}
		out, err := l.hot.reserve(ctx, r, pool)
		if err != nil {
			l.m.reservations.WithLabelValues("refused").Inc()
			if errors.Is(err, ErrRequestTooLarge) {
				return Reservation{}, err
			}
			return Reservation{}, fmt.Errorf("billing: reserve: %w", err)
		}
		l.m.reservations.WithLabelValues("reserved").Inc()
		return out, nil
	}
	_, terms, err := l.terms(ctx, r.Workspace)
	if err != nil {
		return Reservation{}, err
	}
	perRequest := r.MaxPerRequest
	if perRequest == 0 && pool == poolAICredit {
		perRequest = terms.MaxPerRequest
	}
	if perRequest > 0 && r.Amount > perRequest {
		l.m.reservations.WithLabelValues("refused").Inc()
		return Reservation{}, ErrRequestTooLarge.detail("estimate %s dollars, at most %s per request", r.Amount.USD(), perRequest.USD())
	}
	var out Reservation
	err = l.tx(ctx, r.Workspace, func(t *txn) error {
		if err := t.ensure(); err != nil {
			return err
		}
		month := monthOf(t.now)
		a, err := t.account()
		if err != nil {
			return err
		}
		cm, err := t.month(month, pool)
		if err != nil {
			return err
		}
		creditLeft := max0(terms.credit(pool) - cm.used - cm.reserved)
		available := a.free()
		fromCredit := min(creditLeft, r.Amount)
		fromBalance := r.Amount - fromCredit
		if fromBalance > 0 {
			switch {
			case creditLeft == 0 && available <= 0:
				return ErrCreditsExhausted
			case fromBalance > available:
				return ErrCreditsInsufficient.detail("estimate %s dollars, %s left", r.Amount.USD(), (creditLeft + max0(available)).USD())
			}
			if a.limit != nil {
				bm, err := t.month(month, poolBalance)
				if err != nil {
					return err
				}
				if bm.used+bm.reserved+fromBalance > *a.limit {
					return ErrSpendLimit.detail("limit %s dollars, %s spent or held this month, this request needs %s more",
						a.limit.USD(), (bm.used + bm.reserved).USD(), fromBalance.USD())
				}
			}
		}
		out = Reservation{ID: store.NewID("rsv"), Amount: r.Amount, ExpiresAt: t.now.Add(l.cfg.ReservationTTL)}
		if _, err := t.tx.ExecContext(ctx, `INSERT INTO billing_reservations
			(id, workspace_id, project_id, purpose, ref, month, credit_pool, amount, held_credit, held_balance, state, created_at, expires_at)
			VALUES (?,?,?,?,?,?,?,?,?,?,'open',?,?)`,
			out.ID, r.Workspace, r.Project, r.Purpose, r.Ref, month, pool, int64(r.Amount), int64(fromCredit), int64(fromBalance),
			store.FormatTime(t.now), store.FormatTime(out.ExpiresAt)); err != nil {
			return fmt.Errorf("billing: reserve: %w", err)
		}
		base := entry{month: month, kind: kindHold, project: r.Project, purpose: r.Purpose, ref: r.Ref, reservation: out.ID}
		if err := t.entry(with(base, pool, fromCredit)); err != nil {
			return err
		}
		return t.entry(with(base, poolBalance, fromBalance))
	})
	if err != nil {
		l.m.reservations.WithLabelValues("refused").Inc()
		return Reservation{}, fmt.Errorf("billing: reserve: %w", err)
	}
	l.m.reservations.WithLabelValues("reserved").Inc()
	return out, nil
}

func with(e entry, pool string, amount Micros) entry {
	e.pool, e.amount = pool, amount
	return e
}

func max0(m Micros) Micros {
	if m < 0 {
		return 0
	}
	return m
}

// Settle charges exactly actual for reservation id and releases the rest of
// what it held. actual is paid from what the reservation held (credit part
// first); above that, from the credit pool's left-over, then from the
// Balance's free money (what is used above an estimate was delivered, so
// the spending limit, which bounds reservations, does not stop it), and
// what the Balance lacks is owed: recorded on the reservation
// (uncollected) and the workspace (owed), counted against the Balance and
// paid by the next load. Nothing of actual is dropped. Settling again is a
// no-op; settling a reservation that SettleExpired already released
// charges actual the same way. Settle after Release is
// ErrReservationClosed.
func (l *Ledger) Settle(ctx context.Context, reservationID string, actual Micros) error {
	if actual < 0 || actual > MaxAmount {
		return ErrInvalidAmount.detail("actual cost must be from 0 to %s dollars, not %d micro-dollars", MaxAmount.USD(), actual)
	}
	if l.hot != nil {
		result, charged, err := l.hot.settle(ctx, reservationID, actual)
		if !errors.Is(err, errNotHot) {
			if err != nil {
				return fmt.Errorf("billing: settle: %w", err)
			}
			charged()
			l.m.reservations.WithLabelValues(result).Inc()
			return nil
		}
		return l.cold(ctx, reservationID, func(string) error { return l.settle(ctx, reservationID, actual) })
	}
	return l.settle(ctx, reservationID, actual)
}

// cold runs fn on the stored rows for a reservation the hot path does not
// hold (made before a restart, or on another replica): the hot writer's
// queue is committed first, and fn runs with the reservation's workspace
// held exclusively, so no hot decision for it interleaves.
func (l *Ledger) cold(ctx context.Context, reservationID string, fn func(ws string) error) error {
	if err := l.hot.w.flush(); err != nil {
		return err
	}
	ws, err := l.workspaceOf(ctx, reservationID)
	if err != nil {
		return err
	}
	return l.hot.exclusive(ws, func() error { return fn(ws) })
}

// settle is Settle as one transaction.
func (l *Ledger) settle(ctx context.Context, reservationID string, actual Micros) error {
	ws, err := l.workspaceOf(ctx, reservationID)
	if err != nil {
		return err
	}
	_, terms, err := l.terms(ctx, ws)
	if err != nil {
		return err
	}
	result := ""
	done := func() {}
	err = l.tx(ctx, ws, func(t *txn) error {
		r, err := t.reservation(reservationID)
		if err != nil {
			return err
		}
		base := entry{month: r.month, project: r.project, purpose: r.purpose, ref: r.ref, reservation: r.id}
		var fromCredit, fromBalance Micros
		switch r.state {
		case "settled":
			return nil
		case "released":
			return ErrReservationClosed.detail("%s", r.id)
		case "open":
			base.kind = kindRelease
			if err := t.entry(with(base, r.creditPool, r.heldCredit)); err != nil {
				return err
			}
			if err := t.entry(with(base, poolBalance, r.heldBalance)); err != nil {
				return err
			}
			fromCredit = min(actual, r.heldCredit)
			fromBalance = min(actual-fromCredit, r.heldBalance)
			base.kind = kindCharge
			if err := t.entry(with(base, r.creditPool, fromCredit)); err != nil {
				return err
			}
			if err := t.entry(with(base, poolBalance, fromBalance)); err != nil {
				return err
			}
			result = "settled"
		case "expired":
			result = "settled_late"
		}
		// Above what was held: the credit left, then the Balance's free
		// money; the rest is owed.
		c, b, err := t.excess(r.month, r.creditPool, terms.credit(r.creditPool), actual-fromCredit-fromBalance)
		if err != nil {
			return err
		}
		base.kind = kindCharge
		if err := t.entry(with(base, r.creditPool, c)); err != nil {
			return err
		}
		if err := t.entry(with(base, poolBalance, b)); err != nil {
			return err
		}
		fromCredit, fromBalance = fromCredit+c, fromBalance+b
		done = func() { l.m.charged(r.purpose, r.creditPool, fromCredit, fromBalance) }
		return t.closeReservation(r.id, "settled", fromCredit+fromBalance, actual-fromCredit-fromBalance)
	})
	if err != nil {
		return fmt.Errorf("billing: settle: %w", err)
	}
	done()
	if result != "" {
		l.m.reservations.WithLabelValues(result).Inc()
	}
	return nil
}

// excess splits amount, used above what a reservation held, into what is
// charged now from the credit pool's left-over in month and from the
// Balance's free money; the caller records the rest as owed.
func (t *txn) excess(month, pool string, credit, amount Micros) (fromCredit, fromBalance Micros, err error) {
	return t.split(month, pool, credit, amount, false)
}

// available splits amount into what can be charged now from the credit
// pool's left-over in month and from the Balance's free money within the
// spending limit; what exceeds both is not charged.
func (t *txn) available(month, pool string, credit, amount Micros) (fromCredit, fromBalance Micros, err error) {
	return t.split(month, pool, credit, amount, true)
}

func (t *txn) split(month, pool string, credit, amount Micros, withinLimit bool) (fromCredit, fromBalance Micros, err error) {
	if amount <= 0 {
		return 0, 0, nil
	}
	cm, err := t.month(month, pool)
	if err != nil {
		return 0, 0, err
	}
	fromCredit = min(amount, max0(credit-cm.used-cm.reserved))
	a, err := t.account()
	if err != nil {
		return 0, 0, err
	}
	room := max0(a.free())
	if a.limit != nil && withinLimit {
		bm, err := t.month(month, poolBalance)
		if err != nil {
			return 0, 0, err
		}
		room = min(room, max0(*a.limit-bm.used-bm.reserved))
	}
	fromBalance = min(amount-fromCredit, room)
	return fromCredit, fromBalance, nil
}

func (l *Ledger) workspaceOf(ctx context.Context, reservationID string) (string, error) {
	var ws string
	err := l.db.QueryRowContext(ctx, `SELECT workspace_id FROM billing_reservations WHERE id = ?`, reservationID).Scan(&ws)
	if err == sql.ErrNoRows {
		return "", ErrReservationNotFound.detail("%s", reservationID)
	}
	if err != nil {
		return "", fmt.Errorf("billing: reservation %s: %w", reservationID, err)
	}
	return ws, nil
}

// Release gives back everything reservation id holds and charges nothing.
// Releasing a reservation that is already closed (settled, released or
// expired) is a no-op.
func (l *Ledger) Release(ctx context.Context, reservationID string) error {
	if l.hot != nil {
		err := l.hot.release(ctx, reservationID)
		if !errors.Is(err, errNotHot) {
			if err != nil {
				return fmt.Errorf("billing: release: %w", err)
			}
			l.m.reservations.WithLabelValues("released").Inc()
			return nil
		}
		return l.cold(ctx, reservationID, func(ws string) error { return l.release(ctx, ws, reservationID) })
	}
	ws, err := l.workspaceOf(ctx, reservationID)
	if err != nil {
		return err
	}
	return l.release(ctx, ws, reservationID)
}

// release is Release as one transaction.
func (l *Ledger) release(ctx context.Context, ws, reservationID string) error {
	released := false
	err := l.tx(ctx, ws, func(t *txn) error {
		var err error
		released, err = t.release(reservationID, "released")
		return err
	})
	if err != nil {
		return fmt.Errorf("billing: release: %w", err)
	}
	if released {
		l.m.reservations.WithLabelValues("released").Inc()
	}
	return nil
}

// release closes an open reservation as state, giving back its holds.
func (t *txn) release(id, state string) (bool, error) {
	r, err := t.reservation(id)
	if err != nil || r.state != "open" {
		return false, err
	}
	base := entry{month: r.month, kind: kindRelease, project: r.project, purpose: r.purpose, ref: r.ref, reservation: r.id}
	if err := t.entry(with(base, r.creditPool, r.heldCredit)); err != nil {
		return false, err
	}
	if err := t.entry(with(base, poolBalance, r.heldBalance)); err != nil {
		return false, err
	}
	return true, t.closeReservation(r.id, state, 0, 0)
}

// SettleExpired releases every open reservation past its expiry (its
// request died without settling) and returns how many.
func (l *Ledger) SettleExpired(ctx context.Context) (int, error) {
	if err := l.Flush(); err != nil {
		return 0, err
	}
	rows, err := l.db.QueryContext(ctx, `SELECT id, workspace_id FROM billing_reservations WHERE state = 'open' AND expires_at <= ? ORDER BY expires_at LIMIT 1000`,
		store.FormatTime(l.clk.Now()))
	if err != nil {
		return 0, fmt.Errorf("billing: expired reservations: %w", err)
	}
	due, err := store.AppendRows(nil, rows, func(sc store.RowScanner) ([2]string, error) {
		var d [2]string
		err := sc.Scan(&d[0], &d[1])
		return d, err
	})
	if err != nil {
		return 0, fmt.Errorf("billing: expired reservations: %w", err)
	}
	n := 0
	for _, d := range due {
		var done bool
		err := l.exclusive(d[1], func() error {
			return l.tx(ctx, d[1], func(t *txn) error {
				r, err := t.reservation(d[0])
				if err != nil || r.state != "open" || r.expiresAt.After(t.now) {
					return err
				}
				done, err = t.release(d[0], "expired")
				return err
			})
		})
		if err != nil {
			return n, fmt.Errorf("billing: settle expired %s: %w", d[0], err)
		}
		if done {
			n++
			l.m.reservations.WithLabelValues("expired").Inc()
		}
	}
	return n, nil
}
