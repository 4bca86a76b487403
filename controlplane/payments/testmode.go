package payments

import (
	"context"
	"errors"
	"strings"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/payments/processor"
)

// Errors of the hosted page.
var (
	ErrSessionPaid    = api.E(api.KindGone, "session_paid", "this checkout link was paid already: links are single use")
	ErrSessionExpired = api.E(api.KindGone, "session_expired", "this checkout link expired: links can be paid for 24 hours")
)

// PayForm is what a buyer submits on the hosted page.
type PayForm struct {
	Card    processor.Card
	Email   string
	Country string
}

// Pay charges a test card on the hosted page of the built-in processor and
// records the payment once the processor confirms it. It returns where the
// buyer goes next: the success URL with the session id, or the thank-you
// page.
func (s *Service) Pay(ctx context.Context, sessionID string, f PayForm) (string, error) {
	x, err := s.getSession(ctx, s.d.DB, sessionID)
	if err != nil {
		return "", err
	}
	switch x.State {
	case SessionPaid:
		return "", ErrSessionPaid
	case SessionExpired:
		return "", ErrSessionExpired
	}
	if s.test == nil || x.Livemode {
		return "", api.E(api.KindNotFound, "not_hosted", "this checkout is not paid on this page")
	}
	email := x.CustomerEmail
	if email == "" {
		email = strings.TrimSpace(f.Email)
		if email == "" {
			return "", api.E(api.KindInvalid, "email", "enter your e-mail address for the receipt")
		}
		if err := validEmail("email", email); err != nil {
			return "", api.E(api.KindInvalid, "email", "the e-mail address is not valid")
		}
	}
	country := strings.ToUpper(strings.TrimSpace(f.Country))
	if country == "" {
		country = "US"
	}
	if len(country) != 2 || strings.Trim(country, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != "" {
		return "", api.E(api.KindInvalid, "country", "the country must be a two-letter code such as US")
	}
	_, err = s.test.Pay(ctx, x.processorRef, x.AmountCents, f.Card, email, country)
	var ce *processor.CardError
	switch {
	case errors.As(err, &ce):
		return "", api.E(api.KindInvalid, "card_"+ce.Field, "%s", ce.Message)
	case errors.Is(err, processor.ErrDeclined):
		msg := "your card was declined"
		if err.Error() != processor.ErrDeclined.Error() {
			msg = "your card was declined: test mode takes the test cards only, such as 4242 4242 4242 4242"
		}
		return "", api.E(api.KindPaymentRequired, "card_declined", "%s", msg)
	case errors.Is(err, processor.ErrAlreadyPaid):
		return "", ErrSessionPaid
	case err != nil:
		return "", err
	}
	res, err := s.proc.Checkout(ctx, x.processorRef)
	if err != nil {
		return "", err
	}
	if _, err := s.confirm(ctx, x.ID, res); err != nil {
		return "", err
	}
	return s.successURL(x), nil
}

// successURL is where a buyer goes after paying.
func (s *Service) successURL(x Session) string {
	if x.SuccessURL == "" {
		return s.cfg.PublicBaseURL + "/pay/" + x.ID + "/done"
	}
	return strings.ReplaceAll(x.SuccessURL, SessionPlaceholder, x.ID)
}

// PublicSession reads a session for its hosted page.
func (s *Service) PublicSession(ctx context.Context, id string) (Session, error) {
	if !strings.HasPrefix(id, "cs_") || len(id) > 64 {
		return Session{}, api.NotFound("checkout session")
	}
	return s.getSession(ctx, s.d.DB, id)
}

// TestHookRequest is a test-mode event standing in for the buyer's bank
// (disputes) or the owner's bank (payouts).
type TestHookRequest struct {
	// Action is dispute-open, dispute-win, dispute-lose, withdrawal-confirm
	// or withdrawal-fail.
	Action       string `json:"action"`
	PaymentID    string `json:"paymentId,omitempty"`
	WithdrawalID string `json:"withdrawalId,omitempty"`
}

// TestHook applies a test-mode event through the test processor, then
// brings the account in line with it as with any processor.
func (s *Service) TestHook(ctx context.Context, pr *auth.Principal, accountID string, req TestHookRequest) error {
	a, err := s.account(ctx, pr, accountID, auth.OpPaymentsWrite)
	if err != nil {
		return err
	}
	if s.test == nil || a.Livemode {
		return api.Conflict("not_test_mode", "test hooks exist only for accounts of the built-in test processor")
	}
	switch req.Action {
	case "dispute-open", "dispute-win", "dispute-lose":
		p, err := getPayment(ctx, s.d.DB, `id = ? AND account_id = ?`, req.PaymentID, a.ID)
		if err != nil {
			return err
		}
		to := map[string]processor.DisputeStatus{"dispute-open": processor.DisputeOpen, "dispute-win": processor.DisputeWon, "dispute-lose": processor.DisputeLost}[req.Action]
		if err := s.test.SetDispute(ctx, p.processorRef, to); err != nil {
			return api.Conflict("invalid_transition", "payment %s cannot have its dispute become %s now", p.ID, to)
		}
		return s.syncDispute(ctx, p.ID)
	case "withdrawal-confirm", "withdrawal-fail":
		w, err := scanWithdrawal(s.d.DB.QueryRowContext(ctx, `SELECT `+withdrawalCols+` FROM payment_withdrawals WHERE id = ? AND account_id = ?`, req.WithdrawalID, a.ID))
		if err != nil {
			return api.NotFound("withdrawal")
		}
		if w.processorRef == "" {
			return api.Conflict("payout_not_sent", "withdrawal %s has not reached the processor yet", w.ID)
		}
		to := processor.PayoutPaid
		if req.Action == "withdrawal-fail" {
			to = processor.PayoutFailed
		}
		if err := s.test.SetPayoutStatus(ctx, w.processorRef, to); err != nil {
			return api.Conflict("invalid_transition", "withdrawal %s is not pending at the processor", w.ID)
		}
		return s.reconcile(ctx, a)
	}
	return api.Invalid("action must be dispute-open, dispute-win, dispute-lose, withdrawal-confirm or withdrawal-fail")
}
