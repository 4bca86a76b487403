package payments

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/jobs"
	"github.com/svcplatform/platform/controlplane/store"
)

// Event types.
const (
	EventSucceeded  = "payment.succeeded"
	EventRefunded   = "payment.refunded"
	EventDisputed   = "payment.disputed"
	EventDisputeWon = "payment.dispute_won"
	EventPing       = "ping"
)

// Webhook headers.
const (
	HeaderEvent     = "Service-Event"
	HeaderDelivery  = "Service-Delivery"
	HeaderSignature = "Service-Signature"
)

// SecretPrefix starts every webhook signing secret.
const SecretPrefix = "svcwhsec_"

// ErrDeliveryFailed is a delivery attempt the receiver did not accept; the
// job retries it on the schedule.
var ErrDeliveryFailed = errors.New("payments: webhook delivery failed")

// Event is a webhook event's body.
type Event struct {
	ID      string    `json:"id"`
	Type    string    `json:"type"`
	Created int64     `json:"created"`
	Data    EventData `json:"data"`
}

// EventData carries the payment (nil for ping, which names the account).
type EventData struct {
	Payment *Payment `json:"payment,omitempty"`
	Account string   `json:"account_id,omitempty"`
}

// emit records an event in the caller's transaction and, when the account
// has a webhook, its delivery job in the same transaction.
func (s *Service) emit(ctx context.Context, tx *sql.Tx, accountID, typ string, p *Payment) error {
	var ws, hook string
	if err := tx.QueryRowContext(ctx, `SELECT workspace_id, webhook_url FROM payment_accounts WHERE id = ?`, accountID).Scan(&ws, &hook); err != nil {
		return fmt.Errorf("payments: event: %w", err)
	}
	now := s.now()
	ev := Event{ID: store.NewID("evt"), Type: typ, Created: now.Unix(), Data: EventData{Payment: p}}
	if p == nil {
		ev.Data.Account = accountID
	}
	body, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("payments: event: %w", err)
	}
	status, payment := "no_endpoint", ""
	if hook != "" {
		status = "pending"
	}
	if p != nil {
		payment = p.ID
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO payment_events(id, account_id, workspace_id, type, payment_id, body, created_at, url, delivery_status, next_attempt_at)
		VALUES (?,?,?,?,?,?,?,?,?,?)`, ev.ID, accountID, ws, typ, payment, body, store.FormatTime(now), hook, status, store.FormatTime(now))
	if err != nil {
		return fmt.Errorf("payments: event: %w", err)
	}
	if hook == "" {
		return nil
	}
	if _, err := s.d.Jobs.Enqueue(ctx, tx, JobWebhook, deliveryJob{Delivery: ev.ID}, jobs.EnqueueOptions{Key: ev.ID}); err != nil {
		return fmt.Errorf("payments: enqueue delivery: %w", err)
	}
	return nil
}

type deliveryJob struct {
	Delivery string `json:"delivery"`
}

func (s *Service) runDeliveryJob(ctx context.Context, jb jobs.Job) error {
	var j deliveryJob
	if err := json.Unmarshal(jb.Payload, &j); err != nil || j.Delivery == "" {
		return fmt.Errorf("payments: delivery job payload %q: %w", jb.Payload, err)
	}
	return s.Deliver(ctx, j.Delivery)
}

// Sign returns the Service-Signature value of body at t with secret:
// t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">.
func Sign(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts))
	m.Write([]byte("."))
	m.Write(body)
	return "t=" + ts + ",v1=" + hex.EncodeToString(m.Sum(nil))
}

func (s *Service) secretOf(a Account) (string, error) {
	if len(a.secret) == 0 {
		return "", errors.New("payments: no webhook secret")
	}
	b, err := s.d.Sealer.Open(a.secret, []byte("payments-webhook:"+a.ID))
	if err != nil {
		return "", fmt.Errorf("payments: webhook secret: %w", err)
	}
	return string(b), nil
}

// Deliver makes one attempt at a webhook delivery. A delivered (or given
// up) delivery is not sent again; a failed attempt is recorded with its
// status and the time of the next one, and answers ErrDeliveryFailed so
// the job retries it, until the last attempt marks it failed.
func (s *Service) Deliver(ctx context.Context, id string) error {
	var accountID, status string
	var body []byte
	var attempts int
	var typ string
	err := s.d.DB.QueryRowContext(ctx, `SELECT account_id, delivery_status, body, attempts, type FROM payment_events WHERE id = ?`, id).
		Scan(&accountID, &status, &body, &attempts, &typ)
	if errors.Is(err, sql.ErrNoRows) {
		return nil // erased with its account
	}
	if err != nil {
		return fmt.Errorf("payments: delivery %s: %w", id, err)
	}
	if status != "pending" {
		return nil
	}
	a, err := getAccount(ctx, s.d.DB, `id = ?`, accountID)
	if err != nil {
		return err
	}
	if a.WebhookURL == "" {
		_, err := s.d.DB.ExecContext(ctx, `UPDATE payment_events SET delivery_status = 'no_endpoint', next_attempt_at = '' WHERE id = ?`, id)
		return err
	}
	secret, err := s.secretOf(a)
	if err != nil {
		return err
	}
	code, sendErr := s.send(ctx, a.WebhookURL, id, typ, secret, body)
	s.recordDelivery(ctx, a, sendErr)
	now := s.now()
	attempts++
	if sendErr == nil {
		_, err := s.d.DB.ExecContext(ctx, `UPDATE payment_events SET delivery_status = 'delivered', attempts = ?, url = ?, last_status_code = ?, last_error = '',
			delivered_at = ?, next_attempt_at = '' WHERE id = ?`, attempts, a.WebhookURL, code, store.FormatTime(now), id)
		return err
	}
	next, nextAt := "pending", ""
	if attempts >= MaxDeliveryAttempts {
		next = "failed"
	} else {
		nextAt = store.FormatTime(now.Add(DeliverySchedule[min(attempts-1, len(DeliverySchedule)-1)]))
	}
	if _, err := s.d.DB.ExecContext(ctx, `UPDATE payment_events SET delivery_status = ?, attempts = ?, url = ?, last_status_code = ?, last_error = ?, next_attempt_at = ? WHERE id = ?`,
		next, attempts, a.WebhookURL, code, sendErr.Error(), nextAt, id); err != nil {
		return fmt.Errorf("payments: delivery %s: %w", id, err)
	}
	if next == "failed" {
		s.d.Logger.Warn("payments: webhook delivery given up", "delivery", id, "attempts", attempts, "err", sendErr)
		return nil
	}
	return fmt.Errorf("%w: %s attempt %d: %v", ErrDeliveryFailed, id, attempts, sendErr)
}

// send posts one signed delivery; a non-2xx answer is an error.
func (s *Service) send(ctx context.Context, target, id, typ, secret string, body []byte) (int, error) {
	if err := s.d.CheckURL(target); err != nil {
		return 0, fmt.Errorf("address refused: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, DeliveryTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "platform-webhooks/1")
	req.Header.Set(HeaderEvent, typ)
	req.Header.Set(HeaderDelivery, id)
	req.Header.Set(HeaderSignature, Sign(secret, s.now(), body))
	resp, err := s.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			return 0, ue.Err
		}
		return 0, err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		if resp.StatusCode >= 300 && resp.StatusCode < 400 {
			return resp.StatusCode, fmt.Errorf("answered %d: redirects are not followed", resp.StatusCode)
		}
		return resp.StatusCode, fmt.Errorf("answered %d", resp.StatusCode)
	}
	return resp.StatusCode, nil
}

// Delivery is one webhook delivery and its result, as the account read
// lists them.
type Delivery struct {
	ID             string     `json:"id"`
	Type           string     `json:"type"`
	PaymentID      string     `json:"payment_id,omitempty"`
	URL            string     `json:"url"`
	Status         string     `json:"status"`
	Attempts       int        `json:"attempts"`
	LastStatusCode int        `json:"last_status_code,omitempty"`
	LastError      string     `json:"last_error,omitempty"`
	NextAttemptAt  *time.Time `json:"next_attempt_at"`
	DeliveredAt    *time.Time `json:"delivered_at"`
	CreatedAt      time.Time  `json:"created_at"`
}

func scanDelivery(r scanner) (Delivery, error) {
	var d Delivery
	var next, delivered, created string
	err := r.Scan(&d.ID, &d.Type, &d.PaymentID, &d.URL, &d.Status, &d.Attempts, &d.LastStatusCode, &d.LastError, &next, &delivered, &created)
	if next != "" && d.Status == "pending" {
		t := store.ParseTime(next)
		d.NextAttemptAt = &t
	}
	if delivered != "" {
		t := store.ParseTime(delivered)
		d.DeliveredAt = &t
	}
	d.CreatedAt = store.ParseTime(created)
	return d, err
}

const deliveryCols = `id, type, payment_id, url, delivery_status, attempts, last_status_code, last_error, next_attempt_at, delivered_at, created_at`

func (s *Service) deliveries(ctx context.Context, account string, limit int) ([]Delivery, error) {
	return queryList(ctx, s.d.DB, scanDelivery, `SELECT `+deliveryCols+` FROM payment_events WHERE account_id = ? ORDER BY created_at DESC, id DESC LIMIT ?`, account, limit)
}

// Delivery reads one delivery of an account.
func (s *Service) Delivery(ctx context.Context, id string) (Delivery, error) {
	d, err := scanDelivery(s.d.DB.QueryRowContext(ctx, `SELECT `+deliveryCols+` FROM payment_events WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return d, api.NotFound("delivery")
	}
	return d, err
}

