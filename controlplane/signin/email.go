package signin

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/internal/passhash"
)

// E-mail tokens: single use, stored as SHA-256, sent only by mail.
const (
	// VerifyTokenLifetime is how long a verification token works.
	VerifyTokenLifetime = 24 * time.Hour
	// ResetTokenLifetime is how long a password-reset token works.
	ResetTokenLifetime = time.Hour
	verifyPrefix       = "svcauthverify_"
	resetPrefix        = "svcauthreset_"
	// maxEmailToken bounds a token presented.
	maxEmailToken = 200
)

// What a message to a user is for.
const (
	mailVerify        = "verify"
	mailReset         = "reset"
	mailAccountExists = "exists"
)

var (
	errNoMail        = api.E(api.KindUnavailable, "mail_unavailable", "this platform cannot send e-mail now: ask the app's team")
	errBadEmailToken = api.E(api.KindInvalid, "invalid_token",
		"this token is wrong, used or expired: ask for a new message")
)

// TokenRequest is the body of /verify.
type TokenRequest struct {
	Token string `json:"token"`
}

// ResetRequest is the body of /recover/confirm.
type ResetRequest struct {
	Token    string `json:"token"`
	Password string `json:"password"`
}

// Sent is the answer of /recover and /verify/send: the same whether or not
// an account has the address.
type Sent struct {
	Message string `json:"message"`
}

const sentMessage = "if an account has this address, a message is on its way"

// mailUser sends u a message of kind (with a new token for verify and
// reset). At most Throttles.MailAccount messages per address are sent;
// past it nothing is sent and no error is returned, so callers answer
// alike. A failure to send is logged: the caller's answer must not differ.
func (s *Service) mailUser(ctx context.Context, p poolRecord, u userRecord, kind string, now time.Time) error {
	if s.d.Mailer == nil {
		return errNoMail
	}
	d, err := s.d.Limiter.Allow(ctx, limitKey(p.ID, bucketMailAccount, u.Email), s.cfg.Throttles.MailAccount, 1)
	if err != nil {
		return err
	}
	if !d.Allowed {
		return nil
	}
	var token string
	switch kind {
	case mailVerify, mailReset:
		prefix, life := verifyPrefix, VerifyTokenLifetime
		if kind == mailReset {
			prefix, life = resetPrefix, ResetTokenLifetime
		}
		token = prefix + auth.RandomString(48)
		if _, err := s.d.DB.ExecContext(ctx, `INSERT INTO signin_email_tokens(token_hash, pool_id, user_id, kind, created_at, expires_at) VALUES (?,?,?,?,?,?)`,
			auth.HashSecret(token), p.ID, u.ID, kind, store.FormatTime(now), store.FormatTime(now.Add(life))); err != nil {
			return fmt.Errorf("signin: e-mail token: %w", err)
		}
	}
	m := s.compose(p, u, kind, token)
	if err := s.d.Mailer.Send(ctx, m); err != nil {
		s.d.Logger.Warn("signin: send", "pool", p.ID, "user", u.ID, "kind", kind, "err", err)
	}
	return nil
}

// compose writes the message of kind to u.
func (s *Service) compose(p poolRecord, u userRecord, kind, token string) Message {
	m := Message{Workspace: p.Workspace, Project: p.Project, To: u.Email}
	var b strings.Builder
	use := func(what string) {
		if p.Settings.LinkURL != "" {
			b.WriteString("Open this link " + what + ":\n\n" + link(p.Settings.LinkURL, kind, token) + "\n\n")
		} else {
			b.WriteString("Enter this code " + what + ":\n\n" + token + "\n\n")
		}
	}
	switch kind {
	case mailVerify:
		m.Subject = "Confirm your e-mail address"
		use("to confirm your e-mail address (it works once, for 24 hours)")
	case mailReset:
		m.Subject = "Reset your password"
		use("to choose a new password (it works once, for an hour)")
	default:
		m.Subject = "You already have an account"
		b.WriteString("Someone tried to sign up with this e-mail address, which already has an account.\n\nIf it was you, sign in, or reset your password if you forgot it.\n\n")
	}
	b.WriteString("If you did not ask for this, ignore this message.\n")
	m.Body = b.String()
	return m
}

// link adds type and token to the app's link URL.
func link(base, kind, token string) string {
	u, err := url.Parse(base)
	if err != nil {
		return base
	}
	q := u.Query()
	q.Set("type", kind)
	q.Set("token", token)
	u.RawQuery = q.Encode()
	return u.String()
}

