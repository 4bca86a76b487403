package edgesync

import (
	"net/http"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
)

// Routes is the area's rows of the route table: the edge protocol. The
// rows are public to the API's authentication: they take edge tokens, not
// API keys, and the handlers check them.
func Routes(h Handlers) []api.Route {
	const G, P = http.MethodGet, http.MethodPost
	return []api.Route{
		{Method: G, Path: snapshot.ConfigPath, Public: true, Handler: h.Config,
			Summary: "Edge configuration snapshot; long-poll with ?after=<version> (edge token)", Response: snapshot.Snapshot{}},
		{Method: G, Path: snapshot.BlobsPath + "{sha256}", Public: true, Handler: h.Blob,
			Summary: "A deployed file's bytes by SHA-256 (edge token)"},
		{Method: P, Path: snapshot.CountsPath, Public: true, Handler: h.Counts, MaxBody: 4 << 20,
			Summary: "Shield counts from an edge, idempotent per batch (edge token)", Request: snapshot.CountBatch{}, Response: snapshot.CountAnswer{}},
	}
}
