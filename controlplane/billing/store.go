package billing

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/svcplatform/platform/controlplane/store"
)

// monthOf is the UTC calendar month of t, as stored ("2026-11").
func monthOf(t time.Time) string { return t.UTC().Format("2006-01") }

// txn is one ledger transaction of one workspace. Balance rows change only
// through entry, which appends the entry and applies it in the same
// transaction.
type txn struct {
	ctx context.Context
	tx  *sql.Tx
	now time.Time
	ws  string
}

// account is the workspace's balance row. owed is what settled requests
// used above what could be charged then (the sum of their reservations'
// uncollected); it counts against the Balance until a load pays it.
type account struct {
	balance, reserved, owed Micros
	limit                   *Micros
}

// free is the Balance's money that nothing holds or owes (negative while
// more is owed than the Balance has free).
func (a account) free() Micros { return a.balance - a.reserved - a.owed }

// monthRow is one pool's month.
type monthRow struct{ used, reserved Micros }

// ensure creates the workspace's balance row if missing.
func (t *txn) ensure() error {
	ts := store.FormatTime(t.now)
	_, err := t.tx.ExecContext(t.ctx, `INSERT INTO billing_accounts (workspace_id, created_at, updated_at) VALUES (?,?,?)
		ON CONFLICT (workspace_id) DO NOTHING`, t.ws, ts, ts)
	if store.IsForeignKeyViolation(err) {
		return ErrUnknownWorkspace.detail("%s", t.ws)
	}
	return err
}

func (t *txn) account() (account, error) {
	return readAccount(t.ctx, t.tx, t.ws)
}

func readAccount(ctx context.Context, q store.Querier, ws string) (account, error) {
	var a account
	var limit sql.NullInt64
	err := q.QueryRowContext(ctx, `SELECT balance, reserved, owed, spend_limit FROM billing_accounts WHERE workspace_id = ?`, ws).
		Scan(&a.balance, &a.reserved, &a.owed, &limit)
	if errors.Is(err, sql.ErrNoRows) {
		return account{}, nil
	}
	if limit.Valid {
		l := Micros(limit.Int64)
		a.limit = &l
	}
	return a, err
}

func (t *txn) month(month, pool string) (monthRow, error) {
	return readMonth(t.ctx, t.tx, t.ws, month, pool)
}

func readMonth(ctx context.Context, q store.Querier, ws, month, pool string) (monthRow, error) {
	var m monthRow
	err := q.QueryRowContext(ctx, `SELECT used, reserved FROM billing_months WHERE workspace_id = ? AND month = ? AND pool = ?`,
		ws, month, pool).Scan(&m.used, &m.reserved)
	if errors.Is(err, sql.ErrNoRows) {
		return monthRow{}, nil
	}
	return m, err
}

// entry is one ledger movement.
type entry struct {
	month, pool, kind string
	amount            Micros
	project, purpose  string
	ref, reservation  string
	actor, reason     string
}

// The kinds of entry and what each does to the balance rows:
//
//	load    balance += amount                                   (pool balance)
//	hold    months[month,pool].reserved += amount; balance pool: reserved += amount
//	release months[month,pool].reserved -= amount; balance pool: reserved -= amount
//	charge  months[month,pool].used += amount;     balance pool: balance -= amount
const (
	kindLoad    = "load"
	kindHold    = "hold"
	kindRelease = "release"
	kindCharge  = "charge"
)

// entry appends e and applies it to the balance rows. A zero amount writes
// nothing. The tables' CHECK constraints refuse any negative result, so a
// bug aborts the transaction instead of creating or losing money.
func (t *txn) entry(e entry) error {
	if e.amount == 0 {
		return nil
	}
	if e.amount < 0 {
		return fmt.Errorf("billing: negative %s entry %d", e.kind, e.amount)
	}
	ts := store.FormatTime(t.now)
	if _, err := t.tx.ExecContext(t.ctx, `INSERT INTO billing_entries
		(id, workspace_id, at, month, pool, kind, amount, project_id, purpose, ref, reservation_id, actor, reason)
		VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)`,
		store.NewID("ble"), t.ws, ts, e.month, e.pool, e.kind, int64(e.amount), e.project, e.purpose, e.ref, e.reservation, e.actor, e.reason); err != nil {
		return fmt.Errorf("billing: entry: %w", err)
	}
	var acct, mon string
	switch e.kind {
	case kindLoad:
		acct = `balance = balance + ?`
	case kindHold:
		acct, mon = `reserved = reserved + ?`, `reserved = reserved + ?`
	case kindRelease:
		acct, mon = `reserved = reserved - ?`, `reserved = reserved - ?`
	case kindCharge:
		acct, mon = `balance = balance - ?`, `used = used + ?`
	default:
		return fmt.Errorf("billing: unknown entry kind %q", e.kind)
	}
	if mon != "" {
		if _, err := t.tx.ExecContext(t.ctx, `INSERT INTO billing_months (workspace_id, month, pool) VALUES (?,?,?)
			ON CONFLICT (workspace_id, month, pool) DO NOTHING`, t.ws, e.month, e.pool); err != nil {
			return fmt.Errorf("billing: month row: %w", err)
		}
		if _, err := t.tx.ExecContext(t.ctx, `UPDATE billing_months SET `+mon+` WHERE workspace_id = ? AND month = ? AND pool = ?`,
			int64(e.amount), t.ws, e.month, e.pool); err != nil {
			return fmt.Errorf("billing: %s %s: %w", e.kind, e.pool, err)
		}
	}
	if e.pool == poolBalance {
		if _, err := t.tx.ExecContext(t.ctx, `UPDATE billing_accounts SET `+acct+`, updated_at = ? WHERE workspace_id = ?`,
			int64(e.amount), ts, t.ws); err != nil {
			return fmt.Errorf("billing: %s balance: %w", e.kind, err)
		}
	}
	return nil
}

