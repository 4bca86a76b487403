package edge

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/platform/controlplane"
	"github.com/svcplatform/platform/controlplane/cptest"
	"github.com/svcplatform/platform/controlplane/edgesync"
	"github.com/svcplatform/platform/controlplane/edgesync/snapshot"
	"github.com/svcplatform/platform/controlplane/media"
	"github.com/svcplatform/platform/controlplane/media/rtmp"
)

// mediaHost is the playback host of the media end-to-end tests.
const mediaHost = "media.apps.test"

// needProgram skips a test when a program is absent (naming its Debian
// package), and fails it under CI.
func needProgram(t *testing.T, prog, pkg string) {
	t.Helper()
	if _, err := exec.LookPath(prog); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s not installed (apt-get install %s): the media tests must run in CI", prog, pkg)
		}
		t.Skipf("%s not installed: apt-get install %s", prog, pkg)
	}
}

// newMediaHarness starts a control plane whose playback URLs name the
// playback host, and an edge serving that host from it (the control plane
// publishes the host with SetMedia, as `platform serve` does).
func newMediaHarness(t *testing.T, configure func(*controlplane.Config)) *harness {
	t.Helper()
	env := cptest.New(t, cptest.Options{Configure: func(c *controlplane.Config) {
		c.Media.PlaybackBaseURL = "https://" + mediaHost
		if configure != nil {
			configure(c)
		}
	}})
	if err := env.CP.EdgeSync().SetMedia(context.Background(), snapshot.Media{Host: mediaHost, Origin: env.Server.URL}); err != nil {
		t.Fatal(err)
	}
	tok, _, err := env.CP.EdgeSync().MintToken(context.Background(), "test edge")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{
		HTTPAddr: "127.0.0.1:0", HTTPSAddr: "127.0.0.1:0", AppsDomain: "apps.test", DataDir: t.TempDir(),
		ControlPlane: env.Server.URL, Token: tok, Now: env.Clock.Now, Logger: quiet, SyncWait: 10 * time.Second,
		Locator: fixedLocator{'U', 'S'},
		// The control plane's own address is a listener of the platform:
		// the playback origin is reached all the same (app origins never).
		OwnListeners: []string{env.Server.Listener.Addr().String()},
	}
	h := &harness{t: t, env: env, cfg: cfg}
	h.start()
	t.Cleanup(h.stop)
	h.synced()
	return h
}

