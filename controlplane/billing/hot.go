package billing

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/svcplatform/platform/controlplane/store"
)

// The hot path: on SQLite (one process owns the database) Reserve, Settle
// and Release decide in memory, against a per-workspace copy of the
// balance rows, and hand the ledger entries to one writer that commits
// them in batches, off the caller's path. Each movement is still an entry
// written in the same transaction as the rows it changes; only the commit
// happens later, grouped with the other requests' commits. See README.md
// "Hot path" for what a crash can lose and why no money is made or lost.
//
// This file holds the per-workspace copies (load, plans, apply, check);
// hot_reserve.go decides reservations on them, hot_writer.go queues and
// batches the commits, and hot_sql.go writes a batch.

// hot is the in-memory side of a Ledger on SQLite.
type hot struct {
	l *Ledger
	w *writer

	// Plans are kept per workspace while Run listens for plan changes on
	// PlanChannel (sent by accounts when it commits one); otherwise they
	// are read every time.
	noTerms atomic.Bool // not listening: read the plan every time

	mu  sync.Mutex
	wss map[string]*hotWS
	idx map[string]string // open reservation id -> workspace
}

// hotWS is one workspace's copy of its balance rows and open reservations.
// Its mutex orders every decision about the workspace; a copy is correct
// while loaded: every change to the workspace's rows since the load went
// through it, or through an exclusive operation that unloaded it.
type hotWS struct {
	mu     sync.Mutex
	dirty  atomic.Bool // a movement failed to commit: reload before use
	loaded bool
	floor  string // the oldest month loaded; rows of later months not in months are zero
	acct   account
	months map[monthKey]*monthRow
	open   map[string]*reservation

	terms      Terms
	termsOK    bool
	termsStale atomic.Bool // the plan changed: read it again
}

type monthKey struct{ month, pool string }

func newHot(l *Ledger) *hot {
	h := &hot{l: l, w: newWriter(l), wss: map[string]*hotWS{}, idx: map[string]string{}}
	h.noTerms.Store(true)
	return h
}

// listen keeps workspaces' plans with their copies while it receives plan
// changes, until ctx ends; then plans are read every time again. A plan
// that cannot be listened for is read every time too.
func (h *hot) listen(ctx context.Context) error {
	ch, err := h.l.db.Notifier().Listen(ctx, PlanChannel)
	if err != nil {
		h.l.log.Warn("billing: plan changes not received; reading plans every time", "err", err)
		return nil
	}
	// A plan read before the subscription may have changed since.
	h.planChanged("")
	h.noTerms.Store(false)
	for ws := range ch {
		h.planChanged(ws)
	}
	h.noTerms.Store(true)
	return nil
}

// planChanged marks workspace ws's kept plan (every one for "") to be
// read again.
func (h *hot) planChanged(ws string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for id, w := range h.wss {
		if ws == "" || id == ws {
			w.termsStale.Store(true)
		}
	}
}

// PlanChannel is the store notification channel on which accounts
// announces a workspace's plan change (payload: the workspace id).
const PlanChannel = "workspace_plans"

// termsOf returns ws's terms, from w's copy unless the plan changed.
func (h *hot) termsOf(ctx context.Context, ws string, w *hotWS) (Terms, error) {
	if w.termsStale.Swap(false) || h.noTerms.Load() {
		w.termsOK = false
	}
	if w.termsOK {
		return w.terms, nil
	}
	_, t, err := h.l.terms(ctx, ws)
	if err != nil {
		return Terms{}, err
	}
	w.terms, w.termsOK = t, true
	return t, nil
}

// close commits what is pending and stops the writer.
func (h *hot) close() { h.w.close() }

// ws returns workspace id's state, locked.
func (h *hot) ws(id string) *hotWS {
	h.mu.Lock()
	w := h.wss[id]
	if w == nil {
		w = &hotWS{}
		h.wss[id] = w
	}
	h.mu.Unlock()
	w.mu.Lock()
	if w.dirty.Swap(false) && w.loaded {
		h.unload(w)
	}
	return w
}

