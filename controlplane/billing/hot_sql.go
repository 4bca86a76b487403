package billing

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/svcplatform/platform/controlplane/store"
)

// The hot path's SQL: the writer's prepared statements, the multi-row
// inserts, and one batch written as rows.

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
