package payments_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/svcplatform/platform/controlplane"
	"github.com/svcplatform/platform/controlplane/cptest"
	"github.com/svcplatform/platform/controlplane/payments"
	"github.com/svcplatform/platform/controlplane/payments/stripemock"
)

// The stripe processor is chosen by the control plane's configuration and
// opens Stripe Checkout Sessions (against stripe-mock), in the whole
// assembly.
func TestStripeProcessorSelected(t *testing.T) {
	base := stripemock.Start(t)
	e := cptest.New(t, cptest.Options{Configure: func(c *controlplane.Config) {
		c.Payments.Processor, c.Payments.StripeKey, c.Payments.StripeBaseURL = "stripe", "sk_test_123", base
	}})
	project := e.CreateProject("shop")
	var acct payments.AccountAnswer
	e.Owner.Must(http.StatusOK, "POST", "/api/projects/"+project+"/payments", nil).JSON(t, &acct)
	if acct.Account.Processor != "stripe" {
		t.Fatalf("processor not selected: %+v", acct.Account)
	}
	account := acct.Account.ID
	var c payments.Created
	e.Owner.Must(http.StatusCreated, "POST", "/api/payments/"+account, map[string]any{"amountCents": 1500}).JSON(t, &c)
	if strings.HasPrefix(c.URL, e.Server.URL) || c.URL == "" || c.Session.Mode != "test" {
		t.Fatalf("%+v", c)
	}
	if r := e.Owner.Do("GET", "/api/payments/"+account+"/sessions/"+c.Session.ID, nil); r.Status != http.StatusOK {
		t.Fatalf("lookup %d %s", r.Status, r.Body)
	}
	// The hosted page belongs to the test processor only.
	if r := e.Client("").Do("GET", "/pay/"+c.Session.ID, nil); r.Status != http.StatusNotFound {
		t.Fatalf("hosted page for a stripe session: %d", r.Status)
	}
}
