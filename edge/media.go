package edge

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
	"github.com/svcplatform/platform/rules"
)

// The media playback host (snapshot.Media) is compiled into a site of kind
// app whose origin is the control plane's public playback route, so it is
// served exactly as an app is: the RFC 9111 shared cache first (segments
// and posters are immutable, VOD playlists kept 5 minutes, live playlists
// 1 s with stale-while-revalidate), misses forwarded with the pooled
// client, CORS and caching headers passed through. The differences are all
// in its origin:
//
//   - It forwards GET and HEAD of /media/<asset id>/<file> only, the path
//     checked byte by byte (no percent-encoding, no dot segments, one
//     directory at most) and sent without its query; any other path is
//     answered 404 and another method 405 by the edge itself, never
//     forwarded, so the upload (POST /media/uploads/...) and RTMP hook
//     (POST /media/live/hooks/...) routes and the API are out of reach.
//     Upgrades (WebSockets) are refused.
//   - It is the platform's own control plane, named by the platform's own
//     snapshot, not a user's: the private-network guard and the
//     own-listener guard (the API address is one in `platform serve`) do
//     not apply to it.
//
// Playback is public and workspace-agnostic, like a CDN host: no
// workspace's Shield applies there (rules nil), so nothing is counted per
// project either; requests are counted in the edge's metrics with the apps
// (platform_edge_requests_total{kind="app"}, origin responses and errors
// likewise) and in the access log under the playback host.

// mediaTargetPrefix starts the shared-cache target of the playback host
// (followed by the origin), so playback entries never mix with a site's.
const mediaTargetPrefix = "media "

// Bounds of a playback path (the control plane's are the same or tighter).
const (
	mediaIDPrefix   = "med_"
	maxMediaIDLen   = 64
	maxMediaFileLen = 200
)

var (
	errMediaUpgrade = errors.New("edge: the media playback host does not forward upgrades")
	bodyMediaMethod = []byte("405 method not allowed: the playback host answers GET and HEAD\n")
	valAllowGetHead = []byte("GET, HEAD")
)

// compileMedia adds the playback host of m (nil: none) to t. It takes the
// place of a project's site of the same host.
func compileMedia(t *table, m *snapshot.Media) error {
	if m == nil {
		return nil
	}
	host := strings.ToLower(strings.TrimSuffix(m.Host, "."))
	if host == "" || strings.ContainsAny(host, ":/ ") {
		return fmt.Errorf("%w: media playback host %q", errSnapshot, m.Host)
	}
	base := strings.TrimRight(m.Origin, "/")
	o, err := mediaOrigins.get(base)
	if err != nil {
		return fmt.Errorf("%w: media playback host %s: %w", errSnapshot, host, err)
	}
	t.sites[host] = &site{host: host, kind: kindApp, target: rules.TargetServerApp,
		dep: &deployment{id: "media", target: mediaTargetPrefix + base, origin: o}}
	return nil
}

// mediaOrigins are the control plane's playback origins.
var mediaOrigins = newCPOriginPool(mediaTargetPrefix, mediaTransport{},
	func(next fwdClient) fwdClient { return mediaFwd{next: next} }, errMediaUpgrade)

// mediaFilter lets a playback request through (GET or HEAD of a playback
// path, its query dropped) and answers anything else itself into resp: 404
// for another path, 405 for another method. It reports whether req is to
// be forwarded.
func mediaFilter(req *fasthttp.Request, resp *fasthttp.Response) bool {
	u := req.URI()
	u.DisablePathNormalizing = true // written as received
	if !mediaPath(u.PathOriginal()) {
		localAnswer(resp, fasthttp.StatusNotFound, bodyNotFound)
		return false
	}
	if !req.Header.IsGet() && !req.Header.IsHead() {
		localAnswer(resp, fasthttp.StatusMethodNotAllowed, bodyMediaMethod)
		resp.Header.SetCanonical(hdrAllow, valAllowGetHead)
		return false
	}
	u.SetQueryStringBytes(nil)
	u.SetHashBytes(nil)
	return true
}

// mediaFwd is the playback origin's forwarding transport (forward.Client):
// the edge's own, behind mediaFilter.
type mediaFwd struct{ next fwdClient }

func (m mediaFwd) RoundTrip(req *fasthttp.Request, resp *fasthttp.Response, deadline time.Time) (bool, error) {
	if !mediaFilter(req, resp) {
		return false, nil
	}
	return m.next.RoundTrip(req, resp, deadline)
}

// mediaTransport puts mediaFilter in front of fasthttp's transport for
// requests sent with the HostClient's own Do (none on the serving path;
// the filter holds whichever way a request goes).
type mediaTransport struct{}

// RoundTrip implements fasthttp.RoundTripper.
func (mediaTransport) RoundTrip(hc *fasthttp.HostClient, req *fasthttp.Request, resp *fasthttp.Response) (bool, error) {
	if !mediaFilter(req, resp) {
		return false, nil
	}
	return fasthttp.DefaultTransport.RoundTrip(hc, req, resp)
}

// localAnswer makes resp a plain-text answer of the edge that no cache
// keeps.
func localAnswer(resp *fasthttp.Response, status int, body []byte) {
	resp.Reset()
	resp.SetStatusCode(status)
	resp.Header.SetContentTypeBytes(valTextPlain)
	resp.Header.SetCanonical(hdrCacheControl, valNoStore)
	resp.SetBodyRaw(body)
}

// mediaPath reports whether p (a request path as received, before any
// decoding) is a playback path: /media/<id>/<file> or
// /media/<id>/<dir>/<file>, where id is an asset id (med_ and lower-case
// letters and digits; so never "uploads" or "live"), and each later segment letters, digits, '_', '-' and '.', not
// starting with a dot. Percent-encoding is refused outright, so what is
// checked is what the control plane routes.
func mediaPath(p []byte) bool {
	rest, ok := strings.CutPrefix(string(p), snapshot.MediaPathPrefix)
	if !ok {
		return false
	}
	id, file, ok := strings.Cut(rest, "/")
	if !ok || !strings.HasPrefix(id, mediaIDPrefix) || len(id) == len(mediaIDPrefix) || len(id) > maxMediaIDLen ||
		file == "" || len(file) > maxMediaFileLen {
		return false
	}
	for i := len(mediaIDPrefix); i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	segs := 0
	for seg := range strings.SplitSeq(file, "/") {
		segs++
		if segs > 2 || seg == "" || seg[0] == '.' {
			return false
		}
		for i := 0; i < len(seg); i++ {
			c := seg[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
				return false
			}
		}
	}
	return true
}

var (
	_ fasthttp.RoundTripper = mediaTransport{}
	_ fwdClient             = mediaFwd{}
)
