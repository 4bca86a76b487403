package rules

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"

	"github.com/svcplatform/platform/internal/passhash"
)

// MaxSitePasswordLen bounds a site password, so one check costs an attacker
// no more than one argon2id run of a short input.
const MaxSitePasswordLen = passhash.MaxPasswordLen

// ErrEmptyPassword is returned by HashPassword for an empty password.
var ErrEmptyPassword = errors.New("rules: site password is empty")

// HashPassword returns the salted argon2id hash of a site password in the PHC
// string format ($argon2id$v=19$m=19456,t=2,p=1$<salt>$<hash>), the only form
// in which the control plane keeps it. It uses package passhash, which
// members' passwords share.
func HashPassword(password string) (string, error) {
	if password == "" {
		return "", ErrEmptyPassword
	}
	h, err := passhash.Hash(password)
	if err != nil {
		return "", err
	}
	return h, nil
}

// VerifyPassword reports whether password matches hash, comparing in constant
// time. A malformed hash never matches.
func VerifyPassword(hash, password string) bool {
	ok, err := passhash.Verify(hash, password)
	return ok && err == nil
}

// PasswordVersion derives the version a session cookie is bound to from the
// stored hash. Every new password gets a new salt and so a new hash and a new
// version, which ends the sessions of the old one. The edge computes it once
// per snapshot, not per request.
func PasswordVersion(hash string) uint64 {
	sum := sha256.Sum256([]byte("svc shield password version\x00" + hash))
	return binary.BigEndian.Uint64(sum[:8])
}
