package signin

import (
	"context"
	"errors"
	"net/mail"
	"net/netip"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/ratelimit"
	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/internal/passhash"
)

// What the end-user endpoints share: the pool behind a public path, the
// origin check, e-mail and password rules, and the throttles.

// Password rules (ours: NIST SP 800-63B's minimum; the maximum is what
// passhash hashes).
const (
	MinPasswordLen = 8
	MaxPasswordLen = passhash.MaxPasswordLen
	// maxEmailLen is RFC 5321's bound on an address.
	maxEmailLen = 254
)

// Throttle buckets (a metric label of the limiter).
const (
	bucketAddress     = "signin.address"
	bucketAccount     = "signin.account"
	bucketSignUp      = "signin.signup"
	bucketMailAddress = "signin.mail_address"
	bucketMailAccount = "signin.mail_account"
)

var (
	errOrigin = api.Forbidden("origin_not_allowed",
		"this sign-in pool answers browsers only on its allowed origins: add this page's origin to the pool's allowedOrigins")
	errCredentials = api.E(api.KindUnauthenticated, "invalid_credentials", "wrong e-mail or password")
)

// Credentials are the body of sign-up and sign-in.
type Credentials struct {
	Email    string `json:"email"`
	Password string `json:"password"`
}

// EmailRequest is the body of /recover and /verify/send.
type EmailRequest struct {
	Email string `json:"email"`
}

// publicPool returns the pool behind an end-user path: 404 for none.
func (s *Service) publicPool(ctx context.Context, id string) (poolRecord, error) {
	p, err := poolByID(ctx, s.d.DB, id)
	if errors.Is(err, store.ErrNotFound) {
		return p, api.NotFound("sign-in pool " + id)
	}
	return p, err
}

// endUserPool returns the pool behind an end-user path when origin may call
// it: a browser's Origin must be one of the pool's effective origins; a
// request without one (an app's server, a mobile app) is not a browser's
// and CORS does not apply.
func (s *Service) endUserPool(ctx context.Context, id, origin string) (poolRecord, error) {
	p, err := s.publicPool(ctx, id)
	if err != nil || origin == "" {
		return p, err
	}
	if err := s.checkOrigin(ctx, p, origin); err != nil {
		return poolRecord{}, err
	}
	return p, nil
}

// checkOrigin refuses an Origin that is not one of p's effective origins.
func (s *Service) checkOrigin(ctx context.Context, p poolRecord, origin string) error {
	o, ok := requestOrigin(origin)
	if !ok {
		return errOrigin
	}
	if len(p.Settings.AllowedOrigins) > 0 {
		if containsString(p.Settings.AllowedOrigins, o) {
			return nil
		}
		return errOrigin
	}
	prj, err := s.d.Projects.Get(ctx, p.Workspace, p.Project)
	if err != nil {
		return err
	}
	if containsString(effectiveOrigins(p.Settings, prj), o) {
		return nil
	}
	return errOrigin
}

// requestOrigin canonicalises a request's Origin header (browsers send
// scheme://host[:port]; "null" and anything else is refused).
func requestOrigin(h string) (string, bool) {
	scheme, host, ok := strings.Cut(h, "://")
	if !ok || (scheme != "https" && scheme != "http") || host == "" || len(h) > maxURLLen ||
		strings.ContainsAny(host, "/?#@ \t\\") {
		return "", false
	}
	return strings.ToLower(h), true
}

// normalEmail checks an e-mail address (a bare address, at most 254
// characters) and returns it in lowercase.
func normalEmail(s string) (string, error) {
	s = strings.TrimSpace(s)
	bad := api.Invalid("email must be an e-mail address such as ada@example.com").With("field", "email")
	if s == "" || len(s) > maxEmailLen || strings.ContainsFunc(s, unicode.IsControl) {
		return "", bad
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s || a.Name != "" || !strings.Contains(s[strings.LastIndexByte(s, '@')+1:], ".") {
		return "", bad
	}
	return strings.ToLower(s), nil
}

// checkPassword applies the rules to a new password.
func checkPassword(p string) error {
	switch {
	case utf8.RuneCountInString(p) < MinPasswordLen:
		return api.E(api.KindInvalid, "weak_password", "a password has at least %d characters", MinPasswordLen).With("field", "password")
	case len(p) > MaxPasswordLen:
		return api.E(api.KindInvalid, "weak_password", "a password has at most %d bytes", MaxPasswordLen).With("field", "password")
	}
	return nil
}

// clientKey is the throttles' name for a client address: the address, or
// its /64 for IPv6 (one host is usually given a whole /64).
func clientKey(addr string) string {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return addr
	}
	a = a.Unmap()
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}

// limitKey names a pool's budget of one throttle for who (an address or an
// e-mail address).
func limitKey(pool, bucket, who string) ratelimit.Key {
	return ratelimit.Key{Workspace: pool + "|" + who, Bucket: bucket}
}

// throttled is the 429 of a refused throttle.
func throttled(d ratelimit.Decision, message string) error {
	e := api.E(api.KindRateLimited, "too_many_attempts", "%s; try again in %d seconds", message, d.RetryAfterSeconds())
	e.RetryAfter = d.RetryAfterSeconds()
	return e
}

// allow spends one unit of k under l, answering 429 with message when
// refused.
func (s *Service) allow(ctx context.Context, k ratelimit.Key, l ratelimit.Limit, message string) error {
	d, err := s.d.Limiter.Allow(ctx, k, l, 1)
	if err != nil {
		return err
	}
	if !d.Allowed {
		return throttled(d, message)
	}
	return nil
}

// refund gives back one unit of k under l (a sign-in that succeeded);
// failures are logged, the unit then expires with its window.
func (s *Service) refund(ctx context.Context, k ratelimit.Key, l ratelimit.Limit) {
	if err := s.d.Limiter.Refund(ctx, k, l, 1); err != nil {
		s.d.Logger.Warn("signin: refund throttle", "bucket", k.Bucket, "err", err)
	}
}
