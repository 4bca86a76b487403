package billing

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/svcplatform/platform/controlplane/store"
)

// The hot path: on SQLite (one process owns the database) Reserve, Settle
// and Release decide in memory, against a per-workspace copy of the
// balance rows, and hand the ledger entries to one writer that commits
// them in batches, off the caller's path. Each movement is still an entry
// written in the same transaction as the rows it changes; only the commit
// happens later, grouped with the other requests' commits. See README.md
// "Hot path" for what a crash can lose and why no money is made or lost.

// maxPending bounds the movements waiting for the writer: past it, callers
// wait for a commit (backpressure instead of unbounded memory).
const maxPending = 4096

// writerTimeout bounds one batch transaction.
const writerTimeout = 30 * time.Second

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

// errNoReservationRow is a closing whose reservation was never stored.
var errNoReservationRow = errors.New("no stored reservation to close")

// op is one movement for the writer, of workspace ws at now: a
// reservation to insert, ledger entries, a reservation to close; or run,
// any other work in the batch's transaction.
type op struct {
	ws      string
	now     time.Time
	res     *reservation
	entries []entry
	close   *closing
	run     func(t *txn) error
}

// closing closes a reservation.
type closing struct {
	id, state            string
	charged, uncollected Micros
}

// writer commits movements in batches: whatever accumulated while the
// previous batch committed goes in the next transaction.
type writer struct {
	l *Ledger

	mu       sync.Mutex
	cond     *sync.Cond
	pending  []op
	seq      uint64 // movements enqueued
	done     uint64 // movements committed or given up
	started  bool
	closed   bool
	wake     chan struct{}
	urgent   chan struct{} // a flush, Close or a long queue: commit without lingering
	exited   chan struct{}
	failed   atomic.Int64 // movements that failed to commit
	stMu     sync.Mutex   // held by a commit: guards st and the row buffers
	st       *stmts
	stClosed bool

	resRows, entRows rowBuf
	boxed            store.Boxes
}

func newWriter(l *Ledger) *writer {
	w := &writer{l: l, wake: make(chan struct{}, 1), urgent: make(chan struct{}, 1), exited: make(chan struct{})}
	w.cond = sync.NewCond(&w.mu)
	return w
}

// enqueue hands o to the writer; past maxPending it first waits for a
// commit. After close it commits o at once.
func (w *writer) enqueue(o op) error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return w.commit([]op{o})
	}
	for uint64(len(w.pending)) >= maxPending {
		w.cond.Wait()
	}
	if !w.started {
		w.started = true
		go w.loop()
	}
	w.pending = append(w.pending, o)
	w.seq++
	long := len(w.pending) >= maxPending/2
	w.mu.Unlock()
	poke(w.wake)
	if long {
		poke(w.urgent)
	}
	return nil
}

// poke signals c without blocking (a full buffer is already a signal).
func poke(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// flush waits until every movement enqueued before it is committed.
func (w *writer) flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	target := w.seq
	if w.done < target {
		poke(w.urgent)
	}
	for w.done < target {
		w.cond.Wait()
	}
	return nil
}

func (w *writer) loop() {
	defer close(w.exited)
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	for range w.wake {
		// Let movements accumulate for CommitEvery (one commit, one fsync
		// and one update of each balance row for all of them) unless
		// someone waits for them.
		if d := w.l.cfg.CommitEvery; d > 0 {
			linger.Reset(d)
			select {
			case <-linger.C:
			case <-w.urgent:
				linger.Stop()
			}
		}
		for {
			w.mu.Lock()
			batch := w.pending
			w.pending = nil
			w.mu.Unlock()
			if len(batch) == 0 {
				break
			}
			if err := w.commit(batch); err != nil {
				w.l.log.Error("billing: movements not committed", "count", len(batch), "err", err)
			}
			w.mu.Lock()
			w.done += uint64(len(batch))
			w.cond.Broadcast()
			w.mu.Unlock()
		}
		w.mu.Lock()
		stop := w.closed && len(w.pending) == 0
		w.mu.Unlock()
		if stop {
			return
		}
	}
}

