package payments

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/store"
)

// Account statuses.
const (
	AccountEnabled  = "enabled"
	AccountDisabled = "disabled"
)

// Session states.
const (
	SessionOpen    = "open"
	SessionPaid    = "paid"
	SessionExpired = "expired"
)

// Payment statuses.
const (
	PaymentSucceeded         = "succeeded"
	PaymentPartiallyRefunded = "partially_refunded"
	PaymentRefunded          = "refunded"
	PaymentDisputed          = "disputed"
	PaymentDisputeLost       = "dispute_lost"
)

// Withdrawal statuses.
const (
	WithdrawalPending   = "pending"
	WithdrawalCompleted = "completed"
	WithdrawalFailed    = "failed"
)

func modeOf(live bool) string {
	if live {
		return "live"
	}
	return "test"
}

// Account is a project's payment account.
type Account struct {
	ID        string `json:"id"`
	ProjectID string `json:"project_id"`
	Status    string `json:"status"`
	Processor string `json:"processor"`
	Livemode  bool   `json:"livemode"`
	// Mode is test or live; test accounts move no money.
	Mode       string `json:"mode"`
	WebhookURL string `json:"webhook_url"`
	// WebhookSecretHint is the signing secret's first characters.
	WebhookSecretHint string    `json:"webhook_secret_hint,omitempty"`
	PayoutsEnabled    bool      `json:"payouts_enabled"`
	CreatedAt         time.Time `json:"created_at"`
	UpdatedAt         time.Time `json:"updated_at"`

	workspace string
	payoutRef string
	secret    []byte
}

// Session is a checkout session: one single-use link.
type Session struct {
	ID            string            `json:"id"`
	AccountID     string            `json:"account_id"`
	ProjectID     string            `json:"project_id"`
	State         string            `json:"state"`
	URL           string            `json:"url"`
	AmountCents   int64             `json:"amount_cents"`
	FeeCents      int64             `json:"fee_cents"`
	NetCents      int64             `json:"net_cents"`
	Currency      string            `json:"currency"`
	Description   string            `json:"description"`
	CustomerEmail string            `json:"customer_email"`
	Reference     string            `json:"reference"`
	Metadata      map[string]string `json:"metadata"`
	SuccessURL    string            `json:"success_url"`
	CancelURL     string            `json:"cancel_url"`
	SingleUse     bool              `json:"single_use"`
	Livemode      bool              `json:"livemode"`
	Mode          string            `json:"mode"`
	CreatedAt     time.Time         `json:"created_at"`
	ExpiresAt     time.Time         `json:"expires_at"`
	PaidAt        *time.Time        `json:"paid_at"`
	PaymentID     string            `json:"payment_id,omitempty"`

	workspace    string
	processorRef string
	idemKey      string
	requestHash  string
}

// Payment is a confirmed payment, as events carry it.
type Payment struct {
	ID            string            `json:"id"`
	AccountID     string            `json:"account_id"`
	ProjectID     string            `json:"project_id"`
	SessionID     string            `json:"session_id"`
	SessionKey    string            `json:"session_key"`
	Reference     string            `json:"reference"`
	Metadata      map[string]string `json:"metadata"`
	AmountCents   int64             `json:"amount_cents"`
	FeeCents      int64             `json:"fee_cents"`
	NetCents      int64             `json:"net_cents"`
	RefundedCents int64             `json:"refunded_cents"`
	Currency      string            `json:"currency"`
	CustomerEmail string            `json:"customer_email"`
	Country       string            `json:"country"`
	Status        string            `json:"status"`
	DisputeStatus string            `json:"dispute_status,omitempty"`
	Livemode      bool              `json:"livemode"`
	CreatedAt     time.Time         `json:"created_at"`
	AvailableAt   time.Time         `json:"available_at"`

	workspace    string
	processorRef string
}

// Withdrawal is a payout of earnings to the owner.
type Withdrawal struct {
	ID          string     `json:"id"`
	AccountID   string     `json:"account_id"`
	AmountCents int64      `json:"amount_cents"`
	Status      string     `json:"status"`
	LastError   string     `json:"last_error,omitempty"`
	CreatedAt   time.Time  `json:"created_at"`
	SettledAt   *time.Time `json:"settled_at"`

	processorRef string
}

// Refund is a refund of a payment.
type Refund struct {
	ID          string    `json:"id"`
	PaymentID   string    `json:"payment_id"`
	AmountCents int64     `json:"amount_cents"`
	Status      string    `json:"status"`
	CreatedAt   time.Time `json:"created_at"`

	accountID    string
	processorRef string
}

type scanner interface{ Scan(dest ...any) error }

const accountCols = `id, workspace_id, project_id, status, processor, livemode, webhook_url, webhook_secret, webhook_secret_hint, payout_ref, created_at, updated_at`

