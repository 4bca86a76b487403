package shield

import (
	"net/http"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
)

// Routes is the area's rows of the route table: Shield's settings and
// what its rules caught.
func Routes(h Handlers) []api.Route {
	const G, P, U = http.MethodGet, http.MethodPost, http.MethodPut
	return []api.Route{
		{Method: G, Path: "/api/services/shield", Op: auth.OpShieldRead, Handler: h.Get,
			Summary: "Saved Shield settings, protectedSites and passwordsAllowed", Response: Answer{}},
		{Method: U, Path: "/api/services/shield", Op: auth.OpShieldWrite, Handler: h.Put, MaxBody: MaxBody, Request: PutDoc{},
			Summary: "Merge settings over the saved ones (answers appliedNote), or set {passwords: {site: password|null}} (static sites only)", Response: Answer{}},
		{Method: P, Path: "/api/services/shield", Op: auth.OpShieldWrite, Handler: h.Apply,
			Summary: "Apply now: put the saved rules on every live static site", Response: ApplyAnswer{}},
		{Method: G, Path: "/api/services/shield/blocks", Op: auth.OpShieldRead, Handler: h.Blocks,
			Summary: "What the rules caught per site, function and rule over ?days=7 or 30", Response: Blocks{}},
	}
}
