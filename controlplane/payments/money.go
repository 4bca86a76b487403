package payments

import "time"

// The specification's money rules, in integer cents.
const (
	// MinAmountCents is the smallest checkout: 0.50 dollars.
	MinAmountCents int64 = 50
	// MaxAmountCents is the largest checkout: 1,000,000 dollars.
	MaxAmountCents int64 = 100_000_000
	// FeePermille and FeeFixedCents are the fee: 3.9 percent plus 30 cents.
	FeePermille   int64 = 39
	FeeFixedCents int64 = 30
	// Hold is how long each payment's net is held before it can be withdrawn.
	Hold = 7 * 24 * time.Hour
	// SessionTTL is how long a checkout link stays payable.
	SessionTTL = 24 * time.Hour
)

// Fee is the fee of a sale of amount cents: 3.9 percent rounded to the
// nearest cent, halves up, plus 30 cents. 50 cents pay 2 + 30 = 32; 1,000
// cents pay 39 + 30 = 69; 1,010 cents pay 39.39 -> 39 + 30 = 69; 1,283
// cents pay 50.037 -> 50 + 30 = 80; 1,500 cents pay 58.5 -> 59 + 30 = 89.
func Fee(amount int64) int64 {
	return (amount*FeePermille+500)/1000 + FeeFixedCents
}

// netShare is how much of a payment's net refunds totalling refunded cents
// take back: the same share of net as refunded is of the amount, rounded to
// the nearest cent, halves up. It is computed on the running total, so
// partial refunds add up to exactly the net when everything is refunded,
// and the fee returned (refund minus net share) is never negative.
func netShare(net, amount, refunded int64) int64 {
	if amount <= 0 || refunded <= 0 {
		return 0
	}
	if refunded >= amount {
		return net
	}
	// net*refunded fits easily: both are at most 10^8.
	return (2*net*refunded + amount) / (2 * amount)
}