// commit writes batch in one transaction; when that fails, each movement
// in its own, so that one bad movement does not lose the others. A
// movement that fails alone is counted as lost, logged, and its
// workspace's copy reloaded from what was stored.
func (w *writer) commit(batch []op) error {
	ctx, cancel := context.WithTimeout(context.Background(), writerTimeout)
	defer cancel()
	w.stMu.Lock()
	defer w.stMu.Unlock()
	err := w.l.db.Tx(ctx, func(tx *sql.Tx) error { return w.write(ctx, tx, batch) })
	w.l.m.batch.Observe(float64(len(batch)))
	if err == nil {
		return nil
	}
	if len(batch) > 1 {
		err = nil
		for _, o := range batch {
			if e := w.l.db.Tx(ctx, func(tx *sql.Tx) error { return w.write(ctx, tx, []op{o}) }); e != nil {
				err = errors.Join(err, w.fail(o, e))
			}
		}
		return err
	}
	return w.fail(batch[0], err)
}

// Statements of the batch writer, prepared once.
const (
	sqlEnsureMonth = `INSERT INTO billing_months (workspace_id, month, pool) VALUES (?,?,?)
		ON CONFLICT (workspace_id, month, pool) DO NOTHING`
	sqlUpdateMonth   = `UPDATE billing_months SET used = used + ?, reserved = reserved + ? WHERE workspace_id = ? AND month = ? AND pool = ?`
	sqlUpdateAccount = `UPDATE billing_accounts SET balance = balance + ?, reserved = reserved + ?, owed = owed + ?, updated_at = ? WHERE workspace_id = ?`
	sqlClose         = `UPDATE billing_reservations SET state = ?, charged = ?, uncollected = ?, closed_at = ? WHERE id = ?`
)

// Rows of one table are inserted by multi-row INSERTs of 2^k rows (k <
// rowGroups): a batch of n rows takes popcount-many statements (of at most
// maxGroup rows each), prepared once per size.
const (
	rowGroups = 6
	maxGroup  = 1 << (rowGroups - 1)
)

// Columns of the multi-row inserts (a reservation row is written with its
// state: one opened and closed in the same batch is inserted closed).
const (
	sqlInsertReservations = `INSERT INTO billing_reservations
		(id, workspace_id, project_id, purpose, ref, month, credit_pool, amount, held_credit, held_balance, state, charged, uncollected,
		 created_at, expires_at, closed_at) VALUES `
	reservationCols  = 16
	sqlInsertEntries = `INSERT INTO billing_entries
		(id, workspace_id, at, month, pool, kind, amount, project_id, purpose, ref, reservation_id, actor, reason) VALUES `
	entryCols = 13
)

// multiRow is head followed by rows groups of cols placeholders.
func multiRow(head string, cols, rows int) string {
	var b strings.Builder
	b.WriteString(head)
	for r := 0; r < rows; r++ {
		if r > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('(')
		for c := 0; c < cols; c++ {
			if c > 0 {
				b.WriteByte(',')
			}
			b.WriteByte('?')
		}
		b.WriteByte(')')
	}
	return b.String()
}

// stmts are the writer's prepared statements (database/sql keeps one per
// connection it runs on).
type stmts struct {
	ensureMonth, updateMonth, updateAccount, close *sql.Stmt
	// reservations[k] and entries[k] insert 2^k rows.
	reservations, entries [rowGroups]*sql.Stmt
}

// all lists the statements with their text, for preparing and closing.
func (st *stmts) all() []struct {
	dst **sql.Stmt
	q   string
} {
	out := []struct {
		dst **sql.Stmt
		q   string
	}{{&st.ensureMonth, sqlEnsureMonth}, {&st.updateMonth, sqlUpdateMonth}, {&st.updateAccount, sqlUpdateAccount}, {&st.close, sqlClose}}
	for k := 0; k < rowGroups; k++ {
		out = append(out, struct {
			dst **sql.Stmt
			q   string
		}{&st.reservations[k], multiRow(sqlInsertReservations, reservationCols, 1<<k)}, struct {
			dst **sql.Stmt
			q   string
		}{&st.entries[k], multiRow(sqlInsertEntries, entryCols, 1<<k)})
	}
	return out
}

func (w *writer) prepare(ctx context.Context) (*stmts, error) {
	if w.st != nil {
		return w.st, nil
	}
	if w.stClosed {
		return nil, errWriterClosed
	}
	st := &stmts{}
	for _, p := range st.all() {
		s, err := w.l.db.PrepareContext(ctx, p.q)
		if err != nil {
			st.closeAll()
			return nil, fmt.Errorf("billing: prepare: %w", err)
		}
		*p.dst = s
	}
	w.st = st
	return st, nil
}

var errWriterClosed = errors.New("billing: writer closed")

