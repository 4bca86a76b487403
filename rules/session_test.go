package rules

import (
	"bytes"
	"encoding/base64"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestPasswords(t *testing.T) {
	h, err := HashPassword("correct horse")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "$argon2id$v=19$m=") {
		t.Fatalf("HashPassword = %q, not a PHC argon2id string", h)
	}
	h2, err := HashPassword("correct horse")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, hash, password string
		want                 bool
	}{
		{"right", h, "correct horse", true},
		{"right, other salt", h2, "correct horse", true},
		{"wrong", h, "correct horsE", false},
		{"empty", h, "", false},
		{"malformed hash", "$argon2id$v=19$m=1", "correct horse", false},
		{"empty hash", "", "correct horse", false},
		{"too long", h, strings.Repeat("x", MaxSitePasswordLen+1), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := VerifyPassword(tc.hash, tc.password); got != tc.want {
				t.Errorf("VerifyPassword = %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("salted", func(t *testing.T) {
		if h == h2 || PasswordVersion(h) == PasswordVersion(h2) {
			t.Error("same password twice gave the same hash or version")
		}
	})
	t.Run("empty password refused", func(t *testing.T) {
		if _, err := HashPassword(""); !errors.Is(err, ErrEmptyPassword) {
			t.Errorf("HashPassword(\"\") = %v", err)
		}
	})
}

func TestSession(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	other := bytes.Repeat([]byte{8}, 32)
	s, err := NewSessionSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 8, 22, 12, 0, 0, 0, time.UTC)
	const site, ver = "docs", uint64(42)
	cookie, err := s.Issue(site, ver, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(cookie) != sessionLen {
		t.Fatalf("cookie %q has %d characters, want %d", cookie, len(cookie), sessionLen)
	}
	rotated, _ := NewSessionSigner(other, key)
	otherOnly, _ := NewSessionSigner(other)
	long, _ := NewSessionSigner(bytes.Repeat([]byte{9}, 100))
	longCookie, _ := long.Issue(site, ver, now)

	flip := func(i int) string {
		b := []byte(cookie)
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		return string(b)
	}
	forge := func(mut func(raw []byte)) string {
		raw, _ := base64.RawURLEncoding.DecodeString(cookie)
		mut(raw)
		return base64.RawURLEncoding.EncodeToString(raw)
	}
	tests := []struct {
		name   string
		signer *SessionSigner
		cookie string
		site   string
		ver    uint64
		at     time.Time
		want   bool
	}{
		{"fresh", s, cookie, site, ver, now, true},
		{"six days later", s, cookie, site, ver, now.Add(6 * 24 * time.Hour), true},
		{"just before seven days", s, cookie, site, ver, now.Add(SessionTTL - time.Second), true},
		{"seven days later", s, cookie, site, ver, now.Add(SessionTTL), false},
		{"eight days later", s, cookie, site, ver, now.Add(8 * 24 * time.Hour), false},
		{"other site", s, cookie, "blog", ver, now, false},
		{"site prefix", s, cookie, "doc", ver, now, false},
		{"new password version", s, cookie, site, ver + 1, now, false},
		{"other key", otherOnly, cookie, site, ver, now, false},
		{"rotated key still verifies", rotated, cookie, site, ver, now, true},
		{"long key", long, longCookie, site, ver, now, true},
		{"long key cookie on short key", s, longCookie, site, ver, now, false},
		{"empty", s, "", site, ver, now, false},
		{"truncated", s, cookie[:sessionLen-1], site, ver, now, false},
		{"extended", s, cookie + "A", site, ver, now, false},
		{"flipped MAC byte", s, flip(sessionLen - 3), site, ver, now, false},
		{"flipped expiry byte", s, flip(5), site, ver, now, false},
		{"not base64", s, strings.Repeat("*", sessionLen), site, ver, now, false},
		{"padded base64", s, cookie[:sessionLen-1] + "=", site, ver, now, false},
		{"expiry pushed later", s, forge(func(r []byte) { r[8]++ }), site, ver, now, false},
		{"other format", s, forge(func(r []byte) { r[0] = 2 }), site, ver, now, false},
		{"expiry too far ahead (clock skew)", s, cookie, site, ver, now.Add(-time.Hour), false},
		{"empty site", s, cookie, "", ver, now, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.signer.Verify([]byte(tc.cookie), tc.site, tc.ver, tc.at); got != tc.want {
				t.Errorf("Verify = %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("short key refused", func(t *testing.T) {
		if _, err := NewSessionSigner(make([]byte, 31)); !errors.Is(err, ErrSessionKey) {
			t.Errorf("NewSessionSigner(31 bytes) = %v", err)
		}
		if _, err := NewSessionSigner(key, []byte("short")); !errors.Is(err, ErrSessionKey) {
			t.Errorf("NewSessionSigner(previous short) = %v", err)
		}
	})
	t.Run("bad site refused", func(t *testing.T) {
		for _, site := range []string{"", strings.Repeat("s", 256)} {
			if _, err := s.Issue(site, ver, now); !errors.Is(err, ErrSessionSite) {
				t.Errorf("Issue(%d-byte site) = %v", len(site), err)
			}
		}
		max := strings.Repeat("s", 255)
		c, err := s.Issue(max, ver, now)
		if err != nil || !s.Verify([]byte(c), max, ver, now) {
			t.Errorf("255-byte site: %v", err)
		}
	})
}

// TestPasswordStillApplies follows the edge's order (Shield decision, then the
// site password gate) to show that neither log-only nor enabled=false nor the
// allow list lets a visitor past a site password: Evaluate only ever answers
// for Shield, and a request it lets through (Allow or WouldRefuse) still needs
// a valid session cookie.
func TestPasswordStillApplies(t *testing.T) {
	signer, _ := NewSessionSigner(bytes.Repeat([]byte{1}, 32))
	now := time.Date(2026, 8, 22, 0, 0, 0, 0, time.UTC)
	version := PasswordVersion("$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA")
	good, _ := signer.Issue("docs", version, now)

	// admitted is the edge's gate for a password-protected static site.
	admitted := func(d Decision, cookie string) bool {
		return d.Verdict != Refuse && signer.Verify([]byte(cookie), "docs", version, now)
	}
	tests := []struct {
		name   string
		modify func(*Settings)
		addr   string
		cookie string
		want   Verdict
		admit  bool
	}{
		{"log-only country without cookie", func(s *Settings) { s.LogOnly = true }, addrRU, "", WouldRefuse, false},
		{"log-only country with cookie", func(s *Settings) { s.LogOnly = true }, addrRU, good, WouldRefuse, true},
		{"disabled without cookie", func(s *Settings) { s.Enabled = false }, addrRU, "", Allow, false},
		{"allow list without cookie", nil, addrAllowed, "", Allow, false},
		{"allow list with cookie", nil, addrAllowed, good, Allow, true},
		{"country refused even with cookie", nil, addrRU, good, Refuse, false},
		{"deny list refused even with cookie", func(s *Settings) { s.LogOnly = true }, addrDenied, good, Refuse, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := baseSettings()
			if tc.modify != nil {
				tc.modify(&s)
			}
			rs, err := Compile(s)
			if err != nil {
				t.Fatal(err)
			}
			d := rs.Evaluate(&Facts{Addr: netip.MustParseAddr(tc.addr), Path: []byte("/")}, testLocator())
			if d.Verdict != tc.want {
				t.Errorf("Verdict = %v, want %v", d.Verdict, tc.want)
			}
			if got := admitted(d, tc.cookie); got != tc.admit {
				t.Errorf("admitted = %v, want %v", got, tc.admit)
			}
		})
	}
}
