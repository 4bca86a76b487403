package controlplane

import (
	"context"
	"net/http"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/security"
)

func init() {
	wirings = append(wirings, wiring{name: "security", wire: func(_ context.Context, cp *ControlPlane) error {
		h := security.Handlers{S: security.New(cp.DB, cp.cfg.Clock.Now)}
		cp.AddRoutes(api.Route{Method: http.MethodGet, Path: "/api/security/overview", Op: auth.OpSecurityRead, Handler: h.Overview,
			Summary: "Security score and checks, with audit changes per hour over the last 24 hours", Response: security.Overview{}})
		return nil
	}})
}