// requestMail answers /recover (kind reset) and /verify/send (kind verify):
// the same answer whether or not a user has the address; a message goes
// only to an enabled user (for verify: one not verified yet).
func (s *Service) requestMail(ctx context.Context, p poolRecord, addr, kind string, req EmailRequest) (Sent, error) {
	email, err := normalEmail(req.Email)
	if err != nil {
		return Sent{}, err
	}
	if s.d.Mailer == nil {
		return Sent{}, errNoMail
	}
	if err := s.d.Projects.RequireActive(ctx, p.Project); err != nil {
		return Sent{}, err
	}
	if err := s.allow(ctx, limitKey(p.ID, bucketMailAddress, clientKey(addr)), s.cfg.Throttles.MailAddress, "too many messages asked for from this address"); err != nil {
		return Sent{}, err
	}
	u, err := userBy(ctx, s.d.DB, p.ID, "email", email)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return Sent{}, err
	case u.Disabled || kind == mailVerify && u.EmailVerified:
	default:
		if err := s.mailUser(ctx, p, u, kind, s.now()); err != nil {
			return Sent{}, err
		}
	}
	return Sent{Message: sentMessage}, nil
}

// consumeToken redeems an e-mail token of kind in tx: it must exist in
// the pool and not have expired; it is deleted (single use).
func consumeToken(ctx context.Context, tx *sql.Tx, pool, kind, token string, now time.Time) (string, error) {
	prefix := verifyPrefix
	if kind == mailReset {
		prefix = resetPrefix
	}
	if !strings.HasPrefix(token, prefix) || len(token) > maxEmailToken {
		return "", errBadEmailToken
	}
	h := auth.HashSecret(token)
	var user, exp string
	err := tx.QueryRowContext(ctx, `SELECT user_id, expires_at FROM signin_email_tokens WHERE token_hash = ? AND pool_id = ? AND kind = ?`, h, pool, kind).
		Scan(&user, &exp)
	if errors.Is(err, sql.ErrNoRows) {
		return "", errBadEmailToken
	}
	if err != nil {
		return "", fmt.Errorf("signin: e-mail token: %w", err)
	}
	res, err := tx.ExecContext(ctx, `DELETE FROM signin_email_tokens WHERE token_hash = ?`, h)
	if err != nil {
		return "", fmt.Errorf("signin: e-mail token: %w", err)
	}
	if n, _ := res.RowsAffected(); n != 1 || !now.Before(store.ParseTime(exp)) {
		return "", errBadEmailToken
	}
	return user, nil
}

// verifyEmail redeems a verification token and marks the address verified.
func (s *Service) verifyEmail(ctx context.Context, p poolRecord, req TokenRequest) (User, error) {
	token := strings.TrimSpace(req.Token)
	now := s.now()
	var u userRecord
	err := s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		id, err := consumeToken(ctx, tx, p.ID, mailVerify, token, now)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE signin_users SET email_verified = ?, updated_at = ? WHERE id = ?`, true, store.FormatTime(now), id); err != nil {
			return fmt.Errorf("signin: verify: %w", err)
		}
		u, err = userBy(ctx, tx, p.ID, "id", id)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return User{}, errBadEmailToken
	}
	if err != nil {
		return User{}, err
	}
	return u.view(), nil
}

// resetPassword redeems a reset token: the new password is set, the address
// verified (the user read the mail), its lockout ended and every session
// of the user ended.
func (s *Service) resetPassword(ctx context.Context, p poolRecord, req ResetRequest) (User, error) {
	if err := checkPassword(req.Password); err != nil {
		return User{}, err
	}
	token := strings.TrimSpace(req.Token)
	if !strings.HasPrefix(token, resetPrefix) || len(token) > maxEmailToken {
		return User{}, errBadEmailToken
	}
	if err := s.d.Projects.RequireActive(ctx, p.Project); err != nil {
		return User{}, err
	}
	hash, err := passhash.HashWith(s.cfg.Hash, req.Password)
	if err != nil {
		return User{}, err
	}
	now := s.now()
	var u userRecord
	err = s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		id, err := consumeToken(ctx, tx, p.ID, mailReset, token, now)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE signin_users SET password_hash = ?, email_verified = ?, updated_at = ? WHERE id = ?`,
			hash, true, store.FormatTime(now), id); err != nil {
			return fmt.Errorf("signin: reset: %w", err)
		}
		if u, err = userBy(ctx, tx, p.ID, "id", id); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM signin_email_tokens WHERE user_id = ? AND kind = ?`, id, mailReset); err != nil {
			return fmt.Errorf("signin: reset: %w", err)
		}
		if err := clearFailures(ctx, tx, p.ID, u.Email); err != nil {
			return err
		}
		return revokeSessions(ctx, tx, id, "password_reset", now)
	})
	if errors.Is(err, store.ErrNotFound) {
		return User{}, errBadEmailToken
	}
	if err != nil {
		return User{}, err
	}
	return u.view(), nil
}
