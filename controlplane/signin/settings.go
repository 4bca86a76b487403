package signin

import (
	"net"
	"net/url"
	"strings"
	"unicode"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/projects"
)

// Settings and their bounds (ours; Supabase and Firebase default to an
// hour of access token, we to fifteen minutes).
const (
	DefaultAccessTokenSeconds  = 15 * 60
	MinAccessTokenSeconds      = 60
	MaxAccessTokenSeconds      = 24 * 3600
	DefaultRefreshTokenSeconds = 30 * 24 * 3600
	MinRefreshTokenSeconds     = 3600
	MaxRefreshTokenSeconds     = 365 * 24 * 3600
	DefaultLockoutThreshold    = 10
	MinLockoutThreshold        = 3
	MaxLockoutThreshold        = 100
	DefaultLockoutMinutes      = 15
	MinLockoutMinutes          = 1
	MaxLockoutMinutes          = 24 * 60
	// MaxOrigins bounds allowedOrigins.
	MaxOrigins = 20
	// MaxNameLen bounds a pool name.
	MaxNameLen = 64
	// maxURLLen bounds linkUrl and each origin.
	maxURLLen = 2000
)

// Settings are a pool's settings.
type Settings struct {
	// AllowedOrigins are the pages (scheme://host[:port]) whose browsers may
	// call the pool's end-user endpoints; empty means the project's own
	// addresses.
	AllowedOrigins []string `json:"allowedOrigins"`
	// AccessTokenSeconds is how long an access token lives (60 to 86,400).
	AccessTokenSeconds int `json:"accessTokenSeconds"`
	// RefreshTokenSeconds is how long an unused refresh token lives (3,600
	// to 31,536,000); every use issues a new one.
	RefreshTokenSeconds int `json:"refreshTokenSeconds"`
	// LockoutThreshold is how many failed sign-ins in a row lock an e-mail
	// address (3 to 100).
	LockoutThreshold int `json:"lockoutThreshold"`
	// LockoutMinutes is how long a lockout lasts (1 to 1,440).
	LockoutMinutes int `json:"lockoutMinutes"`
	// RequireEmailVerification withholds sessions until the user redeems
	// the verification token mailed at sign-up.
	RequireEmailVerification bool `json:"requireEmailVerification"`
	// LinkURL is the page of the app that receives mailed tokens:
	// messages link to <linkUrl>?type=verify|reset&token=...; it must lie
	// on an allowed origin. Empty: messages carry the token alone.
	LinkURL string `json:"linkUrl"`
}

// DefaultSettings are a new pool's settings.
func DefaultSettings() Settings {
	return Settings{AllowedOrigins: []string{}, AccessTokenSeconds: DefaultAccessTokenSeconds, RefreshTokenSeconds: DefaultRefreshTokenSeconds,
		LockoutThreshold: DefaultLockoutThreshold, LockoutMinutes: DefaultLockoutMinutes}
}

// SettingsPatch is a change of settings: absent fields are kept; an empty
// allowedOrigins goes back to the project's addresses, an empty linkUrl
// removes it.
type SettingsPatch struct {
	AllowedOrigins           *[]string `json:"allowedOrigins,omitempty"`
	AccessTokenSeconds       *int      `json:"accessTokenSeconds,omitempty"`
	RefreshTokenSeconds      *int      `json:"refreshTokenSeconds,omitempty"`
	LockoutThreshold         *int      `json:"lockoutThreshold,omitempty"`
	LockoutMinutes           *int      `json:"lockoutMinutes,omitempty"`
	RequireEmailVerification *bool     `json:"requireEmailVerification,omitempty"`
	LinkURL                  *string   `json:"linkUrl,omitempty"`
}

func invalidSetting(field, format string, args ...any) *api.Error {
	return api.E(api.KindInvalid, "invalid_setting", format, args...).With("field", field)
}

func inRange(field string, v *int, lo, hi int, dst *int) error {
	if v == nil {
		return nil
	}
	if *v < lo || *v > hi {
		return invalidSetting(field, "%s must be from %d to %d, not %d", field, lo, hi, *v)
	}
	*dst = *v
	return nil
}