// PendingDeliveries lists the ids of deliveries not delivered or given up
// yet, oldest first (operators; the jobs runner holds their schedule).
func (s *Service) PendingDeliveries(ctx context.Context) ([]string, error) {
	return queryList(ctx, s.d.DB, func(r scanner) (string, error) {
		var id string
		return id, r.Scan(&id)
	}, `SELECT id FROM payment_events WHERE delivery_status = 'pending' ORDER BY created_at, id`)
}

// WebhookSecret is the answer of set-webhook and rotate-webhook-secret: the
// secret is shown here once.
type WebhookSecret struct {
	Account Account `json:"account"`
	Secret  string  `json:"secret"`
}

func newSecret() string {
	b := make([]byte, 24)
	rand.Read(b)
	return SecretPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// ValidateWebhookURL checks a webhook address: https, and not on a
// private, loopback or link-local network unless allowed (checked again
// at connect time by the dialer).
func (s *Service) ValidateWebhookURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || len(raw) > MaxURL {
		return api.E(api.KindInvalid, "invalid_webhook_url", "webhookUrl must be an https address of at most %d characters", MaxURL)
	}
	if err := s.d.CheckURL(raw); err != nil {
		return api.E(api.KindInvalid, "webhook_url_refused", "webhookUrl is refused: %v", err)
	}
	return nil
}

