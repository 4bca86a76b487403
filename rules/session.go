package rules

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"time"
)

// SessionTTL is how long a right site password admits a visitor (spec: 7 days).
const SessionTTL = 7 * 24 * time.Hour

// SessionCookieName is the name the edge gives the site-password cookie.
const SessionCookieName = "svc_site_session"

// Cookie layout: base64url (no padding) of
//
//	format (1 byte, 1) | expiry (8 bytes, Unix seconds, big endian) | MAC (32 bytes)
//
// where MAC = HMAC-SHA256(key, label | format | expiry | version | len(site) | site).
// The site and the password version are bound by the MAC, not carried.
const (
	sessionFormat   = 1
	sessionRawLen   = 1 + 8 + sha256.Size
	sessionLen      = (sessionRawLen*8 + 5) / 6 // 55 characters
	sessionLabel    = "svc shield site session\x00"
	maxSessionSite  = 255
	minSessionKey   = 32
	hmacBlock       = 64
	sessionMsgMax   = len(sessionLabel) + 1 + 8 + 8 + 1 + maxSessionSite
	maxClockAheadOK = 5 * time.Minute
)

// ErrSessionKey is returned by NewSessionSigner for a key shorter than 32 bytes.
var ErrSessionKey = errors.New("rules: session key must be at least 32 bytes")

// ErrSessionSite is returned by Issue for an empty site or one longer than
// 255 bytes.
var ErrSessionSite = errors.New("rules: session site must be 1 to 255 bytes")

// SessionSigner issues and verifies the signed cookie that admits a visitor
// to a password-protected site for SessionTTL. A cookie is bound to the site
// and to the password's version (PasswordVersion), so it is worth nothing on
// another site and ends when the password changes. It is safe for concurrent
// use.
type SessionSigner struct {
	keys []hmacKey // keys[0] signs; every key verifies
}

// hmacKey holds a key's HMAC pads, computed once.
type hmacKey struct {
	ipad, opad [hmacBlock]byte
}

// NewSessionSigner returns a signer that signs with key and also accepts
// cookies signed with any of previous (for key rotation). Every key must be
// at least 32 random bytes.
func NewSessionSigner(key []byte, previous ...[]byte) (*SessionSigner, error) {
	s := &SessionSigner{}
	for _, k := range append([][]byte{key}, previous...) {
		if len(k) < minSessionKey {
			return nil, ErrSessionKey
		}
		if len(k) > hmacBlock {
			sum := sha256.Sum256(k)
			k = sum[:]
		}
		var hk hmacKey
		copy(hk.ipad[:], k)
		copy(hk.opad[:], k)
		for i := range hmacBlock {
			hk.ipad[i] ^= 0x36
			hk.opad[i] ^= 0x5c
		}
		s.keys = append(s.keys, hk)
	}
	return s, nil
}

// Issue returns the cookie value for a visitor who gave the right password of
// site, whose hash has the given version, at now. It expires SessionTTL
// later.
func (s *SessionSigner) Issue(site string, version uint64, now time.Time) (string, error) {
	if site == "" || len(site) > maxSessionSite {
		return "", ErrSessionSite
	}
	var raw [sessionRawLen]byte
	raw[0] = sessionFormat
	binary.BigEndian.PutUint64(raw[1:9], uint64(now.Add(SessionTTL).Unix()))
	mac := s.keys[0].mac(raw[:9], version, site)
	copy(raw[9:], mac[:])
	return base64.RawURLEncoding.EncodeToString(raw[:]), nil
}

// Verify reports whether cookie is a value Issue made for site and version
// that has not expired at now. The MAC is compared in constant time. It does
// not allocate and does not keep cookie.
func (s *SessionSigner) Verify(cookie []byte, site string, version uint64, now time.Time) bool {
	if len(cookie) != sessionLen || site == "" || len(site) > maxSessionSite {
		return false
	}
	var raw [sessionRawLen]byte
	if n, err := base64.RawURLEncoding.Decode(raw[:], cookie); err != nil || n != sessionRawLen {
		return false
	}
	if raw[0] != sessionFormat {
		return false
	}
	exp := int64(binary.BigEndian.Uint64(raw[1:9]))
	nowSec := now.Unix()
	if nowSec >= exp || exp > nowSec+int64((SessionTTL+maxClockAheadOK)/time.Second) {
		return false
	}
	ok := 0
	for i := range s.keys {
		mac := s.keys[i].mac(raw[:9], version, site)
		ok |= subtle.ConstantTimeCompare(mac[:], raw[9:])
	}
	return ok == 1
}

// mac computes HMAC-SHA256 over the cookie's signed fields without
// allocating.
func (k *hmacKey) mac(head []byte, version uint64, site string) [sha256.Size]byte {
	var inner [hmacBlock + sessionMsgMax]byte
	copy(inner[:], k.ipad[:])
	n := hmacBlock
	n += copy(inner[n:], sessionLabel)
	n += copy(inner[n:], head)
	binary.BigEndian.PutUint64(inner[n:], version)
	n += 8
	inner[n] = byte(len(site))
	n++
	n += copy(inner[n:], site)
	ih := sha256.Sum256(inner[:n])

	var outer [hmacBlock + sha256.Size]byte
	copy(outer[:], k.opad[:])
	copy(outer[hmacBlock:], ih[:])
	return sha256.Sum256(outer[:])
}
