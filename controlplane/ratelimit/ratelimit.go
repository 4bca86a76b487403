// Package ratelimit is the control plane's per-workspace rate limiting: a
// generic cell rate algorithm (GCRA) keyed by workspace and bucket, with
// two implementations behind one interface. Memory keeps the state in the
// process (one control plane on SQLite, today's behaviour); Store keeps it
// in the metadata database, one row per key updated by one statement, so
// that replicas sharing a PostgreSQL spend one budget. For picks the right
// one for a store.
//
// The GCRA keeps one number per key, the theoretical arrival time (tat):
// a limit of Rate units per Per with a Burst admits cost n at now when
// max(tat, now) + n*T - now <= Burst*T, where T = Per/Rate is the emission
// interval, and then moves tat to max(tat, now) + n*T. A refusal changes
// nothing and says how long to wait. From idle a key may spend Burst at
// once, then Rate per Per.
//
// A Limit with Window set is exact instead: at most Rate units in any
// window of Per, kept as a log of admission times per key (a GCRA admits,
// after a burst, one unit every Per/Rate, so a window may hold up to
// Rate+Burst-1). Limits stated as "n per window" (databases: 600 query
// requests per 5 minutes) use it.
package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svcplatform/platform/controlplane/clock"
	"github.com/svcplatform/platform/controlplane/store"
)

// Key names one budget: a workspace's bucket (for example "ai.chat",
// "ai.embeddings", "databases.query"). Buckets are fixed by code; they are
// a metric label.
type Key struct {
	Workspace string
	Bucket    string
}

// Limit is a rate: Rate units per Per, of which Burst may be spent at once
// from idle. A Rate of 0 or less is no limit.
type Limit struct {
	Rate int64
	Per  time.Duration
	// Burst is how many units an idle key may spend at once (Rate when 0).
	// Not used with Window.
	Burst int64
	// Window makes the limit exact: at most Rate units in any window of
	// Per, refused until the oldest of them leaves the window.
	Window bool
}

// PerWindow is at most n in any window of w (exact; a log per key).
func PerWindow(n int, w time.Duration) Limit { return Limit{Rate: int64(n), Per: w, Window: true} }

// PerMinute is n a minute with a burst of n (the AI gateway's limit).
func PerMinute(n int) Limit { return Limit{Rate: int64(n), Per: time.Minute, Burst: int64(n)} }

// Unlimited reports whether l admits everything.
func (l Limit) Unlimited() bool { return l.Rate <= 0 }

// interval is T, the emission interval, in nanoseconds (at least 1).
func (l Limit) interval() int64 {
	return max(int64(l.Per)/l.Rate, 1)
}

func (l Limit) burst() int64 {
	if l.Burst <= 0 || l.Window {
		return l.Rate
	}
	return l.Burst
}

// Decision is the answer to one Allow.
type Decision struct {
	// Allowed says the cost was admitted (and spent).
	Allowed bool
	// RetryAfter is, when refused, how long until the same cost would be
	// admitted (if nothing else is spent meanwhile).
	RetryAfter time.Duration
	// FailedOpen says the store could not be asked and the request was
	// admitted without counting (platform_ratelimit_store_errors_total).
	FailedOpen bool
}

// RetryAfterSeconds is RetryAfter rounded up to whole seconds, at least 1:
// the Retry-After header of a 429.
func (d Decision) RetryAfterSeconds() int {
	s := int((d.RetryAfter + time.Second - 1) / time.Second)
	return max(s, 1)
}

// Errors of Allow: the caller's mistakes, never the store's (the store's
// errors fail open).
var (
	// ErrBadLimit is a Limit with a positive Rate but no period.
	ErrBadLimit = errors.New("ratelimit: a limit needs a positive period")
	// ErrBadCost is a cost below 1 or above the limit's burst (it could
	// never be admitted).
	ErrBadCost = errors.New("ratelimit: cost must be between 1 and the burst")
	// ErrBadKey is a key without a workspace or bucket, or holding a NUL.
	ErrBadKey = errors.New("ratelimit: key needs a workspace and a bucket")
)

