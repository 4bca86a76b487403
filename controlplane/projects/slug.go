package projects

import (
	"strings"
)

// MaxSlugLen keeps <slug>.<domain> a valid DNS label with room for a suffix.
const MaxSlugLen = 48

// DefaultReservedPrefixes are the service's own short and full names: a
// project address may not start with them.
var DefaultReservedPrefixes = []string{"svc", "service"}

// DefaultReservedNames are host names the platform keeps for itself.
var DefaultReservedNames = []string{"www", "api", "admin", "dashboard", "edge", "cdn", "static", "mail", "status", "docs", "auth", "login", "media"}

// Slugify derives the address label of a name: lower-case ASCII letters and
// digits, other runs become one hyphen, no hyphen at either end.
func Slugify(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
		default:
			dash = true
		}
		if b.Len() >= MaxSlugLen {
			break
		}
	}
	return strings.Trim(b.String(), "-")
}

// reserved reports whether slug may not be used, and why.
func reserved(slug string, prefixes, names []string) (string, bool) {
	for _, p := range prefixes {
		if strings.HasPrefix(slug, p) {
			return "addresses starting with " + p + " are reserved for the service", true
		}
	}
	for _, n := range names {
		if slug == n {
			return n + " is reserved for the service", true
		}
	}
	return "", false
}
