package billing

import (
	"context"
	"errors"

	"github.com/svcplatform/platform/controlplane/store"
)

// Reservations on the hot path: Reserve, Settle and Release decided on a
// workspace's in-memory copy, with the entries handed to the writer.

// reserve is Reserve on the copy. A refusal is decided again on a fresh
// copy (after a flush), so money loaded by another process (the operator's
// balance command) counts and every refusal is exact.
func (h *hot) reserve(ctx context.Context, r ReserveRequest, pool string) (Reservation, error) {
	w := h.ws(r.Workspace)
	defer w.mu.Unlock()
	for attempt := 0; ; attempt++ {
		terms, err := h.termsOf(ctx, r.Workspace, w)
		if err != nil {
			return Reservation{}, err
		}
		perRequest := r.MaxPerRequest
		if perRequest == 0 && pool == poolAICredit {
			perRequest = terms.MaxPerRequest
		}
		if perRequest > 0 && r.Amount > perRequest {
			return Reservation{}, ErrRequestTooLarge.detail("estimate %s dollars, at most %s per request", r.Amount.USD(), perRequest.USD())
		}
		if !w.loaded {
			if err := h.load(ctx, r.Workspace, w); err != nil {
				return Reservation{}, err
			}
		}
		res, err := h.tryReserve(ctx, r, pool, terms, w)
		if err == nil {
			return res, nil
		}
		refused := errors.Is(err, ErrCreditsExhausted) || errors.Is(err, ErrCreditsInsufficient) || errors.Is(err, ErrSpendLimit)
		if !refused || attempt > 0 {
			if !refused {
				h.unload(w) // the copy may be ahead of what is stored
			}
			return res, err
		}
		// Decide again on what is stored now, with the plan as it is now
		// (an upgrade this instant, a load by another process).
		h.unload(w)
		w.termsOK = false
	}
}

func (h *hot) tryReserve(ctx context.Context, r ReserveRequest, pool string, terms Terms, w *hotWS) (Reservation, error) {
	now := h.l.clk.Now()
	month := monthOf(now)
	cm, err := h.month(ctx, r.Workspace, w, month, pool)
	if err != nil {
		return Reservation{}, err
	}
	a := w.acct
	creditLeft := max0(terms.credit(pool) - cm.used - cm.reserved)
	available := a.free()
	fromCredit := min(creditLeft, r.Amount)
	fromBalance := r.Amount - fromCredit
	if fromBalance > 0 {
		switch {
		case creditLeft == 0 && available <= 0:
			return Reservation{}, ErrCreditsExhausted
		case fromBalance > available:
			return Reservation{}, ErrCreditsInsufficient.detail("estimate %s dollars, %s left", r.Amount.USD(), (creditLeft + max0(available)).USD())
		}
		if a.limit != nil {
			bm, err := h.month(ctx, r.Workspace, w, month, poolBalance)
			if err != nil {
				return Reservation{}, err
			}
			if bm.used+bm.reserved+fromBalance > *a.limit {
				return Reservation{}, ErrSpendLimit.detail("limit %s dollars, %s spent or held this month, this request needs %s more",
					a.limit.USD(), (bm.used + bm.reserved).USD(), fromBalance.USD())
			}
		}
	}
	out := Reservation{ID: store.NewID("rsv"), Amount: r.Amount, ExpiresAt: now.Add(h.l.cfg.ReservationTTL)}
	res := &reservation{id: out.ID, ws: r.Workspace, project: r.Project, purpose: r.Purpose, ref: r.Ref, month: month, creditPool: pool,
		state: "open", amount: r.Amount, heldCredit: fromCredit, heldBalance: fromBalance, expiresAt: out.ExpiresAt}
	base := entry{month: month, kind: kindHold, project: r.Project, purpose: r.Purpose, ref: r.Ref, reservation: out.ID}
	entries := []entry{with(base, pool, fromCredit), with(base, poolBalance, fromBalance)}
	for _, e := range entries {
		if err := h.apply(ctx, r.Workspace, w, e); err != nil {
			return Reservation{}, err
		}
	}
	w.open[out.ID] = res
	h.mu.Lock()
	h.idx[out.ID] = r.Workspace
	h.mu.Unlock()
	row := *res
	return out, h.w.enqueue(op{ws: r.Workspace, now: now, res: &row, entries: entries})
}

