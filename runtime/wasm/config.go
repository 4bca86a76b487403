package wasm

import (
	"errors"
	"fmt"
	"time"
)

// Defaults of Config's zero fields.
const (
	DefaultTimeout          = 10 * time.Second
	DefaultMemoryLimitBytes = 128 << 20
	DefaultMaxRequestBytes  = 6 << 20
	DefaultMaxResponseBytes = 6 << 20
	DefaultMaxLogBytes      = 64 << 10
	DefaultMaxConcurrent    = 16
	// queueSlack is how much longer than a call's time limit a call
	// waits for a slot by default: a slot frees within the time limit.
	queueSlack          = 5 * time.Second
	pageSize            = 64 << 10
	maxMemoryLimitBytes = 4 << 30 // the wasm32 address space
)

// Config sets a Host's limits. The zero value is usable: Provision fills the
// defaults.
type Config struct {
	// Timeout is a call's time limit, stopped at the deadline (ErrTimeout).
	Timeout time.Duration `json:"timeout,omitempty"`
	// MemoryLimitBytes caps an instance's linear memory; a rounded-down
	// multiple of the 64 KiB wasm page. A function growing past it traps.
	MemoryLimitBytes int64 `json:"memoryLimitBytes,omitempty"`
	// MaxRequestBytes bounds the request body handed to a function.
	MaxRequestBytes int64 `json:"maxRequestBytes,omitempty"`
	// MaxResponseBytes bounds what a function may write to stdout.
	MaxResponseBytes int64 `json:"maxResponseBytes,omitempty"`
	// MaxLogBytes bounds the stderr kept per call (the rest is dropped).
	MaxLogBytes int64 `json:"maxLogBytes,omitempty"`
	// MaxConcurrent bounds the instances running at once on the host, all
	// projects together (memory is MaxConcurrent*MemoryLimitBytes at
	// worst).
	MaxConcurrent int `json:"maxConcurrent,omitempty"`
	// MaxConcurrentPerProject bounds the calls one project runs at once;
	// default half of MaxConcurrent (at least 1). While several projects
	// call, each one's share is MaxConcurrent divided by their number (at
	// least 1), never above this bound.
	MaxConcurrentPerProject int `json:"maxConcurrentPerProject,omitempty"`
	// QueueTimeout is how long a call waits for a slot before it is
	// refused (ErrProjectBusy when its project ran its share, else
	// ErrBusy); default Timeout plus 5 s, negative: no waiting.
	QueueTimeout time.Duration `json:"queueTimeout,omitempty"`
	// CacheDir, when set, keeps compiled code on disk so that a restart
	// does not compile again; empty keeps it in memory only.
	CacheDir string `json:"cacheDir,omitempty"`
}

// Provision fills defaults and validates.
func (c *Config) Provision() error {
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MemoryLimitBytes == 0 {
		c.MemoryLimitBytes = DefaultMemoryLimitBytes
	}
	if c.MaxRequestBytes == 0 {
		c.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if c.MaxResponseBytes == 0 {
		c.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if c.MaxLogBytes == 0 {
		c.MaxLogBytes = DefaultMaxLogBytes
	}
	if c.MaxConcurrent == 0 {
		c.MaxConcurrent = DefaultMaxConcurrent
	}
	if c.MaxConcurrentPerProject == 0 {
		c.MaxConcurrentPerProject = max(1, c.MaxConcurrent/2)
	}
	if c.QueueTimeout == 0 {
		c.QueueTimeout = c.Timeout + queueSlack
	}
	return c.Validate()
}

// Validate reports a setting out of range.
func (c *Config) Validate() error {
	var errs []error
	if c.Timeout < 0 {
		errs = append(errs, fmt.Errorf("timeout %v is negative", c.Timeout))
	}
	if c.MemoryLimitBytes < pageSize || c.MemoryLimitBytes > maxMemoryLimitBytes {
		errs = append(errs, fmt.Errorf("memory limit %d must be between 64 KiB and 4 GiB", c.MemoryLimitBytes))
	}
	if c.MaxRequestBytes < 0 || c.MaxResponseBytes < 0 || c.MaxLogBytes < 0 {
		errs = append(errs, errors.New("request, response and log bounds must not be negative"))
	}
	if c.MaxConcurrent < 0 {
		errs = append(errs, fmt.Errorf("max concurrent %d is negative", c.MaxConcurrent))
	}
	if c.MaxConcurrentPerProject < 0 || c.MaxConcurrentPerProject > c.MaxConcurrent {
		errs = append(errs, fmt.Errorf("max concurrent per project %d must be between 1 and max concurrent %d", c.MaxConcurrentPerProject, c.MaxConcurrent))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("wasm: config: %w", err)
	}
	return nil
}

func (c *Config) memoryPages() uint32 { return uint32(c.MemoryLimitBytes / pageSize) }
