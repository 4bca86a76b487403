package ai

import (
	"context"
	"fmt"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/ratelimit"
)

// Buckets of the per-workspace rate limit: chat and embeddings are counted
// apart.
const (
	bucketChat       = "ai.chat"
	bucketEmbeddings = "ai.embeddings"
)

// rateLimit admits one request of the bucket or answers 429 with Retry-After.
func (s *Service) rateLimit(ctx context.Context, ws, bucket string, plan plans.Name) error {
	n := plans.Of(plan).AIRequestsPerMinute
	d, err := s.limiter.Allow(ctx, ratelimit.Key{Workspace: ws, Bucket: bucket}, ratelimit.PerMinute(n), 1)
	if err != nil {
		return api.Internal(fmt.Errorf("ai: rate limit: %w", err))
	}
	if d.Allowed {
		return nil
	}
	secs := d.RetryAfterSeconds()
	what := "chat"
	if bucket == bucketEmbeddings {
		what = "embeddings"
	}
	e := api.E(api.KindRateLimited, "ai_rate_limited", "more than %d AI %s requests a minute for this workspace; retry in %d seconds", n, what, secs)
	e.RetryAfter = secs
	return e.With("limit", n)
}
