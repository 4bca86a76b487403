package signin

import (
	"context"
	"fmt"

	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/usage"
)

// Limits are a plan's caps on sign-in pools (ours: the specification
// names the cap on users and its attention item, not the numbers).
type Limits struct {
	// Pools is how many sign-in pools a workspace may hold.
	Pools int `json:"pools"`
	// UsersPerPool is how many users one pool may hold.
	UsersPerPool int `json:"usersPerPool"`
}

// DefaultLimits are the caps of each plan. Supabase and Firebase allow
// 50,000 monthly users free; a hobby pool holds 10,000 users (a side
// project), pro 100,000, team 250,000, scale and enterprise 1,000,000.
var DefaultLimits = map[plans.Name]Limits{
	plans.Hobby:      {Pools: 2, UsersPerPool: 10_000},
	plans.Pro:        {Pools: 20, UsersPerPool: 100_000},
	plans.Team:       {Pools: 50, UsersPerPool: 250_000},
	plans.Scale:      {Pools: 200, UsersPerPool: 1_000_000},
	plans.Enterprise: {Pools: 200, UsersPerPool: 1_000_000},
}

// NearPercent is when a cap is near: at or past this share of it (the
// usage area's threshold).
const NearPercent = usage.NearPercent

// planAbove names the smallest plan whose caps hold more than n of what
// limit picks, or "" when none does.
func (s *Service) planAbove(n int, limit func(Limits) int) plans.Name {
	for _, p := range plans.All() {
		if l := limit(s.cfg.limits(p)); l == plans.Unlimited || l > n {
			return p
		}
	}
	return ""
}

// Attention is the area's part of the attention list (a usage.Source):
// the workspace's pool count and each pool's users, at or near the plan's
// caps. At a cap is critical (new pools or sign-ups are refused), from
// NearPercent on a warning.
func (s *Service) Attention(ctx context.Context, workspace string) ([]usage.Item, error) {
	plan := s.d.Plans.Plan(ctx, workspace)
	lim := s.cfg.limits(plan)
	pools, err := poolsOfWorkspace(ctx, s.d.DB, workspace)
	if err != nil {
		return nil, err
	}
	var out []usage.Item
	if n, limit := len(pools), lim.Pools; limit != plans.Unlimited && n > 0 {
		link := usage.Link{Method: "GET", API: "/api/usage", Dashboard: "/auth-pools"}
		switch {
		case n >= limit:
			out = append(out, usage.Item{Kind: usage.KindPlanLimit, Severity: usage.Critical, Link: link,
				Reason: fmt.Sprintf("sign-in pools: %d of %d on the %s plan; new ones are refused until you delete one or upgrade", n, limit, plan)})
		case n*100 >= limit*NearPercent:
			out = append(out, usage.Item{Kind: usage.KindPlanLimit, Severity: usage.Warning, Link: link,
				Reason: fmt.Sprintf("sign-in pools: %d of %d on the %s plan", n, limit, plan)})
		}
	}
	limit := lim.UsersPerPool
	if limit == plans.Unlimited {
		return out, nil
	}
	for _, p := range pools {
		n := p.UserCount
		link := usage.Link{Method: "GET", API: "/api/auth-pools/" + p.ID + "/users", Dashboard: "/projects/" + p.Project + "/auth-pools/" + p.ID}
		switch {
		case n >= limit:
			out = append(out, usage.Item{Kind: usage.KindPlanLimit, Severity: usage.Critical, ProjectID: p.Project, Link: link,
				Reason: fmt.Sprintf("sign-in pool %s: %d of %d users on the %s plan; sign-ups are refused until you delete users or upgrade", p.Name, n, limit, plan)})
		case n*100 >= limit*NearPercent:
			out = append(out, usage.Item{Kind: usage.KindPlanLimit, Severity: usage.Warning, ProjectID: p.Project, Link: link,
				Reason: fmt.Sprintf("sign-in pool %s: %d of %d users on the %s plan", p.Name, n, limit, plan)})
		}
	}
	return out, nil
}
