package billing

import (
	"context"
	"time"

	"github.com/svcplatform/platform/controlplane/jobs"
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
