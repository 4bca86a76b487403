// Package seal encrypts secrets the platform must read back (environment
// variable values, webhook signing secrets) with AES-256-GCM under a key kept
// in the data directory, so a copy of the metadata database alone does not
// reveal them.
package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Sealer encrypts and decrypts small values.
type Sealer struct {
	aead cipher.AEAD
}

// ErrOpen is returned when a sealed value does not decrypt (wrong key or
// altered bytes).
var ErrOpen = errors.New("seal: cannot open sealed value")

// New returns a Sealer over a 32-byte key.
func New(key []byte) (*Sealer, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("seal: key must be 32 bytes, got %d", len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	return &Sealer{aead: aead}, nil
}

// Load reads the 32-byte key at path, which must exist: replicas of the
// control plane share one key this way (a secret mounted into each).
func Load(path string) (*Sealer, error) {
	key, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("seal: read %s: %w", path, err)
	}
	return New(key)
}

// LoadOrCreate reads the key at path, creating it (mode 0600) with 32 random
// bytes when it does not exist.
func LoadOrCreate(path string) (*Sealer, error) {
	key, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, fmt.Errorf("seal: %w", err)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("seal: %w", err)
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return nil, fmt.Errorf("seal: create %s: %w", path, err)
		}
		if _, err := f.Write(key); err != nil {
			f.Close()
			return nil, fmt.Errorf("seal: write %s: %w", path, err)
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return nil, fmt.Errorf("seal: sync %s: %w", path, err)
		}
		if err := f.Close(); err != nil {
			return nil, fmt.Errorf("seal: close %s: %w", path, err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("seal: read %s: %w", path, err)
	}
	return New(key)
}

// Seal encrypts plaintext; aad binds the value to its context (for example
// the row it belongs to) so it cannot be moved to another row.
func (s *Sealer) Seal(plaintext, aad []byte) []byte {
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(plaintext)+s.aead.Overhead())
	rand.Read(nonce)
	return s.aead.Seal(nonce, nonce, plaintext, aad)
}

// Open decrypts a value made by Seal with the same aad.
func (s *Sealer) Open(sealed, aad []byte) ([]byte, error) {
	n := s.aead.NonceSize()
	if len(sealed) < n+s.aead.Overhead() {
		return nil, ErrOpen
	}
	out, err := s.aead.Open(nil, sealed[:n], sealed[n:], aad)
	if err != nil {
		return nil, ErrOpen
	}
	return out, nil
}
