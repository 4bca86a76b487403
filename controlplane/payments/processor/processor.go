// Package processor is what the payments area asks of a payment processor:
// hosted checkouts, refunds, disputes, payout accounts and payouts. Two
// implementations live here: Test, the built-in test processor whose
// hosted page the platform serves itself (test cards as in Stripe's test
// mode), and Stripe, an adapter on stripe-go. Amounts are integer cents.
package processor

import (
	"context"
	"errors"
	"time"
)

// Names of the processors, as configured.
const (
	NameTest   = "test"
	NameStripe = "stripe"
)

// Errors a processor returns; callers use errors.Is.
var (
	// ErrNotFound is a reference the processor does not know.
	ErrNotFound = errors.New("processor: not found")
	// ErrDeclined is a card the processor declined.
	ErrDeclined = errors.New("processor: card declined")
	// ErrAlreadyPaid is a second payment of a single-use checkout.
	ErrAlreadyPaid = errors.New("processor: checkout already paid")
)

// CheckoutParams describe a hosted checkout to open.
type CheckoutParams struct {
	// SessionID is the platform's own id of the checkout session.
	SessionID     string
	AmountCents   int64
	Currency      string
	Description   string
	CustomerEmail string
	// SuccessURL already carries the session id (or the processor's
	// placeholder {CHECKOUT_SESSION_ID}); CancelURL may be empty.
	SuccessURL string
	CancelURL  string
	ExpiresAt  time.Time
	Metadata   map[string]string
}

// Checkout is an opened hosted checkout.
type Checkout struct {
	// Ref is the processor's id of the checkout.
	Ref string
	// URL is where the buyer pays.
	URL string
}

// CheckoutStatus is where a checkout stands at the processor.
type CheckoutStatus string

// The statuses of a checkout.
const (
	CheckoutOpen    CheckoutStatus = "open"
	CheckoutPaid    CheckoutStatus = "paid"
	CheckoutExpired CheckoutStatus = "expired"
)

// CheckoutResult is what the processor says of a checkout.
type CheckoutResult struct {
	Status CheckoutStatus
	// PaymentRef identifies the payment once paid (charge or payment intent).
	PaymentRef    string
	AmountCents   int64
	CustomerEmail string
	// Country is the buyer's two-letter country, upper case, when known.
	Country string
}

// DisputeStatus is where a payment's dispute stands.
type DisputeStatus string

// The dispute statuses; DisputeNone is a payment without a dispute.
const (
	DisputeNone DisputeStatus = ""
	DisputeOpen DisputeStatus = "open"
	DisputeWon  DisputeStatus = "won"
	DisputeLost DisputeStatus = "lost"
)

// PayoutStatus is where a payout stands.
type PayoutStatus string

// The payout statuses: pending until the processor confirms paid or failed.
const (
	PayoutPending PayoutStatus = "pending"
	PayoutPaid    PayoutStatus = "paid"
	PayoutFailed  PayoutStatus = "failed"
)

// PayoutAccount is the account payouts go to and the identity-check link
// its owner follows.
type PayoutAccount struct {
	Ref string
	URL string
}

// Processor is a payment processor. Calls that move money take an
// idempotency key: repeating a call with the same key does it once.
type Processor interface {
	// Name is the configured name (test or stripe).
	Name() string
	// Live tells whether real money moves (false for test mode).
	Live() bool
	// CreateCheckout opens a hosted checkout.
	CreateCheckout(ctx context.Context, p CheckoutParams) (Checkout, error)
	// Checkout reads a checkout's status.
	Checkout(ctx context.Context, ref string) (CheckoutResult, error)
	// Refund returns amountCents of a payment to the buyer.
	Refund(ctx context.Context, paymentRef string, amountCents int64, idempotencyKey string) (string, error)
	// Dispute tells where a payment's dispute stands.
	Dispute(ctx context.Context, paymentRef string) (DisputeStatus, error)
	// SetupPayouts makes (or reuses, when ref is set) the payout account
	// of owner and returns it with a fresh identity-check link.
	SetupPayouts(ctx context.Context, owner, ref, returnURL string) (PayoutAccount, error)
	// Payout sends amountCents to a payout account.
	Payout(ctx context.Context, payoutRef string, amountCents int64, idempotencyKey string) (string, error)
	// Payout status tells whether a payout was confirmed.
	PayoutStatus(ctx context.Context, ref string) (PayoutStatus, error)
}
