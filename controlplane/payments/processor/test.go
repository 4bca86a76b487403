package processor

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/store"
)

// The test cards, as in Stripe's test mode.
const (
	// CardSuccess is paid.
	CardSuccess = "4242424242424242"
	// CardDeclined is declined.
	CardDeclined = "4000000000000002"
	// CardDispute is paid and then disputed by the buyer.
	CardDispute = "4000000000000259"
)

// Card is what a buyer types into the hosted page.
type Card struct {
	Number string
	// Exp is MM/YY (MM/YYYY and MMYY are accepted).
	Exp string
	CVC string
}

// CardError is a card refused before it reaches a bank: its message says
// which field to fix.
type CardError struct {
	Field   string
	Message string
}

func (e *CardError) Error() string { return "processor: " + e.Message }

// Test is the built-in test processor. Its books (charges, refunds,
// disputes, payout accounts, payouts) are tables of the metadata database,
// as a real processor keeps them on its side; no money moves.
type Test struct {
	db   *store.DB
	clk  clock.Clock
	base string
}

var _ Processor = (*Test)(nil)

// NewTest returns the test processor; baseURL is where the platform serves
// its hosted pages (/pay/{session}).
func NewTest(db *store.DB, clk clock.Clock, baseURL string) *Test {
	return &Test{db: db, clk: clk, base: strings.TrimRight(baseURL, "/")}
}

// Name is "test".
func (t *Test) Name() string { return NameTest }

// Live is false: nothing is charged.
func (t *Test) Live() bool { return false }

// CreateCheckout opens a checkout served by the platform's hosted page.
func (t *Test) CreateCheckout(_ context.Context, p CheckoutParams) (Checkout, error) {
	if p.SessionID == "" || p.AmountCents <= 0 {
		return Checkout{}, errors.New("processor: test checkout needs a session id and an amount")
	}
	return Checkout{Ref: p.SessionID, URL: t.base + "/pay/" + p.SessionID}, nil
}

// Checkout reads whether a checkout was paid.
func (t *Test) Checkout(ctx context.Context, ref string) (CheckoutResult, error) {
	var r CheckoutResult
	err := t.db.QueryRowContext(ctx, `SELECT id, amount_cents, email, country FROM payment_test_charges WHERE session_ref = ? AND status = 'succeeded'`, ref).
		Scan(&r.PaymentRef, &r.AmountCents, &r.CustomerEmail, &r.Country)
	if errors.Is(err, sql.ErrNoRows) {
		return CheckoutResult{Status: CheckoutOpen}, nil
	}
	if err != nil {
		return r, fmt.Errorf("processor: test checkout %s: %w", ref, err)
	}
	r.Status = CheckoutPaid
	return r, nil
}

// ValidateCard checks a card's number (digits, Luhn), expiry (not past at
// now) and CVC, and returns the number's digits.
func ValidateCard(c Card, now time.Time) (string, error) {
	digits := strings.Map(func(r rune) rune {
		if r == ' ' || r == '-' {
			return -1
		}
		return r
	}, c.Number)
	if len(digits) < 12 || len(digits) > 19 || strings.Trim(digits, "0123456789") != "" || !luhn(digits) {
		return "", &CardError{Field: "number", Message: "the card number is incorrect"}
	}
	month, year, ok := parseExp(c.Exp)
	if !ok {
		return "", &CardError{Field: "exp", Message: "the expiry date must be MM/YY"}
	}
	// A card is valid through the last day of its expiry month.
	if !time.Date(year, time.Month(month)+1, 1, 0, 0, 0, 0, time.UTC).After(now) {
		return "", &CardError{Field: "exp", Message: "the card has expired"}
	}
	cvc := strings.TrimSpace(c.CVC)
	if len(cvc) < 3 || len(cvc) > 4 || strings.Trim(cvc, "0123456789") != "" {
		return "", &CardError{Field: "cvc", Message: "the security code must be 3 or 4 digits"}
	}
	return digits, nil
}

func parseExp(s string) (month, year int, ok bool) {
	s = strings.ReplaceAll(strings.TrimSpace(s), " ", "")
	mm, yy, found := strings.Cut(s, "/")
	if !found {
		if len(s) != 4 {
			return 0, 0, false
		}
		mm, yy = s[:2], s[2:]
	}
	m, err1 := strconv.Atoi(mm)
	y, err2 := strconv.Atoi(yy)
	if err1 != nil || err2 != nil || m < 1 || m > 12 || len(mm) > 2 {
		return 0, 0, false
	}
	switch len(yy) {
	case 2:
		y += 2000
	case 4:
	default:
		return 0, 0, false
	}
	return m, y, true
}

