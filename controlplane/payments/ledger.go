package payments

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/svcplatform/platform/controlplane/store"
)

// Bucket is one place money of an account sits. Every ledger entry moves
// cents from one bucket to another, so the buckets of an account always
// sum to zero: no cent is created or lost, only moved.
type Bucket string

// The buckets of the earnings ledger.
const (
	// Buyers is where sales come from (its balance is minus the gross).
	Buyers Bucket = "buyers"
	// Fees is the platform's fees.
	Fees Bucket = "fees"
	// Held is net within its 7-day hold.
	Held Bucket = "held"
	// Available is net that may be withdrawn (negative when refunds of
	// released payments exceed it: owed).
	Available Bucket = "available"
	// Disputed is net held back by an open dispute.
	Disputed Bucket = "disputed"
	// Pending is withdrawals the processor has not confirmed yet.
	Pending Bucket = "pending"
	// Withdrawn is what reached the owner.
	Withdrawn Bucket = "withdrawn"
	// Refunded is what went back to buyers through refunds.
	Refunded Bucket = "refunded"
	// Lost is net lost to disputes.
	Lost Bucket = "lost"
)

// Buckets lists every bucket.
var Buckets = []Bucket{Buyers, Fees, Held, Available, Disputed, Pending, Withdrawn, Refunded, Lost}

// Entry kinds.
const (
	kindSale           = "sale"
	kindFee            = "fee"
	kindRelease        = "release"
	kindRefund         = "refund"
	kindRefundFee      = "refund_fee"
	kindDispute        = "dispute"
	kindDisputeWon     = "dispute_won"
	kindDisputeLost    = "dispute_lost"
	kindWithdraw       = "withdraw"
	kindWithdrawPaid   = "withdraw_paid"
	kindWithdrawFailed = "withdraw_failed"
)

// move is one ledger entry to write.
type move struct {
	kind     string
	from, to Bucket
	cents    int64
	payment  string
	ref      string
}

// post writes the moves of one change, in the caller's transaction. Zero
// moves are skipped; a negative one is a bug and refused.
func post(ctx context.Context, q store.Querier, account, workspace string, at time.Time, moves ...move) error {
	for _, m := range moves {
		if m.cents == 0 {
			continue
		}
		if m.cents < 0 || m.from == m.to {
			return fmt.Errorf("payments: ledger: invalid move %+v", m)
		}
		_, err := q.ExecContext(ctx, `INSERT INTO payment_ledger(account_id, workspace_id, payment_id, ref_id, kind, debit, credit, amount_cents, at)
			VALUES (?,?,?,?,?,?,?,?,?)`, account, workspace, m.payment, m.ref, m.kind, string(m.from), string(m.to), m.cents, store.FormatTime(at))
		if err != nil {
			return fmt.Errorf("payments: ledger: %w", err)
		}
	}
	return nil
}

// Balances are the sums of the ledger per bucket.
type Balances map[Bucket]int64

// balancesWhere sums the entries matching a condition per bucket.
func balancesWhere(ctx context.Context, q store.Querier, cond string, args ...any) (Balances, error) {
	rows, err := q.QueryContext(ctx, `SELECT b, sum(v) FROM (
		SELECT credit AS b, amount_cents AS v FROM payment_ledger WHERE `+cond+`
		UNION ALL SELECT debit, -amount_cents FROM payment_ledger WHERE `+cond+`) AS entries GROUP BY b`, append(args, args...)...)
	if err != nil {
		return nil, fmt.Errorf("payments: ledger balances: %w", err)
	}
	defer rows.Close()
	out := Balances{}
	for rows.Next() {
		var b string
		var v int64
		if err := rows.Scan(&b, &v); err != nil {
			return nil, fmt.Errorf("payments: ledger balances: %w", err)
		}
		out[Bucket(b)] = v
	}
	return out, rows.Err()
}

// accountBalances sums an account's ledger.
func accountBalances(ctx context.Context, q store.Querier, account string) (Balances, error) {
	return balancesWhere(ctx, q, `account_id = ?`, account)
}

// paymentBalances sums the entries of one payment.
func paymentBalances(ctx context.Context, q store.Querier, payment string) (Balances, error) {
	return balancesWhere(ctx, q, `payment_id = ?`, payment)
}

// releaseDue moves the net of every payment of the account whose hold has
// ended from held to available, in the caller's transaction.
func releaseDue(ctx context.Context, tx *sql.Tx, account, workspace string, now time.Time) error {
	rows, err := tx.QueryContext(ctx, `SELECT id, available_at FROM payment_payments WHERE account_id = ? AND released = 0 AND available_at <= ?`,
		account, store.FormatTime(now))
	if err != nil {
		return fmt.Errorf("payments: release: %w", err)
	}
	type due struct {
		id string
		at time.Time
	}
	var list []due
	for rows.Next() {
		var d due
		var at string
		if err := rows.Scan(&d.id, &at); err != nil {
			rows.Close()
			return fmt.Errorf("payments: release: %w", err)
		}
		d.at = store.ParseTime(at)
		list = append(list, d)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("payments: release: %w", err)
	}
	for _, d := range list {
		b, err := paymentBalances(ctx, tx, d.id)
		if err != nil {
			return err
		}
		if err := post(ctx, tx, account, workspace, d.at, move{kind: kindRelease, from: Held, to: Available, cents: b[Held], payment: d.id}); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE payment_payments SET released = 1 WHERE id = ?`, d.id); err != nil {
			return fmt.Errorf("payments: release: %w", err)
		}
	}
	return nil
}