// SetWebhook sets the account's webhook address and a new signing secret,
// returned once.
func (s *Service) SetWebhook(ctx context.Context, pr *auth.Principal, accountID, webhookURL string) (WebhookSecret, error) {
	a, err := s.account(ctx, pr, accountID, auth.OpPaymentsWrite)
	if err != nil {
		return WebhookSecret{}, err
	}
	if err := s.ValidateWebhookURL(webhookURL); err != nil {
		return WebhookSecret{}, err
	}
	return s.setSecret(ctx, pr, a, webhookURL, "payments.webhook_set", "set the webhook to "+webhookURL)
}

// RotateWebhookSecret replaces the signing secret; the new one is returned
// once and signs every delivery from now on.
func (s *Service) RotateWebhookSecret(ctx context.Context, pr *auth.Principal, accountID string) (WebhookSecret, error) {
	a, err := s.account(ctx, pr, accountID, auth.OpPaymentsWrite)
	if err != nil {
		return WebhookSecret{}, err
	}
	if a.WebhookURL == "" {
		return WebhookSecret{}, api.Conflict("webhook_not_set", "set a webhook first: {action: set-webhook, webhookUrl}")
	}
	return s.setSecret(ctx, pr, a, a.WebhookURL, "payments.webhook_secret_rotated", "rotated the webhook signing secret")
}

func (s *Service) setSecret(ctx context.Context, pr *auth.Principal, a Account, hook, action, summary string) (WebhookSecret, error) {
	secret := newSecret()
	sealed := s.d.Sealer.Seal([]byte(secret), []byte("payments-webhook:"+a.ID))
	err := s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE payment_accounts SET webhook_url = ?, webhook_secret = ?, webhook_secret_hint = ?, updated_at = ? WHERE id = ?`,
			hook, sealed, secret[:len(SecretPrefix)+4], store.FormatTime(s.now()), a.ID); err != nil {
			return fmt.Errorf("payments: webhook: %w", err)
		}
		return s.d.Audit.Record(ctx, tx, audit.Event{Workspace: a.workspace, Actor: pr, Action: action, Category: audit.CategorySettings,
			TargetType: "payment_account", TargetID: a.ID, ProjectID: a.ProjectID, Summary: summary})
	})
	if err != nil {
		return WebhookSecret{}, err
	}
	a, err = getAccount(ctx, s.d.DB, `id = ?`, a.ID)
	return WebhookSecret{Account: a, Secret: secret}, err
}

// TestWebhook sends a ping event to the account's webhook.
func (s *Service) TestWebhook(ctx context.Context, pr *auth.Principal, accountID string) (Delivery, error) {
	a, err := s.account(ctx, pr, accountID, auth.OpPaymentsWrite)
	if err != nil {
		return Delivery{}, err
	}
	if a.WebhookURL == "" {
		return Delivery{}, api.Conflict("webhook_not_set", "set a webhook first: {action: set-webhook, webhookUrl}")
	}
	var id string
	err = s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		if err := s.emit(ctx, tx, a.ID, EventPing, nil); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT id FROM payment_events WHERE account_id = ? AND type = 'ping' ORDER BY seq DESC LIMIT 1`, a.ID).Scan(&id)
	})
	if err != nil {
		return Delivery{}, err
	}
	return s.Delivery(ctx, id)
}
