package mail

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/mail"
	"strings"
	"time"

	"github.com/svcplatform/platform/controlplane/accounts"
	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/jobs"
	"github.com/svcplatform/platform/controlplane/metering"
	"github.com/svcplatform/platform/controlplane/store"
)

// MaxIdempotencyKey bounds the Idempotency-Key header of a send.
const MaxIdempotencyKey = 200

// SendRequest is the body of POST /api/projects/{id}/emails: one or more
// recipients, a subject, and text, HTML or both (sent as alternatives).
type SendRequest struct {
	To      Recipients `json:"to"`
	Subject string     `json:"subject"`
	Text    string     `json:"text,omitempty"`
	HTML    string     `json:"html,omitempty"`
	// ReplyTo, when set, is where replies go instead of the project's
	// mailReplyTo.
	ReplyTo string `json:"replyTo,omitempty"`
}

// Email is a message as the API shows it.
type Email struct {
	ID        string `json:"id"`
	ProjectID string `json:"projectId"`
	// From is who the message goes (or went) from: the project's mailFrom
	// when its domain is a verified sending domain of the project, else the
	// platform's own address with the project's sender name.
	From    string   `json:"from"`
	ReplyTo string   `json:"replyTo,omitempty"`
	To      []string `json:"to"`
	Subject string   `json:"subject"`
	// State is queued (waiting or retrying), sent (the relay accepted it)
	// or failed (refused for good, or given up).
	State    string `json:"state"`
	Attempts int    `json:"attempts"`
	// FailureReason says why a failed message failed; LastError is the
	// last temporary failure of a queued one.
	FailureReason string `json:"failureReason,omitempty"`
	LastError     string `json:"lastError,omitempty"`
	// SMTPCode is the relay's reply code to the last failed attempt.
	SMTPCode int `json:"smtpCode,omitempty"`
	// Bounce is the latest bounce, delay or complaint report received for
	// a sent message (null until one arrives). A bounce or complaint puts
	// the recipient on the project's suppression list.
	Bounce    *Bounce    `json:"bounce"`
	CreatedAt time.Time  `json:"createdAt"`
	SentAt    *time.Time `json:"sentAt"`
	FailedAt  *time.Time `json:"failedAt"`
}

// EmailAnswer wraps one message.
type EmailAnswer struct {
	Email Email `json:"email"`
}

// EmailPage is one page of a project's messages, newest first; NextCursor
// (null on the last page) asks for the next one.
type EmailPage struct {
	Emails     []Email `json:"emails"`
	NextCursor *string `json:"nextCursor"`
}

func (r record) view() Email {
	e := Email{ID: r.ID, ProjectID: r.Project, From: r.From, ReplyTo: r.ReplyTo, To: r.Recipients, Subject: r.Subject,
		State: r.State, Attempts: r.Attempts, SMTPCode: r.SMTPCode, CreatedAt: r.CreatedAt}
	if e.To == nil {
		e.To = []string{}
	}
	if r.BounceType != "" {
		e.Bounce = &Bounce{Type: r.BounceType, Recipient: r.BounceRecipient, Status: r.BounceStatus, Diagnostic: r.BounceDiag, At: r.BouncedAt}
	}
	switch r.State {
	case StateFailed:
		e.FailureReason = r.LastError
		t := r.FailedAt
		e.FailedAt = &t
	case StateSent:
		t := r.SentAt
		e.SentAt = &t
		e.SMTPCode = 0
	default:
		e.LastError = r.LastError
	}
	return e
}

// content is what is sealed at rest until the message is sent or fails.
type content struct {
	Text string `json:"text,omitempty"`
	HTML string `json:"html,omitempty"`
}

func (s *Service) seal(id string, c content) []byte {
	b, _ := json.Marshal(c)
	return s.d.Sealer.Seal(b, []byte("mail:"+id))
}

func (s *Service) open(r record) (content, error) {
	var c content
	if r.Sealed == nil {
		return c, errors.New("mail: message content is gone")
	}
	b, err := s.d.Sealer.Open(r.Sealed, []byte("mail:"+r.ID))
	if err != nil {
		return c, fmt.Errorf("mail: open content of %s: %w", r.ID, err)
	}
	return c, json.Unmarshal(b, &c)
}

// checked is a validated send request.
type checked struct {
	to      []*mail.Address
	subject string
	body    content
	replyTo string
	size    int
}