func luhn(digits string) bool {
	sum := 0
	double := false
	for i := len(digits) - 1; i >= 0; i-- {
		d := int(digits[i] - '0')
		if double {
			d *= 2
			if d > 9 {
				d -= 9
			}
		}
		sum += d
		double = !double
	}
	return sum%10 == 0
}

// Pay charges a test card for a checkout. The test cards decide the
// outcome; any other valid number is declined as a real card in test mode.
// A declined card is recorded and answers ErrDeclined; a second payment of
// the same checkout answers ErrAlreadyPaid.
func (t *Test) Pay(ctx context.Context, sessionRef string, amountCents int64, c Card, email, country string) (string, error) {
	digits, err := ValidateCard(c, t.clk.Now())
	if err != nil {
		return "", err
	}
	status, dispute := "declined", ""
	switch digits {
	case CardSuccess:
		status = "succeeded"
	case CardDispute:
		status, dispute = "succeeded", string(DisputeOpen)
	}
	id := store.NewID("ch_test")
	_, err = t.db.ExecContext(ctx, `INSERT INTO payment_test_charges(id, session_ref, amount_cents, card_last4, email, country, status, dispute, created_at)
		VALUES (?,?,?,?,?,?,?,?,?)`, id, sessionRef, amountCents, digits[len(digits)-4:], email, country, status, dispute, store.FormatTime(t.clk.Now()))
	if store.IsUniqueViolation(err) {
		return "", ErrAlreadyPaid
	}
	if err != nil {
		return "", fmt.Errorf("processor: test charge: %w", err)
	}
	if status == "declined" {
		if digits != CardDeclined {
			return "", fmt.Errorf("%w: test mode takes test cards only (4242 4242 4242 4242)", ErrDeclined)
		}
		return "", ErrDeclined
	}
	return id, nil
}

// Refund records a refund of a test charge, once per idempotency key.
func (t *Test) Refund(ctx context.Context, paymentRef string, amountCents int64, key string) (string, error) {
	var id string
	err := t.db.Tx(ctx, func(tx *sql.Tx) error {
		if err := tx.QueryRowContext(ctx, `SELECT id FROM payment_test_refunds WHERE idempotency_key = ?`, key).Scan(&id); err == nil {
			return nil
		} else if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		var amount, refunded int64
		err := tx.QueryRowContext(ctx, `SELECT amount_cents, (SELECT coalesce(sum(amount_cents),0) FROM payment_test_refunds WHERE charge_id = c.id)
			FROM payment_test_charges c WHERE id = ? AND status = 'succeeded'`, paymentRef).Scan(&amount, &refunded)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		if amountCents <= 0 || refunded+amountCents > amount {
			return fmt.Errorf("processor: refund of %d cents exceeds the %d cents left on %s", amountCents, amount-refunded, paymentRef)
		}
		id = store.NewID("re_test")
		_, err = tx.ExecContext(ctx, `INSERT INTO payment_test_refunds(id, charge_id, amount_cents, idempotency_key, created_at) VALUES (?,?,?,?,?)`,
			id, paymentRef, amountCents, key, store.FormatTime(t.clk.Now()))
		return err
	})
	if err != nil {
		return "", fmt.Errorf("processor: test refund: %w", err)
	}
	return id, nil
}

// Dispute tells where a test charge's dispute stands.
func (t *Test) Dispute(ctx context.Context, paymentRef string) (DisputeStatus, error) {
	var d string
	err := t.db.QueryRowContext(ctx, `SELECT dispute FROM payment_test_charges WHERE id = ?`, paymentRef).Scan(&d)
	if errors.Is(err, sql.ErrNoRows) {
		return "", ErrNotFound
	}
	if err != nil {
		return "", fmt.Errorf("processor: test dispute: %w", err)
	}
	return DisputeStatus(d), nil
}