// load reads workspace ws's rows (creating its account row, or refusing an
// unknown workspace) after every pending movement was committed. w is
// locked by the caller.
func (h *hot) load(ctx context.Context, ws string, w *hotWS) error {
	if err := h.w.flush(); err != nil {
		return err
	}
	now := h.l.clk.Now()
	floor := monthOf(monthStart(now).AddDate(0, -1, 0))
	acct := account{}
	months := map[monthKey]*monthRow{}
	open := map[string]*reservation{}
	err := h.l.tx(ctx, ws, func(t *txn) error {
		if err := t.ensure(); err != nil {
			return err
		}
		var err error
		if acct, err = t.account(); err != nil {
			return err
		}
		rows, err := t.tx.QueryContext(ctx, `SELECT month, pool, used, reserved FROM billing_months WHERE workspace_id = ? AND month >= ?`, ws, floor)
		if err != nil {
			return err
		}
		for rows.Next() {
			var k monthKey
			m := &monthRow{}
			if err := rows.Scan(&k.month, &k.pool, &m.used, &m.reserved); err != nil {
				rows.Close()
				return err
			}
			months[k] = m
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		rows, err = t.tx.QueryContext(ctx, `SELECT id, workspace_id, project_id, purpose, ref, month, credit_pool, state,
			amount, held_credit, held_balance, charged, expires_at FROM billing_reservations WHERE workspace_id = ? AND state = 'open'`, ws)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			r := &reservation{}
			var exp string
			if err := rows.Scan(&r.id, &r.ws, &r.project, &r.purpose, &r.ref, &r.month, &r.creditPool, &r.state,
				&r.amount, &r.heldCredit, &r.heldBalance, &r.charged, &exp); err != nil {
				return err
			}
			r.expiresAt = store.ParseTime(exp)
			open[r.id] = r
		}
		return rows.Err()
	})
	if err != nil {
		return fmt.Errorf("billing: load %s: %w", ws, err)
	}
	w.loaded, w.floor, w.acct, w.months, w.open = true, floor, acct, months, open
	h.mu.Lock()
	for id := range open {
		h.idx[id] = ws
	}
	h.mu.Unlock()
	return nil
}

// unload forgets w's copy (after an exclusive operation changed the rows).
func (h *hot) unload(w *hotWS) {
	h.mu.Lock()
	for id := range w.open {
		delete(h.idx, id)
	}
	h.mu.Unlock()
	w.loaded, w.acct, w.months, w.open = false, account{}, nil, nil
}

// month returns w's row for (month, pool), reading an old month's from the
// database (after a flush) when it was not loaded.
func (h *hot) month(ctx context.Context, ws string, w *hotWS, month, pool string) (*monthRow, error) {
	k := monthKey{month, pool}
	if m := w.months[k]; m != nil {
		return m, nil
	}
	m := &monthRow{}
	if month < w.floor {
		if err := h.w.flush(); err != nil {
			return nil, err
		}
		v, err := readMonth(ctx, h.l.db, ws, month, pool)
		if err != nil {
			return nil, fmt.Errorf("billing: month %s %s: %w", month, pool, err)
		}
		*m = v
	}
	w.months[k] = m
	return m, nil
}

// apply mirrors txn.entry on the copy (same arithmetic, same rows).
func (h *hot) apply(ctx context.Context, ws string, w *hotWS, e entry) error {
	if e.amount == 0 {
		return nil
	}
	m, err := h.month(ctx, ws, w, e.month, e.pool)
	if err != nil {
		return err
	}
	switch e.kind {
	case kindHold:
		m.reserved += e.amount
		if e.pool == poolBalance {
			w.acct.reserved += e.amount
		}
	case kindRelease:
		m.reserved -= e.amount
		if e.pool == poolBalance {
			w.acct.reserved -= e.amount
		}
	case kindCharge:
		m.used += e.amount
		if e.pool == poolBalance {
			w.acct.balance -= e.amount
		}
	default:
		return fmt.Errorf("billing: %s entry on the hot path", e.kind)
	}
	return nil
}

// exclusive runs fn, a synchronous ledger transaction of workspace ws,
// with every pending movement committed first and ws's copy reloaded
// afterwards: loads, limit changes, direct charges, expiry and anything
// the copy does not know go through here.
func (h *hot) exclusive(ws string, fn func() error) error {
	w := h.ws(ws)
	defer w.mu.Unlock()
	if err := h.w.flush(); err != nil {
		return err
	}
	defer h.unload(w)
	return fn()
}

// check compares the loaded copy of ws with the stored rows (Verify).
func (h *hot) check(ctx context.Context, ws string) error {
	w := h.ws(ws)
	defer w.mu.Unlock()
	if !w.loaded {
		return nil
	}
	if err := h.w.flush(); err != nil {
		return err
	}
	a, err := readAccount(ctx, h.l.db, ws)
	if err != nil {
		return err
	}
	if a.balance != w.acct.balance || a.reserved != w.acct.reserved || a.owed != w.acct.owed || (a.limit == nil) != (w.acct.limit == nil) ||
		(a.limit != nil && *a.limit != *w.acct.limit) {
		return fmt.Errorf("%w: %s: memory holds balance %d reserved %d owed %d, the database %d %d %d", ErrMismatch, ws,
			w.acct.balance, w.acct.reserved, w.acct.owed, a.balance, a.reserved, a.owed)
	}
	for k, m := range w.months {
		d, err := readMonth(ctx, h.l.db, ws, k.month, k.pool)
		if err != nil {
			return err
		}
		if d != *m {
			return fmt.Errorf("%w: %s: memory holds %s %s used %d reserved %d, the database %d %d", ErrMismatch, ws,
				k.month, k.pool, m.used, m.reserved, d.used, d.reserved)
		}
	}
	return nil
}

// stale marks ws's copy for a reload (a movement of it failed to commit),
// without waiting for its lock: the writer never takes a workspace lock.
func (h *hot) stale(ws string) {
	h.mu.Lock()
	w := h.wss[ws]
	h.mu.Unlock()
	if w != nil {
		w.dirty.Store(true)
	}
}
