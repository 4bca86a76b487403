package cdn

import (
	"net/http"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
)

// Routes is the area's rows of the route table: the workspace's CDN
// settings.
func Routes(h Handlers) []api.Route {
	const G, U = http.MethodGet, http.MethodPut
	return []api.Route{
		{Method: G, Path: "/api/services/cdn", Op: auth.OpCDNRead, Handler: h.Get,
			Summary: "Saved CDN settings", Response: Answer{}},
		{Method: U, Path: "/api/services/cdn", Op: auth.OpCDNWrite, Handler: h.Put,
			Summary: "Merge {enabled, cacheTtlSeconds} over the saved settings (admins); takes effect on each project's next deploy", Request: PatchDoc{}, Response: Answer{}},
	}
}
