package billing

import (
	"net/http"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
)

// Routes is the area's rows of the route table: the workspace Balance,
// included credit and spending limit.
func Routes(h Handlers) []api.Route {
	const G, U = http.MethodGet, http.MethodPut
	return []api.Route{
		{Method: G, Path: "/api/billing", Op: auth.OpBillingRead, Handler: h.Get, Summary: "Balance, included credit, holds, month spend and spending limit (admins)", Response: Answer{}},
		{Method: U, Path: "/api/billing/spend-limit", Op: auth.OpBillingWrite, Handler: h.PutSpendLimit, Summary: "Set or remove the monthly spending limit (admins); null removes it", Request: SpendLimitRequest{}, Response: Answer{}},
	}
}
