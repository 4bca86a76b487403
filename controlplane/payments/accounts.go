package payments

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/controlplane/store"
)

// ErrNotEnabled is a project that never enabled payments.
var ErrNotEnabled = api.E(api.KindNotFound, "payments_not_enabled", "payments are not enabled for this project: POST /api/projects/{id}/payments enables them")

// ErrDisabled refuses new links on a disabled account.
var ErrDisabled = api.Conflict("payments_disabled", "payments are disabled for this project: POST /api/projects/{id}/payments re-enables them; links already sent are still credited")

func (s *Service) record(ctx context.Context, q store.Querier, pr *auth.Principal, workspace, project, action, targetType, target, summary string, details map[string]any) error {
	return s.d.Audit.Record(ctx, q, audit.Event{Workspace: workspace, Actor: pr, Action: action, Category: audit.CategoryMoney,
		TargetType: targetType, TargetID: target, ProjectID: project, Summary: summary, Details: details})
}

// Enable enables (or re-enables) payments on a project: one account per
// project, as many accounts per workspace as the plan allows.
func (s *Service) Enable(ctx context.Context, pr *auth.Principal, projectID string) (Account, error) {
	if _, err := s.d.Projects.Writable(ctx, pr.WorkspaceID, projectID); err != nil {
		return Account{}, err
	}
	plan := s.d.Plans.Plan(ctx, pr.WorkspaceID)
	limit := accountLimit(plan)
	now := s.now()
	var id string
	err := s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		a, err := getAccount(ctx, tx, `project_id = ?`, projectID)
		if err == nil {
			id = a.ID
			if a.Status == AccountEnabled {
				return nil
			}
			if _, err := tx.ExecContext(ctx, `UPDATE payment_accounts SET status = 'enabled', updated_at = ? WHERE id = ?`, store.FormatTime(now), a.ID); err != nil {
				return fmt.Errorf("payments: enable: %w", err)
			}
			return s.record(ctx, tx, pr, pr.WorkspaceID, projectID, "payments.enable", "payment_account", a.ID, "re-enabled payments", nil)
		}
		if !isNotFound(err) {
			return err
		}
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM payment_accounts WHERE workspace_id = ?`, pr.WorkspaceID).Scan(&n); err != nil {
			return fmt.Errorf("payments: count accounts: %w", err)
		}
		if !plans.Allows(limit, n+1) {
			return plans.LimitError(plan, accountLimit, n, n+1,
				"the %s plan allows %d payment account(s) and this workspace has %d: upgrade to enable payments on another project", plan, limit, n)
		}
		id = store.NewID("pa")
		_, err = tx.ExecContext(ctx, `INSERT INTO payment_accounts(id, workspace_id, project_id, status, processor, livemode, created_at, updated_at)
			VALUES (?,?,?,'enabled',?,?,?,?)`, id, pr.WorkspaceID, projectID, s.proc.Name(), s.proc.Live(), store.FormatTime(now), store.FormatTime(now))
		if err != nil {
			return fmt.Errorf("payments: enable: %w", err)
		}
		return s.record(ctx, tx, pr, pr.WorkspaceID, projectID, "payments.enable", "payment_account", id,
			fmt.Sprintf("enabled payments (%s processor, %s mode)", s.proc.Name(), modeOf(s.proc.Live())), nil)
	})
	if err != nil {
		return Account{}, err
	}
	return getAccount(ctx, s.d.DB, `id = ?`, id)
}

// accountLimit is how many payment accounts a plan allows.
func accountLimit(p plans.Name) int { return plans.Of(p).PaymentAccounts }

func isNotFound(err error) bool {
	var e *api.Error
	return errors.As(err, &e) && e.Kind == api.KindNotFound
}

// account loads an account of the caller's workspace and checks op against
// its project (a project key reaches only its own project's account).
func (s *Service) account(ctx context.Context, pr *auth.Principal, id string, op auth.Op) (Account, error) {
	a, err := getAccount(ctx, s.d.DB, `id = ? AND workspace_id = ?`, id, pr.WorkspaceID)
	if err != nil {
		return a, err
	}
	if err := auth.Authorize(pr, op, a.ProjectID); err != nil {
		return a, err
	}
	return a, nil
}

// accountOfProject loads the account of a project of the caller's workspace.
func (s *Service) accountOfProject(ctx context.Context, pr *auth.Principal, projectID string) (Account, error) {
	if _, err := s.d.Projects.Get(ctx, pr.WorkspaceID, projectID); err != nil {
		return Account{}, err
	}
	a, err := getAccount(ctx, s.d.DB, `project_id = ? AND workspace_id = ?`, projectID, pr.WorkspaceID)
	if isNotFound(err) {
		return a, ErrNotEnabled
	}
	return a, err
}

// Earnings are a payment account's earnings, in cents: balance is held
// plus available (what is yours and not paid out yet), disputed is net
// held back by open disputes, pending is withdrawals the processor has not
// confirmed, withdrawn what reached the owner.
type Earnings struct {
	Currency    string       `json:"currency"`
	Balance     int64        `json:"balance"`
	Held        int64        `json:"held"`
	Available   int64        `json:"available"`
	Disputed    int64        `json:"disputed"`
	Pending     int64        `json:"pending"`
	Withdrawn   int64        `json:"withdrawn"`
	Gross       int64        `json:"gross" doc:"what buyers paid, before fees and refunds"`
	Fees        int64        `json:"fees" doc:"the platform's fees after refunds returned their share (analytics totals.fee_cents)"`
	Refunded    int64        `json:"refunded" doc:"what refunds returned to buyers"`
	Lost        int64        `json:"lost"`
	NextRelease *NextRelease `json:"next_release"`
	// PayoutLimit says why and until when a payout is limited (nil when
	// the whole available amount can go now).
	PayoutLimit *Limit `json:"payout_limit"`
	// PayoutNow is what a withdraw would pay out now.
	PayoutNow int64 `json:"payout_now"`
}

// NextRelease is the next held net to become available.
type NextRelease struct {
	At     time.Time `json:"at"`
	Amount int64     `json:"amount"`
}

func earningsOf(b Balances) Earnings {
	return Earnings{Currency: "usd", Held: b[Held], Available: b[Available], Balance: b[Held] + b[Available], Disputed: b[Disputed],
		Pending: b[Pending], Withdrawn: b[Withdrawn], Gross: -b[Buyers], Fees: b[Fees], Refunded: b[Refunded], Lost: b[Lost]}
}

// earnings releases what is due and computes an account's earnings, in
// the caller's transaction.
func (s *Service) earnings(ctx context.Context, tx *sql.Tx, a Account, now time.Time) (Earnings, payoutDecision, error) {
	if err := releaseDue(ctx, tx, a.ID, a.workspace, now); err != nil {
		return Earnings{}, payoutDecision{}, err
	}
	b, err := accountBalances(ctx, tx, a.ID)
	if err != nil {
		return Earnings{}, payoutDecision{}, err
	}
	e := earningsOf(b)
	var at sql.NullString
	if err := tx.QueryRowContext(ctx, `SELECT min(available_at) FROM payment_payments WHERE account_id = ? AND released = 0`, a.ID).Scan(&at); err != nil {
		return e, payoutDecision{}, fmt.Errorf("payments: next release: %w", err)
	}
	var next time.Time
	if at.Valid {
		next = store.ParseTime(at.String)
		var amount int64
		err := tx.QueryRowContext(ctx, `SELECT coalesce(sum(CASE WHEN l.credit = 'held' THEN l.amount_cents ELSE -l.amount_cents END),0)
			FROM payment_ledger l JOIN payment_payments p ON p.id = l.payment_id
			WHERE p.account_id = ? AND p.released = 0 AND p.available_at = ? AND (l.credit = 'held' OR l.debit = 'held')`, a.ID, at.String).Scan(&amount)
		if err != nil {
			return e, payoutDecision{}, fmt.Errorf("payments: next release: %w", err)
		}
		if amount > 0 {
			e.NextRelease = &NextRelease{At: next, Amount: amount}
		}
	}
	h, err := loadHistory(ctx, tx, a.workspace)
	if err != nil {
		return e, payoutDecision{}, err
	}
	d := decidePayout(now, e.Available, next, h)
	e.PayoutLimit, e.PayoutNow = d.Limit, d.Amount
	return e, d, nil
}

// loadHistory reads what the payout rules look at for a workspace.
func loadHistory(ctx context.Context, q store.Querier, workspace string) (payoutHistory, error) {
	var h payoutHistory
	var first sql.NullString
	if err := q.QueryRowContext(ctx, `SELECT min(created_at) FROM payment_payments WHERE workspace_id = ?`, workspace).Scan(&first); err != nil {
		return h, fmt.Errorf("payments: history: %w", err)
	}
	if first.Valid {
		h.FirstSale = store.ParseTime(first.String)
	}
	events := func(query string) ([]moneyEvent, error) {
		return queryList(ctx, q, func(r scanner) (moneyEvent, error) {
			var at string
			var e moneyEvent
			err := r.Scan(&at, &e.Cents)
			e.At = store.ParseTime(at)
			return e, err
		}, query, workspace)
	}
	var err error
	// The windows are at most 90 days; older rows matter only for the
	// first sale and the completed totals.
	if h.Sales, err = events(`SELECT created_at, amount_cents FROM payment_payments WHERE workspace_id = ?`); err != nil {
		return h, err
	}
	if h.Refunds, err = events(`SELECT created_at, amount_cents FROM payment_refunds WHERE workspace_id = ? AND status = 'succeeded'`); err != nil {
		return h, err
	}
	disputes, err := events(`SELECT disputed_at, 1 FROM payment_payments WHERE workspace_id = ? AND disputed_at <> ''`)
	if err != nil {
		return h, err
	}
	for _, d := range disputes {
		h.Disputes = append(h.Disputes, d.At)
	}
	if h.Payouts, err = events(`SELECT created_at, amount_cents FROM payment_withdrawals WHERE workspace_id = ? AND status IN ('pending','completed')`); err != nil {
		return h, err
	}
	err = q.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(amount_cents),0) FROM payment_withdrawals WHERE workspace_id = ? AND status = 'completed'`, workspace).
		Scan(&h.CompletedCount, &h.CompletedCents)
	if err != nil {
		return h, fmt.Errorf("payments: history: %w", err)
	}
	return h, nil
}

