package media

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane/media/transcode"
	"github.com/svcplatform/platform/controlplane/plans"
)

// gatedRunner runs the programs as transcode.Direct does, except that the
// HLS encode reads its source through a named pipe in the job directory
// that the runner fills, at most twice as fast as the video plays
// (ffmpeg's -readrate 2), until the test holds it: the encode then cannot
// get past what it was given, so the ladder is not done before release is
// closed, whatever the machine's speed.
type gatedRunner struct {
	src     []byte
	held    atomic.Bool
	release chan struct{}
}

var _ transcode.Runner = (*gatedRunner)(nil)

// gatedSource is the pipe's name in the job directory.
const gatedSource = "gate.ts"

// hold stops feeding the encode after the piece being written.
func (g *gatedRunner) hold() { g.held.Store(true) }

func (g *gatedRunner) Run(ctx context.Context, dir string, argv []string, stdout, stderr io.Writer) error {
	i := slices.Index(argv, "file:"+sourceFile)
	if !slices.Contains(argv, "-master_pl_name") || i < 1 || argv[i-1] != "-i" {
		return transcode.Direct{}.Run(ctx, dir, argv, stdout, stderr)
	}
	argv = slices.Concat(argv[:i-1], []string{"-readrate", "2", "-i", "file:" + gatedSource}, argv[i+1:])
	fifo := filepath.Join(dir, gatedSource)
	os.Remove(fifo)
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		return err
	}
	defer os.Remove(fifo)
	// Read-write: opening never waits for the reader, and Close ends a
	// write ffmpeg no longer reads.
	w, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	fed := make(chan struct{})
	go func() {
		defer close(fed)
		const piece = 16 << 10
		for off := 0; off < len(g.src); off += piece {
			if g.held.Load() {
				select {
				case <-g.release:
					g.held.Store(false)
				case <-ctx.Done():
					return
				}
			}
			if _, err := w.Write(g.src[off:min(off+piece, len(g.src))]); err != nil {
				return
			}
		}
		w.Close() // the end of the file for ffmpeg
	}()
	err = transcode.Direct{}.Run(ctx, dir, argv, stdout, stderr)
	w.Close()
	<-fed
	return err
}

// fetched is a playback answer.
type fetched struct {
	status int
	header http.Header
	body   []byte
}

// fetch GETs u with c.
func fetch(t *testing.T, c *http.Client, u string) fetched {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	return fetched{resp.StatusCode, resp.Header, b}
}

// client is an HTTP client of the playback edge: it trusts the edge's CA
// and reaches the playback host on 127.0.0.1.
func (pe *playbackEdge) client() *http.Client {
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(pe.base, "https://"))
	var d net.Dialer
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pe.edge.CA().Pool()},
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, "127.0.0.1:"+port)
		}}}
}

// growingClip is a 16-second 256x400 test pattern with a tone in MPEG-TS
// (ladder 360p and 400p), which ffmpeg reads from a pipe as it comes.
func growingClip(t *testing.T) []byte {
	t.Helper()
	src := genMedia(t, t.TempDir(), "clip16.ts", "-f", "lavfi", "-i", "testsrc=size=256x400:rate=25:duration=16",
		"-f", "lavfi", "-i", "sine=frequency=440:duration=16", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p",
		"-c:a", "aac", "-shortest", "-f", "mpegts")
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// processGated uploads src as a new video and processes it, its encode
// held from when it becomes playable. It returns the video's id, the function letting the rest of
// the file through, and the end of processing.
func processGated(t *testing.T, e *env, src []byte) (string, func(), <-chan error) {
	t.Helper()
	gate := &gatedRunner{src: src, release: make(chan struct{})}
	e.svc.tools.Runner = gate
	playable := make(chan string, 1)
	e.svc.onPlayable = func(id string) {
		gate.hold()
		playable <- id
	}
	path := filepath.Join(t.TempDir(), "clip16.ts")
	if err := os.WriteFile(path, src, 0o644); err != nil {
		t.Fatal(err)
	}
	id, up := e.createVideo("Growing")
	if r := e.upload(up, "file", path); r.Status != 201 {
		t.Fatalf("upload: %d %s", r.Status, r.Body)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var perr error
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		perr = e.svc.Process(ctx, id)
	}()
	release := sync.OnceFunc(func() { close(gate.release) })
	t.Cleanup(func() {
		release()
		cancel()
		<-ended
	})
	select {
	case got := <-playable:
		if got != id {
			t.Fatalf("playable %s, want %s", got, id)
		}
	case <-ended:
		t.Fatalf("processing ended before the video was playable: %v; asset %+v", perr, e.asset(id))
	case <-time.After(2 * time.Minute):
		t.Fatal("the video was not playable within 2 minutes of its encode starting")
	}
	done := make(chan error, 1)
	go func() {
		<-ended
		done <- perr
	}()
	return id, release, done
}

// segmentCodecs is what ffprobe reads in an MPEG-TS segment.
func segmentCodecs(t *testing.T, seg []byte) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "seg.ts")
	if err := os.WriteFile(f, seg, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("ffprobe", "-v", "error", "-print_format", "json", "-show_streams", f).Output()
	if err != nil {
		t.Fatalf("ffprobe segment: %v", err)
	}
	var pj probeStreams
	if err := json.Unmarshal(out, &pj); err != nil {
		t.Fatal(err)
	}
	return pj.codecs()
}

