package payments

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/jobs"
	"github.com/svcplatform/platform/controlplane/store"
)

// JobReceipt sends a buyer's receipt: queued in the transaction that
// records the payment, so a receipt is never lost nor sent twice.
const JobReceipt = "payments.receipt"

// Webhook failure notices, as Stripe sends them: after
// NoticeAfterFailures failed delivery attempts in a row to an account's
// endpoint, the workspace's owners get one e-mail, and at most one per
// endpoint every NoticeEvery.
const (
	NoticeAfterFailures = 5
	NoticeEvery         = 24 * time.Hour
)

// Mail is one message the area sends.
type Mail struct {
	To      string
	Subject string
	Text    string
}

// Mailer sends the area's e-mail (the mail area in the assembly).
type Mailer interface {
	// SendAsProject queues m from the project's sender, counted against
	// the plan's sending limit and metered as e-mails; the same idemKey
	// queues one message only.
	SendAsProject(ctx context.Context, workspace, project, idemKey string, m Mail) error
	// NotifyOwners sends the platform's own message (To left empty) to
	// the workspace's active owners.
	NotifyOwners(ctx context.Context, workspace string, m Mail) error
}

type receiptJob struct {
	Payment string `json:"payment"`
}

// queueReceipt queues the receipt of a payment whose buyer gave an
// address, in the transaction that records it (nothing without a Mailer).
func (s *Service) queueReceipt(ctx context.Context, tx *sql.Tx, p Payment) error {
	if s.d.Mailer == nil || p.CustomerEmail == "" {
		return nil
	}
	if _, err := s.d.Jobs.Enqueue(ctx, tx, JobReceipt, receiptJob{Payment: p.ID}, jobs.EnqueueOptions{Key: "receipt:" + p.ID}); err != nil {
		return fmt.Errorf("payments: queue receipt: %w", err)
	}
	return nil
}

func (s *Service) runReceiptJob(ctx context.Context, jb jobs.Job) error {
	var j receiptJob
	if err := json.Unmarshal(jb.Payload, &j); err != nil || j.Payment == "" {
		return fmt.Errorf("payments: receipt job payload %q: %w", jb.Payload, err)
	}
	return s.SendReceipt(ctx, j.Payment)
}

// SendReceipt sends the receipt of a payment to the address its buyer
// gave, as the payment's project (idempotent: one receipt per payment). A
// payment without an address, or gone with its account, sends nothing.
func (s *Service) SendReceipt(ctx context.Context, paymentID string) error {
	if s.d.Mailer == nil {
		return nil
	}
	p, err := getPayment(ctx, s.d.DB, `id = ?`, paymentID)
	var ae *api.Error
	if errors.As(err, &ae) && ae.Kind == api.KindNotFound {
		return nil // erased with its account
	}
	if err != nil {
		return err
	}
	if p.CustomerEmail == "" {
		return nil
	}
	var description string
	if x, err := s.getSession(ctx, s.d.DB, p.SessionID); err == nil {
		description = x.Description
	}
	return s.d.Mailer.SendAsProject(ctx, p.workspace, p.ProjectID, "receipt:"+p.ID, receipt(p, description))
}

// receipt is the message of a payment's receipt.
func receipt(p Payment, description string) Mail {
	var b strings.Builder
	b.WriteString("Thank you for your payment.\n\n")
	fmt.Fprintf(&b, "Amount paid: %s\n", dollars(p.AmountCents))
	if description != "" {
		fmt.Fprintf(&b, "For: %s\n", description)
	}
	if p.Reference != "" {
		fmt.Fprintf(&b, "Reference: %s\n", p.Reference)
	}
	fmt.Fprintf(&b, "Date: %s\n", p.CreatedAt.UTC().Format("2 January 2006, 15:04 UTC"))
	fmt.Fprintf(&b, "Receipt number: %s\n", p.ID)
	if !p.Livemode {
		b.WriteString("\nThis was a test payment: no money was taken.\n")
	}
	b.WriteString("\nKeep this e-mail as your receipt. Reply to it with any question about the payment.\n")
	subject := "Your receipt for " + dollars(p.AmountCents)
	if !p.Livemode {
		subject = "[Test] " + subject
	}
	return Mail{To: p.CustomerEmail, Subject: subject, Text: b.String()}
}