// readyVideo uploads a 4-second test pattern to a new video and waits
// until it is processed; it returns the asset as the API reads it.
func readyVideo(t *testing.T, h *harness) media.Asset {
	t.Helper()
	needProgram(t, "ffmpeg", "ffmpeg")
	clip := filepath.Join(t.TempDir(), "clip.mp4")
	gen := exec.Command("ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-y",
		"-f", "lavfi", "-i", "testsrc=size=160x120:rate=10:duration=4", "-f", "lavfi", "-i", "sine=frequency=440:duration=4",
		"-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "aac", "-shortest", clip)
	if out, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg: %v: %s", err, out)
	}
	project := h.env.CreateProject("films")
	var c media.Created
	h.env.Owner.Must(201, "POST", "/api/projects/"+project+"/media", map[string]any{"name": "clip", "kind": "video"}).JSON(t, &c)
	if r := uploadFile(t, c.UploadURL, clip); r.StatusCode != 201 {
		t.Fatalf("upload: %d", r.StatusCode)
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		var a media.AssetAnswer
		h.env.Owner.Must(200, "GET", "/api/media/"+c.Asset.ID, nil).JSON(t, &a)
		switch a.Asset.Status {
		case media.StatusReady:
			return a.Asset
		case media.StatusFailed:
			t.Fatalf("processing failed: %+v", a.Asset.Failure)
		}
		if time.Now().After(deadline) {
			t.Fatalf("video still %s", a.Asset.Status)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// uploadFile posts the file at path to url as the multipart field file.
func uploadFile(t *testing.T, url, path string) *http.Response {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	part, err := mw.CreateFormFile("file", filepath.Base(path))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	part.Write(data)
	mw.Close()
	resp, err := http.Post(url, mw.FormDataContentType(), &body)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// direct reads path from the control plane itself.
func direct(t *testing.T, h *harness, path string) *response {
	t.Helper()
	resp, err := http.Get(h.env.Server.URL + path)
	return read(t, resp, err)
}

// firstURI returns the first URI line of an HLS playlist.
func firstURI(t *testing.T, playlist string) string {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(playlist))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			return l
		}
	}
	t.Fatalf("no URI in playlist:\n%s", playlist)
	return ""
}

// A ready video plays through the playback host: the master playlist, a
// rendition playlist, a segment and the poster come from the control plane
// once (MISS) and from the edge's cache after (HIT), byte for byte as the
// control plane serves them, with CORS open; nothing but playback paths is
// forwarded.
func TestMediaPlaybackThroughEdge(t *testing.T) {
	h := newMediaHarness(t, nil)
	a := readyVideo(t, h)
	prefix := "https://" + mediaHost + "/media/" + a.ID + "/"
	if !strings.HasPrefix(a.PlaybackURL, prefix) || !strings.HasPrefix(a.PosterURL, prefix) {
		t.Fatalf("playback %q, poster %q: not on the playback host", a.PlaybackURL, a.PosterURL)
	}
	base := "/media/" + a.ID + "/"
	master := strings.TrimPrefix(a.PlaybackURL, "https://"+mediaHost)
	rendition := base + firstURI(t, direct(t, h, master).body)
	segment := base + path2(rendition, firstURI(t, direct(t, h, rendition).body))
	poster := strings.TrimPrefix(a.PosterURL, "https://"+mediaHost)
	for _, tc := range []struct{ name, path, ctype string }{
		{"master playlist", master, "application/vnd.apple.mpegurl"},
		{"rendition playlist", rendition, "application/vnd.apple.mpegurl"},
		{"segment", segment, "video/mp2t"},
		{"poster", poster, "image/jpeg"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := direct(t, h, tc.path)
			if want.status != 200 {
				t.Fatalf("control plane: %d %s", want.status, want.body)
			}
			for i, xcache := range []string{"MISS", "HIT"} {
				r := h.get(mediaHost, tc.path, "Origin: https://customer.example")
				if r.status != 200 || r.header.Get("X-Cache") != xcache {
					t.Fatalf("fetch %d: %d X-Cache %q, want 200 %s", i+1, r.status, r.header.Get("X-Cache"), xcache)
				}
				if r.body != want.body {
					t.Fatalf("fetch %d: %d bytes differ from the control plane's %d", i+1, len(r.body), len(want.body))
				}
				if r.header.Get("Content-Type") != tc.ctype || r.header.Get("Access-Control-Allow-Origin") != "*" ||
					r.header.Get("Cache-Control") != want.header.Get("Cache-Control") {
					t.Fatalf("fetch %d: header %v", i+1, r.header)
				}
			}
		})
	}

	// A second video waits for its file: its upload URL is not reachable
	// through the playback host (and stays unused).
	project := h.env.CreateProject("other")
	var c media.Created
	h.env.Owner.Must(201, "POST", "/api/projects/"+project+"/media", map[string]any{"name": "later", "kind": "video"}).JSON(t, &c)
	uploadPath := strings.TrimPrefix(c.UploadURL, h.env.Server.URL)
	for _, tc := range []struct {
		name, method, path string
		status             int
	}{
		{"root", "GET", "/", 404},
		{"API", "GET", "/api/media/" + a.ID, 404},
		{"edge protocol", "GET", snapshot.ConfigPath, 404},
		{"media root", "GET", "/media/", 404},
		{"asset without file", "GET", "/media/" + a.ID, 404},
		{"upload URL", "POST", uploadPath, 404},
		{"upload URL read", "GET", uploadPath, 404},
		{"live hook", "POST", "/media/live/hooks/x/publish", 404},
		{"encoded dot segments", "GET", "/media/%2e%2e/api/media/" + a.ID, 404},
		{"encoded slash", "GET", "/media/" + a.ID + "%2fmaster.m3u8", 404},
		{"dot file", "GET", base + ".hidden.m3u8", 404},
		{"too deep", "GET", base + "a/b/c.ts", 404},
		{"missing file", "GET", base + "nope.m3u8", 404},
		{"unknown asset", "GET", "/media/med_aaaaaaaaaaaaaaaaaaaa/master.m3u8", 404},
		{"HEAD of a playback file", "HEAD", master, 200},
		{"POST to a playback file", "POST", master, 405},
		{"DELETE of a playback file", "DELETE", master, 405},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.do(tc.method, mediaHost, tc.path, strings.NewReader(""))
			if r.status != tc.status {
				t.Fatalf("%s %s: %d, want %d: %s", tc.method, tc.path, r.status, tc.status, r.body)
			}
		})
	}
	// The refused POST left the cached master playlist in place.
	if r := h.get(mediaHost, master); r.header.Get("X-Cache") != "HIT" {
		t.Fatalf("master after a POST: X-Cache %q", r.header.Get("X-Cache"))
	}
	var later media.AssetAnswer
	h.env.Owner.Must(200, "GET", "/api/media/"+c.Asset.ID, nil).JSON(t, &later)
	if later.Asset.Status != media.StatusPendingUpload {
		t.Fatalf("the video behind the refused upload is %s", later.Asset.Status)
	}
	// Not an edge answer from elsewhere: the same paths reach the control
	// plane directly (the playback route is its public one).
	if r := direct(t, h, master); r.status != 200 {
		t.Fatalf("direct master: %d", r.status)
	}
}

