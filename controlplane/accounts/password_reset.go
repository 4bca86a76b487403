package accounts

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/internal/passhash"
)

// Password reset: a person who forgot their password asks for a token by
// mail; redeeming it sets a new password. The mail reaching the address
// proves it, so the reset also marks the address verified (and lifts a
// signed-up workspace's wait for it), and ends every session of the
// person. When the address was not verified before, the person's second
// factor goes too: it was set up by whoever signed up with an address
// that was not theirs, so a squatted sign-up never locks the address's
// owner out. The ask answers the same whether or not the address has an
// account.
const (
	// ResetLifetime is how long a password reset token works.
	ResetLifetime = time.Hour
	// ResetsPerHour bounds the reset mails one address is sent per hour
	// (and the asks one client address makes, with SignUpsPerHour).
	ResetsPerHour = 5
	// resetPrefix starts every reset token.
	resetPrefix = "svcreset_"
)

// PasswordReset is an outstanding reset token as stored.
type PasswordReset struct {
	// TokenHash is auth.HashSecret of the token.
	TokenHash []byte
	PersonID  string
	// Email is the address the token was sent to.
	Email     string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// ResetRequest is the body of POST /api/account/password/reset.
type ResetRequest struct {
	Email string `json:"email"`
}

// ResetSent is the answer of asking for a reset: the same whether or not
// the address has an account.
type ResetSent struct {
	Email string `json:"email"`
	Note  string `json:"note"`
}

// ResetConfirm is the body of POST /api/account/password/reset/confirm.
type ResetConfirm struct {
	Token    string `json:"token"`
	Password string `json:"password"`
}

// ResetDone is the answer of a reset.
type ResetDone struct {
	Email string `json:"email"`
	Note  string `json:"note"`
}

var errInvalidReset = api.E(api.KindNotFound, "invalid_token", "reset token not found, already used or expired: ask for a new one with POST /api/account/password/reset")

// RequestPasswordReset mails a reset token to the address when a person
// has it. The token is in the mail only (the database keeps its hash); a
// new token replaces the person's earlier ones. Asks are throttled per
// client address and per e-mail address.
func (s *Service) RequestPasswordReset(ctx context.Context, req ResetRequest, clientAddr string) (ResetSent, error) {
	email, err := normalizeEmail(req.Email)
	if err != nil {
		return ResetSent{}, err
	}
	s.mu.Lock()
	mailer := s.mailer
	s.mu.Unlock()
	if mailer == nil {
		return ResetSent{}, &api.Error{Kind: api.KindUnavailable, Code: "mail_unavailable", Message: "the platform cannot send e-mail: ask the operator", Err: ErrNoMailer}
	}
	now := s.clock.Now()
	byAddr, wait := s.signUps.reserve(now, slot{key: "reset-addr:" + clientAddr, rule: rule{SignUpsPerHour, time.Hour}})
	if byAddr == nil {
		return ResetSent{}, tooManyResets(wait)
	}
	byEmail, wait := s.verifications.reserve(now, slot{key: "reset:" + email, rule: rule{ResetsPerHour, time.Hour}})
	if byEmail == nil {
		byAddr.release()
		return ResetSent{}, tooManyResets(wait)
	}
	out := ResetSent{Email: email, Note: "If " + email + " has an account, a reset token was mailed to it: send it with a new password to " +
		"POST /api/account/password/reset/confirm within an hour."}
	token := resetPrefix + auth.RandomString(40)
	r := PasswordReset{TokenHash: auth.HashSecret(token), Email: email, CreatedAt: now, ExpiresAt: now.Add(ResetLifetime)}
	err = s.store.CreatePasswordReset(ctx, r)
	if errors.Is(err, store.ErrNotFound) {
		return out, nil // no account: the same answer, no mail
	}
	if err != nil {
		return ResetSent{}, err
	}
	msg := Message{To: email, Subject: "Reset your password",
		Body: "Someone (we hope you) asked to reset the password of the account at this address.\r\n\r\n" +
			"Your reset token, valid for one hour and once:\r\n\r\n    " + token + "\r\n\r\n" +
			"Send it with your new password: POST /api/account/password/reset/confirm {\"token\": \"<token>\", \"password\": \"<new password>\"}.\r\n" +
			"Every session of the account ends. If you did not ask for it, ignore this message: nothing changes.\r\n"}
	if err := mailer.Send(ctx, msg); err != nil {
		// Answered as usual: a different answer would say the address has
		// an account.
		s.log.Warn("accounts: password reset mail not sent", "err", err)
	}
	return out, nil
}

func tooManyResets(wait time.Duration) error {
	secs := int(wait.Seconds()) + 1
	e := api.E(api.KindRateLimited, "too_many_resets", "too many password resets asked; try again in %d seconds", secs)
	e.RetryAfter = secs
	return e
}

// ResetPassword redeems a reset token: the person's password becomes the
// new one, their address verified, every session of theirs ends and every
// reset token of theirs stops working. A token works once, for an hour,
// and only while the person's address is the one it was sent to.
func (s *Service) ResetPassword(ctx context.Context, req ResetConfirm) (ResetDone, error) {
	token := strings.TrimSpace(req.Token)
	if !strings.HasPrefix(token, resetPrefix) || len(token) > 200 {
		return ResetDone{}, errInvalidReset
	}
	if err := validPassword(req.Password); err != nil {
		return ResetDone{}, err
	}
	hash, err := passhash.HashWith(s.params, req.Password)
	if err != nil {
		return ResetDone{}, err
	}
	now := s.clock.Now()
	email, err := s.store.ResetPassword(ctx, auth.HashSecret(token), hash, now, func(r PasswordReset, current string) error {
		if !auth.SecretMatches(token, r.TokenHash) || !now.Before(r.ExpiresAt) || !strings.EqualFold(r.Email, current) {
			return errInvalidReset
		}
		return nil
	}, func(ws, member, email string) audit.Event {
		return audit.Event{Workspace: ws, Action: "account.password_reset", Category: audit.CategoryAccount,
			TargetType: "member", TargetID: member, Summary: "password of " + email + " reset by a mailed token"}
	})
	if errors.Is(err, store.ErrNotFound) {
		return ResetDone{}, errInvalidReset
	}
	if err != nil {
		return ResetDone{}, err
	}
	return ResetDone{Email: email, Note: "The password was changed and every session ended: sign in with POST /api/session."}, nil
}

// RequestPasswordReset answers POST /api/account/password/reset
// (no credentials): 202 whether or not the address has an account.
func (h Handlers) RequestPasswordReset(w http.ResponseWriter, r *http.Request) error {
	var req ResetRequest
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	out, err := h.S.RequestPasswordReset(r.Context(), req, host)
	return api.Reply(w, http.StatusAccepted, out, err)
}

// ResetPassword answers POST /api/account/password/reset/confirm (no
// credentials: the token is the credential).
func (h Handlers) ResetPassword(w http.ResponseWriter, r *http.Request) error {
	var req ResetConfirm
	if err := api.Decode(r, &req, false); err != nil {
		return err
	}
	out, err := h.S.ResetPassword(r.Context(), req)
	return api.Reply(w, http.StatusOK, out, err)
}
