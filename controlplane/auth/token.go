package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"strings"
)

// API keys look like svc_<12 id chars>_<40 secret chars>. The first 16
// characters (svc_ and the id) are the key's visible prefix: listings and
// the audit log show it so a key can be recognised; the id finds the row.
// Only the SHA-256 of the whole key is stored (the secret carries 200 bits
// of entropy, so a slow hash adds nothing), and it is compared in constant
// time.
const (
	KeyPrefix    = "svc_"
	keyIDLen     = 12
	keySecretLen = 40
	keyLen       = len(KeyPrefix) + keyIDLen + 1 + keySecretLen
)

const tokenAlphabet = "0123456789abcdefghjkmnpqrstvwxyz"

// ErrMalformedKey is returned for a bearer token that cannot be an API key.
var ErrMalformedKey = errors.New("auth: malformed API key")

// RandomString returns n characters of lower-case base32 from crypto/rand.
func RandomString(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	for i := range b {
		b[i] = tokenAlphabet[b[i]&31]
	}
	return string(b)
}

// NewKey returns a new API key, its visible prefix and the hash to store.
func NewKey() (key, prefix string, hash []byte) {
	key = KeyPrefix + RandomString(keyIDLen) + "_" + RandomString(keySecretLen)
	sum := HashSecret(key)
	return key, key[:len(KeyPrefix)+keyIDLen], sum
}

// ParseKey checks the shape of key and returns its visible prefix.
func ParseKey(key string) (prefix string, err error) {
	if len(key) != keyLen || !strings.HasPrefix(key, KeyPrefix) || key[len(KeyPrefix)+keyIDLen] != '_' {
		return "", ErrMalformedKey
	}
	for i := len(KeyPrefix); i < keyLen; i++ {
		if i == len(KeyPrefix)+keyIDLen {
			continue
		}
		if strings.IndexByte(tokenAlphabet, key[i]) < 0 {
			return "", ErrMalformedKey
		}
	}
	return key[:len(KeyPrefix)+keyIDLen], nil
}

// ValidKeyFormat reports whether s has the shape of an API key.
func ValidKeyFormat(s string) bool {
	_, err := ParseKey(s)
	return err == nil
}

// HashSecret is the stored form of a high-entropy secret (API key, session
// token, invitation token).
func HashSecret(s string) []byte {
	sum := sha256.Sum256([]byte(s))
	return sum[:]
}

// SecretMatches compares a presented secret with a stored hash in constant time.
func SecretMatches(presented string, stored []byte) bool {
	return subtle.ConstantTimeCompare(HashSecret(presented), stored) == 1
}
