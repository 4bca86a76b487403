package payments

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/mail"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/metering"
	"github.com/svcplatform/platform/controlplane/payments/processor"
	"github.com/svcplatform/platform/controlplane/store"
)

// Limits of a checkout create request.
const (
	MaxReference      = 200
	MaxMetadataKeys   = 20
	MaxMetadataKey    = 40
	MaxMetadataValue  = 500
	MaxDescription    = 1000
	MaxURL            = 2048
	MaxIdempotencyKey = 255
	// SessionPlaceholder is replaced by the session id in the success URL.
	SessionPlaceholder = "{CHECKOUT_SESSION_ID}"
)

// CreateRequest is the checkout create request.
type CreateRequest struct {
	AmountCents   *int64            `json:"amountCents"`
	Currency      string            `json:"currency,omitempty"`
	Description   string            `json:"description,omitempty"`
	CustomerEmail string            `json:"customerEmail,omitempty"`
	Reference     string            `json:"reference,omitempty"`
	Metadata      map[string]string `json:"metadata,omitempty"`
	SuccessURL    string            `json:"successUrl,omitempty"`
	CancelURL     string            `json:"cancelUrl,omitempty"`
}

// Created is the answer of a checkout create.
type Created struct {
	URL      string  `json:"url"`
	Session  Session `json:"session"`
	FeeCents int64   `json:"feeCents"`
}

func validEmail(field, v string) error {
	if v == "" {
		return nil
	}
	a, err := mail.ParseAddress(v)
	if err != nil || a.Address != v || len(v) > 254 {
		return api.Invalid("%s must be an e-mail address", field)
	}
	return nil
}

func validURL(field, raw string) error {
	if raw == "" {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || len(raw) > MaxURL || u.User != nil {
		return api.Invalid("%s must be an http or https address of at most %d characters", field, MaxURL)
	}
	return nil
}

// withPlaceholder adds session_id={CHECKOUT_SESSION_ID} to a success URL
// unless the placeholder is already in it.
func withPlaceholder(raw string) string {
	if raw == "" || strings.Contains(raw, SessionPlaceholder) {
		return raw
	}
	base, frag, hasFrag := strings.Cut(raw, "#")
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
		if strings.HasSuffix(base, "?") || strings.HasSuffix(base, "&") {
			sep = ""
		}
	}
	out := base + sep + "session_id=" + SessionPlaceholder
	if hasFrag {
		out += "#" + frag
	}
	return out
}

// Validate checks a create request against every rule of the
// specification and normalises it.
func (r *CreateRequest) Validate() error {
	if r.AmountCents == nil {
		return api.Invalid("amountCents is required: a whole number of cents, at least %d", MinAmountCents)
	}
	if a := *r.AmountCents; a < MinAmountCents || a > MaxAmountCents {
		return api.E(api.KindInvalid, "amount_out_of_range", "amountCents must be from %d (0.50 dollars) to %d (1,000,000 dollars), not %d", MinAmountCents, MaxAmountCents, a)
	}
	if r.Currency != "" && !strings.EqualFold(r.Currency, "usd") {
		return api.E(api.KindInvalid, "currency_unsupported", "only USD is supported, not %q", r.Currency)
	}
	r.Currency = "usd"
	if utf8.RuneCountInString(r.Description) > MaxDescription || !utf8.ValidString(r.Description) {
		return api.Invalid("description is at most %d characters", MaxDescription)
	}
	if err := validEmail("customerEmail", r.CustomerEmail); err != nil {
		return err
	}
	if utf8.RuneCountInString(r.Reference) > MaxReference || !utf8.ValidString(r.Reference) {
		return api.Invalid("reference is at most %d characters", MaxReference)
	}
	if len(r.Metadata) > MaxMetadataKeys {
		return api.Invalid("metadata has %d keys; at most %d", len(r.Metadata), MaxMetadataKeys)
	}
	for k, v := range r.Metadata {
		switch {
		case k == "" || utf8.RuneCountInString(k) > MaxMetadataKey:
			return api.Invalid("metadata keys are 1 to %d characters", MaxMetadataKey)
		case strings.HasPrefix(strings.ToLower(k), "svc_"):
			return api.E(api.KindInvalid, "reserved_metadata_key", "metadata key %q is reserved: keys starting with svc_ are the service's", k)
		case utf8.RuneCountInString(v) > MaxMetadataValue:
			return api.Invalid("metadata value of %q is over %d characters", k, MaxMetadataValue)
		}
	}
	if err := validURL("successUrl", r.SuccessURL); err != nil {
		return err
	}
	if err := validURL("cancelUrl", r.CancelURL); err != nil {
		return err
	}
	r.SuccessURL = withPlaceholder(r.SuccessURL)
	return nil
}

