package accounts

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/store"
)

// E-mail verification: a member asks for a token, which reaches them by
// mail only; redeeming it marks their e-mail verified. AI on hobby and live
// payment links need the workspace owner's verified e-mail
// (OwnerEmailVerified).
const (
	// VerificationLifetime is how long an e-mail verification token works.
	VerificationLifetime = 24 * time.Hour
	// VerificationsPerHour bounds the verification mails one member can
	// have sent per hour.
	VerificationsPerHour = 5
	// verificationPrefix starts every verification token.
	verificationPrefix = "svcverify_"
)

// Message is one e-mail the platform sends.
type Message struct {
	To      string
	Subject string
	Body    string
}

// Mailer delivers the platform's own e-mail (verification tokens).
type Mailer interface {
	Send(ctx context.Context, m Message) error
}

// ErrNoMailer is returned when verification is asked for and no Mailer is
// installed.
var ErrNoMailer = errors.New("accounts: no mailer")

// FileMailer is the default Mailer: it writes each message as a file in
// Dir (the data directory's mail/ folder) for the operator to deliver or a
// developer to read, and logs that it did, never the message's body.
type FileMailer struct {
	// Dir receives one .eml file per message.
	Dir string
	// Log records each message written (recipient and file, not body).
	Log *slog.Logger
	// Clock names the files (clock.System when nil).
	Clock clock.Clock
}

var _ Mailer = (*FileMailer)(nil)

// Send writes m to a new file readable by the owner only.
func (f *FileMailer) Send(_ context.Context, m Message) error {
	if err := os.MkdirAll(f.Dir, 0o700); err != nil {
		return fmt.Errorf("accounts: mail dir: %w", err)
	}
	var clk clock.Clock = clock.System{}
	if f.Clock != nil {
		clk = f.Clock
	}
	name := clk.Now().UTC().Format("20060102T150405.000Z") + "-" + auth.RandomString(8) + ".eml"
	path := filepath.Join(f.Dir, name)
	body := "To: " + m.To + "\r\nSubject: " + m.Subject + "\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n" + m.Body
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		return fmt.Errorf("accounts: write mail: %w", err)
	}
	if f.Log != nil {
		f.Log.Info("accounts: mail written", "to", m.To, "subject", m.Subject, "file", path)
	}
	return nil
}

// SetMailer installs what delivers verification tokens.
func (s *Service) SetMailer(m Mailer) {
	s.mu.Lock()
	s.mailer = m
	s.mu.Unlock()
}

// EmailVerification is an outstanding verification token as stored.
type EmailVerification struct {
	// TokenHash is auth.HashSecret of the token.
	TokenHash []byte
	MemberID  string
	// Email is the address the token was sent to.
	Email     string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// VerificationSent is the answer of asking for a verification token.
type VerificationSent struct {
	Email     string    `json:"email"`
	ExpiresAt time.Time `json:"expiresAt"`
	Note      string    `json:"note"`
}

// RequestEmailVerification sends the calling member a verification token
// by mail. The token is in the mail only: never in the answer, the logs or
// the database (which keeps its hash). A new token replaces the member's
// earlier ones.
func (s *Service) RequestEmailVerification(ctx context.Context, p *auth.Principal) (VerificationSent, error) {
	s.mu.Lock()
	mailer := s.mailer
	s.mu.Unlock()
	if mailer == nil {
		return VerificationSent{}, &api.Error{Kind: api.KindUnavailable, Code: "mail_unavailable", Message: "the platform cannot send e-mail: ask the operator", Err: ErrNoMailer}
	}
	m, err := s.store.Member(ctx, p.WorkspaceID, p.MemberID)
	if err != nil {
		return VerificationSent{}, err
	}
	if m.EmailVerified {
		return VerificationSent{}, api.Conflict("email_already_verified", "%s is already verified", m.Email)
	}
	now := s.clock.Now()
	res, wait := s.verifications.reserve(now, slot{key: m.ID, rule: rule{VerificationsPerHour, time.Hour}})
	if res == nil {
		secs := int(wait.Seconds()) + 1
		e := api.E(api.KindRateLimited, "too_many_verifications", "at most %d verification mails an hour: try again in %d seconds", VerificationsPerHour, secs)
		e.RetryAfter = secs
		return VerificationSent{}, e
	}
	token := verificationPrefix + auth.RandomString(40)
	v := EmailVerification{TokenHash: auth.HashSecret(token), MemberID: m.ID, Email: m.Email, CreatedAt: now, ExpiresAt: now.Add(VerificationLifetime)}
	if err := s.store.CreateEmailVerification(ctx, v, audit.Event{Workspace: p.WorkspaceID, Actor: p, Action: "account.email_verification",
		Category: audit.CategoryAccount, TargetType: "member", TargetID: m.ID, Summary: "verification mail sent to " + m.Email}); err != nil {
		res.release()
		return VerificationSent{}, err
	}
	msg := Message{To: m.Email, Subject: "Verify your e-mail address",
		Body: "Someone (we hope you) asked to verify this address for a workspace member.\r\n\r\n" +
			"Your verification token, valid for 24 hours and once:\r\n\r\n    " + token + "\r\n\r\n" +
			"Redeem it with POST /api/account/email/verify {\"token\": \"<token>\"}.\r\n" +
			"If you did not ask for it, ignore this message.\r\n"}
	if err := mailer.Send(ctx, msg); err != nil {
		res.release()
		return VerificationSent{}, &api.Error{Kind: api.KindUnavailable, Code: "mail_failed", Message: "the verification mail could not be sent; retry shortly", Err: err}
	}
	return VerificationSent{Email: m.Email, ExpiresAt: v.ExpiresAt, Note: "A token was mailed to " + m.Email + ": send it to POST /api/account/email/verify within 24 hours."}, nil
}

// VerifyRequest is the body of POST /api/account/email/verify.
type VerifyRequest struct {
	Token string `json:"token"`
}

var errInvalidVerification = api.E(api.KindNotFound, "invalid_token", "verification token not found, already used or expired: ask for a new one")

// VerifyEmail redeems a verification token: the member's e-mail becomes
// verified and every token of theirs stops working. A token works once,
// for 24 hours, and only while the member's e-mail is the one it was sent
// to.
func (s *Service) VerifyEmail(ctx context.Context, req VerifyRequest) (Member, error) {
	token := strings.TrimSpace(req.Token)
	if !strings.HasPrefix(token, verificationPrefix) || len(token) > 200 {
		return Member{}, errInvalidVerification
	}
	now := s.clock.Now()
	m, err := s.store.VerifyEmail(ctx, auth.HashSecret(token), func(v EmailVerification, current string) error {
		if !auth.SecretMatches(token, v.TokenHash) || !now.Before(v.ExpiresAt) || !strings.EqualFold(v.Email, current) {
			return errInvalidVerification
		}
		return nil
	}, func(ws string, m Member) audit.Event {
		return audit.Event{Workspace: ws, Action: "account.email_verified", Category: audit.CategoryAccount,
			TargetType: "member", TargetID: m.ID, Summary: m.Email + " verified"}
	})
	if errors.Is(err, store.ErrNotFound) {
		return Member{}, errInvalidVerification
	}
	return m, err
}

// OwnerEmailVerified reports whether an active owner of the workspace has
// verified their e-mail.
func (s *Service) OwnerEmailVerified(ctx context.Context, workspace string) (bool, error) {
	return s.store.OwnerEmailVerified(ctx, workspace)
}