// A video plays while it is processed: once the first segments of every
// rendition are encoded the asset says playable with its playback URL, the
// master and renditions' playlists are served (EVENT playlists without an
// end, starting at the beginning, no-store through the edge) and their
// segments are whole (ffprobe reads them; immutable, cached by the edge),
// before the ladder is done. When it is, the playlists are VOD playlists
// naming the same segments, which the edge still holds.
func TestPlayableWhileProcessing(t *testing.T) {
	needTools(t, "ffmpeg", "ffprobe")
	pe := newPlaybackEdge(t)
	e := newEnv(t, plans.Pro, Config{NoWorkers: true, PlaybackBaseURL: pe.base, SegmentSeconds: 2})
	pe.start(t, e.srv.URL)
	ec := pe.client()
	id, release, done := processGated(t, e, growingClip(t))

	a := e.asset(id)
	if a.Status != StatusProcessing || !a.Playable || a.PlayableAt.IsZero() || !a.PlayableAt.Equal(a.UpdatedAt) ||
		a.PlaybackURL != pe.base+"/media/"+id+"/master.m3u8" || strings.Join(a.Renditions, ",") != "360p,400p" ||
		a.Duration < 15.5 || a.Duration > 16.5 || a.Height != 400 || a.PosterURL != "" || a.StoredBytes != 0 {
		t.Fatalf("playable while processing: %+v", a)
	}

	type seg struct{ url, body string }
	var held []seg
	for _, base := range []string{pe.base, e.srv.URL} { // through the edge, and the origin itself
		c := ec
		if base == e.srv.URL {
			c = e.srv.Client()
		}
		master := fetch(t, c, base+"/media/"+id+"/master.m3u8")
		uris, _, tags := playlist(t, master.body)
		if master.status != 200 || master.header.Get("Cache-Control") != cacheGrowingPlaylist || len(uris) != 2 ||
			!slices.Contains(tags, "#EXT-X-START:TIME-OFFSET=0") {
			t.Fatalf("%s: master while processing: %d %v\n%s", base, master.status, master.header, master.body)
		}
		mu, _ := url.Parse(base + "/media/" + id + "/master.m3u8")
		for _, u := range uris {
			ru, _ := mu.Parse(u)
			var pl fetched
			for i := range 2 { // never from a cache
				pl = fetch(t, c, ru.String())
				if pl.status != 200 || pl.header.Get("Cache-Control") != cacheGrowingPlaylist || pl.header.Get("X-Cache") == "HIT" {
					t.Fatalf("%s: rendition playlist %d while processing: %d %v", base, i+1, pl.status, pl.header)
				}
			}
			segs, durs, tags := playlist(t, pl.body)
			var encoded float64
			for _, d := range durs {
				encoded += d
			}
			if len(segs) == 0 || !slices.Contains(tags, "#EXT-X-PLAYLIST-TYPE:EVENT") || slices.Contains(tags, "#EXT-X-ENDLIST") ||
				!slices.Contains(tags, "#EXT-X-START:TIME-OFFSET=0") || encoded > 14 {
				t.Fatalf("%s: rendition %s while processing (the encode is held before the end of 16 s):\n%s", base, u, pl.body)
			}
			for _, s := range segs {
				su, _ := ru.Parse(s)
				r := fetch(t, c, su.String())
				if r.status != 200 || r.header.Get("Content-Type") != "video/mp2t" || r.header.Get("Cache-Control") != cacheVODFile {
					t.Fatalf("%s: segment %s while processing: %d %v", base, s, r.status, r.header)
				}
				if codecs := segmentCodecs(t, r.body); codecs != "h264,aac" {
					t.Fatalf("%s: segment %s: codecs %q", base, s, codecs)
				}
				if base == pe.base {
					held = append(held, seg{su.String(), string(r.body)})
				}
			}
		}
		// A segment not written yet is a 404 no cache keeps.
		if r := fetch(t, c, base+"/media/"+id+"/360p/seg_0099.ts"); r.status != 404 || r.header.Get("Cache-Control") != "no-store" {
			t.Fatalf("%s: segment not written yet: %d %v", base, r.status, r.header)
		}
	}
	if a := e.asset(id); a.Status != StatusProcessing {
		t.Fatalf("status %s before the encode was let through", a.Status)
	}

	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	a = e.asset(id)
	if a.Status != StatusReady || !a.Playable || a.PlayableAt.IsZero() || a.PosterURL == "" || strings.Join(a.Renditions, ",") != "360p,400p" {
		t.Fatalf("ready: %+v", a)
	}
	for _, u := range []string{"360p/index.m3u8", "400p/index.m3u8"} {
		r := fetch(t, ec, pe.base+"/media/"+id+"/"+u)
		segs, durs, tags := playlist(t, r.body)
		var total float64
		for _, d := range durs {
			total += d
		}
		if r.status != 200 || r.header.Get("Cache-Control") != cacheVODPlaylist || !slices.Contains(tags, "#EXT-X-PLAYLIST-TYPE:VOD") ||
			tags[len(tags)-1] != "#EXT-X-ENDLIST" || slices.Contains(tags, "#EXT-X-PLAYLIST-TYPE:EVENT") ||
			slices.ContainsFunc(tags, func(s string) bool { return strings.HasPrefix(s, "#EXT-X-START") }) ||
			total < 15.5 || len(segs) < 7 {
			t.Fatalf("%s when ready: %d %v\n%s", u, r.status, r.header, r.body)
		}
	}
	// The segments played while processing are the ready video's, and
	// the edge answers them from its cache.
	for _, s := range held {
		r := fetch(t, ec, s.url)
		if r.status != 200 || r.header.Get("X-Cache") != "HIT" || string(r.body) != s.body {
			t.Fatalf("segment %s when ready: %d X-Cache %q, same bytes %v", s.url, r.status, r.header.Get("X-Cache"), string(r.body) == s.body)
		}
		if origin := fetch(t, e.srv.Client(), e.srv.URL+strings.TrimPrefix(s.url, pe.base)); !bytes.Equal(origin.body, []byte(s.body)) {
			t.Fatalf("segment %s changed when ready", s.url)
		}
	}
}

