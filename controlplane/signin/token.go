package signin

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"time"
)

// Access tokens are compact JWS (RFC 7515) JWTs (RFC 7519) signed ES256
// (ECDSA P-256 with SHA-256, the signature as r||s, RFC 7518 3.4) by the
// pool's current key. The area signs and checks them itself with
// crypto/ecdsa; its tests verify them with golang-jwt against the JWKS.

// Alg is the only algorithm the area signs with and accepts.
const Alg = "ES256"

// maxTokenLen bounds an access token the area parses (ours are ~600 bytes).
const maxTokenLen = 4096

// clockSkew is how far in the future an iat may lie (another replica's
// clock).
const clockSkew = time.Minute

// header is the JOSE header of an access token.
type header struct {
	Alg string `json:"alg"`
	Typ string `json:"typ,omitempty"`
	Kid string `json:"kid"`
}

// Claims are the claims of an access token.
type Claims struct {
	// Issuer is the pool's issuer: <BaseURL>/api/auth/<poolId>.
	Issuer string `json:"iss"`
	// Audience is the pool's id.
	Audience string `json:"aud"`
	// Subject is the user's id.
	Subject string `json:"sub"`
	// ExpiresAt and IssuedAt are Unix seconds.
	ExpiresAt int64 `json:"exp"`
	IssuedAt  int64 `json:"iat"`
	// SessionID is the session (refresh-token family) the token belongs to.
	SessionID string `json:"sid"`
	// Email and EmailVerified are the user's at issue.
	Email         string `json:"email"`
	EmailVerified bool   `json:"email_verified"`
}

// errToken is every refusal of an access token's form, signature or claims.
var errToken = errors.New("signin: invalid access token")

var b64 = base64.RawURLEncoding.Strict()

// parsedToken is an access token split and decoded, its signature not yet
// checked.
type parsedToken struct {
	header       header
	claims       Claims
	signingInput string
	sig          []byte
}

// decodeStrict decodes one JSON object into dst refusing unknown fields and
// trailing data.
func decodeStrict(data []byte, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return err
	}
	if dec.More() {
		return errToken
	}
	return nil
}

// parseToken splits and decodes raw: three base64url parts without
// padding, a header naming ES256 and a key id, the claims the area issues
// and nothing else, and a 64-byte signature. It checks no signature.
func parseToken(raw string) (parsedToken, error) {
	var p parsedToken
	if len(raw) > maxTokenLen || strings.Count(raw, ".") != 2 {
		return p, errToken
	}
	h, rest, _ := strings.Cut(raw, ".")
	c, s, _ := strings.Cut(rest, ".")
	hb, err1 := b64.DecodeString(h)
	cb, err2 := b64.DecodeString(c)
	sig, err3 := b64.DecodeString(s)
	if err1 != nil || err2 != nil || err3 != nil || len(sig) != 64 {
		return p, errToken
	}
	if decodeStrict(hb, &p.header) != nil || p.header.Alg != Alg || (p.header.Typ != "" && p.header.Typ != "JWT") ||
		p.header.Kid == "" || len(p.header.Kid) > 64 {
		return p, errToken
	}
	if decodeStrict(cb, &p.claims) != nil {
		return p, errToken
	}
	p.signingInput, p.sig = raw[:len(h)+1+len(c)], sig
	return p, nil
}

// signToken returns the compact JWS of claims c signed by k under key id kid.
func signToken(k *ecdsa.PrivateKey, kid string, c Claims) (string, error) {
	h, err := json.Marshal(header{Alg: Alg, Typ: "JWT", Kid: kid})
	if err != nil {
		return "", err
	}
	body, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	input := b64.EncodeToString(h) + "." + b64.EncodeToString(body)
	sum := sha256.Sum256([]byte(input))
	r, s, err := ecdsa.Sign(rand.Reader, k, sum[:])
	if err != nil {
		return "", err
	}
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return input + "." + b64.EncodeToString(sig), nil
}

// verifySignature reports whether p's signature is pub's.
func verifySignature(pub *ecdsa.PublicKey, p parsedToken) bool {
	sum := sha256.Sum256([]byte(p.signingInput))
	r := new(big.Int).SetBytes(p.sig[:32])
	s := new(big.Int).SetBytes(p.sig[32:])
	return ecdsa.Verify(pub, sum[:], r, s)
}

// validClaims checks the claims of a token of pool poolID at now: its
// issuer and audience, a subject and session, not expired, not issued in
// the future.
func validClaims(c Claims, issuer, poolID string, now time.Time) bool {
	return c.Issuer == issuer && c.Audience == poolID && c.Subject != "" && c.SessionID != "" &&
		now.Unix() < c.ExpiresAt && c.IssuedAt <= now.Add(clockSkew).Unix() && c.IssuedAt <= c.ExpiresAt
}
