package controlplane

import (
	"context"
	"net/http"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/repos"
)

func init() {
	wirings = append(wirings, wiring{name: "repos", wire: func(ctx context.Context, cp *ControlPlane) error {
		h, err := hostingOf(ctx, cp)
		if err != nil {
			return err
		}
		rh := repos.Handlers{S: h.repos}
		const G, P, D = http.MethodGet, http.MethodPost, http.MethodDelete
		cp.AddRoutes(
			api.Route{Method: G, Path: "/api/repos", Op: auth.OpRepoRead, Handler: rh.List, Summary: "List repos with commit counts", Response: repos.RepoList{}},
			api.Route{Method: P, Path: "/api/repos", Op: auth.OpRepoWrite, Handler: rh.Create, Status: 201, Summary: "Create a repo", Request: repos.CreateRequest{}, Response: repos.RepoAnswer{}},
			api.Route{Method: G, Path: "/api/repos/{id}", Op: auth.OpRepoRead, Handler: rh.Read, Summary: "Read a repo and its commit history", Response: repos.Detail{}},
			api.Route{Method: D, Path: "/api/repos/{id}", Op: auth.OpRepoWrite, Handler: rh.Delete, Summary: "Delete a repo (its deployments keep serving)", Response: api.Deleted{}},
			api.Route{Method: P, Path: "/api/repos/{id}/commits", Op: auth.OpRepoWrite, Handler: rh.Push, Status: 201, MaxBody: repos.MaxPushBody,
				Summary: "Push a commit: a full snapshot of at most 500 files, 10 MB each, 25 MB in all", Request: repos.PushRequest{}, Response: repos.CommitAnswer{}},
			api.Route{Method: G, Path: "/api/repos/{id}/files", Op: auth.OpRepoRead, Handler: rh.Files,
				Summary: "File tree at ?commit= (default latest), or one text file with &path=", Response: repos.Tree{}},
		)
		return nil
	}})
}
