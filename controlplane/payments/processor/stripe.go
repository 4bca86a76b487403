package processor

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	stripe "github.com/stripe/stripe-go/v85"
)

// Stripe is the processor on Stripe: Checkout Sessions for the hosted
// checkout, refunds and disputes on the session's PaymentIntent, and
// payouts to the workspace owner's connected (Express) account: a transfer
// to the account, then a payout from its balance, confirmed when Stripe
// marks the payout paid.
type Stripe struct {
	sc   *stripe.Client
	live bool
	base string
}

var _ Processor = (*Stripe)(nil)

// NewStripe returns the Stripe processor with a secret key; baseURL
// replaces Stripe's API address when set (stripe-mock), publicBase is the
// platform's address for the payout setup's return links.
func NewStripe(key, baseURL, publicBase string) *Stripe {
	retries := int64(2)
	cfg := &stripe.BackendConfig{HTTPClient: &http.Client{Timeout: 30 * time.Second}, MaxNetworkRetries: &retries,
		LeveledLogger: &stripe.LeveledLogger{Level: stripe.LevelNull}}
	if baseURL != "" {
		cfg.URL = stripe.String(strings.TrimRight(baseURL, "/"))
	}
	sc := stripe.NewClient(key, stripe.WithBackends(stripe.NewBackendsWithConfig(cfg)))
	live := !strings.HasPrefix(key, "sk_test_") && !strings.HasPrefix(key, "rk_test_")
	return &Stripe{sc: sc, live: live, base: strings.TrimRight(publicBase, "/")}
}

// Name is "stripe".
func (s *Stripe) Name() string { return NameStripe }

// Live is true for a live secret key.
func (s *Stripe) Live() bool { return s.live }

func wrap(op string, err error) error {
	var se *stripe.Error
	if errors.As(err, &se) && (se.HTTPStatusCode == http.StatusNotFound || se.Code == stripe.ErrorCodeResourceMissing) {
		return fmt.Errorf("processor: stripe %s: %w: %s", op, ErrNotFound, se.Msg)
	}
	return fmt.Errorf("processor: stripe %s: %w", op, err)
}

// CreateCheckout creates a Checkout Session in payment mode for one line
// of the amount, expiring with the link.
func (s *Stripe) CreateCheckout(ctx context.Context, p CheckoutParams) (Checkout, error) {
	name := p.Description
	if name == "" {
		name = "Payment"
	}
	params := &stripe.CheckoutSessionCreateParams{
		Mode:              stripe.String(string(stripe.CheckoutSessionModePayment)),
		ClientReferenceID: stripe.String(p.SessionID),
		SuccessURL:        stripe.String(p.SuccessURL),
		ExpiresAt:         stripe.Int64(p.ExpiresAt.Unix()),
		LineItems: []*stripe.CheckoutSessionCreateLineItemParams{{
			Quantity: stripe.Int64(1),
			PriceData: &stripe.CheckoutSessionCreateLineItemPriceDataParams{
				Currency:    stripe.String(p.Currency),
				UnitAmount:  stripe.Int64(p.AmountCents),
				ProductData: &stripe.CheckoutSessionCreateLineItemPriceDataProductDataParams{Name: stripe.String(name)},
			},
		}},
	}
	if p.CancelURL != "" {
		params.CancelURL = stripe.String(p.CancelURL)
	}
	if p.CustomerEmail != "" {
		params.CustomerEmail = stripe.String(p.CustomerEmail)
	}
	for k, v := range p.Metadata {
		params.AddMetadata(k, v)
	}
	params.SetIdempotencyKey("checkout-" + p.SessionID)
	cs, err := s.sc.V1CheckoutSessions.Create(ctx, params)
	if err != nil {
		return Checkout{}, wrap("create checkout", err)
	}
	return Checkout{Ref: cs.ID, URL: cs.URL}, nil
}

// Checkout reads a Checkout Session: complete and paid is paid.
func (s *Stripe) Checkout(ctx context.Context, ref string) (CheckoutResult, error) {
	cs, err := s.sc.V1CheckoutSessions.Retrieve(ctx, ref, nil)
	if err != nil {
		return CheckoutResult{}, wrap("checkout", err)
	}
	r := CheckoutResult{Status: CheckoutOpen, AmountCents: cs.AmountTotal}
	switch {
	case cs.Status == stripe.CheckoutSessionStatusComplete && cs.PaymentStatus == stripe.CheckoutSessionPaymentStatusPaid:
		r.Status = CheckoutPaid
	case cs.Status == stripe.CheckoutSessionStatusExpired:
		r.Status = CheckoutExpired
	}
	if cs.PaymentIntent != nil {
		r.PaymentRef = cs.PaymentIntent.ID
	}
	if cs.CustomerDetails != nil {
		r.CustomerEmail = cs.CustomerDetails.Email
		if cs.CustomerDetails.Address != nil {
			r.Country = strings.ToUpper(cs.CustomerDetails.Address.Country)
		}
	}
	return r, nil
}