// check validates a send request: every refusal says what to change, and a
// refused request stores nothing.
func (s *Service) check(req SendRequest) (checked, error) {
	var c checked
	if len(req.To) == 0 {
		return c, api.Invalid("to is required: an address or an array of addresses")
	}
	if len(req.To) > s.cfg.MaxRecipients {
		return c, api.E(api.KindInvalid, "too_many_recipients", "at most %d recipients per message, got %d: send several messages", s.cfg.MaxRecipients, len(req.To)).
			With("limit", s.cfg.MaxRecipients)
	}
	seen := map[string]bool{}
	for i, t := range req.To {
		a, err := ParseAddress(t)
		if err != nil {
			return c, api.Invalid("to[%d]: %v", i, err)
		}
		k := strings.ToLower(a.Address)
		if seen[k] {
			return c, api.Invalid("to[%d]: %s is listed twice", i, a.Address)
		}
		seen[k] = true
		c.to = append(c.to, a)
	}
	c.subject = strings.TrimSpace(req.Subject)
	switch {
	case c.subject == "":
		return c, api.Invalid("subject is required")
	case len(c.subject) > MaxSubject:
		return c, api.Invalid("subject is longer than %d bytes", MaxSubject)
	case strings.ContainsFunc(c.subject, isControl):
		return c, api.Invalid("subject must be one line without control characters")
	}
	if req.Text == "" && req.HTML == "" {
		return c, api.Invalid("text or html is required (both are sent as alternatives)")
	}
	c.body = content{Text: req.Text, HTML: req.HTML}
	c.size = len(req.Text) + len(req.HTML)
	if c.size > s.cfg.MaxContentBytes {
		return c, api.E(api.KindTooLarge, "message_too_large", "text and html together are %d bytes, more than %d", c.size, s.cfg.MaxContentBytes).
			With("limit", s.cfg.MaxContentBytes)
	}
	if req.ReplyTo != "" {
		a, err := ParseAddress(req.ReplyTo)
		if err != nil {
			return c, api.Invalid("replyTo: %v", err)
		}
		c.replyTo = a.String()
	}
	return c, nil
}

func checkIdempotencyKey(k string) error {
	if len(k) > MaxIdempotencyKey || strings.ContainsFunc(k, isControl) {
		return api.E(api.KindInvalid, "invalid_idempotency_key", "Idempotency-Key is at most %d printable characters", MaxIdempotencyKey)
	}
	return nil
}

// SendProject queues a message of the caller's project, from the project's
// sender (Email.From). The recipients count against the workspace plan's
// daily limit and as the emails metric. With an idempotency key already
// used in the project, the message it made is returned and nothing is
// queued.
func (s *Service) SendProject(ctx context.Context, pr *auth.Principal, projectID, idemKey string, req SendRequest) (Email, error) {
	return s.sendProject(ctx, pr.WorkspaceID, projectID, SourceAPI, idemKey, req)
}

// SendAs queues a message of a workspace's project on another area's
// behalf (a receipt to a buyer: source SourceReceipt), with the same
// checks, sender, daily limit and metering as the API. idemKey, when set,
// makes a retried call answer the first message (a checkout session's id
// sends one receipt).
func (s *Service) SendAs(ctx context.Context, workspace, projectID, source, idemKey string, req SendRequest) (Email, error) {
	if source == "" || source == SourcePlatform {
		return Email{}, fmt.Errorf("mail: SendAs needs the calling area's source, not %q", source)
	}
	return s.sendProject(ctx, workspace, projectID, source, idemKey, req)
}

func (s *Service) sendProject(ctx context.Context, workspace, projectID, source, idemKey string, req SendRequest) (Email, error) {
	if err := checkIdempotencyKey(idemKey); err != nil {
		return Email{}, err
	}
	p, err := s.d.Projects.Writable(ctx, workspace, projectID)
	if err != nil {
		return Email{}, err
	}
	c, err := s.check(req)
	if err != nil {
		s.m.refused.WithLabelValues(refusalOf(err)).Inc()
		return Email{}, err
	}
	if err := s.refuseSuppressed(ctx, p.ID, c.to); err != nil {
		s.m.refused.WithLabelValues(refusalOf(err)).Inc()
		return Email{}, err
	}
	snd, err := s.projectSender(ctx, s.d.DB, p, c.replyTo)
	if err != nil {
		return Email{}, err
	}
	now := s.now()
	r := s.newRecord(now, c, snd)
	r.Workspace, r.Project, r.Source, r.IdemKey, r.RequestedReply = workspace, p.ID, source, idemKey, c.replyTo
	limit := s.cfg.limit(s.d.Plans.Plan(ctx, workspace))
	var out record
	err = s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		if idemKey != "" {
			prev, err := messageByKey(ctx, tx, p.ID, idemKey)
			if err == nil {
				out = prev
				return nil
			} else if !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
		if err := s.admit(ctx, tx, workspace, len(c.to), limit, now); err != nil {
			return err
		}
		if _, err := insertMessage(ctx, tx, r); err != nil {
			return err
		}
		if _, err := s.d.Jobs.Enqueue(ctx, tx, jobDeliver, delivery{ID: r.ID}, jobs.EnqueueOptions{Key: r.ID}); err != nil {
			return err
		}
		out = r
		return nil
	})
	if err != nil {
		var ae *api.Error
		if errors.As(err, &ae) {
			s.m.refused.WithLabelValues(refusalOf(err)).Inc()
		}
		return Email{}, err
	}
	if out.ID != r.ID {
		return out.view(), nil // the idempotency key's earlier message
	}
	s.d.Jobs.Wake()
	s.m.accepted.WithLabelValues(source).Add(float64(r.RecipientCount))
	if err := s.meter(ctx, r); err != nil {
		// The delivery job records it again (idempotently) before sending.
		s.d.Logger.Warn("mail: metering deferred to delivery", "email", r.ID, "err", err)
	}
	return r.view(), nil
}