// apply merges p over st, validating each field; the project's addresses
// decide what linkUrl may be when allowedOrigins is empty. st is unchanged
// on error.
func (p SettingsPatch) apply(st Settings, prj projects.Project) (Settings, error) {
	next := st
	if p.AllowedOrigins != nil {
		origins, err := normalOrigins(*p.AllowedOrigins)
		if err != nil {
			return st, err
		}
		next.AllowedOrigins = origins
	}
	for _, r := range []struct {
		field  string
		v      *int
		lo, hi int
		dst    *int
	}{
		{"accessTokenSeconds", p.AccessTokenSeconds, MinAccessTokenSeconds, MaxAccessTokenSeconds, &next.AccessTokenSeconds},
		{"refreshTokenSeconds", p.RefreshTokenSeconds, MinRefreshTokenSeconds, MaxRefreshTokenSeconds, &next.RefreshTokenSeconds},
		{"lockoutThreshold", p.LockoutThreshold, MinLockoutThreshold, MaxLockoutThreshold, &next.LockoutThreshold},
		{"lockoutMinutes", p.LockoutMinutes, MinLockoutMinutes, MaxLockoutMinutes, &next.LockoutMinutes},
	} {
		if err := inRange(r.field, r.v, r.lo, r.hi, r.dst); err != nil {
			return st, err
		}
	}
	if next.RefreshTokenSeconds < next.AccessTokenSeconds {
		return st, invalidSetting("refreshTokenSeconds", "refreshTokenSeconds (%d) must be at least accessTokenSeconds (%d)", next.RefreshTokenSeconds, next.AccessTokenSeconds)
	}
	if p.RequireEmailVerification != nil {
		next.RequireEmailVerification = *p.RequireEmailVerification
	}
	if p.LinkURL != nil {
		next.LinkURL = strings.TrimSpace(*p.LinkURL)
	}
	if next.LinkURL != "" {
		if err := checkLinkURL(next.LinkURL, effectiveOrigins(next, prj)); err != nil {
			return st, err
		}
	}
	return next, nil
}

// normalOrigins checks and canonicalises allowed origins, dropping
// repeats.
func normalOrigins(in []string) ([]string, error) {
	if len(in) > MaxOrigins {
		return nil, invalidSetting("allowedOrigins", "at most %d allowedOrigins", MaxOrigins)
	}
	out := []string{}
	for _, o := range in {
		n, ok := normalOrigin(o)
		if !ok {
			return nil, invalidSetting("allowedOrigins", "allowedOrigins: %q is not an origin such as https://app.example.com (https, or http on localhost; no path, no wildcard)", clip(o))
		}
		if !containsString(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// normalOrigin returns origin o as scheme://host[:port] in lowercase, or
// false when it is not one: https, or http only on a loopback host (local
// development).
func normalOrigin(o string) (string, bool) {
	o = strings.TrimSpace(o)
	if o == "" || len(o) > maxURLLen || strings.ContainsFunc(o, unicode.IsSpace) {
		return "", false
	}
	u, err := url.Parse(o)
	if err != nil || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || strings.Contains(o, "*") {
		return "", false
	}
	scheme := strings.ToLower(u.Scheme)
	switch scheme {
	case "https":
	case "http":
		if !loopback(u.Hostname()) {
			return "", false
		}
	default:
		return "", false
	}
	return scheme + "://" + strings.ToLower(u.Host), true
}

func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// effectiveOrigins are the origins allowed to call a pool: its
// allowedOrigins, or the project's own addresses when it has none.
func effectiveOrigins(st Settings, prj projects.Project) []string {
	if len(st.AllowedOrigins) > 0 {
		return st.AllowedOrigins
	}
	out := []string{}
	for _, a := range []string{prj.URL, deref(prj.LiveURL)} {
		if n, ok := projectOrigin(a); ok && !containsString(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// projectOrigin is the origin of one of the project's own addresses
// (which may be http on a local apps domain).
func projectOrigin(addr string) (string, bool) {
	u, err := url.Parse(addr)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return "", false
	}
	return u.Scheme + "://" + strings.ToLower(u.Host), true
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// checkLinkURL checks that link is an http(s) URL without a fragment on one
// of origins.
func checkLinkURL(link string, origins []string) error {
	u, err := url.Parse(link)
	if err != nil || len(link) > maxURLLen || u.Host == "" || u.User != nil || u.Fragment != "" || (u.Scheme != "https" && u.Scheme != "http") {
		return invalidSetting("linkUrl", "linkUrl must be an http(s) address of your app without a #fragment, such as https://app.example.com/auth")
	}
	o := strings.ToLower(u.Scheme + "://" + u.Host)
	if !containsString(origins, o) {
		return invalidSetting("linkUrl", "linkUrl must be on one of the pool's allowed origins (%s): add %s to allowedOrigins first", strings.Join(origins, ", "), o)
	}
	return nil
}

// clip shortens s for a message.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
