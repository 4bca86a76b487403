package signin

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/store"
)

// Refresh tokens rotate: each works once and is answered with the next.
// A session is the family of its refresh tokens; presenting one already
// used (a stolen copy racing its owner) revokes the session, so neither
// copy refreshes again and the user signs in anew.

var (
	errRefresh = api.E(api.KindUnauthenticated, "invalid_refresh_token", "this refresh token is not valid (wrong, expired, or its session ended): sign in again")
	errReused  = api.E(api.KindUnauthenticated, "refresh_token_reused",
		"this refresh token was used already, so its session is ended for safety: sign in again")
	errAccess = api.E(api.KindUnauthenticated, "invalid_token", "the access token is missing, wrong or expired: refresh it or sign in again")
)

// RefreshRequest is the body of /token/refresh.
type RefreshRequest struct {
	RefreshToken string `json:"refreshToken"`
}

// SignOutRequest is the body of /signout. The session is named by the
// access token (Authorization: Bearer) or by refreshToken.
type SignOutRequest struct {
	RefreshToken string `json:"refreshToken,omitempty"`
	// Scope is local (this session, the default) or global (every session
	// of the user).
	Scope string `json:"scope,omitempty"`
}

// SignedOut is the answer of /signout.
type SignedOut struct {
	SignedOut bool `json:"signedOut"`
}

// maxRefreshLen bounds a refresh token presented.
const maxRefreshLen = 200

// refresh outcomes decided in the transaction.
const (
	refreshOK = iota
	refreshInvalid
	refreshReused
	refreshDisabled
)

// revokeSession ends one session: its refresh tokens go.
func revokeSession(ctx context.Context, q store.Querier, sid, reason string, now time.Time) error {
	if _, err := q.ExecContext(ctx, `DELETE FROM signin_refresh_tokens WHERE session_id = ?`, sid); err != nil {
		return fmt.Errorf("signin: revoke session: %w", err)
	}
	if _, err := q.ExecContext(ctx, `UPDATE signin_sessions SET revoked_at = ?, revoked_reason = ? WHERE id = ? AND revoked_at = ''`,
		store.FormatTime(now), reason, sid); err != nil {
		return fmt.Errorf("signin: revoke session: %w", err)
	}
	return nil
}

