package ai

import (
	"context"

	"github.com/svcplatform/platform/controlplane/billing"
)

// Purposes the gateway reserves under (billing's names).
const (
	purposeChat       = billing.PurposeAI
	purposeEmbeddings = billing.PurposeEmbeddings
)

// BillingLedger adapts the platform's billing ledger to Ledger.
func BillingLedger(l *billing.Ledger) Ledger { return billingLedger{l} }

type billingLedger struct{ l *billing.Ledger }

func (b billingLedger) Reserve(ctx context.Context, r ReserveRequest) (Reservation, error) {
	res, err := b.l.Reserve(ctx, billing.ReserveRequest{Workspace: r.Workspace, Project: r.Project, Purpose: r.Purpose, Ref: r.Ref,
		Amount: billing.Micros(r.Amount), MaxPerRequest: billing.Micros(r.MaxPerRequest)})
	return Reservation{ID: res.ID, Amount: Micros(res.Amount), ExpiresAt: res.ExpiresAt}, err
}

func (b billingLedger) Settle(ctx context.Context, id string, actual Micros) error {
	return b.l.Settle(ctx, id, billing.Micros(actual))
}

func (b billingLedger) Release(ctx context.Context, id string) error { return b.l.Release(ctx, id) }

func (b billingLedger) Summary(ctx context.Context, ws string) (CreditSummary, error) {
	s, err := b.l.Summary(ctx, ws)
	if err != nil {
		return CreditSummary{}, err
	}
	out := CreditSummary{Included: Micros(s.Included), IncludedUsed: Micros(s.IncludedUsed), IncludedLeft: Micros(s.IncludedLeft),
		Balance: Micros(s.Balance), Reserved: Micros(s.Reserved), Owed: Micros(s.Owed), MonthSpend: Micros(s.MonthSpend)}
	if s.SpendLimit != nil {
		v := Micros(*s.SpendLimit)
		out.SpendLimit = &v
	}
	return out, nil
}