// SetDispute opens, wins or loses a test charge's dispute (the test hooks
// standing in for a buyer's bank). Won and lost need an open dispute.
func (t *Test) SetDispute(ctx context.Context, paymentRef string, to DisputeStatus) error {
	var q string
	switch to {
	case DisputeOpen:
		q = `UPDATE payment_test_charges SET dispute = 'open' WHERE id = ? AND status = 'succeeded' AND dispute = ''`
	case DisputeWon, DisputeLost:
		q = `UPDATE payment_test_charges SET dispute = '` + string(to) + `' WHERE id = ? AND dispute = 'open'`
	default:
		return fmt.Errorf("processor: unknown dispute status %q", to)
	}
	res, err := t.db.ExecContext(ctx, q, paymentRef)
	if err != nil {
		return fmt.Errorf("processor: test dispute: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%w: no charge %s in a state to become %s", ErrNotFound, paymentRef, to)
	}
	return nil
}

// SetupPayouts makes the owner's test payout account; the identity check
// passes at once in test mode and the link shows that.
func (t *Test) SetupPayouts(ctx context.Context, owner, ref, _ string) (PayoutAccount, error) {
	var id, token string
	err := t.db.QueryRowContext(ctx, `SELECT id, token FROM payment_test_payout_accounts WHERE owner = ?`, owner).Scan(&id, &token)
	if errors.Is(err, sql.ErrNoRows) {
		id, token = store.NewID("acct_test"), store.NewID("idv")
		_, err = t.db.ExecContext(ctx, `INSERT INTO payment_test_payout_accounts(id, owner, token, created_at) VALUES (?,?,?,?)`,
			id, owner, token, store.FormatTime(t.clk.Now()))
	}
	if err != nil {
		return PayoutAccount{}, fmt.Errorf("processor: test payout account: %w", err)
	}
	return PayoutAccount{Ref: id, URL: t.base + "/payouts/identity/" + token}, nil
}

// PayoutAccountByToken finds the payout account of an identity-check link.
func (t *Test) PayoutAccountByToken(ctx context.Context, token string) (string, error) {
	var id string
	err := t.db.QueryRowContext(ctx, `SELECT id FROM payment_test_payout_accounts WHERE token = ?`, token).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", ErrNotFound
	}
	return id, err
}

// Payout records a pending test payout, once per idempotency key.
func (t *Test) Payout(ctx context.Context, payoutRef string, amountCents int64, key string) (string, error) {
	if amountCents <= 0 {
		return "", errors.New("processor: payout amount must be positive")
	}
	var n int
	if err := t.db.QueryRowContext(ctx, `SELECT count(*) FROM payment_test_payout_accounts WHERE id = ?`, payoutRef).Scan(&n); err != nil {
		return "", fmt.Errorf("processor: test payout: %w", err)
	}
	if n == 0 {
		return "", fmt.Errorf("%w: payout account %s", ErrNotFound, payoutRef)
	}
	id := store.NewID("po_test")
	_, err := t.db.ExecContext(ctx, `INSERT INTO payment_test_payouts(id, payout_account, amount_cents, status, idempotency_key, created_at)
		VALUES (?,?,?,'pending',?,?) ON CONFLICT(idempotency_key) DO NOTHING`, id, payoutRef, amountCents, key, store.FormatTime(t.clk.Now()))
	if err != nil {
		return "", fmt.Errorf("processor: test payout: %w", err)
	}
	if err := t.db.QueryRowContext(ctx, `SELECT id FROM payment_test_payouts WHERE idempotency_key = ?`, key).Scan(&id); err != nil {
		return "", fmt.Errorf("processor: test payout: %w", err)
	}
	return id, nil
}

// PayoutStatus tells whether a test payout was confirmed.
func (t *Test) PayoutStatus(ctx context.Context, ref string) (PayoutStatus, error) {
	var s string
	err := t.db.QueryRowContext(ctx, `SELECT status FROM payment_test_payouts WHERE id = ?`, ref).Scan(&s)
	if errors.Is(err, sql.ErrNoRows) {
		return "", ErrNotFound
	}
	if err != nil {
		return "", fmt.Errorf("processor: test payout status: %w", err)
	}
	return PayoutStatus(s), nil
}

// SetPayoutStatus confirms (paid) or fails a pending test payout: the test
// hook standing in for the bank.
func (t *Test) SetPayoutStatus(ctx context.Context, ref string, to PayoutStatus) error {
	if to != PayoutPaid && to != PayoutFailed {
		return fmt.Errorf("processor: a payout becomes paid or failed, not %q", to)
	}
	res, err := t.db.ExecContext(ctx, `UPDATE payment_test_payouts SET status = ? WHERE id = ? AND status = 'pending'`, string(to), ref)
	if err != nil {
		return fmt.Errorf("processor: test payout: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%w: no pending payout %s", ErrNotFound, ref)
	}
	return nil
}