// prepareTx prepares the statements in tx alone.
func (w *writer) prepareTx(ctx context.Context, tx *sql.Tx) (*stmts, error) {
	st := &stmts{}
	for _, p := range st.all() {
		s, err := tx.PrepareContext(ctx, p.q)
		if err != nil {
			st.closeAll()
			return nil, fmt.Errorf("billing: prepare: %w", err)
		}
		*p.dst = s
	}
	return st, nil
}

func (st *stmts) closeAll() {
	for _, p := range st.all() {
		if s := *p.dst; s != nil {
			s.Close()
		}
	}
}

// rowBuf accumulates the rows of one table's multi-row inserts (the
// writer's, reused batch after batch).
type rowBuf struct {
	cols int
	args []any
}

// exec inserts the accumulated rows, in order, with the fewest statements
// of stmts' sizes, and empties b.
func (b *rowBuf) exec(ctx context.Context, groups *[rowGroups]*sql.Stmt, stmt func(*sql.Stmt) *sql.Stmt) error {
	args := b.args
	for n := len(args) / b.cols; n > 0; {
		k := rowGroups - 1
		for 1<<k > n {
			k--
		}
		m := (1 << k) * b.cols
		if _, err := stmt(groups[k]).ExecContext(ctx, args[:m]...); err != nil {
			return err
		}
		args, n = args[m:], n-1<<k
	}
	clear(b.args)
	b.args = b.args[:0]
	return nil
}