// Limiter admits or refuses a cost against a key's limit.
type Limiter interface {
	// Allow spends cost units of k's budget under l at the limiter's
	// clock, or refuses without spending anything. An error is only ever
	// about the arguments (ErrBadLimit, ErrBadCost, ErrBadKey).
	Allow(ctx context.Context, k Key, l Limit, cost int64) (Decision, error)
	// Refund gives back cost units that Allow admitted under l and the
	// caller did not use after all (a request refused for another reason
	// after its rate check): the newest units of a Window limit, or cost
	// intervals of a GCRA's tat. Errors are the arguments' or the store's.
	Refund(ctx context.Context, k Key, l Limit, cost int64) error
	// Collectors returns the limiter's metrics for the admin /metrics.
	Collectors() []prometheus.Collector
}

// For returns the limiter for db: Store on PostgreSQL (replicas share the
// budget), Memory on SQLite (one process owns the database).
func For(db *store.DB, clk clock.Clock) Limiter {
	if db != nil && db.Dialect() == store.Postgres {
		return NewStore(db, clk)
	}
	return NewMemory(clk)
}

// check validates Allow's arguments; it reports unlimited limits.
func check(k Key, l Limit, cost int64) (unlimited bool, err error) {
	if k.Workspace == "" || k.Bucket == "" || strings.IndexByte(k.Workspace, 0) >= 0 || strings.IndexByte(k.Bucket, 0) >= 0 {
		return false, ErrBadKey // PostgreSQL text cannot hold NUL: both engines refuse it alike
	}
	if l.Unlimited() {
		return true, nil
	}
	if l.Per <= 0 {
		return false, fmt.Errorf("%w: %d per %s", ErrBadLimit, l.Rate, l.Per)
	}
	if cost < 1 || cost > l.burst() {
		return false, fmt.Errorf("%w: cost %d, burst %d", ErrBadCost, cost, l.burst())
	}
	return false, nil
}

// gcra decides cost at now against tat: the new tat when allowed, or how
// long to wait.
func gcra(tat, now int64, l Limit, cost int64) (newTat int64, ok bool, wait time.Duration) {
	t := l.interval()
	newTat = max(tat, now) + cost*t
	if over := newTat - now - l.burst()*t; over > 0 {
		return tat, false, time.Duration(over)
	}
	return newTat, true, 0
}

// windowDecide decides cost at now against the log of a Window limit:
// until holds, oldest first, when each admitted unit leaves the window
// (all after now). It returns the wait when refused.
func windowDecide(until []int64, now int64, l Limit, cost int64) (ok bool, wait time.Duration) {
	n := l.Rate
	if int64(len(until))+cost <= n {
		return true, 0
	}
	// The (n-cost+1)-th newest must leave first.
	return false, time.Duration(until[int64(len(until))-(n-cost+1)] - now)
}

// metrics are a limiter's collectors; bucket is a label (fixed by code).
type metrics struct {
	decisions   *prometheus.CounterVec
	storeErrors prometheus.Counter
}

func newMetrics(impl string) *metrics {
	return &metrics{
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        "platform_ratelimit_decisions_total",
			Help:        "Rate limit decisions by bucket and result: allowed, refused, or failed_open (the store failed; admitted uncounted).",
			ConstLabels: prometheus.Labels{"limiter": impl},
		}, []string{"bucket", "result"}),
		storeErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name:        "platform_ratelimit_store_errors_total",
			Help:        "Rate limit statements that failed; each request was admitted (fail open).",
			ConstLabels: prometheus.Labels{"limiter": impl},
		}),
	}
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.decisions, m.storeErrors}
}

func (m *metrics) count(bucket string, d Decision) {
	switch {
	case d.FailedOpen:
		m.decisions.WithLabelValues(bucket, "failed_open").Inc()
	case d.Allowed:
		m.decisions.WithLabelValues(bucket, "allowed").Inc()
	default:
		m.decisions.WithLabelValues(bucket, "refused").Inc()
	}
}
