// Package billing is the workspace's money on the platform: one ledger in
// integer micro-dollars that the AI gateway, agents and database storage
// overage charge through. It holds the Balance (money the owner loaded), the
// included monthly credits of the plan, reservations (hold an estimate,
// settle the exact cost, release the rest), direct charges, and the monthly
// spending limit. Every movement is an entry of an append-only table written
// in the same transaction as the balance rows it changes; Verify recomputes
// those rows from the entries.
//
// Months are UTC calendar months. Nothing here is a float.
package billing

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/svcplatform/platform/controlplane/plans"
)

// Micros is an amount of money in micro-dollars: 1 dollar = 1_000_000.
type Micros int64

// Dollar is one dollar in Micros.
const Dollar Micros = 1_000_000

// Limits on amounts, so that no sum can overflow an int64.
const (
	// MaxLoad is the most one AddBalance may load: 1,000,000 dollars.
	MaxLoad = 1_000_000 * Dollar
	// MaxBalance is the most a Balance may hold: 100,000,000 dollars.
	MaxBalance = 100_000_000 * Dollar
	// MaxAmount is the most one reservation or charge may be: 1,000,000 dollars.
	MaxAmount = 1_000_000 * Dollar
	// MaxSpendLimit is the highest spending limit: 100,000,000 dollars a month.
	MaxSpendLimit = 100_000_000 * Dollar
)

// USD renders m in dollars with at least two decimals and no trailing zeros
// beyond them: 12.50, 0.000001, -3.00.
func (m Micros) USD() string {
	sign := ""
	u := uint64(m)
	if m < 0 {
		sign, u = "-", uint64(-m)
	}
	frac := strings.TrimRight(fmt.Sprintf("%06d", u%1_000_000), "0")
	for len(frac) < 2 {
		frac += "0"
	}
	return sign + strconv.FormatUint(u/1_000_000, 10) + "." + frac
}

// ErrBadUSD is returned by ParseUSD for text that is not a dollar amount.
var ErrBadUSD = errors.New("billing: not a dollar amount")

// ParseUSD reads a non-negative dollar amount written as digits with at most
// six decimals ("12", "12.5", "0.000001"); signs, spaces, exponents,
// separators and amounts of 1,000,000,000 dollars or more are refused.
func ParseUSD(s string) (Micros, error) {
	whole, frac, dot := strings.Cut(s, ".")
	if whole == "" || (dot && frac == "") || len(frac) > 6 || len(whole) > 9 {
		return 0, fmt.Errorf("%w: %q (write dollars like 12.50, at most six decimals)", ErrBadUSD, s)
	}
	for _, part := range []string{whole, frac} {
		for i := 0; i < len(part); i++ {
			if part[i] < '0' || part[i] > '9' {
				return 0, fmt.Errorf("%w: %q (write dollars like 12.50, at most six decimals)", ErrBadUSD, s)
			}
		}
	}
	w, _ := strconv.ParseInt(whole, 10, 64) // at most 9 digits: fits
	var f int64
	if frac != "" {
		f, _ = strconv.ParseInt(frac+strings.Repeat("0", 6-len(frac)), 10, 64)
	}
	return Micros(w)*Dollar + Micros(f), nil
}

// Purposes say what a charge pays for, which decides the credit used first.
const (
	// PurposeAI is an AI gateway request (chat, playground, compatible surface).
	PurposeAI = "ai"
	// PurposeEmbeddings is embeddings, including text upserts to vector collections.
	PurposeEmbeddings = "embeddings"
	// PurposeAgent is an agent run's model calls.
	PurposeAgent = "agent"
	// PurposeStorage is database storage past the plan's allowance.
	PurposeStorage = "storage"
)

// Pools of money a charge can come from.
const (
	poolAICredit    = "ai_credit"
	poolUsageCredit = "usage_credit"
	poolBalance     = "balance"
)

// creditPool is the included credit a purpose uses before the Balance.
func creditPool(purpose string) (string, error) {
	switch purpose {
	case PurposeAI, PurposeEmbeddings, PurposeAgent:
		return poolAICredit, nil
	case PurposeStorage:
		return poolUsageCredit, nil
	}
	return "", ErrUnknownPurpose.detail("%q (want ai, embeddings, agent or storage)", purpose)
}

// Terms are the money side of a plan, in the specification's words:
//
//   - "Usage is paid from included monthly AI credit first (10 dollars on
//     pro, 100 on enterprise; none on hobby), then from the Balance."
//   - "per-request reservation: 2 dollars hobby, 10 pro, 10 enterprise"
//   - "storage past the allowance on pro, team, scale: charged daily from the
//     paying workspace's Balance at 1.00 dollar per GB per month; team's 20
//     dollar monthly usage credit pays first"
//
// The numbers live in the one plan table (controlplane/plans); team and
// scale's AI figures are the platform's choice there (as pro and as
// enterprise).
type Terms struct {
	// AICredit is the included monthly AI credit.
	AICredit Micros
	// UsageCredit is the monthly usage credit that pays storage overage first.
	UsageCredit Micros
	// MaxPerRequest is the most one AI request may reserve.
	MaxPerRequest Micros
	// StorageOverage tells whether storage past the allowance is charged
	// (paid plans) rather than held (hobby).
	StorageOverage bool
}

// centsToMicros converts the plan table's cents.
const centsToMicros = 10_000

// TermsOf returns the money terms of plan n.
func TermsOf(n plans.Name) Terms {
	l := plans.Of(n)
	return Terms{
		AICredit:       Micros(l.AICreditCents) * centsToMicros,
		UsageCredit:    Micros(l.UsageCreditCents) * centsToMicros,
		MaxPerRequest:  Micros(l.AIReservationCents) * centsToMicros,
		StorageOverage: l.StorageOverage,
	}
}

func (t Terms) credit(pool string) Micros {
	switch pool {
	case poolAICredit:
		return t.AICredit
	case poolUsageCredit:
		return t.UsageCredit
	}
	return 0
}

// PlanSource tells the ledger a workspace's plan (accounts owns it).
type PlanSource interface {
	PlanOf(ctx context.Context, workspace string) (plans.Name, error)
}

// PlanFunc adapts a function to PlanSource.
type PlanFunc func(ctx context.Context, workspace string) (plans.Name, error)

// PlanOf calls f.
func (f PlanFunc) PlanOf(ctx context.Context, workspace string) (plans.Name, error) {
	return f(ctx, workspace)
}