// reservation is a stored reservation.
type reservation struct {
	id, ws, project, purpose, ref, month, creditPool, state string
	amount, heldCredit, heldBalance, charged                Micros
	expiresAt                                               time.Time
}

func (t *txn) reservation(id string) (reservation, error) {
	var r reservation
	var exp string
	err := t.tx.QueryRowContext(t.ctx, `SELECT id, workspace_id, project_id, purpose, ref, month, credit_pool, state,
		amount, held_credit, held_balance, charged, expires_at FROM billing_reservations WHERE id = ?`, id).
		Scan(&r.id, &r.ws, &r.project, &r.purpose, &r.ref, &r.month, &r.creditPool, &r.state,
			&r.amount, &r.heldCredit, &r.heldBalance, &r.charged, &exp)
	if errors.Is(err, sql.ErrNoRows) {
		return r, ErrReservationNotFound.detail("%s", id)
	}
	r.expiresAt = store.ParseTime(exp)
	return r, err
}

// closeReservation closes reservation id as state, having charged charged;
// uncollected, what its request used above that, becomes owed by the
// workspace in the same transaction.
func (t *txn) closeReservation(id, state string, charged, uncollected Micros) error {
	if _, err := t.tx.ExecContext(t.ctx, `UPDATE billing_reservations SET state = ?, charged = ?, uncollected = ?, closed_at = ? WHERE id = ?`,
		state, int64(charged), int64(uncollected), store.FormatTime(t.now), id); err != nil {
		return err
	}
	return t.owe(uncollected)
}

// owe adds amount (negative: paid) to what the workspace owes.
func (t *txn) owe(amount Micros) error {
	if amount == 0 {
		return nil
	}
	_, err := t.tx.ExecContext(t.ctx, `UPDATE billing_accounts SET owed = owed + ?, updated_at = ? WHERE workspace_id = ?`,
		int64(amount), store.FormatTime(t.now), t.ws)
	if err != nil {
		return fmt.Errorf("billing: owed: %w", err)
	}
	return nil
}

// collect pays what the workspace owes from the Balance's money that no
// reservation holds, oldest request first: each payment is a charge entry
// of the request's month, purpose and reservation, moved from the
// reservation's uncollected to its charged, in this transaction. It
// returns what was paid by purpose.
func (t *txn) collect() (map[string]Micros, error) {
	a, err := t.account()
	if err != nil || a.owed == 0 {
		return nil, err
	}
	room := a.balance - a.reserved
	if room <= 0 {
		return nil, nil
	}
	rows, err := t.tx.QueryContext(t.ctx, `SELECT id, project_id, purpose, ref, month, uncollected FROM billing_reservations
		WHERE workspace_id = ? AND uncollected > 0 ORDER BY created_at, id`, t.ws)
	if err != nil {
		return nil, fmt.Errorf("billing: owed reservations: %w", err)
	}
	type owedRow struct {
		e      entry
		amount Micros
	}
	owed, err := store.AppendRows(nil, rows, func(sc store.RowScanner) (owedRow, error) {
		var o owedRow
		err := sc.Scan(&o.e.reservation, &o.e.project, &o.e.purpose, &o.e.ref, &o.e.month, &o.amount)
		return o, err
	})
	if err != nil {
		return nil, fmt.Errorf("billing: owed reservations: %w", err)
	}
	paid := map[string]Micros{}
	var total Micros
	for _, o := range owed {
		x := min(o.amount, room-total)
		if x <= 0 {
			break
		}
		o.e.kind, o.e.pool, o.e.amount, o.e.reason = kindCharge, poolBalance, x, reasonOwed
		if err := t.entry(o.e); err != nil {
			return nil, err
		}
		if _, err := t.tx.ExecContext(t.ctx, `UPDATE billing_reservations SET charged = charged + ?, uncollected = uncollected - ? WHERE id = ?`,
			int64(x), int64(x), o.e.reservation); err != nil {
			return nil, fmt.Errorf("billing: collect %s: %w", o.e.reservation, err)
		}
		paid[o.e.purpose] += x
		total += x
	}
	return paid, t.owe(-total)
}

// reasonOwed marks the charge entries that pay what a request owed.
const reasonOwed = "owed"