// write applies batch in tx: every reservation row, entry and closing as
// its movement says, and the balance rows changed once each by the sum of
// the batch's entries (the same arithmetic as txn.entry, in the same
// transaction as the entries).
func (w *writer) write(ctx context.Context, tx *sql.Tx, batch []op) error {
	st, err := w.prepare(ctx)
	if errors.Is(err, errWriterClosed) {
		// After Close: statements prepared for this transaction only.
		if st, err = w.prepareTx(ctx, tx); err != nil {
			return err
		}
		defer st.closeAll()
	}
	if err != nil {
		return err
	}
	// The statements bound to this transaction, made once per batch.
	bound := map[*sql.Stmt]*sql.Stmt{}
	stmt := func(s *sql.Stmt) *sql.Stmt {
		b := bound[s]
		if b == nil {
			b = tx.StmtContext(ctx, s)
			bound[s] = b
		}
		return b
	}
	type monthDelta struct {
		ws string
		monthKey
	}
	type delta struct{ used, reserved, balance, owed Micros }
	months := map[monthDelta]*delta{}
	accounts := map[string]*delta{}
	var mkeys []monthDelta
	var akeys []string
	// A reservation opened and closed within the batch is inserted as it
	// ends the transaction, closed: one row written once instead of an
	// INSERT and an UPDATE of the same row in the same transaction.
	type closedAt struct {
		c  *closing
		ts string
	}
	var folded map[string]closedAt
	for _, o := range batch {
		if o.res != nil && o.close == nil {
			if folded == nil {
				folded = map[string]closedAt{}
			}
			folded[o.res.id] = closedAt{}
		}
	}
	for _, o := range batch {
		if c := o.close; c != nil {
			if _, ok := folded[c.id]; ok {
				folded[c.id] = closedAt{c: c, ts: store.FormatTime(o.now)}
			}
		}
	}
	// Each distinct string of the batch (workspace, month, pool, a
	// reservation's id on its hold and on its settle, ...) is put in an
	// interface once, not once per row it appears in.
	if w.boxed == nil {
		w.boxed = store.Boxes{}
	}
	defer clear(w.boxed)
	box := w.boxed.Box
	res, ents := &w.resRows, &w.entRows
	res.cols, ents.cols = reservationCols, entryCols
	defer func() { // an error leaves rows behind: the next batch starts empty
		clear(res.args)
		clear(ents.args)
		res.args, ents.args = res.args[:0], ents.args[:0]
	}()
	insert := func() error {
		if err := res.exec(ctx, &st.reservations, stmt); err != nil {
			return fmt.Errorf("billing: reserve: %w", err)
		}
		if err := ents.exec(ctx, &st.entries, stmt); err != nil {
			return fmt.Errorf("billing: entry: %w", err)
		}
		return nil
	}
	for _, o := range batch {
		if o.run != nil {
			if err := insert(); err != nil { // keep the batch's order
				return err
			}
			if err := o.run(&txn{ctx: ctx, tx: tx, now: o.now, ws: o.ws}); err != nil {
				return err
			}
		}
		ts := store.FormatTime(o.now)
		wsArg, tsArg := box(o.ws), box(ts)
		if r := o.res; r != nil {
			state, charged, uncollected, closed := any("open"), any(int64(0)), any(int64(0)), any("")
			if f := folded[r.id]; f.c != nil {
				state, charged, uncollected, closed = box(f.c.state), int64(f.c.charged), int64(f.c.uncollected), box(f.ts)
			}
			res.args = append(res.args, box(r.id), wsArg, box(r.project), box(r.purpose), box(r.ref), box(r.month), box(r.creditPool),
				int64(r.amount), int64(r.heldCredit), int64(r.heldBalance), state, charged, uncollected, tsArg, store.FormatTime(r.expiresAt), closed)
		}
		for _, e := range o.entries {
			if e.amount == 0 {
				continue
			}
			if e.amount < 0 {
				return fmt.Errorf("billing: negative %s entry %d", e.kind, e.amount)
			}
			ents.args = append(ents.args, store.NewID("ble"), wsArg, tsArg, box(e.month), box(e.pool), box(e.kind), int64(e.amount),
				box(e.project), box(e.purpose), box(e.ref), box(e.reservation), box(e.actor), box(e.reason))
			k := monthDelta{o.ws, monthKey{e.month, e.pool}}
			m := months[k]
			if m == nil {
				m = &delta{}
				months[k] = m
				mkeys = append(mkeys, k)
			}
			var a *delta
			if e.pool == poolBalance {
				if a = accounts[o.ws]; a == nil {
					a = &delta{}
					accounts[o.ws] = a
					akeys = append(akeys, o.ws)
				}
			}
			switch e.kind {
			case kindHold:
				m.reserved += e.amount
				if a != nil {
					a.reserved += e.amount
				}
			case kindRelease:
				m.reserved -= e.amount
				if a != nil {
					a.reserved -= e.amount
				}
			case kindCharge:
				m.used += e.amount
				if a != nil {
					a.balance -= e.amount
				}
			default:
				return fmt.Errorf("billing: %s entry on the hot path", e.kind)
			}
		}
		if c := o.close; c != nil {
			if c.uncollected > 0 { // owed by the workspace (txn.closeReservation)
				a := accounts[o.ws]
				if a == nil {
					a = &delta{}
					accounts[o.ws] = a
					akeys = append(akeys, o.ws)
				}
				a.owed += c.uncollected
			}
			if _, ok := folded[c.id]; ok {
				continue // inserted closed
			}
			res, err := stmt(st.close).ExecContext(ctx, c.state, int64(c.charged), int64(c.uncollected), ts, c.id)
			if err != nil {
				return fmt.Errorf("billing: close %s: %w", c.id, err)
			}
			// A reservation whose insert failed alone (the one-by-one retry
			// of a failed batch) has no row: its closing and entries must
			// not commit without the hold they release.
			if n, err := res.RowsAffected(); err != nil || n != 1 {
				return fmt.Errorf("billing: close %s: %w", c.id, errNoReservationRow)
			}
		}
	}
	if err := insert(); err != nil {
		return err
	}
	for _, k := range mkeys {
		d := months[k]
		if _, err := stmt(st.ensureMonth).ExecContext(ctx, k.ws, k.month, k.pool); err != nil {
			return fmt.Errorf("billing: month row: %w", err)
		}
		if d.used == 0 && d.reserved == 0 {
			continue
		}
		if _, err := stmt(st.updateMonth).ExecContext(ctx, int64(d.used), int64(d.reserved), k.ws, k.month, k.pool); err != nil {
			return fmt.Errorf("billing: month %s %s: %w", k.month, k.pool, err)
		}
	}
	now := store.FormatTime(batch[len(batch)-1].now)
	for _, ws := range akeys {
		d := accounts[ws]
		if d.balance == 0 && d.reserved == 0 && d.owed == 0 {
			continue
		}
		if _, err := stmt(st.updateAccount).ExecContext(ctx, int64(d.balance), int64(d.reserved), int64(d.owed), now, ws); err != nil {
			return fmt.Errorf("billing: balance %s: %w", ws, err)
		}
	}
	return nil
}

func (w *writer) fail(o op, err error) error {
	w.l.m.lost.Inc()
	w.failed.Add(1)
	w.l.hot.stale(o.ws)
	return fmt.Errorf("%s: %w", o.ws, err)
}

// close commits what is pending and stops the writer.
func (w *writer) close() {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.closed = true
	started := w.started
	w.mu.Unlock()
	if started {
		poke(w.wake)
		poke(w.urgent)
		<-w.exited
	}
	w.stMu.Lock()
	defer w.stMu.Unlock()
	if w.st != nil {
		w.st.closeAll()
		w.st = nil
	}
	w.stClosed = true
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
