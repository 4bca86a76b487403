package media

import (
	"net/http"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/auth"
)

// Routes is the area's rows of the route table. An asset's project is
// known once it is loaded, so the service checks the permission table
// again with it. Upload URLs and stream keys need media.secrets
// (developers and above, full-access keys); the upload URL itself, the
// playback files and the RTMP server's callbacks are public routes carrying
// an unguessable token, an asset id, and a per-process secret.
func Routes(h Handlers) []api.Route {
	const G, P, U = http.MethodGet, http.MethodPost, http.MethodPatch
	return []api.Route{
		{Method: P, Path: "/api/projects/{id}/media", Op: auth.OpMediaWrite, ProjectParam: "id", Handler: h.Create, Status: 201,
			Summary: "Create a video {name, kind: video} (answers uploadUrl) or a live channel {kind: live} (answers ingestUrl, streamKey)",
			Request: CreateRequest{}, Response: Created{}},
		{Method: G, Path: "/api/projects/{id}/media", Op: auth.OpMediaRead, ProjectParam: "id", Handler: h.List,
			Summary: "List a project's videos and live channels", Response: AssetList{}},
		{Method: P, Path: "/api/media/{id}/upload", Op: auth.OpMediaSecrets, Handler: h.NewUpload,
			Summary: "A fresh one-time upload URL while the video waits for its file", Response: UploadAnswer{}},
		{Method: G, Path: "/api/media/{id}", Op: auth.OpMediaRead, Handler: h.Get,
			Summary:  "Read an asset: status, size, duration, playable (a video plays while processing once its first segments are encoded), progress, playback URL (stream key for developers and above)",
			Response: AssetAnswer{}},
		{Method: U, Path: "/api/media/{id}", Op: auth.OpMediaWrite, Handler: h.Action,
			Summary: "Live control {action: go-live or end-stream}", Request: ActionRequest{}, Response: AssetAnswer{}},
		{Method: P, Path: "/media/uploads/{token}", Public: true, Handler: h.Upload, Status: 201, MaxBody: h.S.MaxUploadBody(),
			Summary: "The one-time upload URL: multipart/form-data with the field file", Response: ReceivedAnswer{}},
		{Method: G, Path: "/media/{id}/{file...}", Public: true, Handler: h.Play,
			Summary: "HLS playback: master.m3u8, renditions, segments, poster.jpg",
			ResponseBodies: map[string]string{
				"application/vnd.apple.mpegurl": "a playlist. A ready video's: VOD, Cache-Control public, max-age=300. A video still processing (playable): EVENT playlists that grow as segments land, starting at the beginning (EXT-X-START), Cache-Control no-store. A live channel's: public, max-age=1, stale-while-revalidate=1",
				"video/mp2t":                    "an MPEG-TS segment, never changed once served: Cache-Control public, max-age=31536000, s-maxage=3600, immutable (a live fragment: public, max-age=60)",
				"image/jpeg":                    "a ready video's poster (poster.jpg)",
			}},
		{Method: P, Path: "/media/live/hooks/{secret}/{event}", Public: true, Handler: h.Hook,
			Summary: "The RTMP server's publish callbacks (internal)"},
	}
}
