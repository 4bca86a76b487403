package deploys

import (
	"net/http"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
)

// Routes is the area's rows of the route table: deploying a commit,
// redeploying, and reading deployments.
func Routes(h Handlers) []api.Route {
	const G, P = http.MethodGet, http.MethodPost
	return []api.Route{
		{Method: P, Path: "/api/repos/{id}/deploy", Op: auth.OpRepoDeploy, Handler: h.Deploy, Status: 202,
			Summary: "Deploy a commit to a project (an older commit is a rollback); follow it at /api/deployments/{id}", Request: DeployRequest{}, Response: DeploymentAnswer{}},
		{Method: P, Path: "/api/projects/{id}/deploy", Op: auth.OpRepoDeploy, ProjectParam: "id", Handler: h.Redeploy, Status: 202,
			Summary: "Do what the project's deployAction says: rebuild the latest commit of its repo or redeploy the kept files", Response: DeploymentAnswer{}},
		{Method: G, Path: "/api/projects/{id}/deployments", Op: auth.OpProjectRead, ProjectParam: "id", Handler: h.List,
			Summary: "A project's deployments, newest first", Response: ProjectDeployments{}},
		{Method: G, Path: "/api/deployments/{id}", Op: auth.OpProjectRead, Handler: h.Get,
			Summary: "A deployment with its deploy log and files", Response: Detail{}},
	}
}
