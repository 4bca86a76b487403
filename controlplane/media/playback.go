package media

import (
	"context"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/svcplatform/platform/controlplane/api"
)

// contentTypes are the playback files served, by extension.
var contentTypes = map[string]string{
	".m3u8": "application/vnd.apple.mpegurl",
	".ts":   "video/mp2t",
	".m4s":  "video/iso.segment",
	".mp4":  "video/mp4",
	".jpg":  "image/jpeg",
}

// cleanPlaybackPath checks a file path under an asset: relative, at most
// one directory deep, no dot segments, a served extension. It returns the
// content type.
func cleanPlaybackPath(p string) (string, bool) {
	if p == "" || len(p) > 200 || strings.HasPrefix(p, "/") || strings.Contains(p, "\\") || path.Clean(p) != p {
		return "", false
	}
	parts := strings.Split(p, "/")
	if len(parts) > 2 {
		return "", false
	}
	for _, seg := range parts {
		if seg == "" || seg == "." || seg == ".." || strings.HasPrefix(seg, ".") {
			return "", false
		}
		for i := 0; i < len(seg); i++ {
			c := seg[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
				return "", false
			}
		}
	}
	ct, ok := contentTypes[path.Ext(p)]
	return ct, ok
}

// Cache-Control of playback files, for browsers and for shared caches
// (the edge's playback host; see README.md).
const (
	// cacheVODFile: a ready video's segments and poster never change
	// (immutable for a year in browsers), and a shared cache revalidates
	// them hourly, so a deleted video stops playing from the edge within
	// an hour (a revalidation of an unchanged file is a 304).
	cacheVODFile = "public, max-age=31536000, s-maxage=3600, immutable"
	// cacheVODPlaylist: a ready video's playlists do not change either;
	// five minutes bounds how long a deleted video keeps starting.
	cacheVODPlaylist = "public, max-age=300"
	// cacheLiveFragment: live fragments are named by time, never reused
	// (rtmp: hls_fragment_naming system), and are gone from the playlist
	// after hls_playlist_length.
	cacheLiveFragment = "public, max-age=60"
	// cacheLivePlaylist: a live playlist changes with every fragment; a
	// shared cache answers at most one request a second to the origin per
	// edge, and serves the previous playlist while it fetches the next.
	cacheLivePlaylist = "public, max-age=1, stale-while-revalidate=1"
)

// PlaybackFile resolves a public playback request to a file on disk, its
// content type and its Cache-Control: a ready video's HLS and poster, or a
// live channel's current HLS. Anything else is 404.
func (s *Service) PlaybackFile(ctx context.Context, id, file string) (string, string, string, error) {
	ct, ok := cleanPlaybackPath(file)
	if !ok || !validID(id) {
		return "", "", "", api.NotFound("media file")
	}
	r, err := getRecord(ctx, s.d.DB, id)
	if err != nil {
		return "", "", "", api.NotFound("media file")
	}
	var full, cache string
	switch {
	case r.Kind == KindVideo && r.Status == StatusReady:
		full = filepath.Join(s.assetDir(id), "hls", filepath.FromSlash(file))
		cache = cacheVODFile
		if strings.HasSuffix(file, ".m3u8") {
			cache = cacheVODPlaylist
		}
	case r.Kind == KindLive && s.live != nil:
		full = filepath.Join(s.live.hlsDir(), id, filepath.FromSlash(file))
		cache = cacheLiveFragment
		if strings.HasSuffix(file, ".m3u8") {
			cache = cacheLivePlaylist
		}
	default:
		return "", "", "", api.NotFound("media file")
	}
	if fi, err := os.Stat(full); err != nil || !fi.Mode().IsRegular() {
		return "", "", "", api.NotFound("media file")
	}
	return full, ct, cache, nil
}

// validID tells whether id looks like an asset id.
func validID(id string) bool {
	if !strings.HasPrefix(id, "med_") || len(id) != 24 {
		return false
	}
	for i := 4; i < len(id); i++ {
		c := id[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z') {
			return false
		}
	}
	return true
}

// servePlayback writes a playback file with CORS open to any origin (the
// player runs on the customer's site).
func (s *Service) servePlayback(w http.ResponseWriter, r *http.Request, id, file string) error {
	full, ct, cache, err := s.PlaybackFile(r.Context(), id, file)
	if err != nil {
		return err
	}
	f, err := os.Open(full)
	if err != nil {
		return api.NotFound("media file")
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return api.NotFound("media file")
	}
	h := w.Header()
	h.Set("Content-Type", ct)
	h.Set("Cache-Control", cache)
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("X-Content-Type-Options", "nosniff")
	http.ServeContent(w, r, "", fi.ModTime(), f)
	return nil
}