// Headless Chromium plays a video with hls.js from the playback edge
// while the video is still being processed, from its beginning.
func TestPlayableWhileProcessingInBrowser(t *testing.T) {
	needTools(t, "ffmpeg", "ffprobe")
	p := newPlayer(t)
	pe := newPlaybackEdge(t)
	e := newEnv(t, plans.Pro, Config{NoWorkers: true, PlaybackBaseURL: pe.base, SegmentSeconds: 2})
	pe.start(t, e.srv.URL)
	id, release, done := processGated(t, e, growingClip(t))
	a := e.asset(id)
	if a.Status != StatusProcessing || !a.Playable {
		t.Fatalf("asset %+v", a)
	}
	p.playing(t, a.PlaybackURL, 2)
	if a := e.asset(id); a.Status != StatusProcessing {
		t.Fatalf("status %s while the encode is held", a.Status)
	}
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// The files of a video being processed are served from the encoder's
// output only while the video is published, only as regular files inside
// that directory (the encoder may run in a sandbox and write anything
// there), and from where the output goes once the ladder is done.
func TestGrowingPlaybackFiles(t *testing.T) {
	e := newEnv(t, plans.Pro, Config{NoWorkers: true})
	id, _ := e.createVideo("Growing")
	ctx := context.Background()
	work := e.svc.workingHLSDir(id)
	outside := t.TempDir()
	for name, body := range map[string]string{
		"master.m3u8":      "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1000\n360p/index.m3u8\n",
		"360p/index.m3u8":  "#EXTM3U\n#EXT-X-PLAYLIST-TYPE:EVENT\n#EXTINF:4,\nseg_0000.ts\n",
		"360p/seg_0000.ts": "segment",
	} {
		os.MkdirAll(filepath.Dir(filepath.Join(work, name)), 0o755)
		os.WriteFile(filepath.Join(work, name), []byte(body), 0o644)
	}
	os.WriteFile(filepath.Join(outside, "x.ts"), []byte("outside"), 0o644)
	os.Symlink("/etc/passwd", filepath.Join(work, "360p", "passwd.ts"))
	os.Symlink(outside, filepath.Join(work, "out"))
	if err := syscall.Mkfifo(filepath.Join(work, "360p", "fifo.ts"), 0o644); err != nil {
		t.Fatal(err)
	}
	final := filepath.Join(e.svc.assetDir(id), hlsDir, "720p")
	os.MkdirAll(final, 0o755)
	os.WriteFile(filepath.Join(final, "seg_0000.ts"), []byte("moved"), 0o644)

	set := func(status string, published bool) {
		t.Helper()
		cols := map[string]any{"status": status, "live_since": ""}
		if published {
			cols["live_since"] = time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
		}
		if _, err := update(ctx, e.svc.d.DB, id, cols, ""); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name      string
		published bool
		file      string
		status    int
		cache     string
		body      string
	}{
		{"master", true, "master.m3u8", 200, cacheGrowingPlaylist, "#EXTM3U\n#EXT-X-START:TIME-OFFSET=0\n#EXT-X-STREAM-INF:BANDWIDTH=1000\n360p/index.m3u8\n"},
		{"rendition", true, "360p/index.m3u8", 200, cacheGrowingPlaylist, "#EXTM3U\n#EXT-X-START:TIME-OFFSET=0\n#EXT-X-PLAYLIST-TYPE:EVENT\n#EXTINF:4,\nseg_0000.ts\n"},
		{"segment", true, "360p/seg_0000.ts", 200, cacheVODFile, "segment"},
		{"moved to the asset's directory", true, "720p/seg_0000.ts", 200, cacheVODFile, "moved"},
		{"not written yet", true, "360p/seg_0001.ts", 404, "no-store", ""},
		{"link out of the directory", true, "360p/passwd.ts", 404, "no-store", ""},
		{"directory link out of it", true, "out/x.ts", 404, "no-store", ""},
		{"pipe", true, "360p/fifo.ts", 404, "no-store", ""},
		{"not published", false, "360p/index.m3u8", 404, "no-store", ""},
		{"not published segment", false, "360p/seg_0000.ts", 404, "no-store", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set(StatusProcessing, tc.published)
			r := fetch(t, e.srv.Client(), e.srv.URL+"/media/"+id+"/"+tc.file)
			if r.status != tc.status || r.header.Get("Cache-Control") != tc.cache || (tc.body != "" && string(r.body) != tc.body) {
				t.Fatalf("%d %q %q, want %d %q %q", r.status, r.header.Get("Cache-Control"), r.body, tc.status, tc.cache, tc.body)
			}
			if tc.status == 200 && (r.header.Get("Access-Control-Allow-Origin") != "*" || r.header.Get("Last-Modified") != "" && tc.cache == cacheGrowingPlaylist) {
				t.Fatalf("headers %v", r.header)
			}
			if strings.Contains(string(r.body), e.svc.cfg.Dir) || strings.Contains(string(r.body), "root:") {
				t.Fatalf("answer shows a host path or file: %s", r.body)
			}
		})
	}
	// Asset status decides: a failed video plays nothing.
	set(StatusFailed, true)
	if r := fetch(t, e.srv.Client(), e.srv.URL+"/media/"+id+"/360p/seg_0000.ts"); r.status != 404 {
		t.Fatalf("failed video's segment: %d", r.status)
	}
}
