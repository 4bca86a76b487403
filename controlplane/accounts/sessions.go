package accounts

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/internal/passhash"
)

// SignInRequest is the body of POST /api/session.
type SignInRequest struct {
	Email    string `json:"email"`
	Password string `json:"password"`
	// Code is the current TOTP code, required once two-factor is on.
	Code string `json:"code,omitempty"`
	// WorkspaceID picks the workspace the session starts in; without it,
	// the person's oldest membership. It can change later
	// (POST /api/session/workspace).
	WorkspaceID string `json:"workspaceId,omitempty"`
}

// SignedIn is the answer of a sign-in. The session token travels in the
// HttpOnly cookie; CSRFToken must accompany every unsafe request the
// dashboard makes with that cookie (header X-CSRF-Token).
type SignedIn struct {
	Member       Member    `json:"member"`
	WorkspaceID  string    `json:"workspaceId"`
	ExpiresAt    time.Time `json:"expiresAt"`
	CSRFToken    string    `json:"csrfToken"`
	SecondFactor bool      `json:"secondFactor"`
	token        string
}

var errSignIn = api.E(api.KindUnauthenticated, "invalid_credentials", "wrong e-mail, password or code")

// SignIn checks a member's password (and TOTP code when enabled) and opens a
// dashboard session. Attempts are throttled per e-mail and client address,
// per client address, and per e-mail from addresses it has not signed in
// from (throttle.go); an attempt takes its place in those limits before
// the password is checked, and gives it back only when it succeeds.
func (s *Service) SignIn(ctx context.Context, req SignInRequest, clientAddr string) (SignedIn, error) {
	now := s.clock.Now()
	email := strings.ToLower(strings.TrimSpace(req.Email))
	pair := "pair:" + clientAddr + "|" + email
	slots := []slot{
		{key: pair, rule: rule{SignInPairLimit, SignInPairWindow}},
		{key: "addr:" + clientAddr, rule: rule{SignInAddrLimit, SignInAddrWindow}},
	}
	if !s.signIns.isKnown(email, clientAddr, now) {
		slots = append(slots, slot{key: "account:" + email, rule: rule{SignInAccountLimit, SignInAccountWindow}})
	}
	res, wait := s.signIns.reserve(now, slots...)
	if res == nil {
		secs := int(wait.Seconds()) + 1
		e := api.E(api.KindRateLimited, "too_many_attempts", "too many failed sign-ins; try again in %d seconds", secs)
		e.RetryAfter = secs
		return SignedIn{}, e
	}
	ok := false
	defer func() {
		if ok {
			res.release()
		}
	}()
	cands, err := s.store.SignInCandidates(ctx, email, req.WorkspaceID)
	if err != nil {
		ok = true // not an attempt that failed
		return SignedIn{}, err
	}
	s.passwordChecks.Add(1)
	if len(cands) == 0 || cands[0].PasswordHash == "" {
		// Spend the same work as a real check so timing does not tell
		// whether the e-mail exists.
		passhash.Verify(s.dummyHash(), req.Password)
		return SignedIn{}, errSignIn
	}
	c := cands[0]
	if match, _ := passhash.Verify(c.PasswordHash, req.Password); !match {
		return SignedIn{}, errSignIn
	}
	if c.TOTP.Enabled {
		step, valid := auth.CheckTOTP(c.TOTP.Secret, req.Code, now, c.TOTP.LastStep)
		if !valid {
			return SignedIn{}, errSignIn
		}
		claimed, err := s.store.ClaimTOTPStep(ctx, c.MemberID, step)
		if err != nil {
			return SignedIn{}, err
		}
		if !claimed {
			return SignedIn{}, errSignIn
		}
	}
	ok = true
	s.signIns.reset(pair)
	s.signIns.remember(email, clientAddr, now)
	token := "svcsess_" + auth.RandomString(48)
	csrf := auth.RandomString(32)
	out := SignedIn{WorkspaceID: c.WorkspaceID, ExpiresAt: now.Add(SessionLifetime), CSRFToken: csrf, SecondFactor: c.TOTP.Enabled, token: token}
	out.Member, err = s.store.CreateSession(ctx, SessionRecord{ID: store.NewID("ses"), TokenHash: auth.HashSecret(token), CSRFHash: auth.HashSecret(csrf),
		MemberID: c.MemberID, WorkspaceID: c.WorkspaceID, SecondFactor: c.TOTP.Enabled, CreatedAt: now, ExpiresAt: out.ExpiresAt},
		func(m Member) audit.Event {
			return audit.Event{Workspace: c.WorkspaceID, Actor: &auth.Principal{WorkspaceID: c.WorkspaceID, MemberID: c.MemberID, Session: true},
				Action: "session.create", Category: audit.CategoryAccount, TargetType: "member", TargetID: c.MemberID, Summary: m.Email + " signed in"}
		})
	if err != nil {
		return SignedIn{}, err
	}
	return out, nil
}

// dummyHash is a hash of the service's parameters to verify against when no
// member matches, so a miss costs what a hit costs.
func (s *Service) dummyHash() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dummy == "" {
		s.dummy, _ = passhash.HashWith(s.params, "not a real password")
	}
	return s.dummy
}

// SessionCookie is the cookie that carries a new session.
func SessionCookie(si SignedIn) *http.Cookie {
	return &http.Cookie{Name: sessionCookie, Value: si.token, Path: "/api/", Expires: si.ExpiresAt,
		HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode}
}

