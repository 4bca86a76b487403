package processor

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/payments/stripemock"
)

func TestStripeAdapter(t *testing.T) {
	base := stripemock.Start(t)
	ctx := context.Background()
	s := NewStripe("sk_test_123", base, "http://127.0.0.1:7070")
	if s.Live() || s.Name() != NameStripe || !NewStripe("sk_live_x", base, "").Live() {
		t.Fatal("mode from the key")
	}
	co, err := s.CreateCheckout(ctx, CheckoutParams{SessionID: "cs_1", AmountCents: 1234, Currency: "usd", Description: "mug",
		CustomerEmail: "b@example.com", SuccessURL: "https://shop.test/ok?session_id={CHECKOUT_SESSION_ID}", CancelURL: "https://shop.test/back",
		ExpiresAt: time.Now().Add(23 * time.Hour), Metadata: map[string]string{"svc_session_id": "cs_1"}})
	if err != nil || !strings.HasPrefix(co.Ref, "cs_") || co.URL == "" {
		t.Fatalf("checkout %+v %v", co, err)
	}
	res, err := s.Checkout(ctx, co.Ref)
	if err != nil || (res.Status != CheckoutOpen && res.Status != CheckoutPaid && res.Status != CheckoutExpired) {
		t.Fatalf("checkout status %+v %v", res, err)
	}
	ref, err := s.Refund(ctx, "pi_123", 500, "re_1")
	if err != nil || !strings.HasPrefix(ref, "re_") {
		t.Fatalf("refund %q %v", ref, err)
	}
	if d, err := s.Dispute(ctx, "pi_123"); err != nil || (d != DisputeNone && d != DisputeOpen && d != DisputeWon && d != DisputeLost) {
		t.Fatalf("dispute %q %v", d, err)
	}
	pa, err := s.SetupPayouts(ctx, "ws_1", "", "http://127.0.0.1:7070/")
	if err != nil || !strings.HasPrefix(pa.Ref, "acct_") || pa.URL == "" {
		t.Fatalf("payout account %+v %v", pa, err)
	}
	po, err := s.Payout(ctx, pa.Ref, 5000, "wd_1")
	if err != nil || !strings.HasPrefix(po, pa.Ref+"/po_") {
		t.Fatalf("payout %q %v", po, err)
	}
	if st, err := s.PayoutStatus(ctx, po); err != nil || (st != PayoutPaid && st != PayoutPending && st != PayoutFailed) {
		t.Fatalf("payout status %q %v", st, err)
	}
	if _, err := s.PayoutStatus(ctx, "garbage"); err == nil {
		t.Fatal("bad payout reference accepted")
	}
}
