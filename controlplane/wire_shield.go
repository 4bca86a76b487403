package controlplane

import (
	"context"
	"net/http"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/shield"
)

func init() {
	wirings = append(wirings, wiring{name: "shield", wire: func(ctx context.Context, cp *ControlPlane) error {
		h, err := hostingOf(ctx, cp)
		if err != nil {
			return err
		}
		sh := shield.Handlers{S: h.shield}
		const G, P, U = http.MethodGet, http.MethodPost, http.MethodPut
		cp.AddRoutes(
			api.Route{Method: G, Path: "/api/services/shield", Op: auth.OpShieldRead, Handler: sh.Get,
				Summary: "Saved Shield settings, protectedSites and passwordsAllowed", Response: shield.Answer{}},
			api.Route{Method: U, Path: "/api/services/shield", Op: auth.OpShieldWrite, Handler: sh.Put, MaxBody: shield.MaxBody, Request: shield.PutDoc{},
				Summary: "Merge settings over the saved ones (answers appliedNote), or set {passwords: {site: password|null}}", Response: shield.Answer{}},
			api.Route{Method: P, Path: "/api/services/shield", Op: auth.OpShieldWrite, Handler: sh.Apply,
				Summary: "Apply now: put the saved rules on every live static site", Response: shield.ApplyAnswer{}},
			api.Route{Method: G, Path: "/api/services/shield/blocks", Op: auth.OpShieldRead, Handler: sh.Blocks,
				Summary: "What the rules caught per site, function and rule over ?days=7 or 30", Response: shield.Blocks{}},
		)
		return nil
	}})
}
