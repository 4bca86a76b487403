package processor

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/store"
)

func TestTestProcessorCards(t *testing.T) {
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "p.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	p := NewTest(db, clock.NewFake(time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)), "http://x")
	for _, c := range []struct {
		name, session, number, exp, cvc string
		err                             error
		dispute                         DisputeStatus
	}{
		{"success", "cs_a", "4242 4242 4242 4242", "12/30", "123", nil, DisputeNone},
		{"declined", "cs_b", "4000000000000002", "12/30", "123", ErrDeclined, ""},
		{"disputes later", "cs_c", "4000-0000-0000-0259", "1230", "1234", nil, DisputeOpen},
		{"real card in test mode", "cs_d", "5555555555554444", "12/30", "123", ErrDeclined, ""},
		{"second payment", "cs_a", "4242424242424242", "12/30", "123", ErrAlreadyPaid, ""},
		{"expired card", "cs_e", "4242424242424242", "10/26", "123", &CardError{}, ""},
		{"bad cvc", "cs_e", "4242424242424242", "12/30", "12", &CardError{}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			id, err := p.Pay(ctx, c.session, 1000, Card{Number: c.number, Exp: c.exp, CVC: c.cvc}, "b@example.com", "US")
			var ce *CardError
			switch want := c.err.(type) {
			case nil:
				if err != nil {
					t.Fatal(err)
				}
			case *CardError:
				if !errors.As(err, &ce) {
					t.Fatalf("err %v, want a card error", err)
				}
				return
			default:
				if !errors.Is(err, want) {
					t.Fatalf("err %v, want %v", err, want)
				}
				return
			}
			if d, err := p.Dispute(ctx, id); err != nil || d != c.dispute {
				t.Fatalf("dispute %q %v", d, err)
			}
			if r, err := p.Checkout(ctx, c.session); err != nil || r.Status != CheckoutPaid || r.PaymentRef != id {
				t.Fatalf("checkout %+v %v", r, err)
			}
		})
	}
	if r, _ := p.Checkout(ctx, "cs_b"); r.Status != CheckoutOpen {
		t.Fatalf("declined checkout %+v", r)
	}
}
