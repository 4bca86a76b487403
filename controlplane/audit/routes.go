package audit

import (
	"net/http"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
)

// Routes is the area's rows of the route table: the audit log and the
// activity feed.
func Routes(h Handlers) []api.Route {
	const G = http.MethodGet
	return []api.Route{
		{Method: G, Path: "/api/orgs/{id}/audit-logs", Op: auth.OpAuditRead, Handler: h.List, Summary: "Audit rows, newest first (admins)", Response: AuditPage{}},
		{Method: G, Path: "/api/activity", Op: auth.OpActivityRead, Handler: h.Activity, Summary: "Short recent activity feed", Response: Feed{}},
	}
}
