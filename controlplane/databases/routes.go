package databases

import (
	"net/http"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
)

// Routes is the area's rows of the route table. The database's project is
// known once it is loaded, so the handlers check it again (a project key
// passes the table only for its own project's routes).
func Routes(h Handlers) []api.Route {
	const G, P, A, D = http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodDelete
	return []api.Route{
		{Method: P, Path: "/api/projects/{id}/databases", Op: auth.OpDatabaseWrite, ProjectParam: "id", Handler: h.Create, Status: 201, Summary: "Create a database (engine sqlite)", Request: CreateRequest{}, Response: DatabaseAnswer{}},
		{Method: G, Path: "/api/projects/{id}/databases", Op: auth.OpDatabaseRead, ProjectParam: "id", Handler: h.List, Summary: "List a project's databases, oldest first (?limit=1-200&cursor=)", Response: DatabaseList{}},
		{Method: G, Path: "/api/databases/{id}", Op: auth.OpDatabaseRead, Handler: h.Get, Summary: "Read a database, its endpoint and limits", Response: DatabaseAnswer{}},
		{Method: P, Path: "/api/databases/{id}", Op: auth.OpDatabaseQuery, Handler: h.Query, MaxBody: MaxQueryBody, Summary: "Run SQL: {sql, params?} or {batch: [{sql, params?}]}, as one transaction", Request: QuerySchema{}, Response: QueryAnswerSchema{}},
		{Method: A, Path: "/api/databases/{id}", Op: auth.OpDatabaseWrite, Handler: h.Retry, Summary: "Retry a failed create: {action: retry}", Request: PatchRequest{}, Response: DatabaseAnswer{}},
		{Method: D, Path: "/api/databases/{id}", Op: auth.OpDatabaseWrite, Handler: h.Delete, Summary: "Delete a database for good (later calls answer 410)", Response: api.Deleted{}},
		{Method: P, Path: "/api/databases/{id}/export", Op: auth.OpDatabaseWrite, Handler: h.Export, Summary: "Start an export, or ask after one with its bookmark", Request: ExportRequest{}, Response: ExportAnswer{}},
		{Method: G, Path: "/api/databases/{id}/export", Op: auth.OpDatabaseWrite, Handler: h.Download, Summary: "Download a complete export as a .sql file (?bookmark=)"},
	}
}
