package ai

import (
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
)

// Micros is an amount of US dollars in millionths (1 dollar = 1,000,000),
// the unit of the billing ledger. Money is never a float here.
type Micros int64

// MicrosPerDollar is one dollar.
const MicrosPerDollar Micros = 1_000_000

// String renders m as dollars with six decimals ("0.001234").
func (m Micros) String() string {
	neg := m < 0
	if neg {
		m = -m
	}
	s := fmt.Sprintf("%d.%06d", m/MicrosPerDollar, m%MicrosPerDollar)
	if neg {
		s = "-" + s
	}
	return s
}

// USD is an amount shown as a JSON number of dollars, written from the
// integer exactly (0.001234), never through a float.
type USD Micros

// MarshalJSON writes the amount as a decimal number.
func (u USD) MarshalJSON() ([]byte, error) { return []byte(Micros(u).String()), nil }

// UnmarshalJSON reads a decimal number exactly.
func (u *USD) UnmarshalJSON(b []byte) error {
	m, err := ParseDollars(strings.Trim(string(b), `"`))
	if err != nil {
		return err
	}
	*u = USD(m)
	return nil
}

// ErrBadAmount is returned for a dollar amount that is not a plain decimal
// with at most six decimals.
var ErrBadAmount = errors.New("ai: bad dollar amount")

// maxDollars bounds parsed amounts (a million dollars).
const maxDollars = 1_000_000

// ParseDollars reads a non-negative decimal number of dollars ("0.15",
// "15", "0.000001") into micro-dollars exactly.
func ParseDollars(s string) (Micros, error) {
	s = strings.TrimSpace(s)
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" {
		whole = "0"
	}
	frac = strings.TrimRight(frac, "0")
	if len(frac) > 6 || !digits(whole) || (frac != "" && !digits(frac)) || s == "" || s == "." {
		return 0, fmt.Errorf("%w %q (want a decimal with at most six decimals)", ErrBadAmount, s)
	}
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || w > maxDollars {
		return 0, fmt.Errorf("%w %q (at most %d dollars)", ErrBadAmount, s, maxDollars)
	}
	f := int64(0)
	if frac != "" {
		f, _ = strconv.ParseInt(frac+strings.Repeat("0", 6-len(frac)), 10, 64)
	}
	return Micros(w)*MicrosPerDollar + Micros(f), nil
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// PerMTok is a price in micro-dollars per million tokens; in JSON it is a
// decimal number (or string) of dollars per million tokens.
type PerMTok Micros

// MarshalJSON writes dollars per million tokens as a decimal number.
func (p PerMTok) MarshalJSON() ([]byte, error) {
	s := strings.TrimRight(strings.TrimRight(Micros(p).String(), "0"), ".")
	return []byte(s), nil
}

// UnmarshalJSON reads a number or a string of dollars per million tokens.
func (p *PerMTok) UnmarshalJSON(b []byte) error {
	m, err := ParseDollars(strings.Trim(string(b), `"`))
	if err != nil {
		return err
	}
	*p = PerMTok(m)
	return nil
}

// maxTokensCounted bounds the token counts money is computed from, so that
// an upstream reporting absurd usage cannot overflow the arithmetic.
const maxTokensCounted = 100_000_000

// MaxMarkupBasisPoints is the most the platform adds to a third-party
// model's list price: 5 percent.
const MaxMarkupBasisPoints = 500

// MaxCost is the most one request costs: the billing ledger's largest
// movement (billing.MaxAmount), so that every cost an answer reports is
// one the ledger takes in full.
const MaxCost Micros = 1_000_000 * MicrosPerDollar

// Cost is the price of tokensIn and tokensOut at the given prices plus
// markupBP basis points, rounded up to the next micro-dollar: one rounding
// over the whole request, so no fraction is lost or made up per token. It
// is at most MaxCost.
func Cost(in, out PerMTok, tokensIn, tokensOut int64, markupBP int) Micros {
	tokensIn, tokensOut = clampTokens(tokensIn), clampTokens(tokensOut)
	// tokens times micro-dollars per million tokens, times (10000 + markup):
	// computed in 128 bits, then divided by a million and by 10000.
	hi1, lo1 := bits.Mul64(uint64(tokensIn), uint64(in))
	hi2, lo2 := bits.Mul64(uint64(tokensOut), uint64(out))
	lo, carry := bits.Add64(lo1, lo2, 0)
	hi := hi1 + hi2 + carry
	// times (10000 + markup)
	m := uint64(10_000 + markupBP)
	hiA, loA := bits.Mul64(lo, m)
	hi = hi*m + hiA
	lo = loA
	const den = 1_000_000 * 10_000
	if hi >= den {
		return MaxCost
	}
	q, r := bits.Div64(hi, lo, den)
	if r > 0 {
		q++
	}
	if q > uint64(MaxCost) {
		return MaxCost
	}
	return Micros(q)
}

func clampTokens(n int64) int64 {
	if n < 0 {
		return 0
	}
	if n > maxTokensCounted {
		return maxTokensCounted
	}
	return n
}
