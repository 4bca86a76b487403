package media

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/svcplatform/platform/controlplane/plans"
)

// playerPage plays ?src= with hls.js (from npm, testdata/hlsjs, Apache-2.0) in a
// muted video element and keeps fatal errors in window.playerErrors.
const playerPage = `<!doctype html>
<html><head><meta charset="utf-8"><title>player</title></head><body>
<video id="v" muted playsinline autoplay width="320"></video>
<script src="/hls.js"></script>
<script>
window.playerErrors = [];
const src = new URLSearchParams(location.search).get("src");
const v = document.getElementById("v");
if (!Hls.isSupported()) {
  window.playerErrors.push("hls.js: MediaSource with H.264/AAC not supported by this browser");
} else {
  const h = new Hls({liveSyncDurationCount: 2});
  h.on(Hls.Events.ERROR, (e, d) => { if (d.fatal) window.playerErrors.push(d.type + ": " + d.details); });
  h.on(Hls.Events.MANIFEST_PARSED, () => { v.play().catch(err => window.playerErrors.push("play: " + err)); });
  h.loadSource(src);
  h.attachMedia(v);
}
</script></body></html>`

// chromiumPath finds Debian's chromium ($CHROMIUM first); without one the
// test is skipped, or fails under CI.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium not installed (apt-get install chromium): the playback browser test must run in CI")
	}
	t.Skip("chromium not installed: apt-get install chromium")
	return ""
}

// hlsJS is hls.js's light build, installed from npm with the lockfile in
// testdata/hlsjs (`make test` runs `npm ci` there).
func hlsJS(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/hlsjs/node_modules/hls.js/dist/hls.light.min.js")
	if err == nil {
		return b
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("hls.js is not installed (npm ci in controlplane/media/testdata/hlsjs; make test does): %v", err)
	}
	t.Skip("hls.js is not installed: npm ci in controlplane/media/testdata/hlsjs (make test does)")
	return nil
}

// player serves the test page and hls.js on an origin of its own (so
// playback goes through CORS as from a customer's site) and opens a
// headless Chromium.
type player struct {
	page *httptest.Server
	ctx  context.Context
}

func newPlayer(t *testing.T) *player {
	t.Helper()
	bin := chromiumPath(t)
	hlsjs := hlsJS(t)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /player", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte(playerPage))
	})
	mux.HandleFunc("GET /hls.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		w.Write(hlsjs)
	})
	page := httptest.NewServer(mux)
	t.Cleanup(page.Close)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("mute-audio", true),
		chromedp.Flag("autoplay-policy", "no-user-gesture-required"),
		// The playback host is the edge on 127.0.0.1 (its port is in the
		// URL), with a certificate from the edge's local CA.
		chromedp.Flag("host-resolver-rules", "MAP "+edgeMediaHost+" 127.0.0.1"),
		chromedp.Flag("ignore-certificate-errors", true),
	}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	// Start the browser on the long-lived context: the first run's
	// context is the browser's lifetime.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return &player{page: page, ctx: ctx}
}

// playing opens the page on src and waits until the video's currentTime
// has advanced by at least advance seconds past its first reading.
func (p *player) playing(t *testing.T, src string, advance float64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(p.page.URL+"/player?src="+url.QueryEscape(src))); err != nil {
		t.Fatalf("open player: %v", err)
	}
	type state struct {
		Time   float64  `json:"t"`
		Errors []string `json:"errors"`
	}
	first := -1.0
	var last state
	for {
		s, err := chromedp.Run(ctx, chromedp.Evaluate[state](`({t: document.getElementById("v").currentTime, errors: window.playerErrors})`))
		if err != nil {
			t.Fatalf("read player (last %+v): %v", last, err)
		}
		last = s
		if len(s.Errors) > 0 {
			t.Fatalf("player errors: %v", s.Errors)
		}
		if s.Time > 0 && first < 0 {
			first = s.Time
		}
		if first >= 0 && s.Time >= first+advance {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("currentTime did not advance by %v s: first %v, last %v", advance, first, s.Time)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// A processed video and a live channel play in headless Chromium with
// hls.js from the playback host, a real edge in front of the control
// plane (with its cache): currentTime advances.
func TestPlaybackInBrowser(t *testing.T) {
	needTools(t, "ffmpeg", "ffprobe")
	p := newPlayer(t)

	t.Run("video", func(t *testing.T) {
		pe := newPlaybackEdge(t)
		e := newEnv(t, plans.Pro, Config{NoWorkers: true, PlaybackBaseURL: pe.base})
		pe.start(t, e.srv.URL)
		id, up := e.createVideo("Clip")
		if r := e.upload(up, "file", clip(t, t.TempDir())); r.Status != 201 {
			t.Fatalf("upload: %d %s", r.Status, r.Body)
		}
		if err := e.svc.Process(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		a := e.asset(id)
		if a.Status != StatusReady || a.PlaybackURL != pe.base+"/media/"+id+"/master.m3u8" {
			t.Fatalf("asset %+v", a)
		}
		p.playing(t, a.PlaybackURL, 2)
	})
	t.Run("live", func(t *testing.T) {
		needLive(t)
		pe := newPlaybackEdge(t)
		e := newEnv(t, plans.Pro, Config{NoWorkers: true, PlaybackBaseURL: pe.base, Live: &LiveConfig{Listen: freeAddr(t), UpdateSeconds: 1}})
		pe.start(t, e.srv.URL)
		var c Created
		e.must(201, ownerKey, "POST", "/api/projects/"+e.project+"/media", map[string]any{"name": "Show", "kind": "live"}).Decode(t, &c)
		e.must(200, ownerKey, "PATCH", "/api/media/"+c.Asset.ID, map[string]any{"action": "go-live"})
		_, done := publish(t, c.IngestURL+"/"+c.StreamKey)
		waitLivePlaylist(t, e, c.Asset.ID, done)
		a := e.asset(c.Asset.ID)
		if a.PlaybackURL != pe.base+"/media/"+c.Asset.ID+"/index.m3u8" {
			t.Fatalf("live playback URL %q", a.PlaybackURL)
		}
		p.playing(t, a.PlaybackURL, 2)
	})
}
