package payments

import (
	"math/rand/v2"
	"testing"
)

func TestFee(t *testing.T) {
	for _, c := range []struct{ amount, fee int64 }{
		{50, 32},   // 1.95 -> 2
		{100, 34},  // 3.9 -> 4
		{1000, 69}, // 39
		{1010, 69}, // 39.39 -> 39
		{1283, 80}, // 50.037 -> 50
		{1500, 89}, // 58.5 -> 59 (halves up)
		{1282, 80}, // 49.998 -> 50
		{100_000_000, 3_900_030},
	} {
		if got := Fee(c.amount); got != c.fee {
			t.Errorf("Fee(%d) = %d, want %d", c.amount, got, c.fee)
		}
		if c.amount-Fee(c.amount) <= 0 {
			t.Errorf("net of %d is not positive", c.amount)
		}
	}
}

func TestNetShare(t *testing.T) {
	for _, c := range []struct {
		name                  string
		net, amount, refunded int64
		want                  int64
	}{
		{"nothing", 931, 1000, 0, 0},
		{"all", 931, 1000, 1000, 931},
		{"half", 931, 1000, 500, 466}, // 465.5 -> 466
		{"tenth", 931, 1000, 100, 93}, // 93.1
		{"one cent", 18, 50, 1, 0},    // 0.36
		{"two cents", 18, 50, 2, 1},   // 0.72
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := netShare(c.net, c.amount, c.refunded); got != c.want {
				t.Fatalf("netShare = %d, want %d", got, c.want)
			}
		})
	}
}

// Partial refunds in any steps take back exactly the net and return exactly
// the fee once everything is refunded, and each step's fee share is never
// negative nor above the step.
func TestNetShareSteps(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		amount := MinAmountCents + r.Int64N(200_000)
		net := amount - Fee(amount)
		var refunded, netTotal, feeTotal int64
		for refunded < amount {
			step := 1 + r.Int64N(amount-refunded)
			n := netShare(net, amount, refunded+step) - netShare(net, amount, refunded)
			if n < 0 || n > step {
				t.Fatalf("amount %d step %d: net share %d", amount, step, n)
			}
			refunded += step
			netTotal += n
			feeTotal += step - n
		}
		if netTotal != net || feeTotal != amount-net {
			t.Fatalf("amount %d: net %d of %d, fee %d of %d", amount, netTotal, net, feeTotal, amount-net)
		}
	}
}
