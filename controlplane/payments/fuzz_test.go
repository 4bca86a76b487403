package payments

import (
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/payments/processor"
)

// The checkout create body: decoding and validation never panic, and a
// request that passes is within every limit.
func FuzzCreateRequest(f *testing.F) {
	f.Add([]byte(`{"amountCents":100,"metadata":{"a":"b"},"successUrl":"https://x.test/?a=1#f"}`))
	f.Add([]byte(`{"amountCents":49}`))
	f.Add([]byte(`{"amountCents":100,"metadata":{"svc_x":"1"}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var r CreateRequest
		if api.DecodeBytes(body, &r, false) != nil {
			return
		}
		if r.Validate() != nil {
			return
		}
		if *r.AmountCents < MinAmountCents || *r.AmountCents > MaxAmountCents || len(r.Metadata) > MaxMetadataKeys || r.Currency != "usd" {
			t.Fatalf("accepted %+v", r)
		}
		if r.SuccessURL != "" && validURL("successUrl", r.SuccessURL) != nil && len(r.SuccessURL) <= MaxURL {
			t.Fatalf("success URL %q", r.SuccessURL)
		}
	})
}

func FuzzDecodeCursor(f *testing.F) {
	f.Add(encodeCursor(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), "pay_x"))
	f.Add("nope")
	f.Fuzz(func(t *testing.T, c string) {
		at, id, err := DecodeCursor(c)
		if err == nil && (at == "" || id == "") {
			t.Fatalf("accepted %q", c)
		}
	})
}

func FuzzValidateCard(f *testing.F) {
	f.Add("4242 4242 4242 4242", "12/34", "123")
	f.Add("4000000000000002", "1/2030", "1234")
	f.Add("", "", "")
	now := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, number, exp, cvc string) {
		d, err := processor.ValidateCard(processor.Card{Number: number, Exp: exp, CVC: cvc}, now)
		if err == nil && (len(d) < 12 || len(d) > 19) {
			t.Fatalf("accepted %q as %q", number, d)
		}
	})
}
