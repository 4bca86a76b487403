package billing

import (
	"context"
	"time"

	"github.com/svcplatform/platform/controlplane/jobs"
	"github.com/svcplatform/platform/controlplane/plans"
)

// JobSettleExpired is the periodic job that releases reservations whose
// request died (SettleExpired).
const JobSettleExpired = "billing.settle_expired"

// SettleInterval is how often JobSettleExpired runs: with
// DefaultReservationTTL a lost reservation is settled within 30 minutes.
const SettleInterval = 5 * time.Minute

// registerJobs registers the ledger's background work on r: JobSettleExpired
// every SettleInterval. The schedule lives in the store, so it survives
// restarts.
func (l *Ledger) registerJobs(r jobs.Queue) {
	r.Register(JobSettleExpired, func(ctx context.Context, _ jobs.Job) error {
		_, err := l.SettleExpired(ctx)
		return err
	}, jobs.KindOptions{MaxAttempts: 3, Backoff: []time.Duration{time.Minute}, Timeout: 2 * time.Minute})
	r.Every(JobSettleExpired, SettleInterval)
}

// JobRenewPlans is the periodic job that renews paid plans whose month
// ended (RenewPlans).
const JobRenewPlans = "billing.renew_plans"

// RenewInterval is how often JobRenewPlans runs: a plan is renewed within
// an hour of its month's end.
const RenewInterval = time.Hour

// RegisterRenewal registers JobRenewPlans on r, every RenewInterval: st
// stores the plans (accounts) and a workspace whose Balance cannot pay
// goes to fallback.
func (l *Ledger) RegisterRenewal(r jobs.Queue, st PlanStore, fallback plans.Name) {
	r.Register(JobRenewPlans, func(ctx context.Context, _ jobs.Job) error {
		_, _, err := l.RenewPlans(ctx, st, fallback)
		return err
	}, jobs.KindOptions{MaxAttempts: 3, Backoff: []time.Duration{5 * time.Minute}, Timeout: 10 * time.Minute})
	r.Every(JobRenewPlans, RenewInterval)
}
