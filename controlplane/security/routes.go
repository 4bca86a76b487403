package security

import (
	"net/http"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
)

// Routes is the area's rows of the route table: the security overview.
func Routes(h Handlers) []api.Route {
	const G = http.MethodGet
	return []api.Route{
		{Method: G, Path: "/api/security/overview", Op: auth.OpSecurityRead, Handler: h.Overview,
			Summary: "Security score and checks, with audit changes per hour over the last 24 hours", Response: Overview{}},
	}
}