// Refund refunds part or all of a PaymentIntent.
func (s *Stripe) Refund(ctx context.Context, paymentRef string, amountCents int64, key string) (string, error) {
	params := &stripe.RefundCreateParams{PaymentIntent: stripe.String(paymentRef), Amount: stripe.Int64(amountCents)}
	params.SetIdempotencyKey("refund-" + key)
	r, err := s.sc.V1Refunds.Create(ctx, params)
	if err != nil {
		return "", wrap("refund", err)
	}
	return r.ID, nil
}

// Dispute reads the dispute of a PaymentIntent, if any.
func (s *Stripe) Dispute(ctx context.Context, paymentRef string) (DisputeStatus, error) {
	params := &stripe.DisputeListParams{PaymentIntent: stripe.String(paymentRef)}
	params.Limit = stripe.Int64(1)
	for d, err := range s.sc.V1Disputes.List(ctx, params).All(ctx) {
		if err != nil {
			return "", wrap("disputes", err)
		}
		switch d.Status {
		case stripe.DisputeStatusWon, stripe.DisputeStatusWarningClosed, stripe.DisputeStatusPrevented:
			return DisputeWon, nil
		case stripe.DisputeStatusLost:
			return DisputeLost, nil
		default:
			return DisputeOpen, nil
		}
	}
	return DisputeNone, nil
}

// SetupPayouts creates the owner's Express account (once) and an
// onboarding link for its identity check.
func (s *Stripe) SetupPayouts(ctx context.Context, owner, ref, returnURL string) (PayoutAccount, error) {
	if ref == "" {
		params := &stripe.AccountCreateParams{Type: stripe.String("express"), Country: stripe.String("US"),
			Capabilities: &stripe.AccountCreateCapabilitiesParams{Transfers: &stripe.AccountCreateCapabilitiesTransfersParams{Requested: stripe.Bool(true)}}}
		params.AddMetadata("svc_workspace", owner)
		params.SetIdempotencyKey("payout-account-" + owner)
		a, err := s.sc.V1Accounts.Create(ctx, params)
		if err != nil {
			return PayoutAccount{}, wrap("create account", err)
		}
		ref = a.ID
	}
	if returnURL == "" {
		returnURL = s.base
	}
	link, err := s.sc.V1AccountLinks.Create(ctx, &stripe.AccountLinkCreateParams{Account: stripe.String(ref), Type: stripe.String("account_onboarding"),
		RefreshURL: stripe.String(returnURL), ReturnURL: stripe.String(returnURL)})
	if err != nil {
		return PayoutAccount{}, wrap("account link", err)
	}
	return PayoutAccount{Ref: ref, URL: link.URL}, nil
}

// Payout transfers the amount to the connected account and pays it out
// from there; the reference is "<account>/<payout>".
func (s *Stripe) Payout(ctx context.Context, payoutRef string, amountCents int64, key string) (string, error) {
	tp := &stripe.TransferCreateParams{Amount: stripe.Int64(amountCents), Currency: stripe.String("usd"), Destination: stripe.String(payoutRef)}
	tp.SetIdempotencyKey("transfer-" + key)
	if _, err := s.sc.V1Transfers.Create(ctx, tp); err != nil {
		return "", wrap("transfer", err)
	}
	pp := &stripe.PayoutCreateParams{Amount: stripe.Int64(amountCents), Currency: stripe.String("usd")}
	pp.SetStripeAccount(payoutRef)
	pp.SetIdempotencyKey("payout-" + key)
	po, err := s.sc.V1Payouts.Create(ctx, pp)
	if err != nil {
		return "", wrap("payout", err)
	}
	return payoutRef + "/" + po.ID, nil
}

// PayoutStatus reads a payout on the connected account.
func (s *Stripe) PayoutStatus(ctx context.Context, ref string) (PayoutStatus, error) {
	account, id, ok := strings.Cut(ref, "/")
	if !ok {
		return "", fmt.Errorf("%w: payout reference %q", ErrNotFound, ref)
	}
	params := &stripe.PayoutRetrieveParams{}
	params.SetStripeAccount(account)
	po, err := s.sc.V1Payouts.Retrieve(ctx, id, params)
	if err != nil {
		return "", wrap("payout", err)
	}
	switch po.Status {
	case stripe.PayoutStatusPaid:
		return PayoutPaid, nil
	case stripe.PayoutStatusFailed, stripe.PayoutStatusCanceled:
		return PayoutFailed, nil
	}
	return PayoutPending, nil
}
