package controlplane

import (
	"context"
	"net/http"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/deploys"
)

// originProbeEvery is how often the origins of serving apps and functions
// are checked (a project whose origin does not answer is down).
const originProbeEvery = 30 * time.Second

func init() {
	wirings = append(wirings, wiring{name: "deploys", wire: func(ctx context.Context, cp *ControlPlane) error {
		h, err := hostingOf(ctx, cp)
		if err != nil {
			return err
		}
		cp.Projects.SetDeployments(h.deploys)
		cp.Projects.AddDependent(h.deploys.Dependent())
		h.deploys.RunProber(context.Background(), originProbeEvery)
		dh := deploys.Handlers{S: h.deploys}
		const G, P = http.MethodGet, http.MethodPost
		cp.AddRoutes(
			api.Route{Method: P, Path: "/api/repos/{id}/deploy", Op: auth.OpRepoDeploy, Handler: dh.Deploy, Status: 202,
				Summary: "Deploy a commit to a project (an older commit is a rollback); follow it at /api/deployments/{id}", Request: deploys.DeployRequest{}, Response: deploys.DeploymentAnswer{}},
			api.Route{Method: P, Path: "/api/projects/{id}/deploy", Op: auth.OpRepoDeploy, ProjectParam: "id", Handler: dh.Redeploy, Status: 202,
				Summary: "Do what the project's deployAction says: rebuild the latest commit or redeploy the kept files", Response: deploys.DeploymentAnswer{}},
			api.Route{Method: G, Path: "/api/projects/{id}/deployments", Op: auth.OpProjectRead, ProjectParam: "id", Handler: dh.List,
				Summary: "A project's deployments, newest first", Response: deploys.ProjectDeployments{}},
			api.Route{Method: G, Path: "/api/deployments/{id}", Op: auth.OpProjectRead, Handler: dh.Get,
				Summary: "A deployment with its deploy log and files", Response: deploys.Detail{}},
		)
		return nil
	}})
}
