package cache

import (
	"errors"
	"fmt"
	"time"
)

// Defaults used by [Config.Provision] for zero fields.
const (
	// DefaultMaxBytes is the default memory bound of the whole cache.
	DefaultMaxBytes = 256 << 20
	// DefaultMaxEntryBytes is the default size limit of one entry, so that
	// one huge file cannot flush the cache.
	DefaultMaxEntryBytes = 8 << 20
	// DefaultRevalidateWindowSeconds is how long a shared-cache response that
	// carries validators is kept after it became stale, waiting to be
	// revalidated with a conditional request.
	DefaultRevalidateWindowSeconds = 600
)

// ErrInvalidConfig is wrapped by the errors of [Config.Validate].
var ErrInvalidConfig = errors.New("cache: invalid config")

// Config bounds the cache. The zero value works: [Config.Provision] fills
// every zero field with its Default constant.
type Config struct {
	// MaxBytes bounds the memory the cache accounts for: the sum of entry
	// costs, where an entry costs its body, its header bytes, its key and a
	// fixed overhead. Default [DefaultMaxBytes] (256 MiB).
	MaxBytes int64 `json:"maxBytes,omitempty"`
	// MaxEntryBytes is the largest cost of a single entry; larger responses
	// are served but not cached. Default [DefaultMaxEntryBytes] (8 MiB); at
	// most MaxBytes.
	MaxEntryBytes int64 `json:"maxEntryBytes,omitempty"`
	// RevalidateWindowSeconds is how long a shared-cache response with an
	// ETag or Last-Modified is kept after it became stale (or, for no-cache
	// responses, after it was stored) so it can be revalidated instead of
	// fetched again. Default [DefaultRevalidateWindowSeconds].
	RevalidateWindowSeconds int `json:"revalidateWindowSeconds,omitempty"`
}

// Provision fills zero fields with their defaults.
func (c *Config) Provision() {
	if c.MaxBytes == 0 {
		c.MaxBytes = DefaultMaxBytes
	}
	if c.MaxEntryBytes == 0 {
		c.MaxEntryBytes = min(DefaultMaxEntryBytes, c.MaxBytes)
	}
	if c.RevalidateWindowSeconds == 0 {
		c.RevalidateWindowSeconds = DefaultRevalidateWindowSeconds
	}
}

// Validate reports whether a provisioned Config is usable. It does not
// modify c.
func (c *Config) Validate() error {
	switch {
	case c.MaxBytes <= 0:
		return fmt.Errorf("%w: maxBytes %d must be positive", ErrInvalidConfig, c.MaxBytes)
	case c.MaxEntryBytes <= 0:
		return fmt.Errorf("%w: maxEntryBytes %d must be positive", ErrInvalidConfig, c.MaxEntryBytes)
	case c.MaxEntryBytes > c.MaxBytes:
		return fmt.Errorf("%w: maxEntryBytes %d exceeds maxBytes %d", ErrInvalidConfig, c.MaxEntryBytes, c.MaxBytes)
	case c.RevalidateWindowSeconds < 0:
		return fmt.Errorf("%w: revalidateWindowSeconds %d must not be negative", ErrInvalidConfig, c.RevalidateWindowSeconds)
	}
	return nil
}

func (c *Config) revalidateWindow() time.Duration {
	return time.Duration(c.RevalidateWindowSeconds) * time.Second
}
