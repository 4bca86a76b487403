package mail

import (
	"bytes"
	"context"
	"crypto"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/mail"
	"strings"
	"time"

	"github.com/emersion/go-msgauth/dkim"
	gomail "github.com/wneessen/go-mail"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/jobs"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/controlplane/store"
)

// delivery is the payload of a delivery job.
type delivery struct {
	ID string `json:"id"`
}

// sender is who a message goes from.
type sender struct {
	from     *mail.Address // the From header
	envelope string        // MAIL FROM, where bounces go
	replyTo  string
	domainID string // the verified sending domain that signs it
}

// projectSender decides who project p's message goes from: the project's
// mailFrom when its domain is a verified sending domain of the project
// (signed with that domain's key), else the platform's own address under
// the project's sender name. Replies go to replyTo when given, else to the
// project's mailReplyTo, else (from the platform's address) to its
// mailFrom.
func (s *Service) projectSender(ctx context.Context, q store.Querier, p projects.Project, replyTo string) (sender, error) {
	name := p.MailSenderName
	if name == "" {
		name = p.Name
	}
	snd := sender{from: &mail.Address{Name: name, Address: s.from.Address}, envelope: s.from.Address, replyTo: replyTo}
	var own *mail.Address
	if p.MailFrom != "" {
		if a, err := ParseAddress(p.MailFrom); err == nil {
			own = a
			_, host, _ := strings.Cut(a.Address, "@")
			d, err := verifiedDomain(ctx, q, p.ID, host)
			switch {
			case err == nil:
				snd.from, snd.envelope, snd.domainID = &mail.Address{Name: name, Address: a.Address}, a.Address, d.ID
			case !errors.Is(err, store.ErrNotFound):
				return sender{}, err
			}
		}
	}
	if snd.replyTo == "" && p.MailReplyTo != "" {
		if a, err := ParseAddress(p.MailReplyTo); err == nil {
			snd.replyTo = a.String()
		}
	}
	if snd.replyTo == "" && snd.domainID == "" && own != nil {
		snd.replyTo = own.String()
	}
	return snd, nil
}

// deliverJob runs one delivery attempt of the message the job names. It
// returns an error (the job retries after its backoff) only while the
// message stays queued; its last attempt fails the message instead.
func (s *Service) deliverJob(ctx context.Context, j jobs.Job) error {
	var d delivery
	if err := json.Unmarshal(j.Payload, &d); err != nil || d.ID == "" {
		return jobs.Permanent(fmt.Errorf("mail: delivery job %s: bad payload", j.ID))
	}
	r, err := getMessage(ctx, s.d.DB, d.ID)
	if errors.Is(err, store.ErrNotFound) {
		return nil // removed with its project
	}
	if err != nil {
		return err
	}
	if r.State != StateQueued {
		return nil
	}
	if err := s.meter(ctx, r); err != nil {
		return err
	}
	_, err = s.attempt(ctx, d.ID, j.Attempt >= s.cfg.MaxAttempts)
	return err
}

// errBusy is the error of an attempt that found another one under way.
var errBusy = errors.New("mail: another delivery attempt of this message is under way")

