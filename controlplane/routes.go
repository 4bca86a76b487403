package controlplane

import (
	"net/http"

	"github.com/svcplatform/platform/controlplane/accounts"
	"github.com/svcplatform/platform/controlplane/agents"
	"github.com/svcplatform/platform/controlplane/ai"
	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/audit"
	"github.com/svcplatform/platform/controlplane/billing"
	"github.com/svcplatform/platform/controlplane/buckets"
	"github.com/svcplatform/platform/controlplane/cdn"
	"github.com/svcplatform/platform/controlplane/certs"
	"github.com/svcplatform/platform/controlplane/databases"
	"github.com/svcplatform/platform/controlplane/deploys"
	"github.com/svcplatform/platform/controlplane/devicelogin"
	"github.com/svcplatform/platform/controlplane/domains"
	"github.com/svcplatform/platform/controlplane/edgesync"
	"github.com/svcplatform/platform/controlplane/mail"
	"github.com/svcplatform/platform/controlplane/media"
	"github.com/svcplatform/platform/controlplane/memory"
	"github.com/svcplatform/platform/controlplane/payments"
	"github.com/svcplatform/platform/controlplane/projects"
	"github.com/svcplatform/platform/controlplane/repos"
	"github.com/svcplatform/platform/controlplane/security"
	"github.com/svcplatform/platform/controlplane/shield"
	"github.com/svcplatform/platform/controlplane/signin"
	"github.com/svcplatform/platform/controlplane/usage"
	"github.com/svcplatform/platform/controlplane/vectors"
)

// routeTable is every route of the API: each area's rows, kept beside its
// handlers (the area's own HTTP tests mount the very same rows), listed once
// here in the order the OpenAPI document shows them.
func (cp *ControlPlane) routeTable() []api.Route {
	areas := [][]api.Route{
		accounts.Routes(accounts.Handlers{S: cp.Accounts, ProjectExists: cp.Projects.Exists}),
		devicelogin.Routes(devicelogin.Handlers{S: cp.deviceLogin}),
		projects.Routes(projects.Handlers{S: cp.Projects}),
		databases.Routes(databases.Handlers{S: cp.databases}),
		vectors.Routes(vectors.Handlers{S: cp.vectors}),
		memory.Routes(memory.Handlers{S: cp.memory}),
		signin.Routes(signin.Handlers{S: cp.signin}),
		repos.Routes(repos.Handlers{S: cp.repos}),
		deploys.Routes(deploys.Handlers{S: cp.deploys}),
		media.Routes(media.Handlers{S: cp.media}),
		buckets.Routes(buckets.Handlers{S: cp.buckets}),
		shield.Routes(shield.Handlers{S: cp.shield}),
		cdn.Routes(cdn.Handlers{S: cp.cdn}),
		security.Routes(security.Handlers{S: cp.security}),
		payments.Routes(payments.Handlers{S: cp.payments}),
		billing.Routes(billing.Handlers{L: cp.Billing}),
		billing.PlanRoutes(billing.PlanHandlers{L: cp.Billing, Plans: cp.Accounts, Counts: cp.planCounts}),
		ai.Routes(ai.Handlers{S: cp.ai}),
		agents.Routes(agents.Handlers{S: cp.agents}),
		mail.Routes(mail.Handlers{S: cp.mail}),
		domains.Routes(domains.Handlers{S: cp.domains}),
		cp.mcp.Routes(),
		usage.Routes(usage.Handlers{S: cp.usage}),
		audit.Routes(audit.Handlers{Log: cp.Audit}),
		edgesync.Routes(edgesync.Handlers{S: cp.edgeSync}),
		certs.Routes(certs.Handlers{S: cp.certs}),
		{{Method: http.MethodGet, Path: "/api/openapi.json", Public: true, Handler: cp.serveOpenAPI, Summary: "This API's OpenAPI 3.1 document"}},
	}
	var table []api.Route
	for _, rows := range areas {
		table = append(table, rows...)
	}
	return table
}
