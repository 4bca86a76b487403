package processor

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// startStripeMock runs stripe-mock (github.com/stripe/stripe-mock, on PATH
// or at $STRIPE_MOCK) on a free local port and returns its base URL.
func startStripeMock(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("STRIPE_MOCK")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("stripe-mock"); err != nil {
			t.Skip("controlplane/payments/processor: stripe-mock not installed (go install github.com/stripe/stripe-mock@v0.203.0); skipping the Stripe adapter tests")
		}
	}
	cmd := exec.Command(bin, "-http-addr", "127.0.0.1:", "-https-addr", "127.0.0.1:")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if _, a, ok := strings.Cut(sc.Text(), "Listening for HTTP at address: "); ok {
				addr <- strings.TrimSpace(a)
			}
		}
	}()
	select {
	case a := <-addr:
		return "http://" + a
	case <-time.After(30 * time.Second):
		t.Fatal("stripe-mock did not start")
	}
	return ""
}

func TestStripeAdapter(t *testing.T) {
	base := startStripeMock(t)
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