// Detail is the answer of GET /api/projects/{id}/payments.
type Detail struct {
	Account     Account      `json:"account"`
	Earnings    Earnings     `json:"earnings"`
	Payments    []Payment    `json:"payments"`
	Links       []Session    `json:"links"`
	Withdrawals []Withdrawal `json:"withdrawals"`
	Deliveries  []Delivery   `json:"deliveries"`
}

// recentLimit is how many payments, links, withdrawals and deliveries the
// account read shows.
const recentLimit = 20

// Read returns a project's payment account with its earnings, recent
// payments and links, withdrawals and webhook deliveries. Pending
// withdrawals and refunds are first checked with the processor.
func (s *Service) Read(ctx context.Context, pr *auth.Principal, projectID string) (Detail, error) {
	a, err := s.accountOfProject(ctx, pr, projectID)
	if err != nil {
		return Detail{}, err
	}
	if err := s.reconcile(ctx, a); err != nil {
		s.d.Logger.Warn("payments: reconcile with the processor", "account", a.ID, "err", err)
	}
	d := Detail{Account: a}
	err = s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		var err error
		d.Earnings, _, err = s.earnings(ctx, tx, a, s.now())
		return err
	})
	if err != nil {
		return Detail{}, err
	}
	if d.Payments, err = queryList(ctx, s.d.DB, scanPayment, `SELECT `+paymentCols+` FROM payment_payments WHERE account_id = ? ORDER BY created_at DESC, id DESC LIMIT ?`, a.ID, recentLimit); err != nil {
		return Detail{}, err
	}
	if d.Links, err = queryList(ctx, s.d.DB, s.scanSession, `SELECT `+sessionCols+` FROM payment_sessions WHERE account_id = ? ORDER BY created_at DESC, id DESC LIMIT ?`, a.ID, recentLimit); err != nil {
		return Detail{}, err
	}
	if d.Withdrawals, err = queryList(ctx, s.d.DB, scanWithdrawal, `SELECT `+withdrawalCols+` FROM payment_withdrawals WHERE account_id = ? ORDER BY created_at DESC, id DESC LIMIT ?`, a.ID, recentLimit); err != nil {
		return Detail{}, err
	}
	if d.Deliveries, err = s.deliveries(ctx, a.ID, recentLimit); err != nil {
		return Detail{}, err
	}
	return d, nil
}

