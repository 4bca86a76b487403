package memory

import (
	"context"
	"fmt"

	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/usage"
)

// NearPercent is how full a store (keys or bytes, of the plan's cap) is
// when the attention list warns.
const NearPercent = 80

var _ usage.Source = (*Service)(nil)

// Attention implements usage.Source: the workspace's memory stores near
// (NearPercent, warning) or at (critical: writes that add keys or bytes
// are refused) the plan's cap on keys or bytes per store, one item per
// store and cap.
func (s *Service) Attention(ctx context.Context, workspace string) ([]usage.Item, error) {
	plan := s.d.Plans.Plan(ctx, workspace)
	lim := s.cfg.limits(plan)
	rows, err := s.d.DB.QueryContext(ctx, `SELECT id, project_id, name, key_count, bytes FROM memory_stores
		WHERE workspace_id = ? AND status = 'active' ORDER BY project_id, name`, workspace)
	if err != nil {
		return nil, fmt.Errorf("memory: attention: %w", err)
	}
	defer rows.Close()
	var out []usage.Item
	for rows.Next() {
		var id, project, name string
		var keys, bytes int64
		if err := rows.Scan(&id, &project, &name, &keys, &bytes); err != nil {
			return nil, fmt.Errorf("memory: attention: %w", err)
		}
		link := usage.Link{Method: "GET", API: "/api/memory/" + id, Dashboard: "/projects/" + project + "/memory/" + id}
		for _, c := range []struct {
			what        string
			used, limit int64
		}{{"keys", keys, lim.KeysPerStore}, {"bytes", bytes, lim.BytesPerStore}} {
			if c.limit == plans.Unlimited || c.limit <= 0 || c.used == 0 {
				continue
			}
			switch {
			case c.used >= c.limit:
				out = append(out, usage.Item{Kind: usage.KindPlanLimit, Severity: usage.Critical, ProjectID: project, Link: link,
					Reason: fmt.Sprintf("memory store %s holds %d of the %d %s of the %s plan; writes that add %s are refused until you delete keys or upgrade",
						name, c.used, c.limit, c.what, plan, c.what)})
			case c.used*100 >= c.limit*NearPercent:
				out = append(out, usage.Item{Kind: usage.KindPlanLimit, Severity: usage.Warning, ProjectID: project, Link: link,
					Reason: fmt.Sprintf("memory store %s holds %d of the %d %s of the %s plan", name, c.used, c.limit, c.what, plan)})
			}
		}
	}
	return out, rows.Err()
}