func (r CreateRequest) hash() string {
	b, _ := json.Marshal(r)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// ErrEmailUnverified refuses live links before the owner's e-mail is verified.
var ErrEmailUnverified = api.Forbidden("email_unverified", "live payment links need the workspace owner's verified e-mail address: verify it first")

// CreateCheckout opens a checkout session (one single-use link, payable
// for 24 hours). A repeated Idempotency-Key with the same request answers
// the first session; with another request it is refused.
func (s *Service) CreateCheckout(ctx context.Context, pr *auth.Principal, accountID, idemKey string, req CreateRequest) (Created, error) {
	a, err := s.account(ctx, pr, accountID, auth.OpPaymentsWrite)
	if err != nil {
		return Created{}, err
	}
	if len(idemKey) > MaxIdempotencyKey {
		return Created{}, api.Invalid("Idempotency-Key is at most %d characters", MaxIdempotencyKey)
	}
	if err := req.Validate(); err != nil {
		return Created{}, err
	}
	hash := req.hash()
	if idemKey != "" {
		if c, ok, err := s.replay(ctx, a.ID, idemKey, hash); ok || err != nil {
			return c, err
		}
	}
	if _, err := s.d.Projects.Writable(ctx, pr.WorkspaceID, a.ProjectID); err != nil {
		return Created{}, err
	}
	if a.Status != AccountEnabled {
		return Created{}, ErrDisabled
	}
	if a.Livemode {
		ok, err := s.d.Email.OwnerEmailVerified(ctx, a.workspace)
		if err != nil {
			return Created{}, fmt.Errorf("payments: owner e-mail: %w", err)
		}
		if !ok {
			return Created{}, ErrEmailUnverified
		}
	}
	now := s.now()
	x := Session{ID: store.NewID("cs"), AccountID: a.ID, ProjectID: a.ProjectID, State: SessionOpen, AmountCents: *req.AmountCents,
		FeeCents: Fee(*req.AmountCents), Currency: "usd", Description: req.Description, CustomerEmail: req.CustomerEmail, Reference: req.Reference,
		Metadata: req.Metadata, SuccessURL: req.SuccessURL, CancelURL: req.CancelURL, Livemode: a.Livemode, CreatedAt: now, ExpiresAt: now.Add(SessionTTL)}
	if x.Metadata == nil {
		x.Metadata = map[string]string{}
	}
	success := x.SuccessURL
	if success == "" {
		success = s.cfg.PublicBaseURL + "/pay/" + x.ID + "/done"
	}
	meta := map[string]string{"svc_session_id": x.ID, "svc_account_id": a.ID}
	for k, v := range x.Metadata {
		meta[k] = v
	}
	co, err := s.proc.CreateCheckout(ctx, processor.CheckoutParams{SessionID: x.ID, AmountCents: x.AmountCents, Currency: "usd", Description: x.Description,
		CustomerEmail: x.CustomerEmail, SuccessURL: success, CancelURL: x.CancelURL, ExpiresAt: x.ExpiresAt, Metadata: meta})
	if err != nil {
		return Created{}, api.E(api.KindBadGateway, "processor_error", "the payment processor did not open the checkout; try again").With("processor", s.proc.Name())
	}
	metaJSON, _ := json.Marshal(x.Metadata)
	_, err = s.d.DB.ExecContext(ctx, `INSERT INTO payment_sessions(id, account_id, workspace_id, project_id, processor_ref, url, state, amount_cents, fee_cents,
		currency, description, customer_email, reference, metadata, success_url, cancel_url, idempotency_key, request_hash, livemode, created_at, expires_at)
		VALUES (?,?,?,?,?,?,'open',?,?,'usd',?,?,?,?,?,?,?,?,?,?,?)`, x.ID, a.ID, a.workspace, a.ProjectID, co.Ref, co.URL, x.AmountCents, x.FeeCents,
		x.Description, x.CustomerEmail, x.Reference, string(metaJSON), x.SuccessURL, x.CancelURL, idemKey, hash, x.Livemode,
		store.FormatTime(x.CreatedAt), store.FormatTime(x.ExpiresAt))
	if store.IsUniqueViolation(err) && idemKey != "" {
		c, _, err := s.replay(ctx, a.ID, idemKey, hash)
		return c, err
	}
	if err != nil {
		return Created{}, fmt.Errorf("payments: create session: %w", err)
	}
	s.d.Meter.Record(ctx, metering.Event{Workspace: a.workspace, Project: a.ProjectID, Metric: MetricCheckoutSessions, Quantity: 1})
	x, err = s.getSession(ctx, s.d.DB, x.ID)
	if err != nil {
		return Created{}, err
	}
	return Created{URL: x.URL, Session: x, FeeCents: x.FeeCents}, nil
}

// replay answers a repeated idempotency key.
func (s *Service) replay(ctx context.Context, account, key, hash string) (Created, bool, error) {
	x, err := s.scanSession(s.d.DB.QueryRowContext(ctx, `SELECT `+sessionCols+` FROM payment_sessions WHERE account_id = ? AND idempotency_key = ?`, account, key))
	if errors.Is(err, sql.ErrNoRows) {
		return Created{}, false, nil
	}
	if err != nil {
		return Created{}, false, fmt.Errorf("payments: idempotency: %w", err)
	}
	if x.requestHash != hash {
		return Created{}, true, api.E(api.KindInvalid, "idempotency_key_reused", "Idempotency-Key %q was used for a different request; use a new key", key)
	}
	return Created{URL: x.URL, Session: x, FeeCents: x.FeeCents}, true, nil
}

// Lookup is the answer of a session lookup.
type Lookup struct {
	Paid    bool     `json:"paid"`
	Payment *Payment `json:"payment"`
	Session Session  `json:"session"`
}

// LookupSession answers whether a session was paid; an open session is
// first checked with the processor.
func (s *Service) LookupSession(ctx context.Context, pr *auth.Principal, accountID, sessionID string) (Lookup, error) {
	a, err := s.account(ctx, pr, accountID, auth.OpPaymentsRead)
	if err != nil {
		return Lookup{}, err
	}
	x, err := s.getSession(ctx, s.d.DB, sessionID)
	if err != nil || x.AccountID != a.ID {
		return Lookup{}, api.NotFound("checkout session")
	}
	if x.State == SessionOpen || x.State == SessionExpired {
		if x, err = s.syncSession(ctx, x); err != nil {
			return Lookup{}, err
		}
	}
	out := Lookup{Session: x, Paid: x.State == SessionPaid}
	if x.PaymentID != "" {
		p, err := getPayment(ctx, s.d.DB, `id = ?`, x.PaymentID)
		if err != nil {
			return Lookup{}, err
		}
		out.Payment = &p
	}
	return out, nil
}

// syncSession asks the processor about a session not known to be paid:
// paid there records the payment (also after the link's expiry: links
// already sent are credited), expired marks it expired.
func (s *Service) syncSession(ctx context.Context, x Session) (Session, error) {
	res, err := s.proc.Checkout(ctx, x.processorRef)
	if err != nil {
		return x, api.E(api.KindBadGateway, "processor_error", "the payment processor did not answer about this checkout; try again")
	}
	switch {
	case res.Status == processor.CheckoutPaid:
		if _, err := s.confirm(ctx, x.ID, res); err != nil {
			return x, err
		}
	case x.State == SessionExpired || res.Status == processor.CheckoutExpired:
		if _, err := s.d.DB.ExecContext(ctx, `UPDATE payment_sessions SET state = 'expired' WHERE id = ? AND state = 'open'`, x.ID); err != nil {
			return x, fmt.Errorf("payments: expire: %w", err)
		}
	}
	return s.getSession(ctx, s.d.DB, x.ID)
}

// confirm records the payment of a session the processor confirmed paid:
// the payment, the session paid, the sale and fee in the ledger, the audit
// row and the payment.succeeded event, in one transaction. A second
// confirm of the same session returns the first payment.
func (s *Service) confirm(ctx context.Context, sessionID string, res processor.CheckoutResult) (Payment, error) {
	var p Payment
	now := s.now()
	err := s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		x, err := s.getSession(ctx, tx, sessionID)
		if err != nil {
			return err
		}
		if x.PaymentID != "" {
			p, err = getPayment(ctx, tx, `id = ?`, x.PaymentID)
			return err
		}
		if res.AmountCents != 0 && res.AmountCents != x.AmountCents {
			return fmt.Errorf("payments: processor reports %d cents paid for session %s of %d cents", res.AmountCents, x.ID, x.AmountCents)
		}
		email := res.CustomerEmail
		if email == "" {
			email = x.CustomerEmail
		}
		p = Payment{ID: store.NewID("pay"), AccountID: x.AccountID, ProjectID: x.ProjectID, SessionID: x.ID, SessionKey: x.processorRef,
			Reference: x.Reference, Metadata: x.Metadata, AmountCents: x.AmountCents, FeeCents: x.FeeCents, NetCents: x.AmountCents - x.FeeCents,
			Currency: "usd", CustomerEmail: email, Country: strings.ToUpper(res.Country), Status: PaymentSucceeded, Livemode: x.Livemode,
			CreatedAt: now, AvailableAt: now.Add(Hold), workspace: x.workspace, processorRef: res.PaymentRef}
		meta, _ := json.Marshal(p.Metadata)
		_, err = tx.ExecContext(ctx, `INSERT INTO payment_payments(id, account_id, workspace_id, project_id, session_id, session_key, processor_ref, reference,
			metadata, amount_cents, fee_cents, net_cents, currency, customer_email, country, status, livemode, created_at, available_at)
			VALUES (?,?,?,?,?,?,?,?,?,?,?,?,'usd',?,?,'succeeded',?,?,?)`, p.ID, p.AccountID, p.workspace, p.ProjectID, p.SessionID, p.SessionKey,
			p.processorRef, p.Reference, string(meta), p.AmountCents, p.FeeCents, p.NetCents, p.CustomerEmail, p.Country, p.Livemode,
			store.FormatTime(p.CreatedAt), store.FormatTime(p.AvailableAt))
		if err != nil {
			return fmt.Errorf("payments: record payment: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE payment_sessions SET state = 'paid', paid_at = ?, payment_id = ? WHERE id = ?`,
			store.FormatTime(now), p.ID, x.ID); err != nil {
			return fmt.Errorf("payments: mark paid: %w", err)
		}
		err = post(ctx, tx, p.AccountID, p.workspace, now,
			move{kind: kindSale, from: Buyers, to: Held, cents: p.NetCents, payment: p.ID},
			move{kind: kindFee, from: Buyers, to: Fees, cents: p.FeeCents, payment: p.ID})
		if err != nil {
			return err
		}
		if err := s.record(ctx, tx, nil, p.workspace, p.ProjectID, "payments.payment", "payment", p.ID,
			fmt.Sprintf("payment of %s received (fee %s, net %s held until %s)", dollars(p.AmountCents), dollars(p.FeeCents), dollars(p.NetCents), day(p.AvailableAt)),
			map[string]any{"amountCents": p.AmountCents, "feeCents": p.FeeCents, "netCents": p.NetCents, "session": x.ID}); err != nil {
			return err
		}
		if err := s.emit(ctx, tx, p.AccountID, EventSucceeded, &p); err != nil {
			return err
		}
		return s.queueReceipt(ctx, tx, p)
	})
	if err != nil {
		return Payment{}, err
	}
	s.d.Meter.Record(ctx, metering.Event{Workspace: p.workspace, Project: p.ProjectID, Metric: MetricPayments, Quantity: 1})
	// A buyer may dispute at once (test card 4000 0000 0000 0259).
	if err := s.syncDispute(ctx, p.ID); err != nil {
		s.d.Logger.Warn("payments: dispute check", "payment", p.ID, "err", err)
	}
	return getPayment(ctx, s.d.DB, `id = ?`, p.ID)
}
