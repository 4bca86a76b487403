// Package passhash stores passwords as salted argon2id hashes in the PHC
// string format and checks them in constant time. Members' dashboard
// passwords and Shield site passwords both use it.
package passhash

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/argon2"
)

// Params are the argon2id cost parameters.
type Params struct {
	Memory  uint32 // KiB
	Time    uint32
	Threads uint8
	SaltLen uint32
	KeyLen  uint32
}

// Default follows OWASP's argon2id recommendation (m=19 MiB, t=2, p=1).
var Default = Params{Memory: 19 * 1024, Time: 2, Threads: 1, SaltLen: 16, KeyLen: 32}

// ErrMalformed is returned for a stored hash that is not an argon2id PHC string.
var ErrMalformed = errors.New("passhash: malformed hash")

// MaxPasswordLen bounds the work one check can cost an attacker.
const MaxPasswordLen = 1024

var b64 = base64.RawStdEncoding

// Hash returns the PHC string of password under Default parameters.
func Hash(password string) (string, error) { return HashWith(Default, password) }

// HashWith returns the PHC string of password under p.
func HashWith(p Params, password string) (string, error) {
	if len(password) > MaxPasswordLen {
		return "", fmt.Errorf("passhash: password longer than %d bytes", MaxPasswordLen)
	}
	salt := make([]byte, p.SaltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("passhash: salt: %w", err)
	}
	key := argon2.IDKey([]byte(password), salt, p.Time, p.Memory, p.Threads, p.KeyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s",
		argon2.Version, p.Memory, p.Time, p.Threads, b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}

// Verify reports whether password matches the PHC string encoded. The hash
// comparison is constant-time; a malformed hash is an error, never a match.
func Verify(encoded, password string) (bool, error) {
	if len(password) > MaxPasswordLen {
		return false, nil
	}
	p, salt, key, err := decode(encoded)
	if err != nil {
		return false, err
	}
	got := argon2.IDKey([]byte(password), salt, p.Time, p.Memory, p.Threads, uint32(len(key)))
	return subtle.ConstantTimeCompare(got, key) == 1, nil
}

func decode(s string) (Params, []byte, []byte, error) {
	parts := strings.Split(s, "$")
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" {
		return Params{}, nil, nil, ErrMalformed
	}
	var v int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &v); err != nil || v != argon2.Version {
		return Params{}, nil, nil, ErrMalformed
	}
	var p Params
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.Memory, &p.Time, &p.Threads); err != nil {
		return Params{}, nil, nil, ErrMalformed
	}
	if p.Memory == 0 || p.Memory > 1<<20 || p.Time == 0 || p.Time > 16 || p.Threads == 0 {
		return Params{}, nil, nil, ErrMalformed
	}
	salt, err1 := b64.DecodeString(parts[4])
	key, err2 := b64.DecodeString(parts[5])
	if err1 != nil || err2 != nil || len(salt) < 8 || len(key) < 16 {
		return Params{}, nil, nil, ErrMalformed
	}
	return p, salt, key, nil
}