// errNotHot: the reservation is not an open one of a loaded copy; the
// caller takes the synchronous path.
var errNotHot = errors.New("billing: reservation not on the hot path")

// owner returns the locked copy holding open reservation id.
func (h *hot) owner(id string) (*hotWS, string, *reservation, bool) {
	h.mu.Lock()
	ws, ok := h.idx[id]
	h.mu.Unlock()
	if !ok {
		return nil, "", nil, false
	}
	w := h.ws(ws)
	if r := w.open[id]; w.loaded && r != nil {
		return w, ws, r, true
	}
	w.mu.Unlock()
	return nil, "", nil, false
}

// settle is Settle of an open reservation on the copy, or errNotHot.
func (h *hot) settle(ctx context.Context, id string, actual Micros) (result string, charged func(), err error) {
	w, ws, r, ok := h.owner(id)
	if !ok {
		return "", nil, errNotHot
	}
	defer w.mu.Unlock()
	defer func() {
		if err != nil {
			h.unload(w) // the copy may be ahead of what was queued
		}
	}()
	now := h.l.clk.Now()
	base := entry{month: r.month, project: r.project, purpose: r.purpose, ref: r.ref, reservation: r.id}
	base.kind = kindRelease
	entries := []entry{with(base, r.creditPool, r.heldCredit), with(base, poolBalance, r.heldBalance)}
	fromCredit := min(actual, r.heldCredit)
	fromBalance := min(actual-fromCredit, r.heldBalance)
	base.kind = kindCharge
	entries = append(entries, with(base, r.creditPool, fromCredit), with(base, poolBalance, fromBalance))
	for _, e := range entries {
		if err := h.apply(ctx, ws, w, e); err != nil {
			return "", nil, err
		}
	}
	if excess := actual - fromCredit - fromBalance; excess > 0 {
		// Above what was held: the credit left, then the Balance's free
		// money (txn.excess); the rest is owed.
		terms, err := h.termsOf(ctx, ws, w)
		if err != nil {
			return "", nil, err
		}
		cm, err := h.month(ctx, ws, w, r.month, r.creditPool)
		if err != nil {
			return "", nil, err
		}
		c := min(excess, max0(terms.credit(r.creditPool)-cm.used-cm.reserved))
		b := min(excess-c, max0(w.acct.free()))
		more := []entry{with(base, r.creditPool, c), with(base, poolBalance, b)}
		for _, e := range more {
			if err := h.apply(ctx, ws, w, e); err != nil {
				return "", nil, err
			}
		}
		entries = append(entries, more...)
		fromCredit, fromBalance = fromCredit+c, fromBalance+b
	}
	h.forget(w, id)
	total, uncollected := fromCredit+fromBalance, actual-fromCredit-fromBalance
	w.acct.owed += uncollected
	purpose, pool := r.purpose, r.creditPool
	charged = func() { h.l.m.charged(purpose, pool, fromCredit, fromBalance) }
	return "settled", charged, h.w.enqueue(op{ws: ws, now: now, entries: entries,
		close: &closing{id: id, state: "settled", charged: total, uncollected: uncollected}})
}

// release is Release of an open reservation on the copy, or errNotHot.
func (h *hot) release(ctx context.Context, id string) (err error) {
	w, ws, r, ok := h.owner(id)
	if !ok {
		return errNotHot
	}
	defer w.mu.Unlock()
	defer func() {
		if err != nil {
			h.unload(w) // the copy may be ahead of what was queued
		}
	}()
	base := entry{month: r.month, kind: kindRelease, project: r.project, purpose: r.purpose, ref: r.ref, reservation: r.id}
	entries := []entry{with(base, r.creditPool, r.heldCredit), with(base, poolBalance, r.heldBalance)}
	for _, e := range entries {
		if err := h.apply(ctx, ws, w, e); err != nil {
			return err
		}
	}
	h.forget(w, id)
	return h.w.enqueue(op{ws: ws, now: h.l.clk.Now(), entries: entries, close: &closing{id: id, state: "released"}})
}

func (h *hot) forget(w *hotWS, id string) {
	delete(w.open, id)
	h.mu.Lock()
	delete(h.idx, id)
	h.mu.Unlock()
}
