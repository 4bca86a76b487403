package controlplane

import (
	"context"

	"github.com/svcplatform/platform/controlplane/billing"
	"github.com/svcplatform/platform/controlplane/databases"
	"github.com/svcplatform/platform/controlplane/plans"
	"github.com/svcplatform/platform/controlplane/usage"
)

// storageFunder lets databases on paid plans pay for storage past the
// allowance through the billing ledger: the plan's usage credit first (team),
// then the Balance within the spending limit.
type storageFunder struct{ l *billing.Ledger }

var _ databases.StorageFunder = storageFunder{}

// CanFundStorage reports whether the workspace has usage credit or
// Balance left under its spending limit.
func (f storageFunder) CanFundStorage(ctx context.Context, workspace string, _ int64) (bool, error) {
	s, err := f.l.Summary(ctx, workspace)
	if err != nil {
		return false, err
	}
	if s.UsageCreditLeft > 0 {
		return true, nil
	}
	room := s.Available
	if s.SpendLimitLeft != nil && *s.SpendLimitLeft < room {
		room = *s.SpendLimitLeft
	}
	return room > 0, nil
}

// ChargeStorage charges one day of storage past the allowance.
func (f storageFunder) ChargeStorage(ctx context.Context, workspace, ref string, amount int64) (int64, error) {
	n, err := f.l.Charge(ctx, workspace, "", billing.PurposeStorage, ref, billing.Micros(amount))
	return int64(n), err
}

// planOf reads a workspace's plan for the billing ledger.
func (cp *ControlPlane) planOf(ctx context.Context, workspace string) (plans.Name, error) {
	w, err := cp.Accounts.Workspace(ctx, workspace)
	return w.Plan, err
}

// databaseSizes gives the usage measurement each ready database's size.
func (cp *ControlPlane) databaseSizes(ctx context.Context, workspace string) ([]usage.Size, error) {
	ds, err := cp.databases.Sizes(ctx, workspace)
	out := make([]usage.Size, len(ds))
	for i, d := range ds {
		out[i] = usage.Size{Project: d.Project, Resource: d.ID, Bytes: d.Bytes, Objects: 1}
	}
	return out, err
}

// storageSizes gives the usage measurement what the workspace stores: in
// the blob store its repos (workspace-wide) and each project's deployments,
// in the metadata database each project's memory stores; in the blob store
// each project's buckets.
func (cp *ControlPlane) storageSizes(ctx context.Context, workspace string) ([]usage.Size, error) {
	bytes, objects, err := cp.repos.Stored(ctx, workspace)
	if err != nil {
		return nil, err
	}
	out := []usage.Size{{Resource: "repos", Bytes: bytes, Objects: objects}}
	deployed, err := cp.deploys.Stored(ctx, workspace)
	for _, d := range deployed {
		out = append(out, usage.Size{Project: d.Project, Resource: "deployments", Bytes: d.Bytes, Objects: d.Objects})
	}
	if err != nil {
		return out, err
	}
	kept, err := cp.memory.Stored(ctx, workspace)
	for _, m := range kept {
		out = append(out, usage.Size{Project: m.Project, Resource: "memory", Bytes: m.Bytes, Objects: m.Keys})
	}
	if err != nil {
		return out, err
	}
	inBuckets, err := cp.buckets.Sizes(ctx, workspace)
	return append(out, inBuckets...), err
}

// failingWebhooks gives the attention list the payments area's failing
// webhook deliveries.
type failingWebhooks struct{ cp *ControlPlane }

func (f failingWebhooks) FailingWebhooks(ctx context.Context, workspace string) ([]usage.FailingWebhook, error) {
	ws, err := f.cp.payments.FailingWebhooks(ctx, workspace)
	out := make([]usage.FailingWebhook, len(ws))
	for i, w := range ws {
		out[i] = usage.FailingWebhook{ProjectID: w.ProjectID, AccountID: w.AccountID, Failed: w.Failed, LastError: w.LastError, Since: w.Since}
	}
	return out, err
}