// path2 resolves a URI of a rendition playlist (relative to it) to a path
// under the asset.
func path2(renditionPath, uri string) string {
	parts := strings.Split(renditionPath, "/") // "", "media", id, dir, file
	if len(parts) == 5 {
		return parts[3] + "/" + uri
	}
	return uri
}

// The playback host is published and withdrawn with the control plane's
// configuration, replaces a project's site of the same name, and a bad
// host or origin is refused.
func TestMediaHostConfiguration(t *testing.T) {
	h := newMediaHarness(t, nil)
	ctx := context.Background()
	es := h.env.CP.EdgeSync()
	if r := h.get(mediaHost, "/media/med_aaaaaaaaaaaaaaaaaaaa/master.m3u8"); r.status != 404 || r.header.Get("X-Cache") != "MISS" {
		t.Fatalf("unknown asset through the playback host: %d %q", r.status, r.header.Get("X-Cache"))
	}
	v := es.Version()
	if err := es.SetMedia(ctx, snapshot.Media{Host: mediaHost, Origin: h.env.Server.URL}); err != nil || es.Version() != v {
		t.Fatalf("same media again: %v, version %d -> %d", err, v, es.Version())
	}
	for _, m := range []snapshot.Media{
		{Host: "", Origin: h.env.Server.URL},
		{Host: "media.apps.test:8443", Origin: h.env.Server.URL},
		{Host: mediaHost, Origin: "ftp://127.0.0.1"},
		{Host: mediaHost, Origin: h.env.Server.URL + "/api"},
		{Host: mediaHost, Origin: "http://u:p@127.0.0.1:1"},
		{Host: "media apps.test", Origin: h.env.Server.URL},
		{Host: "media.apps.test/x", Origin: h.env.Server.URL},
	} {
		if err := es.SetMedia(ctx, m); !errors.Is(err, edgesync.ErrInvalidMedia) {
			t.Fatalf("SetMedia(%+v): %v, want ErrInvalidMedia", m, err)
		}
	}
	if err := es.SetMedia(ctx, snapshot.Media{}); err != nil {
		t.Fatal(err)
	}
	h.synced()
	if r := h.get(mediaHost, "/media/med_aaaaaaaaaaaaaaaaaaaa/master.m3u8"); r.status != 404 || r.header.Get("X-Cache") != "" {
		t.Fatalf("withdrawn playback host: %d %q", r.status, r.header.Get("X-Cache"))
	}
}

