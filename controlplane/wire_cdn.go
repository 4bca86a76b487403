package controlplane

import (
	"context"
	"net/http"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
	"github.com/svcplatform/platform/controlplane/cdn"
)

func init() {
	wirings = append(wirings, wiring{name: "cdn", wire: func(ctx context.Context, cp *ControlPlane) error {
		h, err := hostingOf(ctx, cp)
		if err != nil {
			return err
		}
		ch := cdn.Handlers{S: h.cdn}
		cp.AddRoutes(
			api.Route{Method: http.MethodGet, Path: "/api/services/cdn", Op: auth.OpCDNRead, Handler: ch.Get,
				Summary: "Saved CDN settings", Response: cdn.Answer{}},
			api.Route{Method: http.MethodPut, Path: "/api/services/cdn", Op: auth.OpCDNWrite, Handler: ch.Put,
				Summary: "Merge {enabled, cacheTtlSeconds} over the saved settings (admins); takes effect on each project's next deploy", Request: cdn.PatchDoc{}, Response: cdn.Answer{}},
		)
		return nil
	}})
}
