package controlplane

import (
	"context"

	"github.com/svcplatform/platform/controlplane/accounts"
	"github.com/svcplatform/platform/controlplane/auth"
)

// planCounts counts what a workspace holds of the resources plans limit
// (databases, vectors, media, paymentAccount), for a plan change to list
// what is over the new plan's limits.
func (cp *ControlPlane) planCounts(ctx context.Context, workspace string) (map[string]int, error) {
	prjs, err := cp.Projects.List(ctx, &auth.Principal{WorkspaceID: workspace})
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, c := range []interface {
		Service() string
		Count(ctx context.Context, project string) (int, error)
	}{cp.databases, cp.vectors, cp.media, cp.payments} {
		for _, p := range prjs {
			n, err := c.Count(ctx, p.ID)
			if err != nil {
				return nil, err
			}
			out[c.Service()] += n
		}
	}
	return out, nil
}

// workspaceTeardown is what deleting a workspace needs: its projects,
// deleted as DELETE /api/projects/{id} does; every area's blockers (a deploy
// running, earnings, refunds, payable links) asked of every project first; and
// the Balance, which must be empty and owe nothing.
func (cp *ControlPlane) workspaceTeardown() accounts.Teardown {
	return accounts.Teardown{
		Projects: func(ctx context.Context, ws string) ([]string, error) {
			ps, err := cp.Projects.List(ctx, &auth.Principal{WorkspaceID: ws})
			ids := make([]string, len(ps))
			for i, p := range ps {
				ids[i] = p.ID
			}
			return ids, err
		},
		ProjectBlockers: func(ctx context.Context, project string) ([]accounts.Blocker, error) {
			bs, err := cp.Projects.Blockers(ctx, project)
			out := make([]accounts.Blocker, len(bs))
			for i, b := range bs {
				out[i] = accounts.Blocker{Kind: b.Kind, Message: b.Message, Action: b.Action}
			}
			return out, err
		},
		DeleteProject: cp.Projects.Delete,
		Money: func(ctx context.Context, ws string) (int64, int64, error) {
			s, err := cp.Billing.Summary(ctx, ws)
			return int64(s.Balance), int64(s.Owed), err
		},
	}
}
