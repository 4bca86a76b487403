package supervise

import (
	"errors"
	"fmt"
	"time"

	"github.com/svcplatform/platform/runtime/sandbox"
)

// Defaults of Config's zero fields.
const (
	DefaultStartTimeout     = 60 * time.Second
	DefaultHealthInterval   = 100 * time.Millisecond
	DefaultCheckInterval    = 10 * time.Second
	DefaultFailureThreshold = 3
	DefaultBackoffMin       = 500 * time.Millisecond
	DefaultBackoffMax       = 60 * time.Second
	DefaultStableAfter      = time.Minute
	DefaultIdleTimeout      = 15 * time.Minute
	DefaultDrainTimeout     = 30 * time.Second
	DefaultStopGrace        = 10 * time.Second
	DefaultWakeTimeout      = 30 * time.Second
	DefaultLogBytes         = 256 << 10
	DefaultReapInterval     = 5 * time.Second
)

// Config holds the supervisor's timings and bounds; the zero value works.
type Config struct {
	// StartTimeout bounds the wait for a started app to become healthy.
	StartTimeout time.Duration `json:"startTimeout,omitempty"`
	// HealthInterval is how often a starting app is probed.
	HealthInterval time.Duration `json:"healthInterval,omitempty"`
	// CheckInterval is how often a healthy app is probed; FailureThreshold
	// failures in a row restart it.
	CheckInterval    time.Duration `json:"checkInterval,omitempty"`
	FailureThreshold int           `json:"failureThreshold,omitempty"`
	// BackoffMin and BackoffMax bound the wait before restarting a program
	// that died; it doubles per crash and resets once the program has run
	// StableAfter.
	BackoffMin  time.Duration `json:"backoffMin,omitempty"`
	BackoffMax  time.Duration `json:"backoffMax,omitempty"`
	StableAfter time.Duration `json:"stableAfter,omitempty"`
	// IdleTimeout stops an app with no connection for that long (scale to
	// zero); negative never stops one.
	IdleTimeout time.Duration `json:"idleTimeout,omitempty"`
	// DrainTimeout is how long a replaced deployment keeps serving after
	// the switch before it is stopped.
	DrainTimeout time.Duration `json:"drainTimeout,omitempty"`
	// StopGrace is the time between SIGTERM and SIGKILL.
	StopGrace time.Duration `json:"stopGrace,omitempty"`
	// WakeTimeout bounds how long a connection or Wake waits for a sleeping
	// app to become healthy.
	WakeTimeout time.Duration `json:"wakeTimeout,omitempty"`
	// LogBytes bounds each deployment's kept output.
	LogBytes int `json:"logBytes,omitempty"`
	// ReapInterval is how often Run checks idle and drained deployments.
	ReapInterval time.Duration `json:"reapInterval,omitempty"`
	// Sink, when set, receives every line as it is kept (the program's
	// stdout and stderr, the supervisor's notes) with the deployment and
	// its project: the control plane's project log. It is called outside
	// the supervisor's locks and must not block.
	Sink func(deployment, project string, l LogLine) `json:"-"`
	// Bridges are the host services every program reaches at a fixed
	// address of its own (the platform's API; sandbox.Bridge).
	Bridges []sandbox.Bridge `json:"-"`
}

// Provision fills defaults and validates.
func (c *Config) Provision() error {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.StartTimeout, DefaultStartTimeout)
	def(&c.HealthInterval, DefaultHealthInterval)
	def(&c.CheckInterval, DefaultCheckInterval)
	def(&c.BackoffMin, DefaultBackoffMin)
	def(&c.BackoffMax, DefaultBackoffMax)
	def(&c.StableAfter, DefaultStableAfter)
	def(&c.IdleTimeout, DefaultIdleTimeout)
	def(&c.DrainTimeout, DefaultDrainTimeout)
	def(&c.StopGrace, DefaultStopGrace)
	def(&c.WakeTimeout, DefaultWakeTimeout)
	def(&c.ReapInterval, DefaultReapInterval)
	if c.FailureThreshold == 0 {
		c.FailureThreshold = DefaultFailureThreshold
	}
	if c.LogBytes == 0 {
		c.LogBytes = DefaultLogBytes
	}
	return c.Validate()
}

// Validate reports settings out of range.
func (c *Config) Validate() error {
	var errs []error
	for name, d := range map[string]time.Duration{"start timeout": c.StartTimeout, "health interval": c.HealthInterval,
		"check interval": c.CheckInterval, "backoff min": c.BackoffMin, "backoff max": c.BackoffMax, "stable after": c.StableAfter,
		"drain timeout": c.DrainTimeout, "stop grace": c.StopGrace, "wake timeout": c.WakeTimeout, "reap interval": c.ReapInterval} {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s %v must be positive", name, d))
		}
	}
	if c.BackoffMax < c.BackoffMin {
		errs = append(errs, errors.New("backoff max is below backoff min"))
	}
	if c.FailureThreshold < 1 || c.LogBytes < 1024 {
		errs = append(errs, errors.New("failure threshold must be positive and log bytes at least 1024"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("supervise: config: %w", err)
	}
	return nil
}
