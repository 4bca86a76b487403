package controlplane

import (
	"context"
	"net/http"
	"net/netip"
	"time"

	"github.com/svcplatform/platform/controlplane/jobs"
	"github.com/svcplatform/platform/controlplane/payments"
	"github.com/svcplatform/platform/controlplane/store"
	"github.com/svcplatform/platform/netguard"
)

// outboundClient is the HTTP client for requests to addresses users choose
// (webhooks): its dialer refuses loopback, private and link-local addresses
// and the platform's own listeners, checked on the resolved address at
// connect time, unless the operator allowed private networks.
func outboundClient(allowPrivate bool, own []netip.AddrPort) *http.Client {
	d := netguard.Dialer(allowPrivate, own...)
	return &http.Client{Transport: &http.Transport{
		DialContext:         d.DialContext,
		Proxy:               nil,
		ForceAttemptHTTP2:   true,
		MaxIdleConns:        64,
		IdleConnTimeout:     30 * time.Second,
		TLSHandshakeTimeout: 5 * time.Second,
	}}
}

// paymentsJobs adapts the job runner to the payments area's Jobs.
type paymentsJobs struct{ r *jobs.Runner }

func (j paymentsJobs) Register(kind string, h payments.JobHandler, maxAttempts int, backoff []time.Duration, timeout time.Duration) {
	j.r.Register(kind, func(ctx context.Context, jb jobs.Job) error { return h(ctx, jb.Payload, jb.Attempt) },
		jobs.KindOptions{MaxAttempts: maxAttempts, Backoff: backoff, Timeout: timeout})
}

func (j paymentsJobs) Enqueue(ctx context.Context, q store.Querier, kind string, payload any, key string) (string, error) {
	return j.r.Enqueue(ctx, q, kind, payload, jobs.EnqueueOptions{Key: key})
}