func scanAccount(r scanner) (Account, error) {
	var a Account
	var created, updated string
	err := r.Scan(&a.ID, &a.workspace, &a.ProjectID, &a.Status, &a.Processor, &a.Livemode, &a.WebhookURL, &a.secret, &a.WebhookSecretHint, &a.payoutRef, &created, &updated)
	a.CreatedAt, a.UpdatedAt = store.ParseTime(created), store.ParseTime(updated)
	a.Mode = modeOf(a.Livemode)
	a.PayoutsEnabled = a.payoutRef != ""
	return a, err
}

func getAccount(ctx context.Context, q store.Querier, where string, args ...any) (Account, error) {
	a, err := scanAccount(q.QueryRowContext(ctx, `SELECT `+accountCols+` FROM payment_accounts WHERE `+where, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return a, api.NotFound("payment account")
	}
	if err != nil {
		return a, fmt.Errorf("payments: account: %w", err)
	}
	return a, nil
}

const sessionCols = `id, account_id, workspace_id, project_id, processor_ref, url, state, amount_cents, fee_cents, currency, description, customer_email,
	reference, metadata, success_url, cancel_url, idempotency_key, request_hash, livemode, created_at, expires_at, paid_at, payment_id`

func (s *Service) scanSession(r scanner) (Session, error) {
	var x Session
	var meta, created, expires, paid string
	err := r.Scan(&x.ID, &x.AccountID, &x.workspace, &x.ProjectID, &x.processorRef, &x.URL, &x.State, &x.AmountCents, &x.FeeCents, &x.Currency,
		&x.Description, &x.CustomerEmail, &x.Reference, &meta, &x.SuccessURL, &x.CancelURL, &x.idemKey, &x.requestHash, &x.Livemode,
		&created, &expires, &paid, &x.PaymentID)
	if err != nil {
		return x, err
	}
	x.Metadata = map[string]string{}
	json.Unmarshal([]byte(meta), &x.Metadata)
	x.CreatedAt, x.ExpiresAt = store.ParseTime(created), store.ParseTime(expires)
	if paid != "" {
		t := store.ParseTime(paid)
		x.PaidAt = &t
	}
	x.NetCents = x.AmountCents - x.FeeCents
	x.SingleUse = true
	x.Mode = modeOf(x.Livemode)
	// A link past its expiry is expired even before a write marks it.
	if x.State == SessionOpen && !s.now().Before(x.ExpiresAt) {
		x.State = SessionExpired
	}
	return x, nil
}

func (s *Service) getSession(ctx context.Context, q store.Querier, id string) (Session, error) {
	x, err := s.scanSession(q.QueryRowContext(ctx, `SELECT `+sessionCols+` FROM payment_sessions WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return x, api.NotFound("checkout session")
	}
	if err != nil {
		return x, fmt.Errorf("payments: session: %w", err)
	}
	return x, nil
}

const paymentCols = `id, account_id, workspace_id, project_id, session_id, session_key, processor_ref, reference, metadata, amount_cents, fee_cents,
	net_cents, refunded_cents, currency, customer_email, country, status, dispute_status, livemode, created_at, available_at`

func scanPayment(r scanner) (Payment, error) {
	var p Payment
	var meta, created, avail string
	err := r.Scan(&p.ID, &p.AccountID, &p.workspace, &p.ProjectID, &p.SessionID, &p.SessionKey, &p.processorRef, &p.Reference, &meta,
		&p.AmountCents, &p.FeeCents, &p.NetCents, &p.RefundedCents, &p.Currency, &p.CustomerEmail, &p.Country, &p.Status, &p.DisputeStatus,
		&p.Livemode, &created, &avail)
	if err != nil {
		return p, err
	}
	p.Metadata = map[string]string{}
	json.Unmarshal([]byte(meta), &p.Metadata)
	p.CreatedAt, p.AvailableAt = store.ParseTime(created), store.ParseTime(avail)
	return p, nil
}

func getPayment(ctx context.Context, q store.Querier, where string, args ...any) (Payment, error) {
	p, err := scanPayment(q.QueryRowContext(ctx, `SELECT `+paymentCols+` FROM payment_payments WHERE `+where, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return p, api.NotFound("payment")
	}
	if err != nil {
		return p, fmt.Errorf("payments: payment: %w", err)
	}
	return p, nil
}

const withdrawalCols = `id, account_id, amount_cents, status, last_error, processor_ref, created_at, settled_at`

func scanWithdrawal(r scanner) (Withdrawal, error) {
	var w Withdrawal
	var created, settled string
	err := r.Scan(&w.ID, &w.AccountID, &w.AmountCents, &w.Status, &w.LastError, &w.processorRef, &created, &settled)
	w.CreatedAt = store.ParseTime(created)
	if settled != "" {
		t := store.ParseTime(settled)
		w.SettledAt = &t
	}
	return w, err
}

// queryList runs a query and scans every row with scan.
func queryList[T any](ctx context.Context, q store.Querier, scan func(scanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("payments: query: %w", err)
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("payments: scan: %w", err)
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
