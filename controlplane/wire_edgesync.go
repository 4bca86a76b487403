package controlplane

import (
	"context"
	"net/http"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/edgesync"
	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
)

func init() {
	wirings = append(wirings, wiring{name: "edgesync", wire: func(ctx context.Context, cp *ControlPlane) error {
		h, err := hostingOf(ctx, cp)
		if err != nil {
			return err
		}
		cp.Projects.AddDependent(h.sync.Dependent())
		eh := edgesync.Handlers{S: h.sync}
		// Public: these take edge tokens, not API keys, and check them in
		// the handler.
		cp.AddRoutes(
			api.Route{Method: http.MethodGet, Path: snapshot.ConfigPath, Public: true, Handler: eh.Config,
				Summary: "Edge configuration snapshot; long-poll with ?after=<version> (edge token)", Response: snapshot.Snapshot{}},
			api.Route{Method: http.MethodGet, Path: snapshot.BlobsPath + "{sha256}", Public: true, Handler: eh.Blob,
				Summary: "A deployed file's bytes by SHA-256 (edge token)"},
			api.Route{Method: http.MethodPost, Path: snapshot.CountsPath, Public: true, Handler: eh.Counts, MaxBody: 4 << 20,
				Summary: "Shield counts from an edge, idempotent per batch (edge token)", Request: snapshot.CountBatch{}, Response: snapshot.CountAnswer{}},
		)
		return nil
	}})
}
