package signin

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/metering"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/internal/passhash"
)

// failureMemory is how long failed sign-ins in a row are remembered
// without a new failure.
const failureMemory = 24 * time.Hour

// refreshPrefix starts every refresh token.
const refreshPrefix = "svcrt_"

// Session is the answer of a sign-in, a sign-up that signs in, and a
// refresh: a short-lived access token and the refresh token that replaces
// it (each refresh token works once).
type Session struct {
	AccessToken string `json:"accessToken" doc:"a JWT (ES256) to send as Authorization: Bearer; verify it offline with the pool's JWKS"`
	TokenType   string `json:"tokenType"`
	// ExpiresIn is the access token's lifetime in seconds; ExpiresAt its end.
	ExpiresIn int       `json:"expiresIn"`
	ExpiresAt time.Time `json:"expiresAt"`
	// RefreshToken gets the next session once (POST .../token/refresh);
	// using one twice ends the session.
	RefreshToken          string    `json:"refreshToken"`
	RefreshTokenExpiresAt time.Time `json:"refreshTokenExpiresAt"`
	User                  User      `json:"user"`
}

// SignUpAnswer is the answer of a sign-up: a session, or, when the pool
// requires verified e-mail, verificationRequired and no session (alike
// whether the address was new).
type SignUpAnswer struct {
	Session              *Session `json:"session"`
	VerificationRequired bool     `json:"verificationRequired"`
	Message              string   `json:"message,omitempty"`
}

const verificationMessage = "check your e-mail: the message there confirms your address, then sign in"

// lockedError is the 429 of a locked e-mail address; it is answered alike
// for addresses no user has.
func lockedError(until, now time.Time) error {
	secs := int((until.Sub(now) + time.Second - 1) / time.Second)
	e := api.E(api.KindRateLimited, "account_locked",
		"too many failed sign-ins in a row for this e-mail address: try again in %d seconds, or reset the password", max(secs, 1))
	e.RetryAfter = max(secs, 1)
	return e
}

