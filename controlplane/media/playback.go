package media

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/svcplatform/platform/controlplane/api"
	"github.com/svcplatform/platform/controlplane/media/transcode"
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
	// cacheVODFile: a video's segments and poster never change once
	// written (immutable for a year in browsers), and a shared cache
	// revalidates them hourly, so a deleted video stops playing from the
	// edge within an hour (a revalidation of an unchanged file is a 304).
	// Segments of a video still being processed are served so too: each
	// appears under its name only once complete.
	cacheVODFile = "public, max-age=31536000, s-maxage=3600, immutable"
	// cacheVODPlaylist: a ready video's playlists do not change either;
	// five minutes bounds how long a deleted video keeps starting.
	cacheVODPlaylist = "public, max-age=300"
	// cacheGrowingPlaylist: the playlists of a video still being
	// processed name more segments with each one encoded and become VOD
	// playlists when the ladder is done: no cache keeps them.
	cacheGrowingPlaylist = "no-store"
	// cacheLiveFragment: live fragments are named by time, never reused
	// (rtmp: hls_fragment_naming system), and are gone from the playlist
	// after hls_playlist_length.
	cacheLiveFragment = "public, max-age=60"
	// cacheLivePlaylist: a live playlist changes with every fragment; a
	// shared cache answers at most one request a second to the origin per
	// edge, and serves the previous playlist while it fetches the next.
	cacheLivePlaylist = "public, max-age=1, stale-while-revalidate=1"
)

// maxGrowingPlaylist bounds a playlist of a video being processed, which
// is read whole to be served (an hour of 2-s segments is about 60 KB).
const maxGrowingPlaylist = 4 << 20

// playFile is a playback file, open.
type playFile struct {
	f         *os.File
	info      fs.FileInfo
	ct, cache string
	// growing is a playlist of a video still being processed: served
	// telling players to start at its beginning.
	growing bool
}

// openPlayback opens a public playback request's file: a ready video's
// HLS and poster; the HLS published so far of a video being processed
// (see Service.publish); a live channel's current HLS. Anything else is
// 404. Files are opened inside their directory only (no symbolic link
// leads out of it), and only regular files are served.
func (s *Service) openPlayback(ctx context.Context, id, file string) (playFile, error) {
	ct, ok := cleanPlaybackPath(file)
	if !ok || !validID(id) {
		return playFile{}, api.NotFound("media file")
	}
	r, err := getRecord(ctx, s.d.DB, id)
	if err != nil {
		return playFile{}, api.NotFound("media file")
	}
	playlist := strings.HasSuffix(file, ".m3u8")
	pf := playFile{ct: ct}
	var dirs []string
	switch {
	case r.Kind == KindVideo && r.Status == StatusReady:
		dirs = []string{filepath.Join(s.assetDir(id), hlsDir)}
		pf.cache = cacheVODFile
		if playlist {
			pf.cache = cacheVODPlaylist
		}
	case r.Kind == KindVideo && r.Status == StatusProcessing && !r.LiveSince.IsZero():
		// The encoder's output, then where it goes when the ladder is
		// done (moved from a sandbox's job directory, then renamed),
		// so a player is not cut off while it moves.
		dirs = []string{s.workingHLSDir(id), filepath.Join(s.assetDir(id), hlsTmpDir), filepath.Join(s.assetDir(id), hlsDir)}
		pf.cache = cacheVODFile
		if playlist {
			pf.cache, pf.growing = cacheGrowingPlaylist, true
		}
	case r.Kind == KindLive && s.live != nil:
		dirs = []string{filepath.Join(s.live.hlsDir(), id)}
		pf.cache = cacheLiveFragment
		if playlist {
			pf.cache = cacheLivePlaylist
		}
	default:
		return playFile{}, api.NotFound("media file")
	}
	for _, d := range dirs {
		if f, fi, err := openIn(d, file); err == nil {
			pf.f, pf.info = f, fi
			return pf, nil
		}
	}
	return playFile{}, api.NotFound("media file")
}

// workingHLSDir is where video id's HLS is written while it is encoded:
// the job directory's output (see newJob).
func (s *Service) workingHLSDir(id string) string {
	if sandboxed(s.d.Sandbox) {
		return filepath.Join(s.jobDir(id), hlsTmpDir)
	}
	return filepath.Join(s.assetDir(id), hlsTmpDir)
}

// openIn opens the regular file name (slash-separated) under dir without
// leaving dir through a symbolic link and without blocking on a pipe: the
// directory may be one a sandboxed program writes.
func openIn(dir, name string) (*os.File, fs.FileInfo, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, nil, err
	}
	defer root.Close()
	f, err := root.OpenFile(filepath.FromSlash(name), os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("media: %s is not a regular file", name)
	}
	return f, fi, nil
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
	pf, err := s.openPlayback(r.Context(), id, file)
	if err != nil {
		return err
	}
	defer pf.f.Close()
	var body io.ReadSeeker = pf.f
	mod := pf.info.ModTime()
	if pf.growing {
		// No Last-Modified: the playlist may change within its second.
		mod = time.Time{}
		b, err := io.ReadAll(io.LimitReader(pf.f, maxGrowingPlaylist+1))
		if err != nil || len(b) > maxGrowingPlaylist {
			return api.NotFound("media file")
		}
		body = bytes.NewReader(transcode.StartAtBeginning(b))
	}
	h := w.Header()
	h.Set("Content-Type", pf.ct)
	h.Set("Cache-Control", pf.cache)
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("X-Content-Type-Options", "nosniff")
	http.ServeContent(w, r, "", mod, body)
	return nil
}
