package payments

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/svcplatform/platform/controlplane/jobs"
	"github.com/svcplatform/platform/controlplane/store"
)

// JobSync is the job kind of the periodic sync with the processor, every
// SyncEvery.
const JobSync = "payments.sync"

// Sync limits.
const (
	// SyncEvery is how often JobSync runs.
	SyncEvery = 10 * time.Minute
	// DisputeWindow is how long after a sale a buyer can still open a
	// dispute (card networks allow 120 days): payments younger than this
	// are asked about at each sync.
	DisputeWindow = 120 * 24 * time.Hour
	// MaxSyncPayments bounds the undisputed payments one sync asks about
	// (the newest first); open disputes are always asked about.
	MaxSyncPayments = 1000
	// MaxSyncSessions bounds the open checkout sessions one sync asks about.
	MaxSyncSessions = 1000
)

// SyncReport counts what one sync found and changed.
type SyncReport struct {
	Accounts int `json:"accounts"`
	// Sessions and Payments are how many were asked about.
	Sessions int `json:"sessions"`
	Payments int `json:"payments"`
	// Confirmed are payments the processor had and the platform not yet;
	// Disputes are dispute changes (opened, won or lost) picked up.
	Confirmed int `json:"confirmed"`
	Disputes  int `json:"disputes"`
}

// runSyncJob is JobSync's handler: an error retries the whole sync, which
// is idempotent.
func (s *Service) runSyncJob(ctx context.Context, _ jobs.Job) error {
	r, err := s.Sync(ctx)
	if r.Confirmed+r.Disputes > 0 || err != nil {
		s.d.Logger.Info("payments: synced with the processor", "processor", s.proc.Name(), "accounts", r.Accounts,
			"payments", r.Payments, "confirmed", r.Confirmed, "disputes", r.Disputes, "err", err)
	}
	return err
}

// Sync brings the platform's books in line with the processor's for every
// account of the processor in use: checkout sessions paid there but never
// looked up are recorded, disputes opened, won or lost there since the
// sale are applied (the held-back net, the webhook event), and pending
// refunds and payouts are resent or settled as on an account read. One
// account's or payment's failure does not stop the others: the errors are
// joined.
func (s *Service) Sync(ctx context.Context) (SyncReport, error) {
	var rep SyncReport
	accts, err := queryList(ctx, s.d.DB, scanAccount, `SELECT `+accountCols+` FROM payment_accounts WHERE processor = ? ORDER BY id`, s.proc.Name())
	if err != nil {
		return rep, fmt.Errorf("payments: sync: %w", err)
	}
	var errs []error
	for _, a := range accts {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		rep.Accounts++
		if err := s.syncAccount(ctx, a, &rep); err != nil {
			errs = append(errs, fmt.Errorf("account %s: %w", a.ID, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return rep, fmt.Errorf("payments: sync: %w", err)
	}
	return rep, nil
}

func (s *Service) syncAccount(ctx context.Context, a Account, rep *SyncReport) error {
	now := s.now()
	var errs []error
	// Sessions still open here (a day past their expiry too: a buyer may
	// finish paying right at it).
	sessions, err := queryList(ctx, s.d.DB, s.scanSession, `SELECT `+sessionCols+` FROM payment_sessions
		WHERE account_id = ? AND state = 'open' AND expires_at > ? ORDER BY created_at DESC LIMIT ?`,
		a.ID, store.FormatTime(now.Add(-24*time.Hour)), MaxSyncSessions)
	if err != nil {
		return err
	}
	for _, x := range sessions {
		rep.Sessions++
		after, err := s.syncSession(ctx, x)
		if err != nil {
			errs = append(errs, fmt.Errorf("session %s: %w", x.ID, err))
			continue
		}
		if after.State == SessionPaid {
			rep.Confirmed++
		}
	}
	// Payments with an open dispute, and those young enough to be
	// disputed yet.
	type ref struct{ id, dispute string }
	pays, err := queryList(ctx, s.d.DB, func(r scanner) (ref, error) {
		var p ref
		return p, r.Scan(&p.id, &p.dispute)
	}, `SELECT id, dispute_status FROM payment_payments WHERE account_id = ? AND dispute_status = 'open' AND processor_ref <> ''
		UNION ALL SELECT id, dispute_status FROM (SELECT id, dispute_status FROM payment_payments
			WHERE account_id = ? AND dispute_status = '' AND processor_ref <> '' AND created_at > ? ORDER BY created_at DESC LIMIT ?) AS recent`,
		a.ID, a.ID, store.FormatTime(now.Add(-DisputeWindow)), MaxSyncPayments)
	if err != nil {
		return err
	}
	for _, p := range pays {
		rep.Payments++
		if err := s.syncDispute(ctx, p.id); err != nil {
			errs = append(errs, err)
			continue
		}
		after, err := getPayment(ctx, s.d.DB, `id = ?`, p.id)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if after.DisputeStatus != p.dispute {
			rep.Disputes++
		}
	}
	// Refunds not heard back, payouts not sent or not confirmed.
	errs = append(errs, s.reconcile(ctx, a))
	return errors.Join(errs...)
}
