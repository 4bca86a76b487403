package payments

import (
	"strings"
	"testing"

	"github.com/svcplatform/platform/controlplane/payments/stripemock"
)

// The stripe processor is chosen by configuration and opens Stripe
// Checkout Sessions (against stripe-mock).
func TestStripeProcessorSelected(t *testing.T) {
	base := stripemock.Start(t)
	e := newEnv(t, envOptions{config: func(c *Config) { c.Processor, c.StripeKey, c.StripeBaseURL = "stripe", "sk_test_123", base }})
	if e.svc.Processor().Name() != "stripe" {
		t.Fatal("processor not selected")
	}
	_, account := e.enable("shop")
	c := e.checkout(account, 1500, nil)
	if strings.HasPrefix(c.URL, e.srv.URL) || c.URL == "" || c.Session.Mode != "test" {
		t.Fatalf("%+v", c)
	}
	r := e.owner.do("GET", "/api/payments/"+account+"/sessions/"+c.Session.ID, nil)
	if r.status != 200 && r.status != 502 {
		t.Fatalf("lookup %d %s", r.status, r.body)
	}
	// The hosted page belongs to the test processor only.
	if r := e.client("").do("GET", "/pay/"+c.Session.ID, nil); r.status != 404 {
		t.Fatalf("hosted page for a stripe session: %d", r.status)
	}
}