// reserveFailure counts an attempt for (pool, email) as failed before its
// password is checked, locking the address at the pool's threshold; a
// success clears it (clearFailures). It returns when an existing lockout
// ends, zero when the attempt may go on.
func (s *Service) reserveFailure(ctx context.Context, p poolRecord, email string, now time.Time) (time.Time, error) {
	var locked time.Time
	err := s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		locked = time.Time{}
		var failures int
		var last, until string
		err := tx.QueryRowContext(ctx, `SELECT failures, last_failure_at, locked_until FROM signin_lockouts WHERE pool_id = ? AND email = ?`, p.ID, email).
			Scan(&failures, &last, &until)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("signin: lockout: %w", err)
		}
		lu := store.ParseTime(until)
		if now.Before(lu) {
			locked = lu
			return nil
		}
		if !lu.IsZero() || now.Sub(store.ParseTime(last)) >= failureMemory {
			failures = 0 // a lockout that ended, or failures long ago: start over
		}
		failures++
		next := ""
		if failures >= p.Settings.LockoutThreshold {
			next = store.FormatTime(now.Add(time.Duration(p.Settings.LockoutMinutes) * time.Minute))
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO signin_lockouts(pool_id, email, failures, last_failure_at, locked_until) VALUES (?,?,?,?,?)
			ON CONFLICT (pool_id, email) DO UPDATE SET failures = excluded.failures, last_failure_at = excluded.last_failure_at, locked_until = excluded.locked_until`,
			p.ID, email, failures, store.FormatTime(now), next)
		if err != nil {
			return fmt.Errorf("signin: lockout: %w", err)
		}
		return nil
	})
	return locked, err
}

func clearFailures(ctx context.Context, q store.Querier, pool, email string) error {
	if _, err := q.ExecContext(ctx, `DELETE FROM signin_lockouts WHERE pool_id = ? AND email = ?`, pool, email); err != nil {
		return fmt.Errorf("signin: clear lockout: %w", err)
	}
	return nil
}

// signIn checks an e-mail and password and starts a session. The attempt
// takes its place in the address and account throttles and counts as a
// failure of its e-mail address before the password is hashed, so
// concurrent attempts cannot all be checked; a success gives all of it
// back. Unknown addresses cost the same hash and get the same answer as
// wrong passwords.
func (s *Service) signIn(ctx context.Context, p poolRecord, addr string, req Credentials) (Session, error) {
	email, err := normalEmail(req.Email)
	if err != nil {
		return Session{}, err
	}
	if req.Password == "" {
		return Session{}, api.Invalid("password is required").With("field", "password")
	}
	if err := s.d.Projects.RequireActive(ctx, p.Project); err != nil {
		return Session{}, err
	}
	th := s.cfg.Throttles
	addrKey, accKey := limitKey(p.ID, bucketAddress, clientKey(addr)), limitKey(p.ID, bucketAccount, email)
	if err := s.allow(ctx, addrKey, th.Address, "too many sign-in attempts from this address"); err != nil {
		s.m.signIns.WithLabelValues("throttled").Inc()
		return Session{}, err
	}
	if err := s.allow(ctx, accKey, th.Account, "too many sign-in attempts for this e-mail address"); err != nil {
		s.refund(ctx, addrKey, th.Address)
		s.m.signIns.WithLabelValues("throttled").Inc()
		return Session{}, err
	}
	now := s.now()
	locked, err := s.reserveFailure(ctx, p, email, now)
	if err != nil {
		return Session{}, err
	}
	if !locked.IsZero() {
		s.m.signIns.WithLabelValues("locked").Inc()
		return Session{}, lockedError(locked, now)
	}
	u, err := userBy(ctx, s.d.DB, p.ID, "email", email)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return Session{}, err
	}
	s.m.passwordChecks.Inc()
	if err != nil {
		passhash.Verify(s.dummyHash(), req.Password)
		s.m.signIns.WithLabelValues("invalid").Inc()
		return Session{}, errCredentials
	}
	if ok, _ := passhash.Verify(u.PasswordHash, req.Password); !ok {
		s.m.signIns.WithLabelValues("invalid").Inc()
		return Session{}, errCredentials
	}
	// The right password: the attempt was not a failure.
	s.refund(ctx, addrKey, th.Address)
	s.refund(ctx, accKey, th.Account)
	if err := clearFailures(ctx, s.d.DB, p.ID, email); err != nil {
		return Session{}, err
	}
	switch {
	case u.Disabled:
		s.m.signIns.WithLabelValues("disabled").Inc()
		return Session{}, api.Forbidden("user_disabled", "this account is disabled: ask the app's team")
	case p.Settings.RequireEmailVerification && !u.EmailVerified:
		s.m.signIns.WithLabelValues("unverified").Inc()
		return Session{}, api.Forbidden("email_not_verified", "confirm your e-mail address first with the message sent at sign-up (POST .../verify/send sends another)")
	}
	out, err := s.startSession(ctx, p, u, now)
	if err != nil {
		return Session{}, err
	}
	s.m.signIns.WithLabelValues("success").Inc()
	s.meterLogin(ctx, p)
	return out, nil
}

// meterLogin records one end_user_logins; a failure is logged, the
// sign-in stands.
func (s *Service) meterLogin(ctx context.Context, p poolRecord) {
	if err := s.d.Meter.Record(ctx, metering.Event{Workspace: p.Workspace, Project: p.Project, Metric: metering.EndUserLogins, Quantity: 1, At: s.now()}); err != nil {
		s.d.Logger.Warn("signin: meter login", "pool", p.ID, "err", err)
	}
}

// newRefreshToken returns a refresh token (240 random bits).
func newRefreshToken() string { return refreshPrefix + auth.RandomString(48) }

func insertRefresh(ctx context.Context, q store.Querier, pool, session, token string, now, exp time.Time) error {
	_, err := q.ExecContext(ctx, `INSERT INTO signin_refresh_tokens(token_hash, pool_id, session_id, state, created_at, expires_at) VALUES (?,?,?,?,?,?)`,
		auth.HashSecret(token), pool, session, refreshActive, store.FormatTime(now), store.FormatTime(exp))
	if err != nil {
		return fmt.Errorf("signin: refresh token: %w", err)
	}
	return nil
}

// Refresh-token states.
const (
	refreshActive = "active"
	refreshUsed   = "used"
)

// startSession opens a session for u: its first refresh token, and an
// access token signed with the pool's current key.
func (s *Service) startSession(ctx context.Context, p poolRecord, u userRecord, now time.Time) (Session, error) {
	key, err := s.signingKey(ctx, p.ID)
	if err != nil {
		return Session{}, err
	}
	sid, refresh := store.NewID("sis"), newRefreshToken()
	exp := now.Add(time.Duration(p.Settings.RefreshTokenSeconds) * time.Second)
	err = s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO signin_sessions(id, pool_id, user_id, created_at, expires_at) VALUES (?,?,?,?,?)`,
			sid, p.ID, u.ID, store.FormatTime(now), store.FormatTime(exp)); err != nil {
			return fmt.Errorf("signin: session: %w", err)
		}
		if err := insertRefresh(ctx, tx, p.ID, sid, refresh, now, exp); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE signin_users SET last_sign_in_at = ? WHERE id = ?`, store.FormatTime(now), u.ID)
		return err
	})
	if err != nil {
		return Session{}, err
	}
	u.LastSignInAt = now
	return s.session(key, p, u, sid, refresh, exp, now)
}

// session signs an access token for u in session sid and builds the
// answer with refresh, the session's refresh token.
func (s *Service) session(key *privateKey, p poolRecord, u userRecord, sid, refresh string, refreshExp, now time.Time) (Session, error) {
	exp := now.Add(time.Duration(p.Settings.AccessTokenSeconds) * time.Second)
	tok, err := signToken(key.k, key.id, Claims{Issuer: s.issuer(p.ID), Audience: p.ID, Subject: u.ID, IssuedAt: now.Unix(), ExpiresAt: exp.Unix(),
		SessionID: sid, Email: u.Email, EmailVerified: u.EmailVerified})
	if err != nil {
		return Session{}, fmt.Errorf("signin: sign: %w", err)
	}
	v := u.view()
	v.Disabled = false
	return Session{AccessToken: tok, TokenType: "Bearer", ExpiresIn: p.Settings.AccessTokenSeconds, ExpiresAt: time.Unix(exp.Unix(), 0).UTC(),
		RefreshToken: refresh, RefreshTokenExpiresAt: refreshExp, User: v}, nil
}

// signUp adds a user. Without required verification it signs them in (a
// taken address is 409 email_taken); with it, nothing signs in and the
// answer is the same whether the address was new, so sign-up does not
// tell who has an account: a new user gets the verification message, an
// unverified one another, a verified one a note that they have an account.
func (s *Service) signUp(ctx context.Context, p poolRecord, addr string, req Credentials) (SignUpAnswer, error) {
	email, err := normalEmail(req.Email)
	if err != nil {
		return SignUpAnswer{}, err
	}
	if err := checkPassword(req.Password); err != nil {
		return SignUpAnswer{}, err
	}
	verify := p.Settings.RequireEmailVerification
	if verify && s.d.Mailer == nil {
		return SignUpAnswer{}, errNoMail
	}
	if err := s.d.Projects.RequireActive(ctx, p.Project); err != nil {
		return SignUpAnswer{}, err
	}
	if err := s.allow(ctx, limitKey(p.ID, bucketSignUp, clientKey(addr)), s.cfg.Throttles.SignUp, "too many sign-ups from this address"); err != nil {
		s.m.signUps.WithLabelValues("throttled").Inc()
		return SignUpAnswer{}, err
	}
	hash, err := passhash.HashWith(s.cfg.Hash, req.Password)
	if err != nil {
		return SignUpAnswer{}, err
	}
	limit := s.cfg.limits(s.d.Plans.Plan(ctx, p.Workspace)).UsersPerPool
	now := s.now()
	u := userRecord{ID: store.NewID("usr"), Pool: p.ID, Email: email, PasswordHash: hash, CreatedAt: now, UpdatedAt: now}
	created := false
	err = s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		created = false
		var n int
		err := tx.QueryRowContext(ctx, `SELECT user_count FROM signin_pools WHERE id = ?`, p.ID).Scan(&n)
		if errors.Is(err, sql.ErrNoRows) {
			return api.NotFound("sign-in pool " + p.ID)
		}
		if err != nil {
			return fmt.Errorf("signin: user count: %w", err)
		}
		if limit != plans.Unlimited && n >= limit {
			return api.Forbidden("user_limit", "this app's sign-in pool holds its plan's limit of %d users: new sign-ups are refused until the app's team removes users or moves to a larger plan", limit).
				With("limit", limit)
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO signin_users(`+userCols+`) VALUES (?,?,?,?,?,0,?,?,'') ON CONFLICT (pool_id, email) DO NOTHING`,
			u.ID, p.ID, email, hash, false, store.FormatTime(now), store.FormatTime(now))
		if err != nil {
			return fmt.Errorf("signin: insert user: %w", err)
		}
		if k, err := res.RowsAffected(); err != nil || k == 0 {
			return err // the address has a user
		}
		created = true
		_, err = tx.ExecContext(ctx, `UPDATE signin_pools SET user_count = user_count + 1 WHERE id = ?`, p.ID)
		return err
	})
	if err != nil {
		var e *api.Error
		if errors.As(err, &e) && e.Code == "user_limit" {
			s.m.signUps.WithLabelValues("limit").Inc()
		}
		return SignUpAnswer{}, err
	}
	if !created {
		s.m.signUps.WithLabelValues("existing").Inc()
		if !verify {
			return SignUpAnswer{}, api.Conflict("email_taken", "an account with this e-mail address exists: sign in, or reset the password")
		}
		existing, err := userBy(ctx, s.d.DB, p.ID, "email", email)
		if err != nil {
			return SignUpAnswer{}, err
		}
		kind := mailAccountExists
		if !existing.EmailVerified {
			kind = mailVerify
		}
		if err := s.mailUser(ctx, p, existing, kind, now); err != nil {
			return SignUpAnswer{}, err
		}
		return SignUpAnswer{VerificationRequired: true, Message: verificationMessage}, nil
	}
	s.m.signUps.WithLabelValues("created").Inc()
	if verify {
		if err := s.mailUser(ctx, p, u, mailVerify, now); err != nil {
			return SignUpAnswer{}, err
		}
		return SignUpAnswer{VerificationRequired: true, Message: verificationMessage}, nil
	}
	sess, err := s.startSession(ctx, p, u, now)
	if err != nil {
		return SignUpAnswer{}, err
	}
	s.meterLogin(ctx, p)
	return SignUpAnswer{Session: &sess}, nil
}
