// Package certwire is the wire format of the certificate endpoints the
// control plane offers edges (controlplane/certs): paths, limits, bodies and
// the cache-key syntax. It depends only on the standard library, so the edge
// imports it without the control plane.
package certwire

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Paths of the certificate endpoints.
const (
	// CachePath prefixes GET, PUT and DELETE CachePath + <key>: the
	// autocert cache shared by every edge (ACME account key, certificates,
	// http-01 and tls-alpn-01 challenge tokens). Edge token.
	CachePath = "/api/edge/certs/cache/"
	// LocalPath is POST LocalPath {host}: a host certificate signed by the
	// installation's CA (edges without ACME). Edge token.
	LocalPath = "/api/edge/certs/local"
	// CAPath is GET CAPath: the installation CA's certificate in PEM, public,
	// for users to trust.
	CAPath = "/api/edge/certs/ca"
)

// Limits.
const (
	// MaxKeyLen bounds a cache key: a DNS name (253) with autocert's longest
	// suffix ("+http-01" after a token is shorter) fits.
	MaxKeyLen = 300
	// MaxValueBytes bounds a cache value (a certificate chain and its key
	// take a few KiB).
	MaxValueBytes = 64 << 10
	// MaxHostLen bounds a host name.
	MaxHostLen = 253
)

// Errors of the parsers.
var (
	// ErrKey is wrapped by ParseKey's refusals.
	ErrKey = errors.New("certwire: invalid cache key")
	// ErrHost is wrapped by ParseHost's refusals.
	ErrHost = errors.New("certwire: invalid host")
)

// ParseKey checks an autocert cache key: 1 to MaxKeyLen bytes of ASCII
// letters, digits and . _ + - (autocert's keys are host names, tokens in
// base64url, and suffixes like +rsa, +token, +http-01, acme_account+key),
// not starting with a dot. It returns the key unchanged: keys are case
// sensitive (tokens are).
func ParseKey(key string) (string, error) {
	if key == "" || len(key) > MaxKeyLen {
		return "", fmt.Errorf("%w: must be 1 to %d characters", ErrKey, MaxKeyLen)
	}
	if key[0] == '.' {
		return "", fmt.Errorf("%w: must not start with a dot", ErrKey)
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '+' || c == '-') {
			return "", fmt.Errorf("%w: character %q at %d (allowed: letters, digits, . _ + -)", ErrKey, c, i)
		}
	}
	return key, nil
}

// WildcardPrefix starts the one wildcard name edges ask for:
// WildcardPrefix + the apps domain, whose certificate also names the apps
// domain itself. Edges serve it for names under the apps domain that no
// site has (the "no site here" page) and while the control plane cannot be
// reached.
const WildcardPrefix = "*."

// ParseHost normalises a DNS host name: lower case, without a trailing dot,
// labels of 1 to 63 letters, digits and hyphens (not at either end), at
// most MaxHostLen characters ("localhost" is one label), optionally after
// WildcardPrefix. IP addresses and ports are refused.
func ParseHost(host string) (string, error) {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if h == "" || len(h) > MaxHostLen {
		return "", fmt.Errorf("%w: must be 1 to %d characters", ErrHost, MaxHostLen)
	}
	if rest, ok := strings.CutPrefix(h, WildcardPrefix); ok {
		if _, err := ParseHost(rest); err != nil || strings.HasPrefix(rest, WildcardPrefix) {
			return "", fmt.Errorf("%w: a wildcard is %s followed by a host name", ErrHost, WildcardPrefix)
		}
		return h, nil
	}
	labels := strings.Split(h, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return "", fmt.Errorf("%w: labels must be 1 to 63 characters", ErrHost)
		}
		if l[0] == '-' || l[len(l)-1] == '-' {
			return "", fmt.Errorf("%w: a label must not start or end with a hyphen", ErrHost)
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return "", fmt.Errorf("%w: character %q (allowed: letters, digits, hyphen, dot)", ErrHost, c)
			}
		}
	}
	if last := labels[len(labels)-1]; last[0] >= '0' && last[0] <= '9' {
		return "", fmt.Errorf("%w: %q looks like an IP address", ErrHost, h)
	}
	return h, nil
}

// LocalRequest is the body of POST LocalPath.
type LocalRequest struct {
	// Host is the server name the certificate is for.
	Host string `json:"host"`
}

// LocalCert is the answer of POST LocalPath: the same certificate for every
// edge until it is renewed.
type LocalCert struct {
	// Host is the normalised host name.
	Host string `json:"host"`
	// ChainPEM is the host certificate then the CA's, in PEM.
	ChainPEM string `json:"chainPem"`
	// KeyPEM is the host certificate's private key in PEM.
	KeyPEM string `json:"keyPem"`
	// NotAfter is when the certificate expires.
	NotAfter time.Time `json:"notAfter"`
}
