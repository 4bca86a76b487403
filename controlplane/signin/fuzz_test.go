package signin

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"strings"
	"testing"
	"time"
)

// FuzzParseToken: any string either fails to parse, or parses into a
// header naming ES256 and a key id, claims, and a 64-byte signature over
// exactly the first two parts; one changed byte of a signed token never
// verifies.
func FuzzParseToken(f *testing.F) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		f.Fatal(err)
	}
	now := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	c := Claims{Issuer: "https://api.test/api/auth/sip_a", Audience: "sip_a", Subject: "usr_a", SessionID: "sis_a", IssuedAt: now.Unix(), ExpiresAt: now.Add(time.Minute).Unix()}
	good, err := signToken(k, "sik_a", c)
	if err != nil {
		f.Fatal(err)
	}
	parts := strings.Split(good, ".")
	for _, s := range []string{good, "", "..", "a.b.c", parts[0] + "." + parts[1] + ".", parts[0] + "." + parts[1] + "." + parts[2] + "=",
		b64.EncodeToString([]byte(`{"alg":"none","kid":"k"}`)) + "." + parts[1] + "." + parts[2],
		b64.EncodeToString([]byte(`{"alg":"ES256","kid":"k","jku":"https://evil"}`)) + "." + parts[1] + "." + parts[2],
		b64.EncodeToString([]byte(`{"alg":"ES256","kid":"k"} {}`)) + "." + parts[1] + "." + parts[2]} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		p, err := parseToken(raw)
		if err != nil {
			return
		}
		if p.header.Alg != Alg || p.header.Kid == "" || len(p.sig) != 64 || !strings.HasPrefix(raw, p.signingInput+".") || strings.Count(p.signingInput, ".") != 1 {
			t.Fatalf("parsed %q into %+v", raw, p)
		}
		if raw != good && verifySignature(&k.PublicKey, p) && p.signingInput != good[:strings.LastIndexByte(good, '.')] {
			t.Fatalf("%q verified with the key of another token", raw)
		}
	})
}

// FuzzOrigin: origins from headers and settings canonicalise to
// scheme://host[:port] with no path, and canonical forms are stable.
func FuzzOrigin(f *testing.F) {
	for _, s := range []string{"https://app.example.com", "http://localhost:3000", "HTTPS://App.Example.com/", "https://a/b", "null", "https://*.x", "https://u@h", "http://example.com"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if n, ok := normalOrigin(s); ok {
			if strings.Count(n, "/") != 2 || strings.ContainsAny(n, "?#@* ") {
				t.Fatalf("normalOrigin(%q) = %q", s, n)
			}
			if again, ok := normalOrigin(n); !ok || again != n {
				t.Fatalf("normalOrigin(%q) = %q, then %q %v", s, n, again, ok)
			}
		}
		if o, ok := requestOrigin(s); ok {
			_, host, _ := strings.Cut(o, "://")
			if host == "" || strings.ContainsAny(host, "/?#@ \\") || o != strings.ToLower(o) {
				t.Fatalf("requestOrigin(%q) = %q", s, o)
			}
		}
	})
}
