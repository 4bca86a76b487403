package agents

import (
	"context"
	"time"

	"github.com/svcplatform/platform/controlplane/ratelimit"
)

// window is one of the area's "n a minute" limits (runs per workspace,
// events per agent, chat messages per agent and visitor address) on the
// platform's rate limiter: exact windows, shared by the replicas on
// PostgreSQL.
type window struct {
	lim    ratelimit.Limiter
	bucket string
	span   time.Duration
}

func newWindow(lim ratelimit.Limiter, bucket string, span time.Duration) *window {
	return &window{lim: lim, bucket: bucket, span: span}
}

// take spends one unit of key's limit, or answers how long until one
// frees. The limiter's own errors are its arguments', fixed by this code:
// such a limit admits (as a store failure does).
func (w *window) take(key string, limit int) (bool, time.Duration) {
	d, err := w.lim.Allow(context.Background(), ratelimit.Key{Workspace: key, Bucket: w.bucket}, ratelimit.PerWindow(limit, w.span), 1)
	if err != nil {
		return true, 0
	}
	return d.Allowed, d.RetryAfter
}

// giveBack returns the unit taken for key (a start refused after the rate
// check took it).
func (w *window) giveBack(key string, limit int) {
	w.lim.Refund(context.Background(), ratelimit.Key{Workspace: key, Bucket: w.bucket}, ratelimit.PerWindow(limit, w.span), 1)
}

func retrySeconds(d time.Duration) int {
	s := int((d + time.Second - 1) / time.Second)
	return max(s, 1)
}