// refresh trades a refresh token for a new session answer: the token is
// marked used and its successor issued in one transaction. A token of
// another pool is unknown here; a used one revokes its session (committed
// before the 401 is answered).
func (s *Service) refresh(ctx context.Context, p poolRecord, req RefreshRequest) (Session, error) {
	token := strings.TrimSpace(req.RefreshToken)
	if !strings.HasPrefix(token, refreshPrefix) || len(token) > maxRefreshLen {
		s.m.refreshes.WithLabelValues("invalid").Inc()
		return Session{}, errRefresh
	}
	key, err := s.signingKey(ctx, p.ID)
	if err != nil {
		return Session{}, err
	}
	h := auth.HashSecret(token)
	now := s.now()
	var (
		outcome int
		sid     string
		u       userRecord
		next    string
		exp     time.Time
	)
	err = s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		outcome, next = refreshOK, ""
		var state, expires, userID, revoked string
		err := tx.QueryRowContext(ctx, `SELECT r.session_id, r.state, r.expires_at, s.user_id, s.revoked_at
			FROM signin_refresh_tokens r JOIN signin_sessions s ON s.id = r.session_id WHERE r.token_hash = ? AND r.pool_id = ?`, h, p.ID).
			Scan(&sid, &state, &expires, &userID, &revoked)
		if errors.Is(err, sql.ErrNoRows) {
			outcome = refreshInvalid
			return nil
		}
		if err != nil {
			return fmt.Errorf("signin: refresh: %w", err)
		}
		if revoked != "" || !now.Before(store.ParseTime(expires)) {
			outcome = refreshInvalid
			return nil
		}
		if state == refreshUsed {
			outcome = refreshReused
			return revokeSession(ctx, tx, sid, "refresh_token_reused", now)
		}
		res, err := tx.ExecContext(ctx, `UPDATE signin_refresh_tokens SET state = ? WHERE token_hash = ? AND state = ?`, refreshUsed, h, refreshActive)
		if err != nil {
			return fmt.Errorf("signin: refresh: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			outcome = refreshReused
			return revokeSession(ctx, tx, sid, "refresh_token_reused", now)
		}
		u, err = userBy(ctx, tx, p.ID, "id", userID)
		if errors.Is(err, store.ErrNotFound) {
			outcome = refreshInvalid
			return revokeSession(ctx, tx, sid, "user_deleted", now)
		}
		if err != nil {
			return err
		}
		if u.Disabled {
			outcome = refreshDisabled
			return revokeSession(ctx, tx, sid, "disabled", now)
		}
		next = newRefreshToken()
		exp = now.Add(time.Duration(p.Settings.RefreshTokenSeconds) * time.Second)
		if err := insertRefresh(ctx, tx, p.ID, sid, next, now, exp); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE signin_sessions SET expires_at = ? WHERE id = ?`, store.FormatTime(exp), sid)
		return err
	})
	if err != nil {
		return Session{}, err
	}
	switch outcome {
	case refreshInvalid:
		s.m.refreshes.WithLabelValues("invalid").Inc()
		return Session{}, errRefresh
	case refreshReused:
		s.m.refreshes.WithLabelValues("reused").Inc()
		s.d.Logger.Warn("signin: refresh token reused; session revoked", "pool", p.ID, "session", sid)
		return Session{}, errReused
	case refreshDisabled:
		s.m.refreshes.WithLabelValues("invalid").Inc()
		return Session{}, api.Forbidden("user_disabled", "this account is disabled: ask the app's team")
	}
	s.m.refreshes.WithLabelValues("rotated").Inc()
	return s.session(key, p, u, sid, next, exp, now)
}

// bearer returns the token of an Authorization: Bearer header, or "".
func bearer(h string) string {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(tok)
}

// authenticate checks an access token of pool p: its form, a key of this
// pool that is current or retired and still published, the signature,
// issuer, audience, expiry (the area's clock) and issue time; then that
// its session was not ended and its user exists and is enabled.
func (s *Service) authenticate(ctx context.Context, p poolRecord, raw string) (Claims, userRecord, error) {
	if raw == "" {
		return Claims{}, userRecord{}, errAccess
	}
	pt, err := parseToken(raw)
	if err != nil {
		return Claims{}, userRecord{}, errAccess
	}
	now := s.now()
	pub, err := verifyingKey(ctx, s.d.DB, p.ID, pt.header.Kid, now)
	if errors.Is(err, errToken) {
		return Claims{}, userRecord{}, errAccess
	}
	if err != nil {
		return Claims{}, userRecord{}, err
	}
	if !verifySignature(pub, pt) || !validClaims(pt.claims, s.issuer(p.ID), p.ID, now) {
		return Claims{}, userRecord{}, errAccess
	}
	var revoked, userID string
	err = s.d.DB.QueryRowContext(ctx, `SELECT revoked_at, user_id FROM signin_sessions WHERE id = ? AND pool_id = ?`, pt.claims.SessionID, p.ID).Scan(&revoked, &userID)
	if errors.Is(err, sql.ErrNoRows) || err == nil && (revoked != "" || userID != pt.claims.Subject) {
		return Claims{}, userRecord{}, errAccess
	}
	if err != nil {
		return Claims{}, userRecord{}, fmt.Errorf("signin: session: %w", err)
	}
	u, err := userBy(ctx, s.d.DB, p.ID, "id", pt.claims.Subject)
	if errors.Is(err, store.ErrNotFound) {
		return Claims{}, userRecord{}, errAccess
	}
	if err != nil {
		return Claims{}, userRecord{}, err
	}
	if u.Disabled {
		return Claims{}, userRecord{}, api.Forbidden("user_disabled", "this account is disabled: ask the app's team")
	}
	return pt.claims, u, nil
}

// currentUser answers /user.
func (s *Service) currentUser(ctx context.Context, p poolRecord, raw string) (User, error) {
	_, u, err := s.authenticate(ctx, p, raw)
	if err != nil {
		return User{}, err
	}
	return u.view(), nil
}

// signOut ends the session named by the access token raw or by the
// refresh token of req (every session of the user with scope global). A
// refresh token that names no session signs nothing out and is not an
// error (signing out twice is fine).
func (s *Service) signOut(ctx context.Context, p poolRecord, raw string, req SignOutRequest) (SignedOut, error) {
	global := false
	switch req.Scope {
	case "", "local":
	case "global":
		global = true
	default:
		return SignedOut{}, api.Invalid("scope must be local (this session, the default) or global (every session)").With("field", "scope")
	}
	var sid, userID string
	switch {
	case raw != "":
		c, _, err := s.authenticate(ctx, p, raw)
		if err != nil {
			return SignedOut{}, err
		}
		sid, userID = c.SessionID, c.Subject
	case req.RefreshToken != "":
		token := strings.TrimSpace(req.RefreshToken)
		if len(token) > maxRefreshLen {
			return SignedOut{}, errRefresh
		}
		err := s.d.DB.QueryRowContext(ctx, `SELECT s.id, s.user_id FROM signin_refresh_tokens r JOIN signin_sessions s ON s.id = r.session_id
			WHERE r.token_hash = ? AND r.pool_id = ?`, auth.HashSecret(token), p.ID).Scan(&sid, &userID)
		if errors.Is(err, sql.ErrNoRows) {
			return SignedOut{SignedOut: true}, nil
		}
		if err != nil {
			return SignedOut{}, fmt.Errorf("signin: sign out: %w", err)
		}
	default:
		return SignedOut{}, api.Invalid("send the access token (Authorization: Bearer) or refreshToken")
	}
	now := s.now()
	err := s.d.DB.Tx(ctx, func(tx *sql.Tx) error {
		if global {
			return revokeSessions(ctx, tx, userID, "signed_out", now)
		}
		return revokeSession(ctx, tx, sid, "signed_out", now)
	})
	if err != nil {
		return SignedOut{}, err
	}
	return SignedOut{SignedOut: true}, nil
}