// Disable stops new links; earnings, history and the payout account stay
// and links already sent are still credited.
func (s *Service) Disable(ctx context.Context, pr *auth.Principal, id string) (Account, error) {
	a, err := s.account(ctx, pr, id, auth.OpPaymentsWrite)
	if err != nil {
		return a, err
	}
	if a.Status == AccountDisabled {
		return a, nil
	}
	err = s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE payment_accounts SET status = 'disabled', updated_at = ? WHERE id = ?`, store.FormatTime(s.now()), a.ID); err != nil {
			return fmt.Errorf("payments: disable: %w", err)
		}
		return s.record(ctx, tx, pr, a.workspace, a.ProjectID, "payments.disable", "payment_account", a.ID, "disabled payments", nil)
	})
	if err != nil {
		return a, err
	}
	return getAccount(ctx, s.d.DB, `id = ?`, a.ID)
}

// Erase removes an account and its history for good, when nothing is owed
// or open (the same conditions that block deleting its project).
func (s *Service) Erase(ctx context.Context, pr *auth.Principal, id string) error {
	a, err := s.account(ctx, pr, id, auth.OpPaymentsPayout)
	if err != nil {
		return err
	}
	return s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		bs, err := s.blockers(ctx, tx, a)
		if err != nil {
			return err
		}
		if len(bs) > 0 {
			return api.Conflict("account_not_settled", "this payment account cannot be erased while something is owed or open: %s", bs[0].Message).With("blockers", bs)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM payment_accounts WHERE id = ?`, a.ID); err != nil {
			return fmt.Errorf("payments: erase: %w", err)
		}
		return s.record(ctx, tx, pr, a.workspace, a.ProjectID, "payments.erase", "payment_account", a.ID, "erased the payment account and its history", nil)
	})
}