// recordDelivery keeps the account's endpoint health after an attempt: a
// success starts the count again, a failure adds one, and the failure
// that reaches NoticeAfterFailures (or any later one, a day after the last
// notice) sends the owners one notice.
func (s *Service) recordDelivery(ctx context.Context, a Account, failure error) {
	if err := s.trackDelivery(ctx, a, failure); err != nil {
		s.d.Logger.Warn("payments: webhook failure notice", "account", a.ID, "err", err)
	}
}

func (s *Service) trackDelivery(ctx context.Context, a Account, failure error) error {
	now := s.now()
	ts := store.FormatTime(now)
	if failure == nil {
		_, err := s.d.DB.ExecContext(ctx, `UPDATE payment_webhook_health SET consecutive_failures = 0, last_error = '', updated_at = ?
			WHERE account_id = ? AND consecutive_failures > 0`, ts, a.ID)
		return err
	}
	var failures int
	send := false
	msg := failure.Error()
	if len(msg) > 500 {
		msg = msg[:500]
	}
	err := s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		var url, noticed string
		err := tx.QueryRowContext(ctx, `SELECT url, consecutive_failures, noticed_at FROM payment_webhook_health WHERE account_id = ?`, a.ID).
			Scan(&url, &failures, &noticed)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			failures = 1
			_, err = tx.ExecContext(ctx, `INSERT INTO payment_webhook_health (account_id, url, consecutive_failures, last_error, noticed_at, updated_at)
				VALUES (?,?,1,?,'',?)`, a.ID, a.WebhookURL, msg, ts)
			if err != nil {
				return err
			}
			noticed = ""
		case err != nil:
			return err
		case url != a.WebhookURL:
			// A new endpoint starts again.
			failures, noticed = 1, ""
			_, err = tx.ExecContext(ctx, `UPDATE payment_webhook_health SET url = ?, consecutive_failures = 1, last_error = ?, noticed_at = '', updated_at = ?
				WHERE account_id = ?`, a.WebhookURL, msg, ts, a.ID)
			if err != nil {
				return err
			}
		default:
			failures++
			if _, err := tx.ExecContext(ctx, `UPDATE payment_webhook_health SET consecutive_failures = ?, last_error = ?, updated_at = ? WHERE account_id = ?`,
				failures, msg, ts, a.ID); err != nil {
				return err
			}
		}
		if failures < NoticeAfterFailures || s.d.Mailer == nil {
			return nil
		}
		if noticed != "" && now.Sub(store.ParseTime(noticed)) < NoticeEvery {
			return nil
		}
		send = true
		_, err = tx.ExecContext(ctx, `UPDATE payment_webhook_health SET noticed_at = ? WHERE account_id = ?`, ts, a.ID)
		return err
	})
	if err != nil || !send {
		return err
	}
	return s.d.Mailer.NotifyOwners(ctx, a.workspace, failureNotice(a, failures, msg))
}

// failureNotice is the owners' message about an endpoint that keeps
// failing.
func failureNotice(a Account, failures int, lastError string) Mail {
	var b strings.Builder
	fmt.Fprintf(&b, "The webhook endpoint of a payment account of project %s is failing.\n\n", a.ProjectID)
	fmt.Fprintf(&b, "Endpoint: %s\n", a.WebhookURL)
	fmt.Fprintf(&b, "Failed attempts in a row: %d\n", failures)
	fmt.Fprintf(&b, "Last error: %s\n\n", lastError)
	b.WriteString("Each event is retried for about three days and then given up; your app misses what it did not receive.\n")
	b.WriteString("Check that the endpoint answers 2xx to POST requests, then see the deliveries with GET /api/projects/" + a.ProjectID + "/payments/account.\n")
	b.WriteString("You get at most one such e-mail a day for this endpoint.\n")
	return Mail{Subject: "Payment webhooks to " + hostOf(a.WebhookURL) + " are failing", Text: b.String()}
}

// hostOf is the host of a URL, or the URL when it has none.
func hostOf(raw string) string {
	s := raw
	if i := strings.Index(s, "://"); i >= 0 {
		s = s[i+3:]
	}
	if i := strings.IndexAny(s, "/?#"); i >= 0 {
		s = s[:i]
	}
	if s == "" {
		return raw
	}
	return s
}
