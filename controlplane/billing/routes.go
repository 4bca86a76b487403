package billing

import (
	"net/http"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
)

// PlanRoutes is the plan table and the self-serve plan change.
func PlanRoutes(h PlanHandlers) []api.Route {
	return []api.Route{
		{Method: http.MethodGet, Path: "/api/plans", Op: auth.OpWorkspaceRead, Handler: h.Table, Summary: "Every plan's limits and monthly price", Response: PlanTable{}},
		{Method: http.MethodPost, Path: "/api/workspace/plan", Op: auth.OpWorkspacePlan, Handler: h.Change, Summary: "Change the workspace's plan (owner), paid from the Balance with proration; lists resources over the new plan's limits", Request: PlanRequest{}, Response: PlanAnswer{}},
	}
}

// Routes is the area's rows of the route table: the workspace Balance,
// included credit and spending limit.
func Routes(h Handlers) []api.Route {
	const G, U = http.MethodGet, http.MethodPut
	return []api.Route{
		{Method: G, Path: "/api/billing", Op: auth.OpBillingRead, Handler: h.Get, Summary: "Balance, included credit, holds, month spend and spending limit (admins)", Response: Answer{}},
		{Method: U, Path: "/api/billing/spend-limit", Op: auth.OpBillingWrite, Handler: h.PutSpendLimit, Summary: "Set or remove the monthly spending limit (admins); null removes it", Request: SpendLimitRequest{}, Response: Answer{}},
	}
}