// blockers lists what is owed or open on an account.
func (s *Service) blockers(ctx context.Context, tx *sql.Tx, a Account) ([]projects.Blocker, error) {
	now := s.now()
	if err := releaseDue(ctx, tx, a.ID, a.workspace, now); err != nil {
		return nil, err
	}
	b, err := accountBalances(ctx, tx, a.ID)
	if err != nil {
		return nil, err
	}
	var out []projects.Blocker
	if bal := b[Held] + b[Available] + b[Disputed]; bal > 0 {
		out = append(out, projects.Blocker{Kind: "unwithdrawn_earnings", Message: fmt.Sprintf("%s of earnings are not withdrawn yet", dollars(bal)),
			Action: "withdraw the earnings (PATCH /api/payments/" + a.ID + " {action: withdraw}) once they are available"})
	} else if bal < 0 {
		out = append(out, projects.Blocker{Kind: "refunds_owed", Message: fmt.Sprintf("%s is owed for refunds", dollars(-bal)),
			Action: "wait for new sales to cover the refunds"})
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM payment_withdrawals WHERE account_id = ? AND status = 'pending'`, a.ID).Scan(&n); err != nil {
		return nil, fmt.Errorf("payments: blockers: %w", err)
	}
	if n > 0 {
		out = append(out, projects.Blocker{Kind: "pending_withdrawal", Message: fmt.Sprintf("%d withdrawal(s) are not confirmed by the processor yet", n),
			Action: "wait for the processor to confirm the withdrawal"})
	}
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM payment_refunds WHERE account_id = ? AND status = 'pending'`, a.ID).Scan(&n); err != nil {
		return nil, fmt.Errorf("payments: blockers: %w", err)
	}
	if n > 0 {
		out = append(out, projects.Blocker{Kind: "pending_refund", Message: fmt.Sprintf("%d refund(s) are not confirmed by the processor yet", n),
			Action: "wait for the refunds to complete"})
	}
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM payment_sessions WHERE account_id = ? AND state = 'open' AND expires_at > ?`, a.ID, store.FormatTime(now)).Scan(&n); err != nil {
		return nil, fmt.Errorf("payments: blockers: %w", err)
	}
	if n > 0 {
		out = append(out, projects.Blocker{Kind: "payable_link", Message: fmt.Sprintf("%d checkout link(s) can still be paid", n),
			Action: "wait until the links expire (24 hours after creation) or are paid"})
	}
	return out, nil
}

// Name names the area's resources in project teardown messages.
func (s *Service) Name() string { return "payments" }

// Blockers lists what stops a project being deleted: unwithdrawn earnings,
// a pending withdrawal, a payable link (and refunds owed or pending).
func (s *Service) Blockers(ctx context.Context, projectID string) ([]projects.Blocker, error) {
	var out []projects.Blocker
	err := s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		a, err := getAccount(ctx, tx, `project_id = ?`, projectID)
		if isNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		out, err = s.blockers(ctx, tx, a)
		return err
	})
	return out, err
}

// Remove erases a deleted project's payment account; nothing is left when
// it had no blockers. Safe to call again.
func (s *Service) Remove(ctx context.Context, projectID string) error {
	return s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		a, err := getAccount(ctx, tx, `project_id = ?`, projectID)
		if isNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		bs, err := s.blockers(ctx, tx, a)
		if err != nil {
			return err
		}
		if len(bs) > 0 {
			return fmt.Errorf("payments: account %s: %s", a.ID, bs[0].Message)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM payment_accounts WHERE id = ?`, a.ID); err != nil {
			return fmt.Errorf("payments: remove: %w", err)
		}
		return s.record(ctx, tx, nil, a.workspace, projectID, "payments.erase", "payment_account", a.ID, "erased the payment account with its project", nil)
	})
}

// Service is the key of the project read's services counts.
func (s *Service) Service() string { return "paymentAccount" }

// Count is 1 when the project has a payment account.
func (s *Service) Count(ctx context.Context, projectID string) (int, error) {
	var n int
	if err := s.d.DB.QueryRowContext(ctx, `SELECT count(*) FROM payment_accounts WHERE project_id = ?`, projectID).Scan(&n); err != nil {
		return 0, fmt.Errorf("payments: count: %w", err)
	}
	return n, nil
}

var (
	_ projects.Dependent = (*Service)(nil)
	_ projects.Counter   = (*Service)(nil)
)

// readAccount is Read by account id.
func (s *Service) readAccount(ctx context.Context, pr *auth.Principal, accountID string) (Detail, error) {
	a, err := s.account(ctx, pr, accountID, auth.OpPaymentsRead)
	if err != nil {
		return Detail{}, err
	}
	return s.Read(ctx, pr, a.ProjectID)
}