// attempt claims a queued message, delivers it once and records how it
// went. final makes a temporary failure fail the message for good. It
// returns the message as recorded and, while it stays queued, the error
// that kept it there.
func (s *Service) attempt(ctx context.Context, id string, final bool) (record, error) {
	now := s.now()
	ok, err := claimMessage(ctx, s.d.DB, id, now, now.Add(s.cfg.Timeout+30*time.Second))
	if err != nil {
		return record{State: StateQueued}, err
	}
	r, err := getMessage(ctx, s.d.DB, id)
	if errors.Is(err, store.ErrNotFound) {
		return record{}, nil
	}
	if err != nil {
		return record{State: StateQueued}, err
	}
	if !ok {
		if r.State == StateQueued {
			return r, errBusy
		}
		return r, nil
	}
	start := time.Now()
	sendErr := s.deliver(ctx, &r)
	s.m.seconds.WithLabelValues(s.tr.name()).Observe(time.Since(start).Seconds())
	done := s.now()
	r.State = StateSent
	r.LastError, r.SMTPCode = "", 0
	if sendErr != nil {
		f := classify(sendErr)
		r.LastError, r.SMTPCode = f.reason, f.code
		switch {
		case f.permanent:
			r.State = StateFailed
		case final:
			r.State = StateFailed
			r.LastError = clipText(fmt.Sprintf("gave up after %d attempts: %s", r.Attempts, f.reason), 500)
		default:
			r.State = StateQueued
		}
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := finishMessage(fctx, s.d.DB, r, done); err != nil {
		// The claim expires and the next attempt delivers again: the relay
		// may see this message twice, never zero times.
		return record{State: StateQueued}, fmt.Errorf("mail: record outcome of %s: %w", id, err)
	}
	r.UpdatedAt = done
	switch r.State {
	case StateSent:
		r.SentAt = done
		s.m.deliveries.WithLabelValues(s.tr.name(), "sent").Inc()
		s.d.Logger.Info("mail: sent", "email", r.ID, "source", r.Source, "project", r.Project, "recipients", r.RecipientCount, "attempt", r.Attempts)
		return r, nil
	case StateFailed:
		r.FailedAt = done
		s.m.deliveries.WithLabelValues(s.tr.name(), "failed").Inc()
		s.d.Logger.Warn("mail: failed", "email", r.ID, "source", r.Source, "project", r.Project, "attempt", r.Attempts, "code", r.SMTPCode, "reason", r.LastError)
		return r, nil
	default:
		s.m.deliveries.WithLabelValues(s.tr.name(), "retry").Inc()
		return r, sendErr
	}
}

// deliver builds r (from its project's current sender, for project mail)
// and hands it to the transport. r's sender fields are updated to what was
// used.
func (s *Service) deliver(ctx context.Context, r *record) error {
	c, err := s.open(*r)
	if err != nil {
		return err
	}
	if r.Source != SourcePlatform {
		p, err := s.d.Projects.Get(ctx, r.Workspace, r.Project)
		if isNotFound(err) {
			return permanentErr("the project was deleted before the message was sent")
		}
		if err != nil {
			return err
		}
		snd, err := s.projectSender(ctx, s.d.DB, p, r.RequestedReply)
		if err != nil {
			return err
		}
		r.From, r.EnvelopeFrom, r.ReplyTo, r.DomainID = snd.from.String(), snd.envelope, snd.replyTo, snd.domainID
	}
	r.EnvelopeFrom = s.envelopeOf(*r)
	raw, err := s.build(ctx, *r, c)
	if err != nil {
		return err
	}
	env := envelope{from: r.EnvelopeFrom}
	for _, to := range r.Recipients {
		a, err := mail.ParseAddress(to)
		if err != nil {
			return fmt.Errorf("mail: stored recipient %q: %w", to, err)
		}
		env.to = append(env.to, a.Address)
	}
	if r.Project != "" {
		kept, err := s.unsuppressed(ctx, r.Project, env.to)
		if err != nil {
			return err
		}
		if len(kept) == 0 {
			return permanentErr("every recipient is on the project's suppression list (an earlier bounce or complaint): remove them with DELETE /api/projects/{id}/email-suppressions/{address} to send again")
		}
		env.to = kept
	}
	tctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	return s.tr.send(tctx, env, raw)
}

// permanentError is a refusal of ours that no retry fixes.
type permanentError struct{ reason string }

func (e *permanentError) Error() string { return e.reason }

func permanentErr(reason string) error { return &permanentError{reason: reason} }

// signedHeaders are the header fields a DKIM signature covers. From,
// Subject and Reply-To are listed once more than they appear, so that a
// copy with another one added no longer verifies.
var signedHeaders = []string{"From", "Reply-To", "Subject", "Date", "To", "Message-ID", "MIME-Version", "Content-Type",
	"Content-Transfer-Encoding", "From", "Subject", "Reply-To"}

// build makes the message's bytes: headers, text and HTML as alternatives,
// and, from a verified sending domain, the domain's DKIM signature.
func (s *Service) build(ctx context.Context, r record, c content) ([]byte, error) {
	m := gomail.NewMsg(gomail.WithNoDefaultUserAgent())
	from, err := mail.ParseAddress(r.From)
	if err != nil {
		return nil, fmt.Errorf("mail: stored from %q: %w", r.From, err)
	}
	m.FromMailAddress(from)
	if err := m.To(r.Recipients...); err != nil {
		return nil, fmt.Errorf("mail: recipients: %w", err)
	}
	if r.ReplyTo != "" {
		if err := m.ReplyTo(r.ReplyTo); err != nil {
			return nil, fmt.Errorf("mail: reply-to: %w", err)
		}
	}
	m.Subject(r.Subject)
	m.SetMessageIDWithValue(r.MessageID)
	m.SetDateWithValue(r.CreatedAt)
	switch {
	case c.Text != "" && c.HTML != "":
		m.SetBodyString(gomail.TypeTextPlain, c.Text)
		m.AddAlternativeString(gomail.TypeTextHTML, c.HTML)
	case c.HTML != "":
		m.SetBodyString(gomail.TypeTextHTML, c.HTML)
	default:
		m.SetBodyString(gomail.TypeTextPlain, c.Text)
	}
	var buf bytes.Buffer
	if _, err := m.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("mail: build message: %w", err)
	}
	if r.DomainID == "" {
		return buf.Bytes(), nil
	}
	d, err := getDomain(ctx, s.d.DB, r.DomainID)
	if err != nil {
		return nil, fmt.Errorf("mail: sending domain: %w", err)
	}
	key, err := s.privateKey(d)
	if err != nil {
		return nil, err
	}
	var signed bytes.Buffer
	if err := dkim.Sign(&signed, &buf, &dkim.SignOptions{Domain: d.Name, Selector: d.Selector, Signer: key, Hash: crypto.SHA256,
		HeaderCanonicalization: dkim.CanonicalizationRelaxed, BodyCanonicalization: dkim.CanonicalizationRelaxed,
		HeaderKeys: signedHeaders}); err != nil {
		return nil, fmt.Errorf("mail: DKIM sign for %s: %w", d.Name, err)
	}
	return signed.Bytes(), nil
}

// privateKey opens a domain's sealed DKIM key.
func (s *Service) privateKey(d domain) (crypto.Signer, error) {
	der, err := s.d.Sealer.Open(d.Sealed, []byte("mail-dkim:"+d.ID))
	if err != nil {
		return nil, fmt.Errorf("mail: DKIM key of %s: %w", d.Name, err)
	}
	k, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, fmt.Errorf("mail: DKIM key of %s: %w", d.Name, err)
	}
	signer, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("mail: DKIM key of %s is not a signing key", d.Name)
	}
	return signer, nil
}

// isNotFound reports a missing row or a 404 of another area.
func isNotFound(err error) bool {
	var e *api.Error
	return errors.Is(err, store.ErrNotFound) || errors.As(err, &e) && e.Kind == api.KindNotFound
}
