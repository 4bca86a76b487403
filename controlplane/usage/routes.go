package usage

import (
	"net/http"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
)

// Routes is the area's rows of the route table: the usage report and the
// attention list.
func Routes(h Handlers) []api.Route {
	const G = http.MethodGet
	return []api.Route{
		{Method: G, Path: "/api/usage", Op: auth.OpUsageRead, Handler: h.Usage, Summary: "Usage report: ?period=month|last_month|7d|30d|90d&project=", Response: Report{}},
		{Method: G, Path: "/api/attention", Op: auth.OpUsageRead, Handler: h.Attention, Summary: "Ranked to-do list; each item links to what fixes it", Response: Attention{}},
	}
}
