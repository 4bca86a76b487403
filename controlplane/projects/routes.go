package projects

import (
	"net/http"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
)

// Routes is the area's rows of the route table: projects and their
// environment variables.
func Routes(h Handlers) []api.Route {
	const G, P, A, D = http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodDelete
	return []api.Route{
		{Method: P, Path: "/api/projects", Op: auth.OpProjectCreate, Handler: h.Create, Status: 201, Summary: "Create a project", Request: CreateRequest{}, Response: ProjectAnswer{}},
		{Method: G, Path: "/api/projects", Op: auth.OpProjectList, Handler: h.List, Summary: "List projects with live_url", Response: ProjectList{}},
		{Method: G, Path: "/api/projects/{id}", Op: auth.OpProjectRead, ProjectParam: "id", Handler: h.Read, Summary: "Read a project, what it serves, what Deploy will do and its services", Response: Detail{}},
		{Method: A, Path: "/api/projects/{id}", Op: auth.OpProjectUpdate, ProjectParam: "id", Handler: h.Update, Summary: "Change a project", Request: UpdateRequest{}, Response: ProjectAnswer{}},
		{Method: D, Path: "/api/projects/{id}", Op: auth.OpProjectDelete, ProjectParam: "id", Handler: h.Delete, Summary: "Delete a project and its resources", Response: api.Deleted{}},
		{Method: P, Path: "/api/projects/{id}/env", Op: auth.OpEnvWrite, ProjectParam: "id", Handler: h.SetEnv, Status: 201, Summary: "Create or replace a variable", Request: EnvRequest{}, Response: EnvAnswer{}},
		{Method: G, Path: "/api/projects/{id}/env", Op: auth.OpEnvRead, ProjectParam: "id", Handler: h.ListEnv, Summary: "List variables with values (developers and above)", Response: EnvList{}},
		{Method: A, Path: "/api/projects/{id}/env/{envId}", Op: auth.OpEnvWrite, ProjectParam: "id", Handler: h.PatchEnv, Summary: "Change a variable", Request: EnvPatch{}, Response: EnvAnswer{}},
		{Method: D, Path: "/api/projects/{id}/env/{envId}", Op: auth.OpEnvWrite, ProjectParam: "id", Handler: h.DeleteEnv, Summary: "Delete a variable", Response: api.Deleted{}},
	}
}