// ClearSessionCookie ends the session cookie in the browser.
func ClearSessionCookie() *http.Cookie {
	return &http.Cookie{Name: sessionCookie, Value: "", Path: "/api/", MaxAge: -1, HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode}
}

func (s *Service) authenticateSession(r *http.Request, token string) (*auth.Principal, error) {
	c, err := s.store.Session(r.Context(), auth.HashSecret(token))
	if errors.Is(err, store.ErrNotFound) || (err == nil && (!s.clock.Now().Before(c.ExpiresAt) || c.Status != "active")) {
		return nil, api.E(api.KindUnauthenticated, "session_expired", "your session has ended: sign in again")
	}
	if err != nil {
		return nil, fmt.Errorf("accounts: session: %w", err)
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
	default:
		if !auth.SecretMatches(r.Header.Get("X-CSRF-Token"), c.CSRFHash) {
			return nil, api.Forbidden("csrf", "missing or wrong X-CSRF-Token header for a signed-in change")
		}
	}
	return &auth.Principal{MemberID: c.MemberID, WorkspaceID: c.WorkspaceID, SecondFactor: c.SecondFactor, Role: c.Role, Session: true,
		SessionHash: auth.HashSecret(token), Pending: c.Pending}, nil
}

// SignOut ends the session of the request, if any.
func (s *Service) SignOut(r *http.Request) error {
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" {
		return nil
	}
	return s.store.DeleteSession(r.Context(), auth.HashSecret(c.Value))
}

// PasswordRequest is the body of PUT /api/account/password.
type PasswordRequest struct {
	CurrentPassword string `json:"currentPassword"`
	NewPassword     string `json:"newPassword"`
}

// ChangePassword changes the signed-in member's password and ends their
// other sessions.
func (s *Service) ChangePassword(ctx context.Context, p *auth.Principal, req PasswordRequest) error {
	if err := validPassword(req.NewPassword); err != nil {
		return err
	}
	hash, err := s.store.PasswordHash(ctx, p.MemberID)
	if err != nil {
		return fmt.Errorf("accounts: password: %w", err)
	}
	if ok, _ := passhash.Verify(hash, req.CurrentPassword); !ok {
		return api.Forbidden("wrong_password", "currentPassword is wrong")
	}
	nh, err := passhash.HashWith(s.params, req.NewPassword)
	if err != nil {
		return err
	}
	return s.store.SetPassword(ctx, p.MemberID, nh, s.clock.Now(), p.SessionHash, audit.Event{Workspace: p.WorkspaceID, Actor: p, Action: "account.password",
		Category: audit.CategoryAccount, TargetType: "member", TargetID: p.MemberID, Summary: "password changed"})
}

// TOTPEnrollment is the answer of starting two-factor enrolment.
type TOTPEnrollment struct {
	Secret     string `json:"secret"`
	OTPAuthURL string `json:"otpauthUrl"`
	Note       string `json:"note"`
}

// StartTOTP stores a new, not yet enabled TOTP secret for the signed-in member.
func (s *Service) StartTOTP(ctx context.Context, p *auth.Principal) (TOTPEnrollment, error) {
	email, enabled, err := s.store.TOTPStatus(ctx, p.MemberID)
	if err != nil {
		return TOTPEnrollment{}, err
	}
	if enabled {
		return TOTPEnrollment{}, api.Conflict("totp_enabled", "two-factor is already on; turn it off first to enrol a new device")
	}
	secret := auth.NewTOTPSecret()
	stored, err := s.store.SetTOTPSecret(ctx, p.MemberID, secret)
	if err != nil {
		return TOTPEnrollment{}, err
	}
	if !stored {
		return TOTPEnrollment{}, api.Conflict("totp_enabled", "two-factor is already on; turn it off first to enrol a new device")
	}
	return TOTPEnrollment{Secret: secret, OTPAuthURL: auth.TOTPURL("service", email, secret),
		Note: "Add this to your authenticator app, then confirm with POST /api/account/totp/confirm {code}."}, nil
}

// CodeRequest carries a TOTP code.
type CodeRequest struct {
	Code string `json:"code"`
}

// ConfirmTOTP turns two-factor on once a code from the enrolled secret checks.
func (s *Service) ConfirmTOTP(ctx context.Context, p *auth.Principal, code string) error {
	return s.setTOTP(ctx, p, code, true)
}

// DisableTOTP turns two-factor off; it needs a current code.
func (s *Service) DisableTOTP(ctx context.Context, p *auth.Principal, code string) error {
	return s.setTOTP(ctx, p, code, false)
}

func (s *Service) setTOTP(ctx context.Context, p *auth.Principal, code string, on bool) error {
	action, summary := "account.totp_on", "two-factor turned on"
	if !on {
		action, summary = "account.totp_off", "two-factor turned off"
	}
	return s.store.UpdateTOTP(ctx, p.MemberID, func(t *TOTP) error {
		if t.Secret == "" || t.Enabled == on {
			if on {
				return api.Conflict("totp_state", "start enrolment first (POST /api/account/totp), or two-factor is already on")
			}
			return api.Conflict("totp_state", "two-factor is not on")
		}
		step, ok := auth.CheckTOTP(t.Secret, code, s.clock.Now(), t.LastStep)
		if !ok {
			return api.Forbidden("wrong_code", "the code does not match")
		}
		t.Enabled, t.LastStep = on, step
		if !on {
			t.Secret, t.LastStep = "", 0
		}
		return nil
	}, audit.Event{Workspace: p.WorkspaceID, Actor: p, Action: action, Category: audit.CategoryAccount,
		TargetType: "member", TargetID: p.MemberID, Summary: summary})
}
