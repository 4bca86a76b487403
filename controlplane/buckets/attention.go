package buckets

import (
	"context"
	"fmt"

	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/usage"
)

// NearPercent is how full the plan's storage is when the attention list
// warns.
const NearPercent = 80

var _ usage.Source = (*Service)(nil)

// Attention implements usage.Source: the workspace's buckets near (80%,
// warning) or at (critical: puts are refused) the plan's byte cap.
func (s *Service) Attention(ctx context.Context, workspace string) ([]usage.Item, error) {
	limit, used, plan, err := s.quota(ctx, s.d.DB, workspace)
	if err != nil {
		return nil, fmt.Errorf("buckets: attention: %w", err)
	}
	if limit == plans.Unlimited || used == 0 {
		return nil, nil
	}
	link := usage.Link{Method: "GET", API: "/api/usage", Dashboard: "/usage"}
	switch {
	case used >= limit:
		return []usage.Item{{Kind: usage.KindPlanLimit, Severity: usage.Critical, Link: link,
			Reason: fmt.Sprintf("storage buckets hold %d of the %d bytes of the %s plan; new objects are refused until you delete some or upgrade", used, limit, plan)}}, nil
	case used*100 >= limit*NearPercent:
		return []usage.Item{{Kind: usage.KindPlanLimit, Severity: usage.Warning, Link: link,
			Reason: fmt.Sprintf("storage buckets hold %d of the %d bytes of the %s plan", used, limit, plan)}}, nil
	}
	return nil, nil
}
