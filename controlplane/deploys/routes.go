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
			Summary: "A deployment with its deploy log and files (output: developers and above)", Response: Detail{}},
		{Method: P, Path: "/api/deployments/{id}/promote", Op: auth.OpRepoDeploy, Handler: h.Promote,
			Summary: "Make a ready static deployment (a preview, or an earlier one) what its project serves, without building again", Response: DeploymentAnswer{}},
		// Logs may hold what programs print of their variables: read like
		// the variables (developers and above, full-access keys).
		{Method: G, Path: "/api/projects/{id}/logs", Op: auth.OpEnvRead, ProjectParam: "id", Handler: h.Logs,
			Summary: "A project's build, deploy, app and function log lines (filters: deployment, source, stream, since, after, before, limit); follow=1 streams them as server-sent events", Response: ProjectLogs{},
			Query: []api.Param{
				{Name: "deployment", Description: "one deployment's lines (dpl_...)"},
				{Name: "source", Description: "comma-separated: build, deploy, app, function"},
				{Name: "stream", Description: "stdout, stderr or platform"},
				{Name: "since", Description: "an RFC 3339 time, or a duration before now (15m, 2h)"},
				{Name: "after", Type: "integer", Description: "lines after this line id, oldest first"},
				{Name: "before", Type: "integer", Description: "the newest lines before this line id"},
				{Name: "limit", Type: "integer", Description: "1..1000 (default 100)"},
				{Name: "follow", Description: "1: answer text/event-stream, the kept lines then each new one"}},
			Headers:        []api.Param{{Name: "Last-Event-ID", Type: "integer", Description: "follow=1: resume after this line id"}},
			ResponseBodies: map[string]string{"text/event-stream": "follow=1: events `line` (id: the line id, data: a line as JSON), `end` when the project is deleted, a comment every 15 s"}},
	}
}