// admit refuses n more recipients when the workspace's project messages
// of the last Window would then exceed limit, with the wait until enough of
// them leave the window.
func (s *Service) admit(ctx context.Context, tx *sql.Tx, workspace string, n, limit int, now time.Time) error {
	if limit <= 0 {
		return nil
	}
	if n > limit {
		return api.E(api.KindInvalid, "too_many_recipients", "%d recipients are more than the plan allows in 24 hours (%d): send fewer, or upgrade the plan", n, limit).
			With("limit", limit)
	}
	since := now.Add(-Window)
	used, err := usedSince(ctx, tx, workspace, since)
	if err != nil || used+n <= limit {
		return err
	}
	rows, err := windowUse(ctx, tx, workspace, since)
	if err != nil {
		return err
	}
	wait, freed := Window, 0
	for _, w := range rows {
		freed += w.n
		if used-freed+n <= limit {
			wait = w.at.Add(Window).Sub(now)
			break
		}
	}
	secs := max(int((wait+time.Second-1)/time.Second), 1)
	e := api.E(api.KindRateLimited, "mail_rate_limited", "this workspace's plan sends to at most %d recipients in 24 hours and %d were used: try again in %d seconds, or upgrade the plan",
		limit, used, secs).With("limit", limit).With("used", used)
	e.RetryAfter = secs
	return e
}

// meter records the message's recipients as the emails metric, once per
// message whatever the retries.
func (s *Service) meter(ctx context.Context, r record) error {
	if r.Workspace == "" {
		return nil
	}
	return s.d.Meter.RecordBatch(ctx, "mail:"+r.ID, []metering.Event{{Workspace: r.Workspace, Project: r.Project,
		Metric: metering.Emails, Quantity: float64(r.RecipientCount), At: r.CreatedAt}})
}

// newRecord is a queued message of c from snd.
func (s *Service) newRecord(now time.Time, c checked, snd sender) record {
	id := store.NewID("em")
	rcpts := make([]string, len(c.to))
	for i, a := range c.to {
		rcpts[i] = a.String()
	}
	_, dom, _ := strings.Cut(s.from.Address, "@")
	r := record{ID: id, From: snd.from.String(), EnvelopeFrom: snd.envelope, ReplyTo: snd.replyTo, DomainID: snd.domainID,
		Recipients: rcpts, RecipientCount: len(rcpts), Subject: c.subject, Size: c.size, MessageID: id + "@" + dom,
		State: StateQueued, CreatedAt: now, UpdatedAt: now, VERPToken: newVERPToken()}
	r.EnvelopeFrom = s.envelopeOf(r)
	r.Sealed = s.seal(id, c.body)
	return r
}

// Send queues one of the platform's own messages (a verification token, an
// invitation) from Config.From and tries it at once: it returns nil once
// the relay (or the folder) has it, or when a temporary failure leaves it
// queued for retries, and an error when it cannot be queued or the relay
// refused it for good. It is the accounts.Mailer of the assembly.
func (s *Service) Send(ctx context.Context, m accounts.Message) error {
	to, err := ParseAddress(m.To)
	if err != nil {
		return fmt.Errorf("mail: to: %w", err)
	}
	subject := strings.TrimSpace(m.Subject)
	if subject == "" || len(subject) > MaxSubject || strings.ContainsFunc(subject, isControl) {
		return errors.New("mail: the subject must be one line of 1 to 900 bytes")
	}
	now := s.now()
	r := s.newRecord(now, checked{to: []*mail.Address{to}, subject: subject, body: content{Text: m.Body}, size: len(m.Body)},
		sender{from: s.from, envelope: s.from.Address})
	r.Source = SourcePlatform
	err = s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		if _, err := insertMessage(ctx, tx, r); err != nil {
			return err
		}
		// Due after the first backoff: the attempt below goes first.
		_, err := s.d.Jobs.Enqueue(ctx, tx, jobDeliver, delivery{ID: r.ID}, jobs.EnqueueOptions{Key: r.ID, RunAt: now.Add(s.cfg.Backoff[0])})
		return err
	})
	if err != nil {
		return fmt.Errorf("mail: queue: %w", err)
	}
	s.m.accepted.WithLabelValues(SourcePlatform).Inc()
	out, err := s.attempt(ctx, r.ID, false)
	if err != nil && out.State == StateQueued {
		s.d.Logger.Warn("mail: platform message queued for retry", "email", r.ID, "err", err)
		return nil
	}
	if out.State == StateFailed {
		return fmt.Errorf("mail: the relay refused the message to %s: %s", to.Address, out.LastError)
	}
	return err
}

// refusalOf is the metric label of a refused send.
func refusalOf(err error) string {
	var e *api.Error
	if !errors.As(err, &e) {
		return "error"
	}
	switch e.Code {
	case "too_many_recipients", "message_too_large", "mail_rate_limited", CodeSuppressed:
		return e.Code
	}
	return "invalid"
}