// A live channel's playlist through the playback host follows the stream:
// kept a second (stale-while-revalidate a second more), then fetched
// again, never stuck; its fragments are cached.
func TestMediaLivePlaylistThroughEdge(t *testing.T) {
	needProgram(t, "ffmpeg", "ffmpeg")
	needProgram(t, "nginx", "nginx")
	var probe rtmp.Config
	if err := probe.Find(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%v: apt-get install nginx libnginx-mod-rtmp", err)
		}
		t.Skipf("%v: apt-get install nginx libnginx-mod-rtmp", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rtmpAddr := ln.Addr().String()
	ln.Close()
	h := newMediaHarness(t, func(c *controlplane.Config) {
		c.Media.Live = &media.LiveConfig{Listen: rtmpAddr, UpdateSeconds: 1}
	})
	project := h.env.CreateProject("show")
	var c media.Created
	h.env.Owner.Must(201, "POST", "/api/projects/"+project+"/media", map[string]any{"name": "Show", "kind": "live"}).JSON(t, &c)
	h.env.Owner.Must(200, "PATCH", "/api/media/"+c.Asset.ID, map[string]any{"action": "go-live"})
	if !strings.HasPrefix(c.Asset.PlaybackURL, "https://"+mediaHost+"/media/") {
		t.Fatalf("live playback URL %q", c.Asset.PlaybackURL)
	}
	playlist := strings.TrimPrefix(c.Asset.PlaybackURL, "https://"+mediaHost)

	pub := exec.Command("ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-re",
		"-f", "lavfi", "-i", "testsrc=size=160x120:rate=10", "-f", "lavfi", "-i", "sine=frequency=440",
		"-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-g", "10", "-pix_fmt", "yuv420p",
		"-c:a", "aac", "-t", "120", "-f", "flv", c.IngestURL+"/"+c.StreamKey)
	if err := pub.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { pub.Wait(); close(exited) }()
	t.Cleanup(func() { pub.Process.Kill(); <-exited })

	// The first playlist with a fragment, through the edge (the misses
	// before it are 404s, which are not kept).
	var first *response
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := h.get(mediaHost, playlist)
		if r.status == 200 && strings.Contains(r.body, ".ts") {
			first = r
			break
		}
		select {
		case <-exited:
			t.Fatal("the publisher ended")
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no live playlist through the edge: %d %s", r.status, r.body)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if first.header.Get("Cache-Control") != "public, max-age=1, stale-while-revalidate=1" {
		t.Fatalf("live playlist Cache-Control %q", first.header.Get("Cache-Control"))
	}
	// Within its second it is the cache's (once the cache's asynchronous
	// write is applied).
	h.edge.cache.Wait()
	if r := h.get(mediaHost, playlist); r.header.Get("X-Cache") != "HIT" || r.body != first.body {
		t.Fatalf("live playlist again: X-Cache %q", r.header.Get("X-Cache"))
	}
	// A fragment is cached like any segment.
	frag := firstURI(t, first.body)
	fragPath := "/media/" + c.Asset.ID + "/" + frag
	if r := h.get(mediaHost, fragPath); r.status != 200 || r.header.Get("Content-Type") != "video/mp2t" {
		t.Fatalf("fragment %s: %d %v", frag, r.status, r.header)
	}
	h.edge.cache.Wait()
	if r := h.get(mediaHost, fragPath); r.header.Get("X-Cache") != "HIT" {
		t.Fatalf("fragment again: X-Cache %q", r.header.Get("X-Cache"))
	}
	// The stream goes on: once the control plane's playlist moved on and
	// the cached one is older than max-age + stale-while-revalidate, the
	// edge answers the new one.
	deadline = time.Now().Add(30 * time.Second)
	for direct(t, h, playlist).body == first.body {
		if time.Now().After(deadline) {
			t.Fatal("the live playlist did not move on")
		}
		time.Sleep(200 * time.Millisecond)
	}
	h.env.Clock.Advance(3 * time.Second)
	r := h.get(mediaHost, playlist)
	if r.status != 200 || r.body == first.body || r.header.Get("X-Cache") == "HIT" {
		t.Fatalf("live playlist after 3 s: %d X-Cache %q, same as the first: %v", r.status, r.header.Get("X-Cache"), r.body == first.body)
	}
}
